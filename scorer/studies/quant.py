"""``semif quant``: the quantization ladder, measured against the torch fp32 reference.

1. The reference weights: every tensor of the model's GGUF dequantized to F32 and written as an F32
   GGUF with the ``gguf`` package (:func:`scorer.models.gguf_tools.write_f32`). For the models of the embedded
   store these are themselves dequantized from a quantized file (e.g. SmolLM2's Q4_1): the ladder
   measures what re-quantizing costs relative to that reference, not relative to original fp16 weights.
2. The rungs: llama.cpp's own quantizer (``llama_model_quantize``) turns the F32 GGUF into Q8_0, Q5_K_M,
   Q4_K_M, Q4_0 and a 3-bit type (default Q3_K_M). Where a tensor's rows do not fit a type's block size,
   llama.cpp falls back to another type; the report lists each rung's real tensor types and bits/weight.
3. The same decisions are scored on the torch backend (fp32, the same dequantized weights) and on
   every rung with llama.cpp (plus the F32 GGUF itself, which isolates llama.cpp's own drift, and the
   store's original file). Per rung: file size, decisions/s, balanced accuracy (when labels exist),
   changed choices vs the reference, max and median |Δp|, median allowed mass and, on the generation
   path (one JSON array per state of yes/no criteria, ``semif-array-v1``), how many arrays came back
   complete.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer import backends  # load_backend looked up when called: the seam tests replace
from scorer.backends import BackendConfig
from scorer.backends.base import Backend
from scorer.calibration.batch import in_batch_calibrated
from scorer.core.errors import InputError, ModelError
from scorer.core.hashing import sha256_file
from scorer.core.io import check_writable, write_atomic
from scorer.core.machine import load_average, load_span
from scorer.evaluation import metrics
from scorer.evaluation.compare import compare_records
from scorer.formats.envelope import carried_inputs, make_report, write_report
from scorer.formats.records import dumps_record
from scorer.formats.rows import Decision, load_decisions
from scorer.models import store
from scorer.models.gguf_tools import FTYPES, quantize, write_f32
from scorer.prompting.prompt import state_text
from scorer.scoring.generation import Criterion, VersusInput, default_max_new_tokens, run_generated
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS, MODES, prepare, score_items

REPORT_FORMAT = "semif-quant-v2"
"""v2: the report envelope; per run ``load_average`` {before, after} (v1: ``loadavg_1m_before_after``)."""
DEFAULT_RUNGS = ("Q8_0", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M")
REFERENCE_NOTE = (
    "Reference weights: the model's GGUF dequantized to fp32. For the models of the embedded store that GGUF "
    "is itself quantized (e.g. SmolLM2-135M Q4_1, Qwen2.5 Q4_K_M), so the reference is a dequantized quantized "
    "model, not the original fp16/bf16 weights; the torch reference and the F32 GGUF hold the same numbers "
    "(both dequantized by gguf-py). Every rung is quantized from that F32 GGUF."
)
PROBABILITY_NOTE = ("probabilities are uncalibrated conditional option scores (softmax over the declared options' "
                    "answer-slot logits); |dp| is the largest absolute difference over a decision's options")


@dataclass(frozen=True)
class QuantConfig:
    """One ladder run."""

    model: str
    """Registry key or .gguf path of the model whose weights are the reference."""
    input: Path
    """Decision rows (JSONL) scored on the reference and on every rung."""
    output: Path
    """Where the JSON report goes."""
    rungs: tuple[str, ...] = DEFAULT_RUNGS
    """llama.cpp quantization types, in ladder order."""
    mode: str = "shared"
    """Scoring mode for every run (the same for all, so rungs differ only in their weights)."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per pass."""
    threads: int | None = None
    """CPU threads for torch and llama.cpp (default: all usable cores)."""
    workdir: Path | None = None
    """Where the F32 and quantized GGUFs are written (default: a folder in the model cache)."""
    keep_files: bool = False
    """Keep the written GGUFs (otherwise each is deleted once measured)."""
    generation: bool = True
    """Also run the generation path (JSON arrays) where the decisions are yes/no criteria about a state."""
    max_new_tokens: int | None = None
    """Generation limit per array (default: versus's 4 tokens per criterion + 16)."""
    include_source: bool = True
    """Also measure the model's original GGUF as a rung."""
    records_dir: Path | None = None
    """If set, every run's records are written there as JSONL (for ``semif compare``)."""
    overwrite: bool = False
    """Overwrite an existing report and existing ``records_dir`` files (``--force``); otherwise both are
    refused before any work starts."""
    command: str = ""
    """The command line, for the report."""


@dataclass
class _Run:
    """One scored run over the decision set."""

    records: list[dict[str, Any]]
    prepare_s: float
    score_s: float
    load_s: float
    generation: dict[str, Any] | None
    load_average: dict[str, Any]
    """The machine's load averages before and after (other work on the CPUs skews the timings)."""


def array_inputs(decisions: list[Decision]) -> list[VersusInput]:
    """Generation-path inputs: the rows of each state whose options are exactly yes/no, in input order."""
    groups: dict[str, list[Decision]] = {}
    for d in decisions:
        if d.option_ids == ["yes", "no"]:
            groups.setdefault(state_text(d.state), []).append(d)
    out = []
    for k, rows in enumerate(groups.values()):
        first = rows[0]
        name = str(first.extra.get("state_id", f"state-{k + 1}"))
        crit = tuple(Criterion(d.id, d.question, d.extra.get("label") if d.extra.get("label") in ("yes", "no")
                               else None) for d in rows)
        out.append(VersusInput(name, first.state, crit))
    return out


def _generate(backend: Backend, inputs: list[Any], max_new: int | None) -> dict[str, Any]:
    arrays = []
    t0 = time.perf_counter()
    for inp in inputs:
        limit = max_new or default_max_new_tokens(len(inp.criteria))
        g = run_generated(backend, inp, 0, False, time.perf_counter(), limit, 0)
        labels = [c.label for c in inp.criteria]
        correct = (sum(1 for v, lab in zip(g["parsed"], labels, strict=True) if lab is not None and v == lab)
                   if g["complete"] else 0)
        arrays.append({"id": inp.id, "criteria": len(inp.criteria), "complete": g["complete"], "valid": g["valid"],
                       "error": g["error"], "output_tokens": g["output_tokens"], "stop_reason": g["stop_reason"],
                       "seconds": g["total_s"], "correct": correct, "text": g["text"]})
    return {"arrays": len(arrays), "complete": sum(a["complete"] for a in arrays),
            "valid": sum(a["valid"] for a in arrays), "seconds": round(time.perf_counter() - t0, 3),
            "max_new_tokens": max_new or "4 per criterion + 16", "per_array": arrays}


def score_decisions(backend: Backend, decisions: list[Decision], mode: str,
                    max_batch_tokens: int) -> tuple[list[dict[str, Any]], float, float]:
    """Records of ``decisions`` on ``backend``, with the seconds spent preparing (render, encode, validate) and
    scoring: the one scoring loop of the ladder and of ``--schemes``."""
    t0 = time.perf_counter()
    items = prepare(backend, decisions, with_prefix=mode != "direct")
    t1 = time.perf_counter()
    run = {"config_sha256": "quant", "started_unix": round(time.time(), 3), "resumed_from": 0}
    records = list(score_items(backend, items, mode, run, 0, max_batch_tokens))
    return records, t1 - t0, time.perf_counter() - t1


def _score(backend: Backend, decisions: list[Decision], cfg: QuantConfig, load_s: float,
           arrays: list[Any]) -> _Run:
    before = load_average()
    records, prepare_s, score_s = score_decisions(backend, decisions, cfg.mode, cfg.max_batch_tokens)
    gen = _generate(backend, arrays, cfg.max_new_tokens) if cfg.generation and arrays else None
    return _Run(records, prepare_s, score_s, load_s, gen, load_span(before))


def labels_summary(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    try:
        labels = metrics.labels_from_records(records, "records")
    except InputError:
        return None
    table, _ = metrics.align(labels, records)
    cal, _ = metrics.align(labels, in_batch_calibrated(records))
    return {"labelled": table.n, "accuracy": metrics.accuracy(table),
            "balanced_accuracy": metrics.family_balanced_accuracy(table),
            # after the label-free in-batch prior (what --batch-calibrate applies): a few hundredths of drift can
            # move a calibrated choice, whose margins are small, where the raw one stays
            "accuracy_calibrated": metrics.accuracy(cal),
            "balanced_accuracy_calibrated": metrics.family_balanced_accuracy(cal)}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _summary(run: _Run, reference: _Run | None) -> dict[str, Any]:
    recs = run.records
    out: dict[str, Any] = {
        "decisions": len(recs), "load_s": round(run.load_s, 3), "prepare_s": round(run.prepare_s, 3),
        "score_s": round(run.score_s, 3), "decisions_per_s": len(recs) / run.score_s if run.score_s > 0 else None,
        "labels": labels_summary(recs), "ties": sum(r["tie"] for r in recs),
        "median_allowed_mass": _median([r["allowed_token_mass"] for r in recs]),
        "load_average": run.load_average,
    }
    if reference is not None:
        s = compare_records(reference.records, recs, "reference", "rung")["summary"]
        out.update(changed_choices=s["flips"], max_abs_dp=s["max_abs_dp"], median_abs_dp=s["median_abs_dp"],
                   tokens_sha256_equal=s["tokens_sha256_equal"],
                   flipped_reference_margin_max=s["flipped_margin_a_max"])
    if run.generation is not None:
        g = run.generation
        out["generation"] = {k: g[k] for k in ("arrays", "complete", "valid", "seconds")}
    return out


def _file_block(path: Path) -> dict[str, Any]:
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


_FORCE_HINT = "pass --force, or choose another --output / --records-dir"


def _records_files(cfg: QuantConfig) -> list[Path]:
    """The JSONL files a ladder run writes into ``records_dir`` (none without one)."""
    if cfg.records_dir is None:
        return []
    names = ["reference-torch-fp32", "rung-F32", *(f"rung-{r}" for r in cfg.rungs)]
    names += ["rung-source"] if cfg.include_source else []
    return [cfg.records_dir / f"{n}.jsonl" for n in names]


def check_outputs(cfg: QuantConfig) -> None:
    """Refuse, before any work, a report or records file that exists (unless ``cfg.overwrite``)."""
    for path in [cfg.output, *_records_files(cfg)]:
        check_writable(path, cfg.overwrite, _FORCE_HINT)


def write_records(path: Path, records: list[dict[str, Any]], overwrite: bool) -> None:
    """One run's records as JSONL, atomically; an existing file is refused unless ``overwrite``."""
    write_atomic(path, b"".join(dumps_record(r) for r in records), overwrite, _FORCE_HINT)


def _write_records(cfg: QuantConfig, name: str, records: list[dict[str, Any]]) -> None:
    if cfg.records_dir is None:
        return
    write_records(cfg.records_dir / f"{name}.jsonl", records, cfg.overwrite)


def _log(msg: str) -> None:
    print(f"[semif quant] {msg}", file=sys.stderr, flush=True)


def run_quant(cfg: QuantConfig) -> dict[str, Any]:
    """Build the ladder, score everything, return the report (not yet written)."""
    bad = [r for r in cfg.rungs if r not in FTYPES or r in ("F32", "F16", "BF16")]
    if bad:
        raise ModelError(f"--rungs {','.join(bad)}: not llama.cpp quantization types "
                         f"(expected some of {', '.join(k for k in FTYPES if k not in ('F32', 'F16', 'BF16'))})")
    if cfg.mode not in MODES:
        raise ModelError(f"--mode {cfg.mode!r} (expected one of {', '.join(MODES)})")
    decisions = load_decisions(cfg.input)
    check_outputs(cfg)
    ref = store.resolve(cfg.model)
    if ref.kind not in ("store", "gguf"):
        raise ModelError(f"semif quant builds its ladder from a GGUF: --model {cfg.model} is a {ref.kind} model")
    src, src_sha = store.gguf_for(ref)
    workdir = cfg.workdir or store.cache_dir() / "quant" / src_sha[:16]
    workdir.mkdir(parents=True, exist_ok=True)
    key = ref.key if ref.kind == "store" else src.stem
    arrays = array_inputs(decisions) if cfg.generation else []
    created = time.time()
    t_start = time.perf_counter()

    _log(f"writing the F32 reference GGUF of {src.name} …")
    f32 = workdir / f"{key}.F32.gguf"
    f32_info = write_f32(src, f32)
    f32_block = {**_file_block(f32), **f32_info}

    _log("scoring the torch fp32 reference …")
    t0 = time.perf_counter()
    torch_backend = backends.load_backend(BackendConfig(model=cfg.model, backend="torch", dtype="float32",
                                               threads=cfg.threads))
    reference = _score(torch_backend, decisions, cfg, time.perf_counter() - t0, arrays)
    ref_info = torch_backend.model_info()
    del torch_backend
    gc.collect()
    _write_records(cfg, "reference-torch-fp32", reference.records)

    plan: list[tuple[str, str]] = [("F32", "F32")] + [(r, r) for r in cfg.rungs]
    if cfg.include_source:
        plan.append(("source", "source"))
    rungs: list[dict[str, Any]] = []
    runs: dict[str, _Run] = {}
    for name, kind in plan:
        quant: dict[str, Any] | None = None
        if kind == "F32":
            path = f32
        elif kind == "source":
            path = src
        else:
            path = workdir / f"{key}.{name}.gguf"
            _log(f"quantizing F32 → {name} …")
            q = quantize(f32, path, name, cfg.threads)
            quant = {"seconds": q.seconds, "tensor_types": q.tensor_types, "fallback_tensors": q.fallback_tensors,
                     "bits_per_weight": q.bits_per_weight}
        _log(f"scoring {name} ({path.name}) on llama.cpp …")
        t0 = time.perf_counter()
        backend = backends.load_backend(BackendConfig(model=cfg.model, backend="llamacpp", gguf=str(path),
                                                      threads=cfg.threads))
        run = _score(backend, decisions, cfg, time.perf_counter() - t0, arrays)
        info = backend.model_info()
        backend.close()
        del backend
        gc.collect()
        runs[name] = run
        _write_records(cfg, f"rung-{name}", run.records)
        rungs.append({"name": name, **_file_block(path), "quantization": info["gguf"]["quantization"],
                      "made_by": {"F32": "gguf-py dequantize of the source GGUF", "source": "the model store's file"}
                      .get(kind, "llama.cpp llama_model_quantize from the F32 GGUF"),
                      "quantize": quant, "llama": info["llama"], **_summary(run, reference)})
        s = rungs[-1]
        _log(f"{name}: {s['bytes'] / 2**20:.1f} MiB, {s['changed_choices']} changed choices, "
             f"max |dp| {s['max_abs_dp']:.4f}, {s['decisions_per_s']:.2f} decisions/s")
        if kind not in ("F32", "source") and not cfg.keep_files:
            path.unlink()
    if not cfg.keep_files:
        f32.unlink()

    ids = [r["id"] for r in reference.records]
    rows = []
    for i, rid in enumerate(ids):
        rec = reference.records[i]
        rows.append({"id": rid, "label": rec["extra"].get("label"),
                     "reference": {"choice": rec["choice"], "p": rec["probabilities"]},
                     **{name: {"choice": run.records[i]["choice"], "p": run.records[i]["probabilities"]}
                        for name, run in runs.items()}})
    body = {
        "command": cfg.command,
        "wall_s": round(time.perf_counter() - t_start, 3),
        "model": {"key": key, "source_gguf": _file_block(src), "source_quantization": rungs[-1]["quantization"]
                  if cfg.include_source else None},
        "reference_weights_note": REFERENCE_NOTE,
        "probability_note": PROBABILITY_NOTE,
        "f32_gguf": f32_block,
        "decision_set": {"path": str(cfg.input), "sha256": sha256_file(cfg.input),
                         "rows": len(decisions), "generation_arrays": len(arrays)},
        "protocol": {"mode": cfg.mode, "max_batch_tokens": cfg.max_batch_tokens, "threads": cfg.threads,
                     "generation": cfg.generation, "generation_prompt": "semif-array-v1 (see semif versus)",
                     "decoding": "greedy, stop at end-of-turn or the token limit; arrays judged strictly",
                     "reference_backend": "torch fp32 on cpu", "rung_backend": "llama.cpp (CPU), flash attention off",
                     "timing": "wall clock of the scoring loop (prompts already rendered and validated), one pass, "
                               "no warm-up; load_average shows other work on the machine"},
        "reference": {"backend": ref_info.get("backend"), "dtype": ref_info.get("dtype"),
                      "device": ref_info.get("device"), "weights": ref_info.get("weights"),
                      **_summary(reference, None),
                      **({"generation_arrays": reference.generation["per_array"]} if reference.generation else {})},
        "rungs": rungs,
        "rows": rows,
    }
    return make_report("quant", REPORT_FORMAT, quant_inputs(body, src), body, created=created)


def quant_inputs(body: dict[str, Any], source: Path | None = None) -> dict[str, dict[str, Any]]:
    """A quant report's ``inputs``: the decision set and the source GGUF (at ``source``, else by its file name)."""
    gguf = body["model"]["source_gguf"]
    return {**carried_inputs(body), "model.source_gguf": {"path": str(source or gguf["file"]),
                                                          "sha256": gguf["sha256"], "bytes": gguf["bytes"]}}


def _write(report: dict[str, Any], out: Path, overwrite: bool) -> None:
    write_report(out, report, overwrite, _FORCE_HINT)


def print_report(rep: dict[str, Any]) -> None:
    """One line per rung (stdout)."""
    print(f"quantization ladder of {rep['model']['key']} on {rep['decision_set']['rows']} decisions "
          f"({rep['protocol']['mode']} mode)")
    print(rep["reference_weights_note"])
    print(f"{'rung':<8} {'quant':<8} {'MiB':>8} {'dec/s':>7} {'bal.acc':>7} {'changed':>7} {'max|dp|':>8} "
          f"{'med|dp|':>8} {'mass':>6} {'arrays':>7}")

    def line(name: str, quant: str, mib: float | None, s: dict[str, Any]) -> None:
        lab = s.get("labels")
        gen = s.get("generation")
        arrays = "" if not gen else f"{gen['complete']}/{gen['arrays']}"
        print(f"{name:<8} {quant:<8} {'' if mib is None else f'{mib:.1f}':>8} {s['decisions_per_s']:>7.2f} "
              f"{'' if not lab else format(lab['balanced_accuracy'], '.3f'):>7} "
              f"{s.get('changed_choices', ''):>7} "
              f"{'' if 'max_abs_dp' not in s else format(s['max_abs_dp'], '.4f'):>8} "
              f"{'' if 'median_abs_dp' not in s else format(s['median_abs_dp'], '.4f'):>8} "
              f"{s['median_allowed_mass']:>6.3f} {arrays:>7}")

    line("torch", str(rep["reference"]["dtype"]), None, rep["reference"])
    for r in rep["rungs"]:
        line(r["name"], r["quantization"], r["bytes"] / 2**20, r)


def quant(cfg: QuantConfig) -> dict[str, Any]:
    """``semif quant``: run the ladder, write its report to ``cfg.output``, print its table; returns the report."""
    rep = run_quant(cfg)
    _write(rep, cfg.output, cfg.overwrite)
    print(f"[semif] wrote {cfg.output}", file=sys.stderr)
    print_report(rep)
    return rep
