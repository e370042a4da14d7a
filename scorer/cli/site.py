"""``semif site build``: the static site from traces and result reports (:mod:`scorer.site`; ``python build.py`` in a
checkout is the same command)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from scorer.core.errors import SemifError


def register(sub: Any) -> None:
    """Add ``semif site build``."""
    p = sub.add_parser("site", help="build the static site (replay, live page, results) from traces and reports")
    acts = p.add_subparsers(dest="action", required=True, metavar="build")
    b = acts.add_parser("build", help="validate every trace and report under --data, then write the site to --out")
    b.add_argument("--data", type=Path, default=Path("data"),
                   help="input directory: traces anywhere under it, reports under results/ (default: ./data)")
    b.add_argument("--out", type=Path, default=Path("site"),
                   help="output directory, replaced only when empty or a previous build (default: ./site)")
    b.add_argument("--docs", type=Path, default=None,
                   help="Markdown pages rendered as the site's Docs section, index.md first (default: ./docs when "
                        "that folder exists, else no Docs section)")
    b.set_defaults(func=_cmd_build)


def _cmd_build(args: argparse.Namespace) -> int:
    return build_site(args.data, args.out, "semif site build", default_docs(args.docs))


def default_docs(docs: Path | None, default: Path = Path("docs")) -> Path | None:
    """``--docs`` as given, else ``default`` when it is a folder (a checkout's docs/), else none."""
    if docs is not None:
        return docs
    return default if default.is_dir() else None


def build_site(data: Path, out: Path, prog: str, docs: Path | None = None) -> int:
    """Build the site from ``data`` (and the Markdown pages of ``docs``) into ``out`` and say what was built (``prog``
    names the command in the warning the build may print). A refused input is a
    :class:`~scorer.core.errors.SemifError` (exit 2, one line naming the file); an environment fault an ``OSError``
    (exit 1)."""
    from scorer.site import build
    from scorer.site.inputs import BuildError

    t0 = time.perf_counter()
    try:
        traces, reports = build(data, out, prog, docs)
    except BuildError as exc:
        raise SemifError(str(exc)) from None
    print(f"built {out} from {len(traces)} trace(s) and {len(reports)} report(s) in {time.perf_counter() - t0:.2f} s",
          file=sys.stdout)
    return 0
