"""``semif quant --schemes``: llama.cpp types, W8A8, AWQ and GPTQ from one fp32 reference, each scored where it runs.

1. The reference: the torch backend's fp32 checkpoint of the model's GGUF (``hf-v2/<sha256>/``, dequantized once
   and verified by its manifest; :func:`scorer.backends.torch_backend.dequantize_gguf`), scored on torch fp32.
2. Producing (each output cached and verified: :mod:`scorer.studies.quant_cache`):

   * ``gguf:TYPE``: llama.cpp's own quantizer (``llama_model_quantize``) from the F32 GGUF of the same source
     GGUF (:func:`scorer.models.gguf_tools.write_f32`, gguf-py's dequantization, the same one transformers applies to
     build the fp32 checkpoint: the two hold the same numbers, the ladder's F32 rung measures it). No calibration.
   * ``w8a8``, ``awq-w4a16``, ``gptq-w4a16``: llm-compressor from the fp32 checkpoint with the committed calibration
     text (recipes in :mod:`scorer.engines.llmcompressor`), in its own pinned venv.

3. Scoring, each where it really runs, and each run's records say how it ran (``model.quantization`` /
   ``model.engine.weights.quantization``):

   * GGUF types on llama.cpp (native kernels);
   * W8A8 natively on vLLM's CPU build (its int8 GEMM) through ``--backend openai`` and the engine launcher,
     and emulated in transformers (``CompressedTensorsConfig(run_compressed=False)``); both reported;
   * W4A16 emulated in transformers; natively on vLLM only where a kernel exists (a GPU, or an AVX-512 CPU for
     ``cpu_gemm_wna16``), else the run is reported as skipped with the reason, never as a number.

Every run is compared with the reference by :func:`scorer.evaluation.compare.compare_records` (what ``semif compare``
prints), from the records it writes into ``records_dir``.
"""

from __future__ import annotations

import gc
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer import backends  # load_backend looked up when called: the seam tests replace
from scorer.backends import BackendConfig
from scorer.backends.torch_backend import dequantize_gguf
from scorer.core.errors import EngineError, InputError, ValidationError
from scorer.core.hashing import sha256_file, sha256_hex
from scorer.core.io import check_writable
from scorer.core.machine import load_average, load_span
from scorer.core.package_data import data_path
from scorer.engines import launcher, llmcompressor
from scorer.engines.vllm import compute_dtype, wna16_skip_reason
from scorer.evaluation.compare import compare_records
from scorer.formats.envelope import carried_inputs, make_report, write_report
from scorer.formats.records import read_records
from scorer.formats.rows import Decision, load_decisions
from scorer.models import store
from scorer.models.gguf_tools import FTYPES, quantize, same_grid, write_f32
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS, MODES
from scorer.studies import quant_cache
from scorer.studies.quant import PROBABILITY_NOTE, labels_summary, score_decisions, write_records

REPORT_FORMAT = "semif-quant-schemes-v1"
GGUF_TYPES = tuple(k for k in FTYPES if k not in ("F32", "F16", "BF16"))
DEFAULT_SCHEMES = ("gguf:Q8_0", "gguf:Q5_K_M", "gguf:Q4_K_M", "gguf:Q4_0", "w8a8", "awq-w4a16", "gptq-w4a16")
DEFAULT_CALIBRATION = data_path("quant", "calibration.txt")
"""The committed calibration text (29 short samples: support mail, policy, science, code, dialogue, three languages);
its sha256 is part of every llm-compressor output's cache key and of the report."""
DEFAULT_MAX_SEQ_LENGTH = 512
REFERENCE_NOTE = (
    "Reference: the fp32 checkpoint the torch backend builds from the model's GGUF (every tensor dequantized by "
    "gguf-py). For the models of the embedded store that GGUF is itself quantized (SmolLM2-135M Q4_1, Qwen2.5 "
    "Q4_K_M), so the reference is a dequantized quantized model, not the original fp16/bf16 weights: a llama.cpp "
    "type re-quantized from it can land on the source's own grid and look lossless. llm-compressor schemes are made "
    "from that checkpoint, llama.cpp types from the F32 GGUF of the same source (the same numbers).")
_FORCE_HINT = "pass --force, or choose another --output / --records-dir"


def parse_schemes(text: str) -> tuple[str, ...]:
    """``gguf:Q8_0,Q5_K_M,w8a8`` → ``("gguf:Q8_0", "gguf:Q5_K_M", "w8a8")``: a bare llama.cpp type after a
    ``gguf:`` item is one more GGUF type. A ValidationError naming the valid schemes for anything else."""
    valid = (f"gguf:TYPE (TYPE one of {', '.join(GGUF_TYPES)}; later bare TYPEs continue the list), "
             f"{', '.join(llmcompressor.SCHEMES)}")
    out: list[str] = []
    seen_gguf = False
    for raw in text.split(","):
        item = raw.strip()
        name = item[5:] if item.startswith("gguf:") else item
        if item in llmcompressor.SCHEMES:
            scheme = item
        elif name in GGUF_TYPES and (item.startswith("gguf:") or seen_gguf):
            scheme, seen_gguf = f"gguf:{name}", True
        else:
            raise ValidationError(f"--schemes {text!r}: {item!r} is not a scheme (expected a comma-separated list of "
                                  f"{valid})")
        if scheme in out:
            raise ValidationError(f"--schemes {text!r}: {scheme} is listed twice (expected each scheme once)")
        out.append(scheme)
    return tuple(out)


@dataclass(frozen=True)
class SchemesConfig:
    """One ``semif quant --schemes`` run."""

    model: str
    """Registry key or .gguf path whose fp32 dequantization is the reference."""
    input: Path
    """Decision rows scored on the reference and on every run."""
    output: Path
    """The JSON report."""
    schemes: tuple[str, ...] = DEFAULT_SCHEMES
    """Parsed schemes (:func:`parse_schemes`)."""
    records_dir: Path | None = None
    """Where every run's records go (default: ``<output without .json>.records/``)."""
    calibration: Path = DEFAULT_CALIBRATION
    """Calibration text: samples separated by blank lines."""
    calibration_samples: int | None = None
    """Use only the first N samples (default all); part of the recipe, so of the cache key."""
    max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH
    """Tokens per calibration sample (longer ones are cut); part of the recipe."""
    group_size: int = llmcompressor.GROUP_SIZE
    """Group size of the W4A16 schemes; part of the recipe."""
    mode: str = "shared"
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    threads: int | None = None
    """CPU threads for scoring (torch, llama.cpp, vLLM)."""
    produce_threads: int | None = None
    """CPU threads for llm-compressor (default: torch's choice; one thread can beat two on a busy machine)."""
    engines: bool = True
    """Run vLLM where a scheme runs natively there (False: those runs are reported as skipped, with the reason)."""
    overwrite: bool = False
    command: str = ""

    @property
    def records(self) -> Path:
        return self.records_dir or self.output.with_name(f"{self.output.stem}.records")


def _samples(cfg: SchemesConfig) -> tuple[list[str], str]:
    """The calibration samples (blocks separated by blank lines) and the sha256 of the whole file."""
    where = str(cfg.calibration)
    try:
        data = cfg.calibration.read_bytes()
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(where, None, None, "no such file", "a calibration text (default "
                         f"{DEFAULT_CALIBRATION})") from None
    except IsADirectoryError:
        raise InputError(where, None, None, "is a directory", "a calibration text file") from None
    except UnicodeDecodeError as exc:
        raise InputError(where, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                         "UTF-8 text") from None
    samples = [s.strip() for s in text.replace("\r\n", "\n").split("\n\n") if s.strip()]
    if cfg.calibration_samples is not None:
        samples = samples[:cfg.calibration_samples]
    if not samples:
        raise InputError(where, None, None, "holds no calibration sample", "text blocks separated by blank lines")
    return samples, sha256_hex(data)


def _runs_of(scheme: str) -> list[str]:
    """The runners of a scheme, in report order."""
    if scheme.startswith("gguf:"):
        return ["llama.cpp"]
    if scheme == "w8a8":
        return ["vllm", "transformers-emulated"]
    return ["transformers-emulated", "vllm"]


def _records_path(cfg: SchemesConfig, scheme: str, runner: str) -> Path:
    return cfg.records / f"{scheme.replace(':', '-')}.{runner}.jsonl"


def check_outputs(cfg: SchemesConfig) -> None:
    """Refuse, before any work, an existing report or records file (unless ``overwrite``)."""
    paths = [cfg.output, cfg.records / "reference.torch-fp32.jsonl"]
    paths += [_records_path(cfg, s, r) for s in cfg.schemes for r in _runs_of(s)]
    for path in paths:
        check_writable(path, cfg.overwrite, _FORCE_HINT)


def _log(msg: str) -> None:
    print(f"[semif quant] {msg}", file=sys.stderr, flush=True)


BOUNDARY_MARGIN = 0.1
"""A decision whose reference margin is below this is a "boundary decision": where a few hundredths of drift
can flip it."""


def _summary(records: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, Any]:
    s = compare_records(reference, records, "reference", "run")["summary"]  # checks the runs pair up by id
    mine = {r["id"]: r["choice"] for r in records}
    flips = [r for r in reference if r["choice"] != mine[r["id"]]]
    boundary = [r for r in reference if r["margin"] < BOUNDARY_MARGIN]
    return {"decisions": len(records), "changed_choices": s["flips"], "max_abs_dp": s["max_abs_dp"],
            "median_abs_dp": s["median_abs_dp"], "tokens_sha256_equal": s["tokens_sha256_equal"],
            "flipped_reference_margin_max": s["flipped_margin_a_max"],
            "changed_by_family": dict(sorted(Counter(str((r.get("extra") or {}).get("family", "(none)"))
                                                     for r in flips).items())),
            "boundary_decisions": {"reference_margin_below": BOUNDARY_MARGIN, "decisions": len(boundary),
                                   "changed": sum(r["choice"] != mine[r["id"]] for r in boundary)},
            "labels": labels_summary(records), "median_allowed_mass": s["median_allowed_mass_b"]}


class _Plan:
    """The shared state of one run: the reference, its records, the calibration."""

    def __init__(self, cfg: SchemesConfig, decisions: list[Decision]):
        self.cfg = cfg
        self.decisions = decisions
        self.samples, self.calibration_sha256 = _samples(cfg)
        ref = store.resolve(cfg.model)
        if ref.kind not in ("store", "gguf"):
            raise ValidationError(f"semif quant --schemes starts from a GGUF's fp32 dequantization: --model "
                                  f"{cfg.model} is a {ref.kind} model (expected a registry key or a .gguf file)")
        self.key = ref.key if ref.kind == "store" else Path(ref.name).stem
        self.src, self.src_sha = store.gguf_for(ref)

        self.fp32 = dequantize_gguf(self.src, self.src_sha)  # verified (weights included) before anything uses it
        self.fp32_sha = sha256_file(self.fp32 / store.MANIFEST)
        self.f32_gguf: quant_cache.Entry | None = None
        self.reference: list[dict[str, Any]] = []

    # --- producing -------------------------------------------------------------------------------------------
    def f32_entry(self) -> quant_cache.Entry:
        if self.f32_gguf is None:
            key = quant_cache.EntryKey(self.src_sha, "gguf:F32", {"tool": "gguf-py dequantize (write_f32)"}, None)

            def make(tmp: Path) -> dict[str, Any]:
                _log(f"writing the F32 GGUF of {self.src.name} …")
                target = tmp / f"{self.key}.F32.gguf"
                facts = write_f32(self.src, target)
                # Its sha256 keys every llama.cpp type made from it: kept in the (manifest-checked) meta, so a re-run
                # does not hash gigabytes again.
                return {**facts, "file": target.name, "sha256": sha256_file(target)}

            self.f32_gguf = quant_cache.ensure(key, make)
        return self.f32_gguf

    def llmcompressor_key(self, scheme: str) -> quant_cache.EntryKey:
        """The cache key of an llm-compressor scheme: the fp32 reference, the recipe as data, the calibration."""
        rec = {**llmcompressor.recipe(scheme, self.cfg.group_size), "calibration_samples": len(self.samples),
               "max_seq_length": self.cfg.max_seq_length}
        return quant_cache.EntryKey(self.fp32_sha, scheme, rec, self.calibration_sha256)

    def produce(self, scheme: str) -> tuple[quant_cache.EntryKey, quant_cache.Entry]:
        if scheme.startswith("gguf:"):
            return self._produce_gguf(scheme[5:])
        key = self.llmcompressor_key(scheme)
        rec = key.recipe

        def make(tmp: Path) -> dict[str, Any]:
            _log(f"producing {scheme} with llm-compressor ({len(self.samples)} calibration samples) …")
            log = store.cache_dir() / store.QUANT_LAYOUT / "logs" / f"{key.digest()[:16]}-{scheme}.log"
            return llmcompressor.produce(self.fp32, tmp, rec, scheme, self.samples, self.cfg.max_seq_length,
                                         self.cfg.produce_threads, log)

        return key, quant_cache.ensure(key, make)

    def _produce_gguf(self, ftype: str) -> tuple[quant_cache.EntryKey, quant_cache.Entry]:
        f32 = self.f32_entry()
        f32_file = f32.folder / f32.meta["produced"]["file"]
        key = quant_cache.EntryKey(f32.meta["produced"]["sha256"], f"gguf:{ftype}",
                                   {"tool": "llama.cpp llama_model_quantize", "ftype": ftype, "imatrix": None}, None)

        def make(tmp: Path) -> dict[str, Any]:
            _log(f"quantizing F32 → {ftype} with llama.cpp …")
            made = tmp / f"{self.key}.{ftype}.gguf"
            q = quantize(f32_file, made, ftype, self.cfg.threads)
            # measured once, when the file is made (a tensor-by-tensor comparison of two files takes minutes on
            # this CPU), and kept in the meta: the reference's source is fixed by the f32 this key names
            return {"seconds": q.seconds, "tensor_types": q.tensor_types, "fallback_tensors": q.fallback_tensors,
                    "bits_per_weight": q.bits_per_weight, "against_source": self.against_source(made)}

        return key, quant_cache.ensure(key, make)

    def against_source(self, made: Path) -> dict[str, Any]:
        """How much of a re-quantized file is bit-for-bit the source GGUF
        (:func:`scorer.models.gguf_tools.same_grid`)."""
        _log(f"comparing {made.name} with {self.src.name} tensor by tensor …")
        return {"source": self.src.name, "source_sha256": self.src_sha, **same_grid(self.src, made)}

    # --- scoring ---------------------------------------------------------------------------------------------
    def score_reference(self) -> dict[str, Any]:
        _log("scoring the torch fp32 reference …")
        t0 = time.perf_counter()
        backend = backends.load_backend(BackendConfig(model=self.cfg.model, backend="torch", dtype="float32",
                                             threads=self.cfg.threads))
        load_s = time.perf_counter() - t0
        before = load_average()
        records, prepare_s, score_s = score_decisions(backend, self.decisions, self.cfg.mode, self.cfg.max_batch_tokens)
        info = backend.model_info()
        del backend
        gc.collect()
        self.reference = records
        path = self.cfg.records / "reference.torch-fp32.jsonl"
        write_records(path, records, self.cfg.overwrite)
        return {"runner": "torch fp32", "weights": info.get("weights"), "fp32_checkpoint": str(self.fp32),
                "fp32_manifest_sha256": self.fp32_sha, "records": _file(path), "load_s": round(load_s, 3),
                "prepare_s": round(prepare_s, 3), "score_s": round(score_s, 3),
                "decisions_per_s": len(records) / score_s if score_s > 0 else None, "labels": labels_summary(records),
                "versions": info.get("versions"), "load_average": load_span(before)}

    def run(self, scheme: str, runner: str, folder: Path) -> dict[str, Any]:
        path = _records_path(self.cfg, scheme, runner)
        if runner == "vllm":
            reason = self._vllm_skip(scheme)
            if reason is not None:
                _log(f"{scheme} on vLLM: {reason}")
                return {"runner": runner, "execution": "native", "ran": False, "skipped": reason}
        _log(f"scoring {scheme} on {runner} …")
        before = load_average()
        if runner == "transformers-emulated":
            if self.cfg.overwrite:
                path.unlink(missing_ok=True)  # semif score is create-only; --force was given
            wall = llmcompressor.score_emulated(folder, self.cfg.input, path, self.cfg.mode, self.cfg.threads,
                                                path.with_suffix(".log"))
            records = read_records(path)
            timing: dict[str, Any] = {"wall_s": round(wall, 3), "timing": "subprocess wall clock, model load "
                                      "included (an emulation: no decisions/s is claimed for it)"}
            execution = "emulated"
        else:
            try:
                records, timing = self._native(runner, scheme, folder)
            except EngineError as exc:
                if runner != "vllm":
                    raise
                # What vLLM does with a scheme on this machine is a finding (e.g. a kernel missing at the first
                # forward pass): reported with its error, never as a number, and the other runs go on.
                _log(f"{scheme} on vLLM failed: {exc}")
                return {"runner": runner, "execution": "native", "ran": False, "error": str(exc),
                        "load_average": load_span(before)}
            write_records(path, records, self.cfg.overwrite)
            execution = "native"
        model = records[0]["model"]
        how = model.get("quantization") or (model.get("engine") or {}).get("weights", {}).get("quantization")
        out = {"runner": runner, "execution": execution, "ran": True, "records": _file(path),
               "model_weights": model.get("weights"), "quantization": how,
               "gguf": records[0].get("gguf"), **timing, **_summary(records, self.reference),
               "load_average": load_span(before)}
        _log(f"{scheme} on {runner}: {out['changed_choices']} changed choices, max |dp| {out['max_abs_dp']:.4f}")
        return out

    def _vllm_skip(self, scheme: str) -> str | None:
        if scheme != "w8a8":
            reason = wna16_skip_reason()
            if reason is not None:
                return reason
        if not self.cfg.engines:
            return "skipped: --no-engines (vLLM not started)"
        return None

    def _native(self, runner: str, scheme: str, folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        t0 = time.perf_counter()
        if runner == "llama.cpp":
            gguf = next(folder.glob("*.gguf"))
            out = self._score_on(BackendConfig(model=self.cfg.model, backend="llamacpp", gguf=str(gguf),
                                               threads=self.cfg.threads), t0)
        else:

            state = launcher.start(launcher.EngineSpec("vllm", model=str(folder), threads=self.cfg.threads,
                                                       dtype=compute_dtype(scheme)))
            try:
                out = self._score_on(BackendConfig(model=self.cfg.model, backend="openai",
                                                   base_url=state["base_url"]), t0)
            finally:
                launcher.stop(port=state["port"])
        gc.collect()
        return out

    def _score_on(self, config: BackendConfig, t0: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Records of every decision on the backend of ``config``, and the timings (load counted from ``t0``)."""
        backend = backends.load_backend(config)
        try:
            load_s = time.perf_counter() - t0
            records, prepare_s, score_s = score_decisions(backend, self.decisions, self.cfg.mode,
                                                          self.cfg.max_batch_tokens)
        finally:
            backend.close()
        return records, {"load_s": round(load_s, 3), "prepare_s": round(prepare_s, 3), "score_s": round(score_s, 3),
                         "decisions_per_s": len(records) / score_s if score_s > 0 else None}


def cached_checkpoint(model: str, scheme: str) -> quant_cache.Entry | None:
    """The verified output of ``semif quant --schemes SCHEME --model MODEL`` made with the defaults (recipe,
    committed calibration text, sample count, sequence length), or None when it has not been made; nothing is
    produced. For other programs that serve it (benchmarks/engines.py starts vLLM on the W8A8 checkpoint)."""
    if scheme not in llmcompressor.SCHEMES:
        raise ValidationError(f"cached_checkpoint: {scheme!r} is not an llm-compressor scheme (expected one of "
                              f"{', '.join(llmcompressor.SCHEMES)})")
    plan = _Plan(SchemesConfig(model=model, input=Path(), output=Path(), schemes=(scheme,)), [])
    return quant_cache.load(plan.llmcompressor_key(scheme))


def _file(path: Path) -> dict[str, Any]:
    return {"path": str(path), "sha256": sha256_file(path)}


def run_schemes(cfg: SchemesConfig) -> dict[str, Any]:
    """Produce (or reuse) every scheme, score each where it runs; the report (not yet written)."""
    if not cfg.schemes:
        raise ValidationError("--schemes is empty (expected at least one scheme)")
    if cfg.mode not in MODES:
        raise ValidationError(f"--mode {cfg.mode!r} (expected one of {', '.join(MODES)})")
    decisions = load_decisions(cfg.input)
    check_outputs(cfg)
    created = time.time()
    t_start = time.perf_counter()
    load_before = load_average()
    plan = _Plan(cfg, decisions)
    made: list[tuple[str, quant_cache.EntryKey, quant_cache.Entry, float]] = []
    for scheme in cfg.schemes:  # every output made or verified before anything is scored
        t0 = time.perf_counter()
        made.append((scheme, *plan.produce(scheme), time.perf_counter() - t0))
    reference = plan.score_reference()
    schemes = []
    for scheme, key, entry, seconds in made:
        produced = entry.meta.get("produced", {})
        block: dict[str, Any] = {
            "scheme": scheme, "recipe": key.recipe,
            "cache": {"key": key.digest(), "folder": str(entry.folder), "reused": entry.reused,
                      "inputs": key.inputs(), "created_utc": entry.meta.get("created_utc"),
                      "checked_s": round(seconds, 3) if entry.reused else None},
            "produce_s": produced.get("wall_s", produced.get("seconds")), "produced": produced,
            "weight_bytes": quant_cache.weight_bytes(entry.folder),
            "bits_per_weight": produced.get("bits_per_weight"),
        }
        if not scheme.startswith("gguf:"):  # llama.cpp states its BPW when it quantizes; a safetensors header is read
            block["bits"] = llmcompressor.checkpoint_bits(entry.folder)
            block["bits_per_weight"] = block["bits"]["bits_per_weight"]
        if scheme.startswith("gguf:"):  # the confound of a dequantized reference, measured (see REFERENCE_NOTE)
            # an entry made before the meta kept it is compared now
            block["against_source"] = (produced.get("against_source")
                                       or plan.against_source(next(entry.folder.glob("*.gguf"))))
        block["runs"] = [plan.run(scheme, runner, entry.folder) for runner in _runs_of(scheme)]
        schemes.append(block)
    body = {
        "command": cfg.command,
        "wall_s": round(time.perf_counter() - t_start, 3),
        "load_average": load_span(load_before),
        "model": {"key": plan.key, "source_gguf": {"file": plan.src.name, "sha256": plan.src_sha,
                                                   "bytes": plan.src.stat().st_size}},
        "reference_note": REFERENCE_NOTE,
        "probability_note": PROBABILITY_NOTE,
        "decision_set": {"path": str(cfg.input), "sha256": sha256_file(cfg.input), "rows": len(decisions)},
        "calibration": {"path": str(cfg.calibration), "sha256": plan.calibration_sha256,
                        "samples_used": len(plan.samples), "max_seq_length": cfg.max_seq_length},
        "protocol": {"mode": cfg.mode, "max_batch_tokens": cfg.max_batch_tokens, "threads": cfg.threads,
                     "produce_threads": cfg.produce_threads,
                     "execution": "native: the scheme's own kernels ran (llama.cpp, vLLM); emulated: transformers "
                                  "decompressed the checkpoint and simulated the scheme in fp32 (no integer kernel)",
                     "compared_with": "the torch fp32 reference, by scorer.evaluation.compare.compare_records (what "
                                      "semif "
                                      "compare reports) over the records files"},
        "reference": reference,
        "f32_gguf": None if plan.f32_gguf is None else {
            "folder": str(plan.f32_gguf.folder), "reused": plan.f32_gguf.reused, **plan.f32_gguf.meta["produced"]},
        "schemes": schemes,
    }
    inputs = {**carried_inputs(body), "model.source_gguf": {"path": str(plan.src), "sha256": plan.src_sha}}
    return make_report("quant-schemes", REPORT_FORMAT, inputs, body, created=created)


def print_report(rep: dict[str, Any]) -> None:
    """One line per run (stdout)."""
    print(f"quantization schemes of {rep['model']['key']} on {rep['decision_set']['rows']} decisions "
          f"(calibration sha256 {rep['calibration']['sha256'][:16]}…)")
    print(f"{'scheme':<12} {'runner':<22} {'how':<9} {'MiB':>7} {'changed':>7} {'max|dp|':>8} {'med|dp|':>8} "
          f"{'dec/s':>7}")
    for s in rep["schemes"]:
        for r in s["runs"]:
            mib = f"{s['weight_bytes'] / 2**20:.1f}"
            if not r["ran"]:
                print(f"{s['scheme']:<12} {r['runner']:<22} {r['execution']:<9} {mib:>7} "
                      f"{r.get('skipped') or 'failed: ' + str(r.get('error', '')).splitlines()[0]}")
                continue
            dps = r.get("decisions_per_s")
            print(f"{s['scheme']:<12} {r['runner']:<22} {r['execution']:<9} {mib:>7} {r['changed_choices']:>7} "
                  f"{r['max_abs_dp']:>8.4f} {r['median_abs_dp']:>8.4f} {'' if dps is None else f'{dps:.2f}':>7}")


def quant_schemes(cfg: SchemesConfig) -> dict[str, Any]:
    """``semif quant --schemes``: run, write the report to ``cfg.output``, print its table; returns the report."""
    rep = run_schemes(cfg)
    write_report(cfg.output, rep, cfg.overwrite, _FORCE_HINT)
    print(f"[semif] wrote {cfg.output}", file=sys.stderr)
    print_report(rep)
    return rep
