"""``semif versus``: typed readout vs free and grammar-constrained generation on one state, traced."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from scorer.cli.arguments import add_exact_tuning_args, add_model_args, load_model, positive_int
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS
from scorer.studies.versus import (
    DEFAULT_INPUT,
    DEFAULT_REPEATS,
    DEFAULT_TOP_K,
    DEFAULT_TRACES,
    DEFAULT_WARMUP,
    VersusConfig,
)


def register(sub: Any) -> None:
    """Add ``semif versus``."""
    p = sub.add_parser("versus", help="typed readout vs free and grammar-constrained generated JSON arrays on one "
                                      "state and its criteria (traced)")
    p.add_argument("--input", default=str(DEFAULT_INPUT),
                   help='{"id", "state", "criteria": [{"id", "question", "label"?}]} (default: the shipped ticket-21)')
    p.add_argument("--output", help="trace file (default data/traces/versus-<input>-<model>-<backend>-<device>.json)")
    p.add_argument("--force", action="store_true", help="overwrite an existing trace file")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="measured runs per path (default 3)")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="warm-up runs per path (default 1)")
    p.add_argument("--max-new-tokens", type=int, help="free lane's generation limit (default 4 x criteria + 16; "
                                                       "the constrained lane's limit is set by its grammar)")
    p.add_argument("--calibration", metavar="FILE",
                   help="typed lane: also record calibrated probabilities from this calibration file "
                        "(semif calibrate prior/bias); raw probabilities are kept unchanged")
    p.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, help="alternatives recorded per position (default 5)")
    p.add_argument("--max-batch-tokens", type=positive_int, default=DEFAULT_MAX_BATCH_TOKENS,
                   help="typed path: suffix tokens per packed pass")
    p.add_argument("--no-check-direct", action="store_true",
                   help="skip the untimed direct-mode cross-check of the typed choices")
    p.add_argument("--no-exact", action="store_true",
                   help="typed path: do not re-score near-tie decisions fresh (default: the exact policy is on)")
    add_exact_tuning_args(p, drift_help="exact policy: drift report of this configuration (default: "
                                        "data/results/drift-<model>-<backend>-shared.json if it matches, else a probe)",
                          probe_help="criteria scored both ways to measure drift when no report is used")
    add_model_args(p)
    p.set_defaults(func=_cmd_versus)


def _cmd_versus(args: argparse.Namespace) -> int:
    from scorer import trace
    from scorer.core.errors import ValidationError
    from scorer.core.io import FORCE_HINT, check_writable
    from scorer.models import store
    from scorer.scoring.drift import load_report
    from scorer.studies.versus import load_calibrator, load_input, run_versus

    inp = load_input(args.input)  # validated before any model loads
    calibration = load_calibrator(args.calibration) if args.calibration else None
    if args.drift_report:
        load_report(Path(args.drift_report))  # a bad report path fails before the model loads
    device = args.device if args.backend == "torch" else ("cpu" if args.llama_gpu_layers == "0" else "gpu")
    key = store.resolve(args.model, args.revision).key
    out = Path(args.output) if args.output else DEFAULT_TRACES / trace.trace_name(inp.id, key, args.backend, device)
    check_writable(out, args.force, FORCE_HINT)
    backend = load_model(args)  # through the CLI's one seam (tests load a fake backend there)
    progress = VersusProgress(inp.id, len(inp.criteria), args.warmup, args.repeats, not args.no_check_direct)
    cfg = VersusConfig(repeats=args.repeats, warmup=args.warmup, max_new_tokens=args.max_new_tokens,
                       top_k=args.top_k, max_batch_tokens=args.max_batch_tokens,
                       check_direct=not args.no_check_direct, exact=not args.no_exact,
                       exact_safety=args.exact_safety, exact_probe=args.exact_probe,
                       drift_report=Path(args.drift_report) if args.drift_report else None,
                       command="semif " + shlex.join(sys.argv[1:]))
    progress.begin()
    doc = run_versus(backend, inp, cfg, source=str(args.input), on_run=progress.finish, calibration=calibration,
                     on_start=progress.start)
    problems = trace.verify(doc)
    if problems:  # a trace this code wrote must verify; refuse to save one that does not
        raise ValidationError("the trace failed its own verification:\n  " + "\n  ".join(problems))
    trace.write(out, doc, force=args.force)
    print(trace.summary_text(doc))
    print(f"[semif] wrote {out}", file=sys.stderr)
    return 0


_DOING = {"typed": "scoring every criterion", "free": "generating the array",
          "constrained": "generating the array under the grammar"}


class VersusProgress:
    """``semif versus`` progress on stderr, per lane and repeat: a line as each run starts and one with its result
    as it ends (wall time; a generated lane's first-token time, tokens and verdict), each numbered among all the
    runs with the time since the first, so a reader knows how far along a run of several minutes is. Plain lines,
    not a bar: they read the same in a terminal and in a log."""

    def __init__(self, input_id: str, criteria: int, warmup: int, repeats: int, check_direct: bool) -> None:
        self.input_id, self.criteria, self.warmup, self.repeats = input_id, criteria, warmup, repeats
        self.check_direct = check_direct
        self.total = (warmup + repeats) * len(_DOING)
        self.done = 0
        self.t0 = time.perf_counter()

    def _say(self, text: str) -> None:
        print(f"[semif] versus {text}", file=sys.stderr, flush=True)

    def _where(self, path: str, repeat: int, warmup: bool) -> str:
        kind = f"warm-up {repeat + 1}/{self.warmup}" if warmup else f"repeat {repeat + 1}/{self.repeats}"
        return f"run {self.done + 1}/{self.total} ({time.perf_counter() - self.t0:.0f} s) {path:<11} {kind}"

    def begin(self) -> None:
        """Before the protocol: what will run, and the untimed set-up that comes first."""
        self._say(f"{self.input_id}: {self.criteria} criteria; {self.warmup} warm-up and {self.repeats} measured "
                  f"run(s) of each lane (typed, free, constrained): {self.total} runs, after the untimed set-up "
                  "(prompts, grammar, exact policy)")
        self.t0 = time.perf_counter()

    def start(self, path: str, repeat: int, warmup: bool) -> None:
        self._say(f"{self._where(path, repeat, warmup)}: {_DOING[path]}…")

    def finish(self, run: dict[str, Any]) -> None:
        extra = ""
        if run["path"] != "typed":
            extra = f", first token at {run['ttft_s']:.2f} s, {run['output_tokens']} tokens, {run['verdict']}"
        self._say(f"{self._where(run['path'], run['repeat'], run['warmup'])}: done in {run['total_s']:.2f} s{extra}")
        self.done += 1
        if self.done == self.total and self.check_direct:
            self._say("all runs done; checking the typed choices against direct mode (untimed)…")
