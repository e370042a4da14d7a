"""JSONL files read line by line, each problem an :class:`~scorer.core.errors.InputError` naming the file and the line:
how decision rows (:func:`scorer.formats.rows.load_decisions`) and records
(:func:`scorer.formats.records.read_records`) are read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from scorer.core.errors import InputError, brief


def jsonl_lines(data: bytes, name: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` for every line of a JSONL file; only ``\\n`` ends a line.

    U+2028, U+0085 and other characters that ``str.splitlines`` would split on are valid inside JSON
    strings and stay in their line. A final ``\\n`` does not start another line. Invalid UTF-8 raises
    :class:`InputError` naming the line and the byte within it.
    """
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for lineno, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(name, lineno, None, f"not UTF-8 ({exc.reason} at byte {exc.start + 1} of the line: "
                             f"{brief(raw[max(0, exc.start - 8):exc.start + 8])})", "UTF-8 text") from None
        yield lineno, text


def file_bytes(p: Path, name: str, what: str) -> bytes:
    """The bytes of the input file ``p`` (``what``: the file expected, for the refusal of a missing one)."""
    if not p.is_file():
        raise InputError(name, None, None, "file not found" if not p.exists() else "not a regular file", what)
    return p.read_bytes()


def decode_line(raw: str, name: str, lineno: int, expected: str) -> Any:
    """Line ``lineno`` of ``name`` decoded as JSON (``expected``: what a line should hold, for the refusal); a key
    given twice in one object is refused (:func:`loads_input`)."""
    return loads_input(raw, name, lineno, expected)


class _Repeated(dict[str, Any]):
    """A decoded JSON object in which ``key`` was given more than once (the last value kept, as JSON parsers do)."""

    key: str


def _mark_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    marked = _Repeated(out)
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            marked.key = k
            break
        seen.add(k)
    return marked


def _repeat_path(value: Any) -> str | None:
    """The JSON path (``questions.x``, ``rows[2].options.a``) of the first repeated key under ``value``."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, _Repeated):
            return f"{where}.{v.key}" if where else v.key
        if isinstance(v, dict):
            stack.extend((c, f"{where}.{k}" if where else str(k)) for k, c in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((c, f"{where}[{i}]") for i, c in reversed(list(enumerate(v))))
    return None


def repeated_key(text: str | bytes) -> str | None:
    """The path of the first key that an object of the JSON document ``text`` holds twice, or None. Parsers keep the
    last value of a repeated key, so an input with one silently loses the others (a question, an option): inputs
    are checked with this and refused. ``text`` must be valid JSON (decoded by orjson first)."""
    try:
        return _repeat_path(json.loads(text, object_pairs_hook=_mark_repeats))
    except RecursionError:  # deeper than the standard parser goes: the inputs' depth rule refuses it anyway
        return None


def loads_input(data: str | bytes, name: str, line: int | None, expected: str) -> Any:
    """An input document (a JSONL line, a request body) decoded as JSON, refusing what orjson refuses (invalid
    JSON or UTF-8, NaN/Infinity, nesting past 1,024) and a key given twice in one object (:func:`repeated_key`)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(name, line, None, f"invalid JSON ({exc})", expected) from None
    if isinstance(value, dict | list):
        path = repeated_key(data)
        if path is not None:
            raise InputError(name, line, path, "the key is given more than once in its object (a JSON parser "
                             "would keep only the last value)", "each key once per object")
    return value
