"""``semif route``: the two-path margin policy judged on two finished runs (live routing is ``semif score --fast SPEC
--accurate SPEC --escalate-below M``, :mod:`scorer.scoring.routing`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from scorer.cli.arguments import (
    add_report_args,
    positive_int,
)
from scorer.core.errors import InputError
from scorer.evaluation.route_report import DEFAULT_THRESHOLDS


def register(sub: Any) -> None:
    """Add ``semif route``."""
    p = sub.add_parser("route", help="two-path routing: fast path, escalate low-margin decisions to the reference")
    p.add_argument("--fast", required=True, help="records of the fast path")
    p.add_argument("--reference", required=True, help="records of the reference (accurate) path on the same rows")
    p.add_argument("--thresholds", default=",".join(f"{t:g}" for t in DEFAULT_THRESHOLDS),
                   help="margins to report (comma list)")
    p.add_argument("--apply", type=float, help="also write the routed records at this margin threshold")
    p.add_argument("--routed-output", help="with --apply: JSONL path of the routed records")
    p.add_argument("--threshold-output", metavar="T.json",
                   help="choose the threshold out of fold (group-disjoint folds, labels needed) and write it where "
                        "`semif score --escalate-below T.json` reads it")
    p.add_argument("--folds", type=positive_int, default=5, help="--threshold-output: folds (default 5)")
    add_report_args(p)
    p.set_defaults(func=_cmd_route)



def _cmd_route(args: argparse.Namespace) -> int:
    from scorer.core.io import FORCE_HINT, check_writable, write_atomic
    from scorer.evaluation.report_files import check_outputs, default_out, save_report
    from scorer.evaluation.route_report import print_route, route_records, route_report

    try:
        ths = tuple(float(x) for x in args.thresholds.split(","))
    except ValueError:
        raise InputError("--thresholds", None, None, f"{args.thresholds!r} is not a list of numbers",
                         "e.g. 0,0.05,0.1") from None
    if any(not math.isfinite(t) or t < 0 for t in ths):
        raise InputError("--thresholds", None, None, "a threshold is negative or not finite", "numbers >= 0")
    report_out = Path(args.output) if args.output else default_out("route", args.fast)
    if args.apply is not None:  # every output is checked before any work or output
        if args.routed_output is None:
            raise InputError("--routed-output", None, None, "missing", "a JSONL path for the routed records")
        out = Path(args.routed_output)
        check_outputs(report_out, args.force, out)
    else:
        check_writable(report_out, args.force, FORCE_HINT)
    threshold_out = Path(args.threshold_output) if args.threshold_output else None
    if threshold_out is not None:
        if threshold_out.resolve() == report_out.resolve():
            raise InputError(str(threshold_out), None, None, "is also the report's --output", "two different paths")
        check_writable(threshold_out)
    rep = route_report(args.fast, args.reference, args.labels, ths, args.reps, args.seed)
    print_route(rep)
    recs: list[dict[str, Any]] = []
    if args.apply is not None:
        from scorer.formats.records import dumps_record, read_records

        recs = route_records(read_records(args.fast), read_records(args.reference), args.apply)
    if threshold_out is not None:
        from scorer.evaluation import metrics
        from scorer.evaluation.report_files import enveloped
        from scorer.formats.records import read_records
        from scorer.scoring.routing import choose_threshold

        rf, rr = read_records(args.fast), read_records(args.reference)
        labs = metrics.labels_from_decisions(args.labels) if args.labels else metrics.labels_from_records(
            rr, args.reference)
        chosen = choose_threshold(rf, rr, labs, ths, args.folds)
        from scorer.evaluation.report_files import run_info

        body = {"fast": run_info(args.fast, rf), "reference": run_info(args.reference, rr),
                "labels": {"path": args.labels} if args.labels else None, **chosen}
        save_report(enveloped("route-threshold", body), threshold_out, args.force)
        oof = chosen["out_of_fold"]
        print(f"[semif] threshold {chosen['threshold']:g} (out of fold over {chosen['folds']} folds: balanced "
              f"accuracy {oof['balanced_accuracy']:.3f}, {100 * oof['escalated_share']:.1f}% escalated) written to "
              f"{threshold_out}", file=sys.stderr)
    save_report(rep, report_out, args.force)
    if args.apply is not None:
        write_atomic(out, b"".join(dumps_record(r) for r in recs))
        print(f"[semif] wrote {len(recs)} routed records (margin < {args.apply:g} escalated) to {out}",
              file=sys.stderr)
    return 0
