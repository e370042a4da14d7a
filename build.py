"""Build the static SemIf site from traces and result reports: ``semif site build`` under the name the checkout's
workflow uses, with the checkout's ``data/`` and ``site/`` as defaults.

    python build.py [--data DIR] [--out DIR] [--docs DIR]

The build itself lives in :mod:`scorer.site` (see its docstring for what is read and written). Exit status 0 when
the site was written, 2 when an input or the output directory is refused (the message names the file), 1 for an
environment fault (a file where a folder of ``--out`` should be, a folder it may not write, a full disk: one line
with the errno text and the path).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scorer.cli.site import build_site, default_docs
from scorer.core.errors import SemifError
from scorer.core.io import os_error_text
from scorer.site import build
from scorer.site.discover import discover
from scorer.site.inputs import BuildError, Lane, ReportFile, TraceFile
from scorer.site.output import SITE_MARKER, write_site

ROOT = Path(__file__).resolve().parent

__all__ = ["SITE_MARKER", "BuildError", "Lane", "ReportFile", "TraceFile", "build", "discover", "main", "write_site"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="build.py", description="Build the static SemIf site (traces and reports).")
    ap.add_argument("--data", type=Path, default=ROOT / "data", help="input directory (default: data/)")
    ap.add_argument("--out", type=Path, default=ROOT / "site", help="output directory (default: site/)")
    ap.add_argument("--docs", type=Path, help="Markdown pages of the Docs section (default: docs/)")
    args = ap.parse_args(argv)
    try:
        return build_site(args.data, args.out, "build.py", default_docs(args.docs, ROOT / "docs"))
    except SemifError as exc:
        print(f"build.py: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an environment fault, as the CLI reports one (docs/guarantees-and-testing.md: exit codes)
        print(f"build.py: error: {os_error_text(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
