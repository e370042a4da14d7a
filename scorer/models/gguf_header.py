"""The few GGUF header facts the remote backend needs, read without parsing the whole file.

A GGUF starts with ``magic, version, tensor_count, kv_count`` and then its metadata as key/value pairs; an array
value states its element type and count before its elements. Reading up to the tokenizer's token list gives the
model's vocabulary size (which counts padding entries a Hugging Face tokenizer may not) in milliseconds, where
``gguf.GGUFReader`` builds every field (seconds to a minute for a 150k-token vocabulary).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from scorer.core.errors import ModelError

_MAGIC = b"GGUF"
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""Bytes of each scalar value type (uint8, int8, uint16, int16, uint32, int32, float32, bool, uint64, int64,
float64); 8 is a string (u64 length + bytes), 9 an array (u32 type + u64 count + elements)."""
_STRING, _ARRAY = 8, 9


def _u32(f: BinaryIO) -> int:
    return int(struct.unpack("<I", f.read(4))[0])


def _u64(f: BinaryIO) -> int:
    return int(struct.unpack("<Q", f.read(8))[0])


def _skip(f: BinaryIO, vtype: int, count: int = 1) -> None:
    if vtype in _SIZES:
        f.seek(_SIZES[vtype] * count, 1)
    elif vtype == _STRING:
        for _ in range(count):
            f.seek(_u64(f), 1)
    elif vtype == _ARRAY:
        for _ in range(count):
            inner = _u32(f)
            _skip(f, inner, _u64(f))
    else:
        raise ValueError(f"unknown GGUF value type {vtype}")


def array_length(path: Path, key: str) -> int | None:
    """The element count of the array ``key`` in the GGUF's metadata (None when absent); a file that is not a
    GGUF (v2 or later) is a ModelError."""
    try:
        with path.open("rb") as f:
            if f.read(4) != _MAGIC:
                raise ModelError(f"{path} is not a GGUF file (no GGUF magic)")
            if _u32(f) < 2:
                raise ModelError(f"{path}: GGUF version 1 is not supported")
            _u64(f)  # tensors
            for _ in range(_u64(f)):
                name = f.read(_u64(f)).decode("utf-8", "replace")
                vtype = _u32(f)
                if vtype == _ARRAY:
                    inner, count = _u32(f), _u64(f)
                    if name == key:
                        return count
                    _skip(f, inner, count)
                else:
                    _skip(f, vtype)
    except (struct.error, ValueError) as exc:
        raise ModelError(f"{path}: unreadable GGUF metadata ({exc})") from None
    return None
