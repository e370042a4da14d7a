"""``semif eval``: decision-quality metrics of a run against labels (and a paired comparison)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scorer.cli.arguments import add_report_args


def register(sub: Any) -> None:
    """Add ``semif eval``."""
    p = sub.add_parser("eval", help="decision-quality metrics of a run against labels")
    p.add_argument("run", help="records (JSONL) of `semif score`")
    p.add_argument("--compare", help="a second run on the same rows: paired comparison (B = this run)")
    add_report_args(p)
    p.set_defaults(func=_cmd_eval)


def _cmd_eval(args: argparse.Namespace) -> int:
    from scorer.core.io import FORCE_HINT, check_writable
    from scorer.evaluation.eval_report import eval_report, print_eval
    from scorer.evaluation.report_files import default_out, save_report

    out = Path(args.output) if args.output else default_out("eval", args.run)
    check_writable(out, args.force, FORCE_HINT)  # before any work or output (issue #21, item 8)
    rep = eval_report(args.run, args.labels, args.compare, args.reps, args.seed)
    print_eval(rep)
    save_report(rep, out, args.force)
    return 0
