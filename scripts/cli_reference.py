"""Write the command-line reference, docs/cli.md, from the argparse definitions (scorer.cli.reference).

Usage (from the repository root)::

    python scripts/cli_reference.py           # rewrite docs/cli.md
    python scripts/cli_reference.py --check   # exit 1 when docs/cli.md is stale or an argument has no help

tests/cli/test_cli_reference.py runs the same check in ``make test``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.cli import build_parser  # noqa: E402
from scorer.cli.reference import missing_help, reference  # noqa: E402

PAGE = ROOT / "docs" / "cli.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/cli_reference.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 when stale")
    args = ap.parse_args(argv)
    parser = build_parser()
    missing = missing_help(parser)
    if missing:
        print("arguments without a help text: " + "; ".join(missing), file=sys.stderr)
        return 1
    text = reference(parser)
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
