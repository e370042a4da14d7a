"""``semif drift``: how far the fast modes' probabilities drift from fresh scoring, as reports."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scorer.cli.arguments import add_model_args, comma_list, load_model, positive_int
from scorer.scoring.drift import DEFAULT_SAFETY, RESULTS_DIR
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS


def register(sub: Any) -> None:
    """Add ``semif drift``."""
    p = sub.add_parser("drift", help="measure how far a fast mode's probabilities drift from fresh scoring")
    p.add_argument("--input", required=True, help="decisions (JSONL)")
    p.add_argument("--rows", help="START:END slice of the input (0-based, END exclusive)")
    p.add_argument("--modes", default="serial,shared", help="comma list of modes to compare against direct")
    p.add_argument("--max-batch-tokens", type=positive_int, default=DEFAULT_MAX_BATCH_TOKENS,
                   help=f"tokens per packed pass in shared mode (default {DEFAULT_MAX_BATCH_TOKENS})")
    p.add_argument("--exact-safety", type=float, default=DEFAULT_SAFETY, help="safety factor of the bound")
    p.add_argument("--results-dir", default=str(RESULTS_DIR),
                   help="where drift-<model>-<backend>-<mode>.json go (default data/results)")
    p.add_argument("--output", help="report path (one mode only)")
    p.add_argument("--force", action="store_true", help="overwrite existing reports")
    add_model_args(p)
    p.set_defaults(func=_cmd_drift)


def _cmd_drift(args: argparse.Namespace) -> int:
    from scorer.core.errors import InputError
    from scorer.core.hashing import sha256_file
    from scorer.core.progress import bar
    from scorer.formats.rows import load_decisions
    from scorer.scoring.drift import DriftConfig, measure, parse_rows, report_paths, write_reports
    from scorer.scoring.modes import MODES

    modes = comma_list(args.modes)
    for m in modes:
        if m not in MODES:
            raise InputError("--modes", None, None, f"unknown mode {m!r}", f"a comma list of {', '.join(MODES)}")
    inp = Path(args.input)
    rows = load_decisions(inp)
    a, b = parse_rows(args.rows, len(rows), str(inp))
    rows = rows[a:b]
    backend = load_model(args)
    cfg = DriftConfig(modes=tuple(modes), max_batch_tokens=args.max_batch_tokens, safety=args.exact_safety,
                      results_dir=Path(args.results_dir), output=Path(args.output) if args.output else None,
                      force=args.force)
    outs = report_paths(backend, cfg)
    source = {"path": str(inp), "sha256": sha256_file(inp), "slice": [a, b]}
    pb = bar(len(rows) * (1 + len(modes)), "drift")
    try:
        reps = measure(backend, rows, modes, cfg.max_batch_tokens, cfg.safety, source,
                       on_record=lambda _r: pb.update(1))
    finally:
        pb.close()
    write_reports(reps, outs, cfg.force)
    return 0
