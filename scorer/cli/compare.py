"""``semif compare A.jsonl B.jsonl``: line-for-line parity of two runs over the same decisions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scorer.evaluation.compare import DEFAULT_TOLERANCE, SHOW


def register(sub: Any) -> None:
    """Add ``semif compare``."""
    p = sub.add_parser("compare", help="parity of two runs of the same decisions (|dp|, flips, ties, margins)")
    p.add_argument("a", help="records (JSONL) of the first run, e.g. torch fp32")
    p.add_argument("b", help="records (JSONL) of the second run, e.g. llama.cpp on the same GGUF")
    p.add_argument("--output", help="write the full report as JSON here")
    p.add_argument("--force", action="store_true", help="overwrite --output")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help=f"list rows whose |dp| exceeds this even without a flip (default {DEFAULT_TOLERANCE})")
    p.add_argument("--show", type=int, default=SHOW, help=f"differing rows to print (default {SHOW})")
    p.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from scorer.core.io import FORCE_HINT, check_writable
    from scorer.evaluation.compare import compare_files, print_report
    from scorer.formats.envelope import write_report

    out = Path(args.output) if args.output else None
    if out is not None:  # before any work or output
        check_writable(out, args.force, FORCE_HINT)
    rep = compare_files(args.a, args.b, args.tolerance)
    if out is not None:
        write_report(out, rep, args.force)
        print(f"[semif] wrote {out}", file=sys.stderr)
    print_report(rep, args.show)
    return 0
