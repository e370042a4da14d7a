"""GGUF files: identity (name, bytes, sha256, quantization), an F32 copy, and llama.cpp's quantizer.

The F32 copy is how the quantization ladder gets its reference weights: every tensor of a GGUF is
dequantized with the ``gguf`` package and written back as F32 with the original metadata (so the
tokenizer, chat template and hyperparameters travel unchanged). For the models of the embedded store
this F32 file is itself dequantized from a quantized GGUF: it is the reference the rungs are measured
against, not the model's original fp16/bf16 weights.
"""

from __future__ import annotations

import ctypes
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.core import threads as threading_policy
from scorer.core.errors import ModelError
from scorer.core.hashing import sha256_file
from scorer.models.llama_log import LLAMA_LOG

# llama.cpp's ``enum llama_ftype`` (llama.h); names as the quantize tool spells them.
FTYPES: dict[str, int] = {
    "F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11,
    "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
    "IQ2_XXS": 19, "IQ2_XS": 20, "Q2_K_S": 21, "IQ3_XS": 22, "IQ3_XXS": 23, "IQ1_S": 24, "IQ4_NL": 25,
    "IQ3_S": 26, "IQ3_M": 27, "IQ2_S": 28, "IQ2_M": 29, "IQ4_XS": 30, "IQ1_M": 31, "BF16": 32,
    "TQ1_0": 36, "TQ2_0": 37,
}
FTYPE_NAMES = {v: k for k, v in FTYPES.items()}
_GUESSED = 1024  # LLAMA_FTYPE_GUESSED: the file type was inferred from the tensors


def ftype_name(ftype: int) -> str:
    """``Q4_K_M`` for 15; a guessed type is named with a ``~`` suffix; unknown values stay numeric."""
    base = ftype & ~_GUESSED
    name = FTYPE_NAMES.get(base, f"ftype-{base}")
    return f"{name}~" if ftype & _GUESSED else name


@dataclass(frozen=True)
class GGUFIdentity:
    """What a record says about the GGUF it was scored with (the ``gguf`` block)."""

    file: str
    """File name (no directory: paths differ between machines)."""
    bytes: int
    """File size."""
    sha256: str
    """sha256 of the file, computed before llama.cpp loaded it."""
    quantization: str
    """llama.cpp file type, e.g. ``Q4_K_M`` (most tensors; some keep other types)."""

    def block(self) -> dict[str, Any]:
        return {"file": self.file, "bytes": self.bytes, "sha256": self.sha256, "quantization": self.quantization}


def write_f32(source: Path, target: Path) -> dict[str, Any]:
    """Dequantize every tensor of ``source`` to F32 and write ``target`` (atomically), keeping all metadata.

    Returns what was done: tensor type counts of the source, seconds, bytes written.
    """
    import gguf
    import numpy as np

    t0 = time.perf_counter()
    reader = gguf.GGUFReader(str(source))
    arch_field = reader.get_field("general.architecture")
    if arch_field is None:
        raise ModelError(f"{source} has no general.architecture; not a model GGUF")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.partial-{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), str(arch_field.contents()))
    try:
        for f in reader.fields.values():
            if f.name == "general.architecture" or f.name.startswith("GGUF."):
                continue  # written by GGUFWriter itself
            vtype = f.types[0]
            sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
            value = FTYPES["F32"] if f.name == "general.file_type" else f.contents()
            writer.add_key_value(f.name, value, vtype, sub_type=sub)
        shapes = []
        for t in reader.tensors:
            shape = tuple(int(x) for x in reversed(t.shape))  # GGUF lists ne0 first; numpy wants it last
            shapes.append(shape)
            writer.add_tensor_info(t.name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4,
                                   gguf.GGMLQuantizationType.F32)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for t, shape in zip(reader.tensors, shapes, strict=True):
            data = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False).reshape(shape)
            writer.write_tensor_data(data)
        writer.close()
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"source_tensor_types": dict(Counter(t.tensor_type.name for t in reader.tensors)),
            "tensors": len(reader.tensors), "seconds": round(time.perf_counter() - t0, 3),
            "bytes": target.stat().st_size}


@dataclass
class QuantizeResult:
    """One run of llama.cpp's quantizer."""

    ftype: str
    """Requested llama.cpp file type."""
    seconds: float
    """Wall time."""
    bytes: int
    """Output file size."""
    tensor_types: dict[str, int] = field(default_factory=dict)
    """How many tensors ended up in each type (llama.cpp falls back where a row size does not fit)."""
    fallback_tensors: int = 0
    """Tensors llama.cpp had to quantize to a fallback type (its own warning)."""
    bits_per_weight: float | None = None
    """llama.cpp's reported bits per weight of the output."""


_CONVERT = re.compile(r"type =\s+(\w+),\s+(?:converting to (\w+)|size)")
_FALLBACK = re.compile(r"(\d+) of \d+ tensor\(s\) required fallback")
_BPW = re.compile(r"quant size\s+=\s+[\d.]+ MiB \(([\d.]+) BPW\)")


def quantize(source: Path, target: Path, ftype: str, threads: int | None = None) -> QuantizeResult:
    """Quantize ``source`` (F32/F16) to ``ftype`` with llama.cpp's own quantizer, atomically."""
    threading_policy.apply_wait_policy()  # before llama.cpp's libraries (and their OpenMP runtime) load
    import llama_cpp

    if ftype not in FTYPES:
        raise ModelError(f"unknown quantization type {ftype!r} (expected one of {', '.join(FTYPES)})")
    LLAMA_LOG.install()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[ftype]
    params.nthread = threads or 0
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.partial-{os.getpid()}")
    mark = LLAMA_LOG.mark()
    t0 = time.perf_counter()
    try:
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), ctypes.byref(params))
        if rc != 0:
            raise ModelError(f"llama.cpp could not quantize {source.name} to {ftype} (status {rc}): "
                             f"{LLAMA_LOG.tail(mark)}")
        os.replace(tmp, target)
    finally:
        if tmp.exists():  # a failed quantize leaves a partial file behind
            tmp.unlink()
    seconds = time.perf_counter() - t0
    text = LLAMA_LOG.text(mark)
    types = Counter(m.group(2) or m.group(1) for m in _CONVERT.finditer(text))
    fb = _FALLBACK.search(text)
    bpw = _BPW.search(text)
    return QuantizeResult(ftype, round(seconds, 3), target.stat().st_size, dict(sorted(types.items())),
                          int(fb.group(1)) if fb else 0, float(bpw.group(1)) if bpw else None)


def identity(path: Path, sha256: str | None, ftype: int) -> GGUFIdentity:
    """The ``gguf`` block of a file whose sha256 is known (or is computed now)."""
    return GGUFIdentity(path.name, path.stat().st_size, sha256 or sha256_file(path), ftype_name(ftype))


def same_grid(source: Path, requantized: Path) -> dict[str, Any]:
    """How much of ``requantized`` is bit-for-bit ``source``: per tensor name, whether both have the same type and
    the same bytes, in all and per type of the re-quantized tensor (``by_type``: which types land back). A llama.cpp
    type re-quantized from a dequantization of a file of that same type can land on the source's own grid (each
    block's scale and codes recovered exactly), and then it is the source, not a second quantization: this measures
    whether it did."""
    import gguf
    import numpy as np

    a, b = gguf.GGUFReader(str(source)), gguf.GGUFReader(str(requantized))
    theirs = {t.name: t for t in a.tensors}
    same_type = identical = identical_bytes = total_bytes = 0
    by_type: dict[str, dict[str, int]] = {}
    for t in b.tensors:
        total_bytes += int(t.n_bytes)
        kind = by_type.setdefault(t.tensor_type.name, {"tensors": 0, "same_type": 0, "identical": 0})
        kind["tensors"] += 1
        s = theirs.get(t.name)
        if s is None or s.tensor_type != t.tensor_type:
            continue
        same_type += 1
        kind["same_type"] += 1
        if np.array_equal(np.asarray(s.data).view(np.uint8), np.asarray(t.data).view(np.uint8)):
            identical += 1
            kind["identical"] += 1
            identical_bytes += int(t.n_bytes)
    return {"tensors": len(b.tensors), "same_type": same_type, "identical": identical,
            "identical_share_of_bytes": identical_bytes / total_bytes if total_bytes else 0.0,
            "by_type": dict(sorted(by_type.items()))}
