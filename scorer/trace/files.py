"""Trace files: finalize (fill the derived fields and checksums), bytes, atomic write, load with file/field errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from scorer.core.errors import InputError
from scorer.core.io import FORCE_HINT, write_atomic
from scorer.trace.format import FORMATS, TRACE_FORMAT, checksums, inputs_digest
from scorer.trace.summary import compute_summary

# The deepest a real trace nests is ~6 levels (runs[i].decisions[j].top_k[k].p); anything far deeper is
# refused at load, before the recursive schema check and canonical JSON (orjson stops at 255) can fail.
MAX_DEPTH = 32


def finalize(trace: dict[str, Any]) -> dict[str, Any]:
    """Fill the inputs hash, the summary and the checksums; returns the same dict."""
    trace["inputs"]["sha256"] = inputs_digest(trace["inputs"])
    trace["summary"] = compute_summary(trace)
    trace["checksums"] = checksums(trace)
    return trace


def dumps(trace: dict[str, Any]) -> bytes:
    """The trace file's bytes (orjson, 2-space indent, trailing newline)."""
    return orjson.dumps(trace, option=orjson.OPT_INDENT_2) + b"\n"


def write(path: Path, trace: dict[str, Any], force: bool = False) -> None:
    """Write atomically; refuse to replace an existing file unless ``force``."""
    write_atomic(path, dumps(trace), force, FORCE_HINT)


def load(path: str | Path) -> dict[str, Any]:
    """Read a trace file (JSON object with ``"format"`` one of :data:`FORMATS`), with file/field errors."""
    name = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError(name, None, None, "file not found", f"a {TRACE_FORMAT} JSON file")
    try:
        obj = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(name, None, None, f"invalid JSON ({exc})", f"a {TRACE_FORMAT} JSON file") from None
    if not isinstance(obj, dict):
        raise InputError(name, None, None, f"a JSON {type(obj).__name__}", "a JSON object")
    if obj.get("format") not in FORMATS:
        raise InputError(name, None, "format", f"{obj.get('format')!r}", " or ".join(f'"{f}"' for f in FORMATS))
    _check_depth(name, obj)
    return obj


def too_deep(obj: Any) -> str | None:
    """Where ``obj`` nests deeper than :data:`MAX_DEPTH` (a JSON path, at most 80 characters), or None.
    Iterative: no recursion on hostile input."""
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return (where if len(where) <= 80 else where[:80] + "…").lstrip(".")
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}", depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
    return None


def _check_depth(name: str, obj: Any) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (:class:`InputError` naming the file and where)."""
    where = too_deep(obj)
    if where is not None:
        raise InputError(name, None, where, f"nested more than {MAX_DEPTH} levels deep",
                         f"at most {MAX_DEPTH} levels of arrays/objects")
