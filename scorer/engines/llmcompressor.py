"""llm-compressor schemes: their recipes, the producing subprocess, and emulated scoring in the same venv.

The three schemes of ``semif quant --schemes`` that are not llama.cpp types, each a fixed recipe (data, so the
cache key names exactly what ran; :mod:`scorer.engines.llmcompressor_job` turns it into modifiers):

* ``w8a8``: SmoothQuant (smoothing strength 0.8) moves activation outliers into the weights, then
  round-to-nearest int8 W8A8 (llm-compressor's ``W8A8`` preset: int8 weights per output channel, symmetric;
  int8 activations per token, dynamic). The format vLLM's CPU build runs with an int8 GEMM kernel.
* ``awq-w4a16``: AWQ's channel scaling, then int4 weights, group size 128, asymmetric (zero points; what
  llm-compressor's ``W4A16_ASYM`` preset holds), activations left in the model dtype.
* ``gptq-w4a16``: GPTQ, int4 weights, group size 128, symmetric (the ``W4A16`` preset).

The group size is 128 unless ``--group-size`` says otherwise (it is part of the recipe, so of the cache key); a
model whose Linear layers' input width is not a multiple of it cannot be grouped by it (SmolLM2-135M: 576 = 4.5 ×
128, so its tests use 64).

``lm_head`` stays unquantized in all three (as in llm-compressor's own examples). Producing runs
``llmcompressor_job.py`` in the pinned venv (:data:`scorer.engines.venv.LLMCOMPRESSOR`, built on first use);
scoring "emulated in transformers" runs ``semif score`` from this source tree in that venv too, since
compressed-tensors (which transformers needs for ``CompressedTensorsConfig``) lives there, not in semif's own venv.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from scorer.core import threads as threading_policy
from scorer.core.errors import EngineError, ModelError
from scorer.engines import venv
from scorer.models import safetensors_header

SCHEMES = ("w8a8", "awq-w4a16", "gptq-w4a16")
GROUP_SIZE = 128
"""Group size of the W4A16 presets (llm-compressor's ``W4A16``/``W4A16_ASYM``): one scale (and zero point) per 128
input columns of each weight row."""
SMOOTHING_STRENGTH = 0.8
PRODUCE_TIMEOUT_S = 6 * 3600
SCORE_TIMEOUT_S = 3 * 3600
_IGNORE = ["lm_head"]


def _int4_groups(group_size: int, symmetric: bool) -> dict[str, Any]:
    """compressed-tensors config groups of int4 weights per group (llm-compressor's ``W4A16``/``W4A16_ASYM`` presets,
    spelled out so that the group size can differ: a model whose Linear inputs are not a multiple of 128 columns,
    e.g. SmolLM2-135M's 576, cannot be grouped by 128)."""
    weights = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": group_size, "symmetric": symmetric,
               "dynamic": False}
    return {"group_0": {"targets": ["Linear"], "weights": weights}}


def recipe(scheme: str, group_size: int = GROUP_SIZE) -> dict[str, Any]:
    """The recipe of ``scheme`` as data: its modifiers and a one-line description (for the report)."""
    if scheme == "w8a8":
        mods = [{"type": "SmoothQuantModifier", "args": {"smoothing_strength": SMOOTHING_STRENGTH}},
                {"type": "QuantizationModifier", "args": {"targets": ["Linear"], "scheme": "W8A8", "ignore": _IGNORE}}]
        text = (f"SmoothQuant {SMOOTHING_STRENGTH} + round-to-nearest int8 W8A8 (weights per channel, activations per "
                "token, dynamic)")
    elif scheme == "awq-w4a16":
        # llm-compressor 0.14's AWQModifier only rescales channels; the quantizing modifier after it quantizes
        mods = [{"type": "AWQModifier", "args": {}},
                {"type": "QuantizationModifier", "args": {"config_groups": _int4_groups(group_size, False),
                                                          "ignore": _IGNORE}}]
        text = f"AWQ, int4 weights, group size {group_size}, asymmetric; activations unquantized"
    elif scheme == "gptq-w4a16":
        mods = [{"type": "GPTQModifier", "args": {"config_groups": _int4_groups(group_size, True), "ignore": _IGNORE}}]
        text = f"GPTQ, int4 weights, group size {group_size}, symmetric; activations unquantized"
    else:
        raise ModelError(f"unknown llm-compressor scheme {scheme!r} (expected one of {', '.join(SCHEMES)})")
    return {"tool": "llmcompressor.oneshot", "modifiers": mods, "group_size": group_size if "w4a16" in scheme else None,
            "description": text}


def _ensure_venv() -> venv.VenvStatus:
    status = venv.ensure(venv.LLMCOMPRESSOR)
    if not status.ok:
        raise EngineError(f"llm-compressor's virtualenv ({' '.join(venv.LLMCOMPRESSOR.specs)}) could not be made: "
                          f"{status.error}")
    return status


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _last_error(log: Path) -> str:
    """The exception line a failed job ended with (its traceback stays in the log)."""
    lines = [ln.strip() for ln in _tail(log, 400).replace("\r", "\n").splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b", ln)]
    return (errors or lines or ["(empty log)"])[-1][:600]


def produce(reference: Path, output: Path, rec: dict[str, Any], scheme: str, samples: list[str], max_seq_length: int,
            threads: int | None, log: Path) -> dict[str, Any]:
    """Write the compressed checkpoint of ``reference`` under ``scheme`` into ``output`` (a new folder).

    Returns the job's facts (seconds per stage, calibration tokens, library versions) plus the venv's freeze;
    an :class:`EngineError` quoting the end of ``log`` when the job fails."""
    status = _ensure_venv()
    spec = {"reference": str(reference), "output": str(output), "modifiers": rec["modifiers"], "samples": samples,
            "max_seq_length": max_seq_length, "threads": threads, "pin_memory_stub": scheme == "awq-w4a16"}
    log.parent.mkdir(parents=True, exist_ok=True)
    spec_path = log.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    job = Path(__file__).with_name("llmcompressor_job.py")
    t0 = time.perf_counter()
    try:
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.run([status.python, str(job), str(spec_path)], stdout=subprocess.PIPE, stderr=out,
                                  text=True, timeout=PRODUCE_TIMEOUT_S, env=_env(threads))
    except subprocess.TimeoutExpired:
        raise EngineError(f"producing {scheme} did not finish within {PRODUCE_TIMEOUT_S} s (log {log})") from None
    if proc.returncode != 0:
        raise EngineError(f"producing {scheme} with llm-compressor failed (exit {proc.returncode}): {_last_error(log)} "
                          f"(the whole log: {log})")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise EngineError(f"producing {scheme}: the job printed no facts (log {log})")
    facts: dict[str, Any] = json.loads(lines[-1])
    facts["wall_s"] = round(time.perf_counter() - t0, 3)
    facts["venv"] = {"python": status.python, "specs": status.specs, "reused": status.reused,
                     "install_s": status.install_s, "freeze": status.freeze}
    return facts


_OVERHEAD = ("_scale", "_zero_point", "_shape", "_g_idx")
"""Suffixes compressed-tensors gives the tensors that describe a quantized weight (``weight_scale``,
``weight_zero_point``, ``weight_shape``, ``weight_g_idx``; ``input_scale`` for static activations): bytes of that
layer, not weights of the model."""
BITS_DEFINITION = (
    "bits_per_weight: 8 x the bytes of every tensor in the checkpoint's safetensors files (scales, zero points and "
    "shapes included) / the weights the model computes with (a packed int4 weight counts the elements of its "
    "logical shape, scales and zero points count none): llama.cpp's BPW, over the same kind of total. The "
    "llm-compressor files store lm_head apart from the embeddings (tie_word_embeddings false) where a GGUF of a "
    "tied model stores one matrix, so their totals count that matrix twice. quantized_linear: the same ratio over "
    "the quantized Linear layers only (their weights and their scales, zero points and shapes).")


def checkpoint_bits(folder: Path) -> dict[str, Any]:
    """What a compressed-tensors checkpoint spends its bytes on, from its safetensors headers (no tensor loaded;
    :data:`BITS_DEFINITION`). A ModelError for a folder with no safetensors file or a packed weight without its
    shape."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ModelError(f"{folder}: no .safetensors file (expected a compressed-tensors checkpoint)")
    headers = [safetensors_header.read_header(f) for f in files]
    tensors = {name: (h, t) for h in headers for name, t in h.tensors.items()}
    quantized: dict[str, int] = {}  # layer prefix -> logical weights
    for name, (h, t) in tensors.items():
        if name.endswith(".weight_packed"):
            prefix = name[:-len(".weight_packed")]
            shape = tensors.get(prefix + ".weight_shape")
            if shape is None:
                raise ModelError(f"{h.path}: {name} has no {prefix}.weight_shape (expected the packed weight's "
                                 "logical shape beside it)")
            quantized[prefix] = math.prod(safetensors_header.read_values(*shape))
        elif name.endswith(".weight") and t.dtype in ("I8", "U8", "F8_E4M3", "F8_E5M2"):
            quantized[name[:-len(".weight")]] = t.elements
    q_bytes = rest_bytes = rest_weights = 0
    rest_dtypes: dict[str, int] = {}
    for name, (_, t) in tensors.items():
        prefix, _, leaf = name.rpartition(".")
        if prefix in quantized and (leaf.startswith("weight") or leaf.endswith(_OVERHEAD)):
            q_bytes += t.nbytes
        else:
            rest_bytes += t.nbytes
            rest_weights += t.elements
            rest_dtypes[t.dtype] = rest_dtypes.get(t.dtype, 0) + t.elements
    q_weights = sum(quantized.values())
    total_weights = q_weights + rest_weights
    return {"bits_per_weight": round(8 * (q_bytes + rest_bytes) / total_weights, 4) if total_weights else None,
            "weights": total_weights, "tensor_bytes": q_bytes + rest_bytes,
            "quantized_linear": {"layers": len(quantized), "weights": q_weights, "bytes": q_bytes,
                                 "bits_per_weight": round(8 * q_bytes / q_weights, 4) if q_weights else None},
            "unquantized": {"weights": rest_weights, "bytes": rest_bytes, "weights_by_dtype": dict(sorted(
                rest_dtypes.items()))},
            "files": [f.name for f in files], "definition": BITS_DEFINITION}


def _env(threads: int | None) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "DO_NOT_TRACK": "1"}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    env.update(threading_policy.engine_environment()[0])  # its torch waits as SemIf's own kernels do
    return env


def score_emulated(folder: Path, rows: Path, output: Path, mode: str, threads: int | None, log: Path) -> float:
    """``semif score --backend torch --model FOLDER`` in the llm-compressor venv, from this source tree: the torch
    backend loads a compressed-tensors folder with ``CompressedTensorsConfig(run_compressed=False)`` and its
    records say so. Returns the subprocess's wall seconds (model load included)."""
    status = _ensure_venv()
    root = Path(__file__).resolve().parents[2]  # the folder holding the scorer package
    cmd = [status.python, "-m", "scorer.cli", "score", "--backend", "torch", "--model", str(folder), "--dtype",
           "float32", "--input", str(rows), "--output", str(output), "--mode", mode]
    if threads:
        cmd += ["--threads", str(threads)]
    env = {**_env(threads), "PYTHONPATH": str(root)}
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=SCORE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise EngineError(f"emulated scoring of {folder.name} did not finish within {SCORE_TIMEOUT_S} s (log {log})") \
            from None
    if proc.returncode != 0:
        raise EngineError(f"emulated scoring of {folder} in the llm-compressor venv failed (exit {proc.returncode}); "
                          f"the end of its log ({log}):\n{_tail(log)}")
    return time.perf_counter() - t0
