"""The seed's table, measured here: engines side by side on throughput AND decision quality, same decisions.

For each model and decision set, every configuration scores the same rows in shared mode (the fast path):

* ``torch-fp32`` — the in-process torch backend on the fp32 weights dequantized from the GGUF (the reference);
* ``llamacpp-q4`` — the in-process llama.cpp backend on the GGUF itself (Q4_K_M for the Qwen models);
* ``llama-server`` — llama.cpp's HTTP server (``semif engine start llama-server``) on the same GGUF, through
  ``--backend openai``;
* ``vllm-fp32`` / ``vllm-bf16`` — vLLM's CPU build (``semif engine start vllm``) on the torch backend's fp32
  checkpoint, through ``--backend openai``;
* ``vllm-w8a8`` — vLLM's CPU build on the W8A8 int8 checkpoint (SmoothQuant + int8 weights and activations) that
  ``semif quant --schemes w8a8 --model MODEL`` made from the same fp32 reference (its verified cache entry; run that
  first), computing in fp32 around vLLM's int8 kernels, through ``--backend openai``;
* ``vllm-awq`` — the same for the AWQ W4A16 checkpoint (``--schemes awq-w4a16``; int4 weights): the seed's vLLM
  configuration. vLLM's CPU kernel for it (``cpu_gemm_wna16``) exists only on AVX-512 CPUs and takes 16-bit
  activations, so it computes in bfloat16 (:func:`scorer.engines.vllm.compute_dtype`).

Each run is a fresh ``semif score`` process (the user's command): ``wall_s`` is the whole process (imports, model
load or engine handshake, scoring); ``scoring_s`` runs from the moment its progress bar appears (model loaded,
prompts rendered and validated) to the last record written (polled), so ``decisions_per_s_scoring`` excludes the
load; ``records_total_s`` is the sum of the records' own ``timing.total_s``. Engines are started before the first
repeat and kept up (their own start-up time is reported apart), but every run starts on a cold engine cache, as
the in-process backends start on an empty radix cache in each new process: before each of its runs llama-server
is restarted (its host-memory prompt cache, ``--cache-ram``, would otherwise serve a repeat from the last one:
measured, 2.7 s instead of 26 s for boundary's second repeat) and vLLM's prefix cache is emptied
(``POST /reset_prefix_cache``, a development endpoint: the engines run with ``VLLM_SERVER_DEV_MODE=1`` on
loopback); configurations run round-robin, ``--repeats`` times each (``--repeats-of SET=N`` sets one set's count:
a long set may run fewer), and the medians are reported.
Quality from the records, against the rows' labels: balanced accuracy (within each family, averaged over families,
as ``semif eval`` reports it) raw and calibrated (the label-free in-batch
prior, mean estimator, every signature: what ``--batch-calibrate`` applies), decisions changed and max |Δp| against
``torch-fp32``, and whether the prompt/token hashes are identical (they must be). Scores are deterministic per
configuration (checked: every repeat's choices equal the first's, reported as ``repeats_identical``).

Routed rows (computed from the same records, no extra run): fast = one engine, accurate = another, the margin
threshold chosen out of fold (:func:`scorer.scoring.routing.choose_threshold`); time = the fast run's scoring time
plus the accurate run's per-record time of the escalated decisions.

    .venv/bin/python benchmarks/engines.py --models qwen2.5-0.5b --sets boundary,authored,shape-small \\
        --configs torch-fp32,llamacpp-q4,llama-server,vllm-fp32 --repeats 1 --output data/results/engines-X.json

One report (kind ``engines``) and every run's records beside it (``OUTPUT.records/``, each cited by sha256 in its
table row); progress on stderr. Quote it only from a quiet machine (load averages inside). ``--recompute REPORT``
runs nothing: it rebuilds a report's quality columns and routed rows from its records with this version's metrics
(timings stay the run's) into a new report that cites the old one.
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
from scorer.calibration.batch import in_batch_calibrated  # noqa: E402
from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.formats.envelope import ENVELOPE_KEYS, envelope, file_input, write_report  # noqa: E402

FORMAT = "semif-engines-v1"
SETS = {"boundary": ROOT / "data/eval/boundary.jsonl", "authored": ROOT / "data/eval/authored.jsonl",
        "shape-small": ROOT / "data/workloads/shape-small.jsonl"}
CONFIGS = ("torch-fp32", "llamacpp-q4", "llama-server", "vllm-fp32", "vllm-bf16", "vllm-w8a8", "vllm-awq")
REFERENCE = "torch-fp32"
ROUTES = (("vllm-fp32", "llamacpp-q4"), ("llamacpp-q4", "vllm-fp32"), ("llama-server", "torch-fp32"),
          ("vllm-w8a8", "llamacpp-q4"), ("vllm-w8a8", "llama-server"), ("llama-server", "vllm-w8a8"),
          ("vllm-awq", "llamacpp-q4"), ("llamacpp-q4", "vllm-awq"))


def _flags(config: str, model: str, engines: dict[str, dict[str, Any]], threads: int) -> list[str]:
    if config == "torch-fp32":
        return ["--model", model, "--backend", "torch", "--threads", str(threads)]
    if config == "llamacpp-q4":
        return ["--model", model, "--backend", "llamacpp", "--threads", str(threads)]
    return ["--model", model, "--backend", "openai", "--base-url", engines[config]["base_url"],
            "--concurrency", "4"]


def _start_engines(model: str, configs: list[str], threads: int, port: int | None = None
                   ) -> dict[str, dict[str, Any]]:
    from scorer.engines.launcher import stop

    out: dict[str, dict[str, Any]] = {}
    try:
        for c in configs:
            if c in ENGINE_CONFIGS:
                out[c] = _start_one(c, model, threads, port)
    except BaseException:
        # one engine that cannot start (three vLLM engines of the 0.5B model do not fit in 24 GiB together) must not
        # leave the others running
        for st in out.values():
            stop(port=st["port"])
        raise
    return out


ENGINE_CONFIGS = ("llama-server", "vllm-fp32", "vllm-bf16", "vllm-w8a8", "vllm-awq")
"""The configurations served by an engine (the others run in the semif score process)."""


def _start_one(config: str, model: str, threads: int, port: int | None) -> dict[str, Any]:
    from scorer.engines.launcher import EngineSpec, start

    if config == "llama-server":
        return start(EngineSpec(engine="llama-server", model=model, ctx=4096, parallel=4, threads=threads, port=port))
    if config in QUANTIZED:
        from scorer.engines.vllm import compute_dtype

        return start(EngineSpec(engine="vllm", model=str(_scheme_folder(model, QUANTIZED[config])), ctx=4096,
                                dtype=compute_dtype(QUANTIZED[config]), threads=threads, kv_cache_gib=4))
    dtype = {"vllm-fp32": "float32", "vllm-bf16": "bfloat16"}[config]
    return start(EngineSpec(engine="vllm", model=model, ctx=4096, dtype=dtype, threads=threads, kv_cache_gib=4))


def _cold(config: str, model: str, engines: dict[str, dict[str, Any]], threads: int) -> dict[str, Any] | None:
    """Empty the engine's caches before a run (see the module's doc); what was done, for the report."""
    import httpx

    from scorer.engines.launcher import stop

    if config == "llama-server":
        st = engines[config]
        stop(port=st["port"])
        t0 = time.perf_counter()
        engines[config] = _start_engines(model, [config], threads, port=st["port"])[config]
        return {"action": "restarted", "seconds": round(time.perf_counter() - t0, 3)}
    if config.startswith("vllm-"):
        r = httpx.post(f"{engines[config]['base_url']}/reset_prefix_cache", timeout=120)
        if r.status_code != 200 or not r.json().get("success"):
            raise SystemExit(f"{config}: POST /reset_prefix_cache answered {r.status_code} {r.text[:200]}")
        return {"action": "prefix cache reset", "success": True}
    return None


QUANTIZED = {"vllm-w8a8": "w8a8", "vllm-awq": "awq-w4a16"}
"""The configurations that serve a checkpoint ``semif quant --schemes`` made, and its scheme."""


def _scheme_folder(model: str, scheme: str) -> Path:
    from scorer.studies.quant_schemes import cached_checkpoint

    entry = cached_checkpoint(model, scheme)
    if entry is None:
        raise SystemExit(f"{scheme}: no {scheme} checkpoint of {model} in the cache; make it first with "
                         f"`semif quant --schemes {scheme} --model {model} --input data/eval/boundary.jsonl`")
    return entry.folder


def _repeats_of(text: list[str], sets: list[str], default: int) -> dict[str, int]:
    out = dict.fromkeys(sets, default)
    for item in text:
        name, _, n = item.partition("=")
        if name not in out or not n.isdigit() or int(n) < 1:
            raise SystemExit(f"--repeats-of {item!r}: expected SET=N with SET one of {sets} and N >= 1")
        out[name] = int(n)
    return out


def _skips(text: list[str], sets: list[str], configs: list[str]) -> set[tuple[str, str]]:
    out = set()
    for item in text:
        name, _, config = item.partition("=")
        if name not in sets or config not in configs or config == REFERENCE:
            raise SystemExit(f"--skip {item!r}: expected SET=CONFIG with SET one of {sets} and CONFIG one of "
                             f"{[c for c in configs if c != REFERENCE]} (the reference {REFERENCE} cannot be skipped)")
        out.add((name, config))
    return out


def _run(config: str, flags: list[str], rows: Path, out: Path) -> dict[str, Any]:
    """One ``semif score`` process. Its scoring starts when its progress bar first appears on stderr (the model is
    loaded, or the engine identified and checked, and every prompt rendered and validated) and ends with the last
    record; the first record alone would miss the first group of a shared-mode run."""
    import threading

    cmd = [str(ROOT / ".venv/bin/semif"), "score", "--input", str(rows), "--output", str(out), "--mode", "shared",
           *flags]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    started: list[float] = []
    err_parts: list[bytes] = []

    def read_err() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read1(4096):
            if not started and b"score shared" in chunk:
                started.append(time.perf_counter() - t0)
            err_parts.append(chunk)

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    _first, last, seen = poll(proc, out, t0)
    wall = time.perf_counter() - t0
    reader.join(timeout=10)
    err = b"".join(err_parts).decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{config}: semif score exited {proc.returncode}:\n{err[-4000:]}")
    recs = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    last = last if last is not None and seen == len(recs) else wall
    start = started[0] if started else 0.0
    return {"config": config, "command": " ".join(cmd[1:]), "wall_s": round(wall, 3),
            "scoring_start_s": round(start, 3), "last_record_s": round(last, 3), "records": len(recs),
            "records_total_s": round(sum(float(r["timing"]["total_s"]) for r in recs), 3), "_records": recs}


def _quality(recs: list[dict[str, Any]], labels: list[metrics.Label]) -> dict[str, Any]:
    raw, _ = metrics.align(labels, recs)
    cal, _ = metrics.align(labels, in_batch_calibrated(recs))
    return {"balanced_accuracy_raw": metrics.family_balanced_accuracy(raw), "accuracy_raw": metrics.accuracy(raw),
            "balanced_accuracy_calibrated": metrics.family_balanced_accuracy(cal),
            "accuracy_calibrated": metrics.accuracy(cal), "right_raw": round(metrics.accuracy(raw) * raw.n),
            "right_calibrated": round(metrics.accuracy(cal) * cal.n), "rows": raw.n}


def _against(ref: list[dict[str, Any]], recs: list[dict[str, Any]]) -> dict[str, Any]:
    pairs = list(zip(ref, recs, strict=True))
    return {"decisions_changed": sum(a["choice"] != b["choice"] for a, b in pairs),
            "max_abs_dp": max(abs(x - y) for a, b in pairs
                              for x, y in zip(a["probabilities"], b["probabilities"], strict=True)),
            "tokens_identical": sum((a["prompt_sha256"], a["tokens_sha256"]) == (b["prompt_sha256"], b["tokens_sha256"])
                                    for a, b in pairs),
            "rows": len(pairs)}


def _routed(fast: dict[str, Any], acc: dict[str, Any], labels: list[metrics.Label]) -> dict[str, Any]:
    from scorer.scoring.routing import choose_threshold, routed

    rf, ra = fast["_records"], acc["_records"]
    cands: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.01)
    cands = tuple(c for c in cands if c <= 1)
    chosen = choose_threshold(rf, ra, labels, cands)
    t = chosen["threshold"]
    recs = routed({r["id"]: r for r in rf}, {r["id"]: r for r in ra}, [r["id"] for r in rf], t)
    n_esc = sum(1 for r in recs if r["escalated"])
    acc_share = {r["id"]: float(r["timing"]["forward_s"]) for r in ra}
    time_s = fast["scoring_s"] + sum(acc_share[r["id"]] for r in recs if r["escalated"])
    return {"fast": fast["config"], "accurate": acc["config"], "threshold": t, "escalated": n_esc,
            "escalated_share": n_esc / len(recs), "scoring_s": time_s, "decisions_per_s": len(recs) / time_s,
            "out_of_fold": chosen["out_of_fold"], "fast_only": chosen["fast_only"],
            "accurate_only": chosen["reference_only"],
            "time_accounting": "the fast run's scoring span + the accurate run's per-record forward time (its "
                               "share of the shared passes) for the escalated decisions"}


def _records_dir(report: Path) -> Path:
    return report.with_name(report.stem + ".records")


def _keep(made: Path, records_dir: Path, base: Path) -> dict[str, Any]:
    """Copy one run's records into the report's records folder; the table row cites the copy."""
    import shutil

    records_dir.mkdir(parents=True, exist_ok=True)
    kept = records_dir / made.name
    shutil.copyfile(made, kept)
    return {"path": str(kept.relative_to(base) if kept.is_relative_to(base) else kept),
            "sha256": file_input(kept)["sha256"]}


def _routes(model: str, set_name: str, by_config: dict[str, dict[str, Any]], labels: list[metrics.Label]
            ) -> list[dict[str, Any]]:
    return [{"model": model, "set": set_name, **_routed(by_config[fast], by_config[acc], labels)}
            for fast, acc in ROUTES if fast in by_config and acc in by_config]


def recompute(report_path: Path, output: Path) -> int:
    """``--recompute``: the quality columns, the comparison with the reference and the routed rows of a report,
    rebuilt from its records folder with this version's metrics; timings, commands and load stay the run's own. The
    new report cites the old one (``recomputed_from``) and each records file by sha256 (checked)."""
    if output.exists():
        raise SystemExit(str(refuse_overwrite(output)))
    old = orjson.loads(report_path.read_bytes())
    if old.get("kind") != "engines":
        raise SystemExit(f"{report_path}: kind {old.get('kind')!r}, expected an engines report")
    records_dir = _records_dir(report_path)
    table, routes = [], []
    for model in old["models"]:
        for set_name in old["sets"]:
            labels = metrics.labels_from_decisions(str(SETS[set_name]))
            rows = [r for r in old["table"] if r["model"] == model and r["set"] == set_name]
            recs_of: dict[str, list[dict[str, Any]]] = {}
            cites: dict[str, list[dict[str, Any]]] = {}
            for r in rows:
                name = f"{model}-{set_name}-{r['config']}-0.jsonl"
                sha = file_input(records_dir / name)["sha256"]
                cited = (r.get("records") or [None])[0]
                if cited is not None and cited["sha256"] != sha:
                    raise SystemExit(f"{records_dir / name}: sha256 differs from the one {report_path} cites")
                cites[r["config"]] = r.get("records") or [{"path": f"{records_dir.name}/{name}", "sha256": sha}]
                recs_of[r["config"]] = [orjson.loads(line) for line in (records_dir / name).read_bytes().splitlines()]
            ref = recs_of[REFERENCE]
            by_config = {}
            for r in rows:
                recs = recs_of[r["config"]]
                new = {**r, **_quality(recs, labels), "vs_reference": _against(ref, recs),
                       "records": cites[r["config"]]}
                table.append(new)
                by_config[r["config"]] = {**new, "_records": recs}
            routes += _routes(model, set_name, by_config, labels)
    report = {**envelope("engines", FORMAT, {**old["inputs"], "recomputed_from": file_input(report_path)}),
              **{k: v for k, v in old.items() if k not in (*ENVELOPE_KEYS, "table", "routes")},
              "run_created_utc": old["created_utc"], "run_machine": old["machine"], "run_versions": old["versions"],
              "table": table, "routes": routes,
              "recomputed": "quality columns, vs_reference and routed rows rebuilt from the run's records by "
                            "benchmarks/engines.py --recompute (balanced accuracy per family, averaged over "
                            "families); timings, commands, engines and load averages are the run's own"}
    write_report(output, report)
    print(f"[engines] wrote {output} (recomputed from {report_path})", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="qwen2.5-0.5b")
    ap.add_argument("--sets", default="boundary,authored,shape-small")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--repeats-of", action="append", default=[], metavar="SET=N",
                    help="repeats of one set (overrides --repeats for it; repeatable)")
    ap.add_argument("--skip", action="append", default=[], metavar="SET=CONFIG",
                    help="leave one configuration out on one set (repeatable; the report lists what was skipped): "
                         "vLLM bf16 has no native kernel on a CPU without AVX-512 BF16 and runs ~5x slower than fp32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--one-engine-at-a-time", action="store_true",
                    help="start each configuration's engine alone and run all its sets before the next (when the "
                         "engines together do not fit in memory: qwen2.5-1.5b's vLLM beside torch, or the 0.5B "
                         "model's three vLLM configurations together; idle engines also slow the others down)")
    ap.add_argument("--output", type=Path, required=True,
                    help="the report; every run's records go beside it in OUTPUT.records/ (both create-only)")
    ap.add_argument("--recompute", type=Path, metavar="REPORT",
                    help="no run: rebuild REPORT's quality columns and routed rows from the records beside it "
                         "(REPORT.records/) with this version's metrics, keeping its timings; writes --output")
    args = ap.parse_args()
    if args.recompute is not None:
        return recompute(args.recompute, args.output)
    records_dir = _records_dir(args.output)
    for path in (args.output, records_dir):
        if path.exists():
            raise SystemExit(str(refuse_overwrite(path)))
    configs = [c for c in args.configs.split(",") if c]
    bad = [c for c in configs if c not in CONFIGS]
    if bad or REFERENCE not in configs:
        raise SystemExit(f"--configs: unknown {bad} or missing {REFERENCE} (the reference); known {CONFIGS}")
    sets = [s for s in args.sets.split(",") if s]
    repeats = _repeats_of(args.repeats_of, sets, args.repeats)
    skip = _skips(args.skip, sets, configs)
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # the engines inherit it: /reset_prefix_cache (see _cold)
    load_before = load_average()
    from scorer.engines.launcher import stop

    table: list[dict[str, Any]] = []
    routes: list[dict[str, Any]] = []
    engines_started: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="semif-engines-") as tmp:
        for model in args.models.split(","):
            # Round-robin (every engine up, configurations interleaved per repeat) unless memory forbids it:
            # --one-engine-at-a-time runs each configuration's repeats over every set with only its own engine up.
            batches = [[c] for c in configs] if args.one_engine_at_a_time else [configs]
            runs: dict[tuple[str, str], list[dict[str, Any]]] = {(s, c): [] for s in sets for c in configs}
            engines_started[model] = {}
            for batch in batches:
                engines = _start_engines(model, batch, args.threads)
                engines_started[model].update({c: {"ready_s": st["ready_s"],
                                                   "engine_version": st.get("engine_version"),
                                                   "command": st["command"]} for c, st in engines.items()})
                try:
                    for set_name in sets:
                        for rep in range(repeats[set_name]):
                            for c in batch:
                                if (set_name, c) in skip:
                                    continue
                                print(f"[engines] {model} {set_name} repeat {rep + 1}/{repeats[set_name]} {c} …",
                                      file=sys.stderr, flush=True)
                                cold = _cold(c, model, engines, args.threads)
                                r = _run(c, _flags(c, model, engines, args.threads), SETS[set_name],
                                         Path(tmp) / f"{model}-{set_name}-{c}-{rep}.jsonl")
                                r["cold_start"] = cold
                                r["records_file"] = _keep(Path(tmp) / f"{model}-{set_name}-{c}-{rep}.jsonl",
                                                          records_dir, args.output.parent)
                                span = r["last_record_s"] - r["scoring_start_s"]
                                print(f"[engines]   wall {r['wall_s']:.1f} s, scoring {span:.1f} s",
                                      file=sys.stderr, flush=True)
                                runs[(set_name, c)].append(r)
                finally:
                    for st in engines.values():
                        stop(port=st["port"])
            for set_name in sets:
                labels = metrics.labels_from_decisions(str(SETS[set_name]))
                ref = runs[(set_name, REFERENCE)][0]["_records"]
                by_config: dict[str, dict[str, Any]] = {}
                for c in configs:
                    if (set_name, c) in skip:
                        continue
                    mine = runs[(set_name, c)]
                    recs = mine[0]["_records"]
                    scoring = statistics.median(r["last_record_s"] - r["scoring_start_s"] for r in mine)
                    wall = statistics.median(r["wall_s"] for r in mine)
                    n = len(recs)
                    row = {"model": model, "set": set_name, "config": c, "rows": n, "repeats": len(mine),
                           "wall_s": wall, "scoring_s": scoring,
                           "records_total_s": statistics.median(r["records_total_s"] for r in mine),
                           "decisions_per_s_whole_process": n / wall,
                           "decisions_per_s_scoring": n / scoring if scoring > 0 else None,
                           "engine": recs[0]["model"].get("engine", {}).get("kind") or recs[0]["model"]["backend"],
                           "dtype": recs[0]["model"].get("dtype"), "score_kind": recs[0]["score_kind"],
                           **_quality(recs, labels), "vs_reference": _against(ref, recs),
                           "repeats_identical": all([x["choice"] for x in r["_records"]]
                                                    == [x["choice"] for x in recs] for r in mine),
                           "scoring_s_each": [round(r["last_record_s"] - r["scoring_start_s"], 3) for r in mine],
                           "cold_start": [r["cold_start"] for r in mine],
                           "records": [r["records_file"] for r in mine],
                           "command": mine[0]["command"]}
                    table.append(row)
                    by_config[c] = {**row, "_records": recs}
                routes += _routes(model, set_name, by_config, labels)
    report = {**envelope("engines", FORMAT, {s: file_input(SETS[s]) for s in sets}),
              "title": f"Engines side by side: {args.models} on {', '.join(sets)} (shared mode)",
              "models": args.models.split(","), "sets": sets, "configs": configs, "repeats": repeats,
              "threads": args.threads, "reference": REFERENCE,
              "schedule": "one engine at a time (each configuration's sets in a row)" if args.one_engine_at_a_time
              else "round-robin (every engine up, configurations interleaved per repeat)",
              "skipped": [{"set": s, "config": c} for s, c in sorted(skip)],
              "load_average": load_span(load_before),
              "engines_started": engines_started, "table": table, "routes": routes,
              "notes": ["decisions/s (scoring) = rows / (last record - the run's start of scoring: its progress bar "
                        "appears once the model is loaded and the prompts validated); whole process = rows / the "
                        "semif score process's wall time",
                        "calibrated = the label-free in-batch prior (mean, every signature), in-sample as "
                        "--batch-calibrate applies it; raw = the model's own readout",
                        "vs_reference: against torch-fp32 on the same rows (changed choices, max |dp| over options, "
                        "identical prompt+token hashes)"]}
    write_report(args.output, report)
    print(f"[engines] wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
