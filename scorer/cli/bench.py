"""``semif bench shape``: throughput of the three modes (and ``--exact``) on a states x criteria workload."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scorer.cli.arguments import add_model_args, comma_list, load_model, positive_int
from scorer.scoring.drift import DEFAULT_PROBE_ROWS, DEFAULT_SAFETY, RESULTS_DIR
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS
from scorer.studies.bench import DEFAULT_REPEATS, SIZES, WORKLOADS


def register(sub: Any) -> None:
    """Add ``semif bench``."""
    p = sub.add_parser("bench", help="throughput of direct/serial/shared (and --exact) on a states x criteria workload")
    p.add_argument("workload", choices=WORKLOADS, help="the workload: shape (states x yes/no criteria)")
    p.add_argument("--size", choices=SIZES, default="small", help="small: 2 states x 21; full: 37 x 21")
    p.add_argument("--input", help="a workload file instead of data/workloads/shape-SIZE.jsonl")
    p.add_argument("--modes", default="direct,serial,shared", help="comma list (direct always runs: the reference)")
    p.add_argument("--exact-modes", default="serial,shared", help="fast modes also run under --exact ('' for none)")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="passes per fast mode; the median is reported")
    p.add_argument("--max-batch-tokens", type=positive_int, default=DEFAULT_MAX_BATCH_TOKENS,
                   help=f"tokens per packed pass in shared mode (default {DEFAULT_MAX_BATCH_TOKENS})")
    p.add_argument("--exact-safety", type=float, default=DEFAULT_SAFETY,
                   help=f"--exact: safety factor of the bound, safety x 2 x max |dp| (default {DEFAULT_SAFETY:g})")
    p.add_argument("--exact-probe", type=int, default=DEFAULT_PROBE_ROWS,
                   help=f"--exact: rows a drift probe scores both ways (default {DEFAULT_PROBE_ROWS})")
    p.add_argument("--exact-source", choices=("auto", "report", "probe"), default="auto",
                   help="where the exact bound's drift comes from: a held-out drift report in --drift-dir (report), "
                        "a probe of the first rows (probe), or the report when one matches, else the probe (auto)")
    p.add_argument("--drift-dir", default=str(RESULTS_DIR), help="where `semif drift` wrote its reports")
    p.add_argument("--output", help="report path (default data/results/shape-SIZE-MODEL-BACKEND.json)")
    p.add_argument("--force", action="store_true", help="overwrite an existing report")
    add_model_args(p)
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from scorer.formats.rows import load_decisions
    from scorer.studies.bench import BenchConfig, bench, default_input

    decisions = load_decisions(Path(args.input) if args.input else default_input(args.size))
    cfg = BenchConfig(workload=args.workload, size=args.size, input=Path(args.input) if args.input else None,
                      modes=tuple(comma_list(args.modes)), exact_modes=tuple(comma_list(args.exact_modes)),
                      repeats=args.repeats, max_batch_tokens=args.max_batch_tokens, exact_safety=args.exact_safety,
                      exact_probe=args.exact_probe, exact_source=args.exact_source, drift_dir=Path(args.drift_dir),
                      output=Path(args.output) if args.output else None, force=args.force)
    bench(load_model(args), decisions, cfg)
    return 0
