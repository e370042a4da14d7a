"""JSONL files read line by line, each problem an :class:`~scorer.errors.InputError` naming the file and the line:
how decision rows (:func:`scorer.schema.load_decisions`) and records (:func:`scorer.records.read_records`) are read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from scorer.errors import InputError, brief


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
    """Line ``lineno`` of ``name`` decoded as JSON (``expected``: what a line should hold, for the refusal)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(name, lineno, None, f"invalid JSON ({exc})", expected) from None
