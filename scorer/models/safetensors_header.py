"""A safetensors file's tensor table, read from its header without loading a tensor.

A ``.safetensors`` file is ``u64 little-endian header length, JSON header, data``; the header maps each tensor name
to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the data that follows the header) plus an
optional ``__metadata__`` of strings. What a checkpoint spends its bytes on (how many are int4, int8 or fp32, and on
which tensors) is all there; :func:`read_values` reads one small tensor's numbers (compressed-tensors stores a
packed weight's logical shape as an int64 tensor).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from scorer.core.errors import ModelError

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
"""Bytes per element of each safetensors dtype."""
_MAX_HEADER = 100 * 2**20
"""The format's own limit on the header (100 MB): a larger length means the file is not safetensors."""
_INT_FORMATS = {"I8": "b", "U8": "B", "I16": "h", "U16": "H", "I32": "i", "U32": "I", "I64": "q", "U64": "Q"}


@dataclass(frozen=True)
class Tensor:
    """One entry of the header."""

    name: str
    dtype: str
    """safetensors dtype (``F32``, ``I8``, ``I32``, …)."""
    shape: tuple[int, ...]
    begin: int
    """Offset of its data from the end of the header."""
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Header:
    """The tensors of one file and where their data starts."""

    path: Path
    data_start: int
    """Byte offset of the data (8 + header length)."""
    tensors: dict[str, Tensor]


def read_header(path: Path) -> Header:
    """The tensor table of ``path``; a ModelError saying what is wrong with a file that is not valid safetensors
    (a length past the file, a header that is not a JSON object, an entry whose byte count disagrees with its dtype
    and shape)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ModelError(f"{path}: {size} bytes, too short for a safetensors file (expected an 8-byte "
                             "header length)")
        (length,) = struct.unpack("<Q", head)
        if length > min(_MAX_HEADER, size - 8):
            raise ModelError(f"{path}: header length {length} does not fit the file ({size} bytes): not safetensors")
        try:
            raw = json.loads(f.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelError(f"{path}: the header is not JSON ({exc}): not safetensors") from None
    if not isinstance(raw, dict):
        raise ModelError(f"{path}: the header is a JSON {type(raw).__name__} (expected an object of tensors)")
    tensors: dict[str, Tensor] = {}
    for name, entry in raw.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = entry["dtype"], tuple(int(d) for d in entry["shape"]), entry["data_offsets"]
        except (TypeError, KeyError, ValueError) as exc:
            raise ModelError(f"{path}: tensor {name!r}: malformed entry {entry!r} ({exc}; expected dtype, shape and "
                             "data_offsets)") from None
        if dtype not in DTYPE_BYTES:
            raise ModelError(f"{path}: tensor {name!r}: unknown dtype {dtype!r} (expected one of "
                             f"{', '.join(DTYPE_BYTES)})")
        t = Tensor(name, dtype, shape, int(begin), int(end))
        if t.nbytes != t.elements * DTYPE_BYTES[dtype] or t.begin < 0 or 8 + length + t.end > size:
            raise ModelError(f"{path}: tensor {name!r}: {dtype} {list(shape)} spans bytes {begin}..{end} of the data "
                             f"(expected {t.elements * DTYPE_BYTES[dtype]} bytes inside the file)")
        tensors[name] = t
    return Header(path, 8 + length, tensors)


def read_values(header: Header, t: Tensor) -> list[int]:
    """The numbers of a small integer tensor of ``header`` (a packed weight's ``weight_shape``), read from the file."""
    if t.dtype not in _INT_FORMATS:
        raise ModelError(f"{header.path}: tensor {t.name!r} is {t.dtype} (expected an integer tensor)")
    with header.path.open("rb") as f:
        f.seek(header.data_start + t.begin)
        data = f.read(t.nbytes)
    return list(struct.unpack(f"<{t.elements}{_INT_FORMATS[t.dtype]}", data))
