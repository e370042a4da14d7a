#!/usr/bin/env python3
"""Which llama.cpp setting makes the answer-position logits depend on the batch's shape: the same rows scored fresh
(direct: one prompt per pass), with prefix reuse (serial) and packed (shared: many suffixes in one pass), under each
variant of the backend's canonical rules (:mod:`scorer.backends.llamacpp_backend`), and the largest |Δp| and
|Δlogit| of each fast mode against direct.

Variants (each a fresh load of the same GGUF; nothing else changes):

* ``canonical`` — the backend as it ships: no weight repacking, one KV stream per sequence, no decode of fewer than
  ``MIN_PIECE`` tokens of a sequence (short ones padded after their last token, packed branches to the pass's longest);
* ``repack`` — rule 1 off: llama.cpp's CPU weight repacking (``use_extra_bufts``: Q4_K and friends laid out for its
  gemm kernels, which multiply groups of four batch rows one way and the rest another);
* ``unified`` — rule 2 off: one KV stream shared by every branch (a branch's suffix sits behind the other branches'
  cells);
* ``short-pieces`` — rule 3 off: suffixes decoded as they are, however short;
* ``few-outputs`` — rule 4 off: logits read from the wanted rows only (one per prompt alone, one per branch of a
  packed pass), so the output matrix of a pass of 8 branches or more takes another kernel than a prompt scored alone;
* ``before`` — all four off (packed branches are still padded to the pass's longest): the backend before the rules.

    PYTHONPATH=. .venv/bin/python benchmarks/llamacpp_batch_probe.py --model qwen2.5-0.5b \\
        --input data/workloads/shape-small.jsonl --output data/results/llamacpp-batch-probe-qwen2.5-0.5b.json

Writes one report (the common envelope, kind ``llamacpp-batch-probe``); progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.backends import BackendConfig, load_backend  # noqa: E402
from scorer.core.checks import DEFAULT_MAX_BATCH_TOKENS  # noqa: E402
from scorer.core.io import check_writable  # noqa: E402
from scorer.core.machine import cpu_features  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.rows import load_decisions  # noqa: E402
from scorer.scoring.drift import compare, parse_rows, run_mode  # noqa: E402

FORMAT = "semif-llamacpp-batch-probe-v2"
# each variant: the backend module's settings it changes
SETTINGS: dict[str, dict[str, Any]] = {
    "canonical": {},
    "repack": {"REPACK_WEIGHTS": True},
    "unified": {"UNIFIED_KV": True},
    "short-pieces": {"MIN_PIECE": 1},
    "few-outputs": {"MIN_OUTPUTS": 1},
    "before": {"REPACK_WEIGHTS": True, "UNIFIED_KV": True, "MIN_PIECE": 1, "MIN_OUTPUTS": 1},
}
VARIANTS = tuple(SETTINGS)


@contextlib.contextmanager
def variant(name: str) -> Iterator[dict[str, Any]]:
    """The backend's canonical rules as ``name`` sets them, for every llama.cpp backend loaded inside the block."""
    from scorer.backends import llamacpp_backend as module

    settings = SETTINGS[name]
    saved = {k: getattr(module, k) for k in settings}
    for k, v in settings.items():
        setattr(module, k, v)
    try:
        yield dict(settings)
    finally:
        for k, v in saved.items():
            setattr(module, k, v)


def max_logit_delta(fresh: list[dict[str, Any]], fast: list[dict[str, Any]]) -> float:
    """The largest |Δ| of any option logit, fast against fresh."""
    return max((abs(a - b) for f, g in zip(fresh, fast, strict=True)
                for a, b in zip(f["option_logits"], g["option_logits"], strict=True)), default=0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--input", default=str(ROOT / "data" / "workloads" / "shape-small.jsonl"))
    ap.add_argument("--rows", default=None, help="START:END slice of the input")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    ap.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS)
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    check_writable(args.output, overwrite=args.force)
    names = args.variants.split(",")
    if any(n not in VARIANTS for n in names):
        print(f"error: --variants: expected some of {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    decisions = load_decisions(args.input)
    a, b = parse_rows(args.rows, len(decisions), args.input)
    decisions = decisions[a:b]
    results = []
    for name in names:
        with variant(name) as settings:
            t0 = time.perf_counter()
            backend = load_backend(BackendConfig(model=args.model, backend="llamacpp"))
            load_s = time.perf_counter() - t0
            # the kernels llama.cpp was built with (an AVX2-only build on an AVX-512 CPU runs AVX2's kernels)
            build = backend.model_info().get("llama", {}).get("system_info")
            runs = {m: run_mode(backend, decisions, m, args.max_batch_tokens) for m in ("direct", "serial", "shared")}
            close = getattr(backend, "close", None)
            if callable(close):
                close()
        row: dict[str, Any] = {"variant": name, "settings": settings, "system_info": build, "load_s": round(load_s, 2),
                               "wall_s": {m: round(r.wall_s, 2) for m, r in runs.items()}, "modes": {}}
        for m in ("serial", "shared"):
            s = compare(runs["direct"].records, runs[m].records)
            row["modes"][m] = {"max_abs_dp": s["max_abs_dp"], "max_abs_dlogit":
                               max_logit_delta(runs["direct"].records, runs[m].records),
                               "flips": s.get("flips"), "bit_identical": s["max_abs_dp"] == 0.0}
        print(f"[probe] {name}: " + ", ".join(f"{m} max|dp| {v['max_abs_dp']:.3g}" for m, v in row["modes"].items())
              + f"; wall {row['wall_s']}", file=sys.stderr, flush=True)
        results.append(row)
    report = make_report("llamacpp-batch-probe", FORMAT, {"input": Path(args.input)}, {
        "title": f"llama.cpp batch-shape dependence, {args.model}", "model": args.model,
        "rows": {"slice": [a, b], "count": len(decisions)}, "cpu_features": cpu_features(),
        "max_batch_tokens": args.max_batch_tokens, "results": results, "load_average": list(os.getloadavg())})
    write_report(args.output, report, overwrite=args.force)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
