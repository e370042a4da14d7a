"""Decision rows (the input): their types, parsing and validation.

Every input line is validated before any model loads; an error names the file, the line, the field,
what was wrong and what would be right (``scorer/formats/schemas/row-v1.json`` describes a row). A row given in
memory (the Python API, the HTTP service) is held to the same rules and to the values a JSONL line could
hold. Records, the output, are :mod:`scorer.formats.records`; their JSON Schemas, :mod:`scorer.formats.record_schema`.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.core.errors import InputError, brief
from scorer.core.jsonl import decode_line, file_bytes, jsonl_lines
from scorer.decision.questions import OPTION_FORMS, check_option_ids, check_type, default_options, normalize_options

MIN_OPTIONS, MAX_OPTIONS = 2, 255
"""How many options a question may declare: up to 16 are lettered A–P, more are numbered (readout ``codes``)."""


def codes(n: int) -> tuple[str, ...]:
    """The numbers of ``n`` options under the ``codes`` readout: ``1`` … ``n``, zero-padded to the width of ``n``
    (``01`` … ``17``), so that no number's text is the start of another's."""
    width = len(str(n))
    return tuple(str(i).zfill(width) for i in range(1, n + 1))


_ROW_KEYS = ("id", "state", "question", "options")
_RESERVED = (*_ROW_KEYS, "type")
"""Row keys that are not carried to ``extra``: the four above and the question ``type``."""
MAX_DEPTH = 64
"""Deepest nesting of JSON arrays/objects accepted in a row's state or extra fields ([] is 1 deep)."""


@dataclass(frozen=True)
class Option:
    """One declared option of a decision."""

    id: str
    """Caller's identifier; never shown to the model (the model sees a letter A–P, or a number past 16 options)."""
    description: str
    """What the option means; shown to the model after its letter."""


@dataclass(frozen=True)
class Decision:
    """One input row: a question about a state with 2–255 declared options."""

    id: str
    """Unique row id within the input file."""
    state: str | dict[str, Any] | list[Any]
    """The evidence: non-empty text, or a non-empty JSON object/array (rendered with its key order kept)."""
    question: str
    """The criterion to decide."""
    options: tuple[Option, ...]
    """Declared options, in the order they are lettered A, B, C, …"""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields beyond the four above (label, family, group, …): carried to the output, never to the prompt."""
    source: str = ""
    """Where the row came from, ``file:line``, for error messages."""
    type: str | None = None
    """The question type (``choice``, ``yesno``, ``score``: :mod:`scorer.decision.questions`), or None for a row that
    names none. It changes how the readout is meant and, where ``slots="auto"`` reads choice questions as JSON answers
    (for some weights), which readout asks it (a score question keeps its letters:
    :func:`scorer.prompting.prompt.slots_for`)."""

    @property
    def option_ids(self) -> list[str]:
        return [o.id for o in self.options]


def nonempty_str(value: Any) -> bool:
    """A string with at least one non-space character."""
    return isinstance(value, str) and value.strip() != ""


def unprintable(value: str) -> str | None:
    """The first character of ``value`` that has no place in an identifier (a control, format, surrogate,
    private-use or unassigned code point, or a line/paragraph separator), named as ``U+XXXX``; None when there is
    none. Identifiers (row ids, option ids, question names) are echoed into records, tables and logs, where such a
    character would be invisible or break a line."""
    for ch in value:
        if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp"):
            return f"U+{ord(ch):04X}"
    return None


def check_identifier(value: Any, path: str, line: int | None, field: str) -> str:
    """An identifier: a non-empty string of printable characters (spaces allowed), else :class:`InputError`."""
    if not nonempty_str(value):
        raise InputError(path, line, field, f"{brief(value)} is not a non-empty string", "a non-empty string")
    bad = unprintable(value)
    if bad is not None:
        raise InputError(path, line, field, f"{brief(value)} holds the control character {bad}",
                         "printable characters only (no control characters, line breaks or tabs)")
    return str(value)


def check_state(state: Any, path: str, line: int | None) -> None:
    """A decision state is non-empty text or a non-empty JSON object/array; else :class:`InputError`."""
    if isinstance(state, str):
        if not state.strip():
            raise InputError(path, line, "state", "empty text", "non-empty text or a non-empty JSON object/array")
    elif isinstance(state, (dict, list)):
        if not state:
            raise InputError(path, line, "state", "empty JSON value", "non-empty text or a non-empty JSON object/array")
        check_json(state, path, line, "state")
    else:
        raise InputError(path, line, "state", f"a {type(state).__name__}", "text or a JSON object/array")


def json_depth(value: Any) -> int:
    """Nesting depth of JSON containers (a scalar 0, ``[]`` 1, ``[[1]]`` 2), without recursion."""
    return _walk_json(value, "")[0]


JSON_VALUES = "plain JSON (str, finite number, bool, null, list, object with str keys), as a JSONL line holds"
"""What a row's state and extra fields may hold (the ``expected`` of a refusal)."""
_INT_RANGE = (-(1 << 63), (1 << 64) - 1)
"""The integers a JSON line is read and written with (orjson: 64-bit)."""


def _not_json(v: Any) -> str | None:
    """What makes a scalar something a JSON line could not hold (None when it is a JSON value)."""
    if v is None or isinstance(v, (str, bool)):
        return None
    if isinstance(v, int):
        return None if _INT_RANGE[0] <= v <= _INT_RANGE[1] else f"the integer {brief(v)} is outside 64 bits"
    if isinstance(v, float):
        return None if math.isfinite(v) else f"the float {v!r} (JSON has no NaN or Infinity)"
    return f"a {type(v).__name__} {brief(v)}"


def _walk_json(value: Any, field: str) -> tuple[int, tuple[str, str] | None]:
    """``(depth, first fault)`` of a value, iteratively (no recursion on hostile input): the nesting depth of
    its containers, and the first place (``field[2].key``) that holds something no JSON line could hold, with
    what is there. JSON decoding only ever yields dict, list, str, int, float, bool and None."""
    depth = 0
    fault: tuple[str, str] | None = None
    stack: list[tuple[Any, str, int]] = [(value, field, 1)]
    while stack:
        v, where, d = stack.pop()
        if isinstance(v, dict):
            depth = max(depth, d)
            for k, child in reversed(v.items()):
                if fault is None and not isinstance(k, str):
                    fault = (where, f"the key {brief(k)} is a {type(k).__name__}, not a string")
                stack.append((child, f"{where}.{k}", d + 1))
        elif isinstance(v, list):
            depth = max(depth, d)
            stack.extend((child, f"{where}[{i}]", d + 1) for i, child in reversed(list(enumerate(v))))
        elif fault is None:
            why = _not_json(v)
            if why is not None:
                fault = (where, why)
    return depth, fault


def check_json(value: Any, path: str, line: int | None, field: str) -> None:
    """Refuse a row's value that a JSONL line could not hold the same (the one rule for file rows and
    in-memory rows): containers nested deeper than :data:`MAX_DEPTH`, NaN/Infinity, a set, tuple, bytes,
    datetime or any other object, a non-string key, an integer outside 64 bits. A file row always passes
    but for the depth; an API row (``Scorer.decide``, ``decide_many``) is held to the same values."""
    depth, fault = _walk_json(value, field)
    if depth > MAX_DEPTH:
        raise InputError(path, line, field, f"JSON nested {depth} levels deep",
                         f"at most {MAX_DEPTH} levels of nested arrays/objects")
    if fault is not None:
        raise InputError(path, line, fault[0], f"not JSON: {fault[1]}", JSON_VALUES)


def parse_decision(obj: Any, path: str, line: int | None) -> Decision:
    """Validate one decoded JSON value as a decision row, or raise :class:`InputError`."""
    if not isinstance(obj, dict):
        raise InputError(path, line, None, f"a line holds {type(obj).__name__}", "a JSON object per line")
    qtype = check_type(obj["type"], path, line) if "type" in obj else None
    for key in _ROW_KEYS:
        if key not in obj and not (key == "options" and default_options(qtype) is not None):
            raise InputError(path, line, key, "missing", "keys id, state, question, options")
    check_identifier(obj["id"], path, line, "id")
    state = obj["state"]
    check_state(state, path, line)
    if not nonempty_str(obj["question"]):
        raise InputError(path, line, "question", f"{brief(obj['question'])} is not a non-empty string",
                         "a non-empty string")
    raw = normalize_options(obj["options"], path, line) if "options" in obj else default_options(qtype)
    if not isinstance(raw, list):
        raise InputError(path, line, "options", f"a {type(raw).__name__}", OPTION_FORMS)
    if not MIN_OPTIONS <= len(raw) <= MAX_OPTIONS:
        raise InputError(path, line, "options", f"{len(raw)} options", f"{MIN_OPTIONS} to {MAX_OPTIONS} options")
    options: list[Option] = []
    seen: set[str] = set()
    for i, opt in enumerate(raw):
        where = f"options[{i}]"
        if not isinstance(opt, dict):
            raise InputError(path, line, where, f"a {type(opt).__name__}",
                             "an option id or an object {id, description}")
        for key in ("id", "description"):
            if key not in opt:
                raise InputError(path, line, f"{where}.{key}", "missing", "an object {id, description}")
            if not nonempty_str(opt[key]):
                raise InputError(path, line, f"{where}.{key}", f"{brief(opt[key])} is not a non-empty string",
                                 "a non-empty string")
        check_identifier(opt["id"], path, line, f"{where}.id")
        unknown = sorted(set(opt) - {"id", "description"})
        if unknown:
            raise InputError(path, line, where, f"unknown keys {brief(unknown)}", "only id and description")
        if opt["id"] in seen:
            raise InputError(path, line, f"{where}.id", f"duplicate id {brief(opt['id'])}", "unique option ids")
        seen.add(opt["id"])
        options.append(Option(opt["id"], opt["description"]))
    check_option_ids(qtype, [o.id for o in options], path, line)
    extra = {k: v for k, v in obj.items() if k not in _RESERVED}
    for key in extra:
        if not isinstance(key, str):  # an in-memory row (a JSON line's keys are always strings)
            raise InputError(path, line, None, f"not JSON: the key {brief(key)} is a {type(key).__name__}, not a "
                             "string", JSON_VALUES)
    for key, value in extra.items():  # copied into every record: plain JSON only, as a JSON line holds
        check_json(value, path, line, key)
    src = path if line is None else f"{path}:{line}"
    return Decision(obj["id"], state, obj["question"], tuple(options), extra, src, qtype)


def load_decisions(path: str | Path) -> list[Decision]:
    """Read and validate a whole JSONL file of decisions (all lines before any model work)."""
    name = str(path)
    data = file_bytes(Path(path), name, "a JSONL file with one decision per line")
    rows: list[Decision] = []
    seen: dict[str, int] = {}
    for lineno, raw in jsonl_lines(data, name):
        if not raw.strip():
            raise InputError(name, lineno, None, "empty line", "one JSON object per line, no blank lines")
        obj = decode_line(raw, name, lineno, "one JSON object per line")
        row = parse_decision(obj, name, lineno)
        if row.id in seen:
            raise InputError(name, lineno, "id", f"duplicate id {brief(row.id)} (first on line {seen[row.id]})",
                             "ids unique within the file")
        seen[row.id] = lineno
        rows.append(row)
    if not rows:
        raise InputError(name, None, None, "no decisions", "at least one JSON line")
    return rows
