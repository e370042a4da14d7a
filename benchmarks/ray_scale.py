"""Ray Data scale-out on one machine: ``semif score --engine ray`` with 1 and 2 actors against the local engine.

Every configuration is the user's own command (a fresh ``semif score`` process, so Ray's start-up and each
actor's model load are inside the wall time, as a user pays them); configurations run round-robin, ``--repeats``
times each, so machine noise spreads over all of them. Besides the wall time, the output file is polled to
time the first and the last record (the first record waits for Ray, the actor pool and a model load; the span
from first to last record is the scoring the actors did after that), and the records' own
``timing.total_s`` sum is the compute they report. Records of every run are compared with the first local
run's (same choices; max |Δp|; same prompt and token hashes).

    .venv/bin/python benchmarks/ray_scale.py --model qwen2.5-0.5b --workload data/workloads/shape-small.jsonl \\
        --output data/results/ray-scale-qwen2.5-0.5b-shape-small.json

Writes one report (the common envelope, kind ``ray-scale``); progress and logs on stderr. Quote it only
from a quiet machine: the report carries the load averages before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.record_clock import poll  # noqa: E402
from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.formats.envelope import envelope, write_report  # noqa: E402

FORMAT = "semif-ray-scale-v2"
"""v2: ``load_average`` {before, after} (v1: ``loadavg_before``/``loadavg_after``)."""

CONFIGS: dict[str, list[str]] = {
    "local-threads2": ["--threads", "2"],
    "local-threads1": ["--threads", "1"],
    "ray-1actor": ["--engine", "ray", "--actors", "1", "--cpus-per-actor", "1", "--threads", "1"],
    "ray-2actors": ["--engine", "ray", "--actors", "2", "--cpus-per-actor", "1", "--threads", "1"],
}
"""Name → the ``semif score`` flags that make it (one thread per actor, as the issue asks)."""


def _run(name: str, flags: list[str], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    cmd = [str(ROOT / ".venv/bin/semif"), "score", "--input", str(args.workload), "--output", str(out),
           "--model", args.model, "--mode", args.mode, *flags]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    first, last, seen = poll(proc, out, t0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{name}: semif score exited {proc.returncode}:\n{err[-4000:]}")
    recs = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    last = last if last is not None and seen == len(recs) else wall
    return {"config": name, "command": " ".join(cmd[1:]), "wall_s": round(wall, 3),
            "first_record_s": round(first, 3) if first is not None else None, "last_record_s": round(last, 3),
            "records": len(recs), "records_total_s": round(sum(r["timing"]["total_s"] for r in recs), 3),
            "_records": recs}


def _agreement(ref: list[dict[str, Any]], recs: list[dict[str, Any]]) -> dict[str, Any]:
    dp = max(abs(a - b) for r, s in zip(ref, recs, strict=True)
             for a, b in zip(r["probabilities"], s["probabilities"], strict=True))
    return {"rows": len(recs), "same_choice": sum(r["choice"] == s["choice"] for r, s in zip(ref, recs, strict=True)),
            "same_hashes": sum((r["prompt_sha256"], r["tokens_sha256"]) == (s["prompt_sha256"], s["tokens_sha256"])
                               for r, s in zip(ref, recs, strict=True)),
            "max_abs_dp": dp}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--workload", type=Path, default=ROOT / "data/workloads/shape-small.jsonl")
    ap.add_argument("--mode", default="shared", choices=("direct", "serial", "shared"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    ap.add_argument("--output", type=Path, required=True)
    args = ap.parse_args()
    if "ray-1actor" not in args.configs or "ray-2actors" not in args.configs:
        raise SystemExit("--configs must include ray-1actor and ray-2actors (the comparison this report makes)")
    if args.output.exists():
        raise SystemExit(str(refuse_overwrite(args.output)))
    load_before = load_average()
    runs: list[dict[str, Any]] = []
    ref: list[dict[str, Any]] | None = None
    with tempfile.TemporaryDirectory(prefix="semif-ray-scale-") as tmp:
        for rep in range(args.repeats):
            for name in args.configs:
                flags = CONFIGS[name]
                out = Path(tmp) / f"{name}-{rep}.jsonl"
                print(f"[ray-scale] repeat {rep + 1}/{args.repeats} {name} …", file=sys.stderr, flush=True)
                r = _run(name, flags, args, out)
                recs = r.pop("_records")
                ref = ref or recs
                r["agreement_with_first_local"] = _agreement(ref, recs)
                r["repeat"] = rep
                print(f"[ray-scale]   wall {r['wall_s']:.1f} s, first record {r['first_record_s']} s, "
                      f"last {r['last_record_s']} s", file=sys.stderr, flush=True)
                runs.append(r)
    load = load_span(load_before)
    summary = {}
    for name in args.configs:
        mine = [r for r in runs if r["config"] == name]
        summary[name] = {k: statistics.median(r[k] for r in mine)
                         for k in ("wall_s", "first_record_s", "last_record_s", "records_total_s")}
        summary[name]["scoring_span_s"] = statistics.median(r["last_record_s"] - r["first_record_s"] for r in mine)
        summary[name]["decisions_per_s_wall"] = mine[0]["records"] / summary[name]["wall_s"]
    base = summary["ray-1actor"]
    summary["ratios"] = {
        "ray_2_vs_1_actor_wall": base["wall_s"] / summary["ray-2actors"]["wall_s"],
        "ray_2_vs_1_actor_last_record": base["last_record_s"] / summary["ray-2actors"]["last_record_s"],
    }
    if "local-threads2" in summary:
        summary["ratios"]["local_threads2_vs_ray_2actors_wall"] = (summary["ray-2actors"]["wall_s"]
                                                                   / summary["local-threads2"]["wall_s"])
    report = {**envelope("ray-scale", FORMAT, {"workload": args.workload}),
              "title": f"Ray Data scale-out on this machine: {args.model}, {args.workload.name}, {args.mode} mode",
              "model": args.model, "mode": args.mode, "repeats": args.repeats,
              "load_average": load,
              "medians": summary, "runs": runs,
              "notes": ["wall_s includes process start, Ray start-up (ray configs) and every model load",
                        "first_record_s: first record on disk; scoring_span_s: first to last record",
                        "records_total_s: sum of the records' own timing.total_s (compute, not wall)"]}
    write_report(args.output, report)
    print(f"[ray-scale] wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
