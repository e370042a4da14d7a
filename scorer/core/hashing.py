"""Hashes and canonical JSON, in one place: every sha256 a record, trace, report, cache key or signature carries is
computed here, so the same bytes always give the same digest whatever module asks.

*Canonical JSON* is UTF-8, object keys sorted, no whitespace, numbers as orjson writes them
(``orjson.dumps(x, option=OPT_SORT_KEYS)``): the bytes trace checksums, decision signatures, run identities and
cache keys are taken over.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``, as 64 lowercase hex digits."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """The sha256 of ``text``'s UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_chunks(chunks: Iterable[bytes]) -> str:
    """The sha256 of the concatenation of ``chunks``, without joining them."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """The sha256 of a file's bytes, read in ``chunk``-sized blocks (model files are gigabytes)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def canonical_json(obj: Any) -> bytes:
    """``obj`` as canonical JSON bytes (module docstring)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def canonical_sha256(obj: Any) -> str:
    """The sha256 of ``obj``'s canonical JSON."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()
