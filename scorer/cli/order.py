"""``semif order``: flips under option reversal, with and without the ``--permute`` readout."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scorer.cli.arguments import add_report_args
from scorer.core.errors import InputError
from scorer.core.io import FORCE_HINT, check_writable


def register(sub: Any) -> None:
    """Add ``semif order``."""
    p = sub.add_parser("order", help="flips under option reversal, with and without the --permute readout")
    p.add_argument("--base", required=True, help="run on the original rows")
    p.add_argument("--reversed", required=True, help="run on the reversed rows (semif perturb --kind reverse)")
    p.add_argument("--permuted", help="semif score --permute K run on the original rows")
    p.add_argument("--permuted-reversed", help="semif score --permute K run on the reversed rows")
    add_report_args(p)
    p.set_defaults(func=_cmd_order)


def _cmd_order(args: argparse.Namespace) -> int:
    from scorer.evaluation.order_report import order_report, print_order
    from scorer.evaluation.report_files import default_out, save_report

    if bool(args.permuted) != bool(args.permuted_reversed):
        raise InputError("--permuted", None, None, "only one of --permuted/--permuted-reversed given",
                         "both (the order-averaged runs on the original and the reversed rows) or neither")
    out = Path(args.output) if args.output else default_out("order", args.base)
    check_writable(out, args.force, FORCE_HINT)  # before any work or output
    rep = order_report(args.labels, args.base, args.reversed, args.permuted, args.permuted_reversed, args.reps,
                       args.seed)
    print_order(rep)
    save_report(rep, out, args.force)
    return 0
