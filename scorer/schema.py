"""Decision rows (the input) and decision records (the output): types, parsing and validation.

Every input line is validated before any model loads; an error names the file, the line, the field,
what was wrong and what would be right. Records are plain JSON, validated in tests against
``scorer/schema/record-v2.json`` (new records: v1 plus the decision ``signature`` and the optional
``calibrated`` block); records of earlier runs keep validating against ``record-v1.json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scorer.errors import InputError

RECORD_SCHEMA = "semif-record-v2"
# Every record schema this version reads (v1: before decision signatures and calibrated blocks).
RECORD_SCHEMAS = ("semif-record-v1", "semif-record-v2")
MIN_OPTIONS, MAX_OPTIONS = 2, 16
SCORE_KIND = (
    "uncalibrated conditional option score: softmax over the declared options' answer-slot logits "
    "at the answer position, conditional on the prompt; not a calibrated probability of correctness"
)
_ROW_KEYS = ("id", "state", "question", "options")


@dataclass(frozen=True)
class Option:
    """One declared option of a decision."""

    id: str
    """Caller's identifier; never shown to the model (the model sees a letter A–P)."""
    description: str
    """What the option means; shown to the model after its letter."""


@dataclass(frozen=True)
class Decision:
    """One input row: a question about a state with 2–16 declared options."""

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

    @property
    def option_ids(self) -> list[str]:
        return [o.id for o in self.options]


def nonempty_str(value: Any) -> bool:
    """A string with at least one non-space character."""
    return isinstance(value, str) and value.strip() != ""


def check_state(state: Any, path: str, line: int | None) -> None:
    """A decision state is non-empty text or a non-empty JSON object/array; else :class:`InputError`."""
    if isinstance(state, str):
        if not state.strip():
            raise InputError(path, line, "state", "empty text", "non-empty text or a non-empty JSON object/array")
    elif isinstance(state, (dict, list)):
        if not state:
            raise InputError(path, line, "state", "empty JSON value", "non-empty text or a non-empty JSON object/array")
    else:
        raise InputError(path, line, "state", f"a {type(state).__name__}", "text or a JSON object/array")


def parse_decision(obj: Any, path: str, line: int | None) -> Decision:
    """Validate one decoded JSON value as a decision row, or raise :class:`InputError`."""
    if not isinstance(obj, dict):
        raise InputError(path, line, None, f"a line holds {type(obj).__name__}", "a JSON object per line")
    for key in _ROW_KEYS:
        if key not in obj:
            raise InputError(path, line, key, "missing", "keys id, state, question, options")
    if not nonempty_str(obj["id"]):
        raise InputError(path, line, "id", f"{obj['id']!r} is not a non-empty string", "a non-empty string")
    state = obj["state"]
    check_state(state, path, line)
    if not nonempty_str(obj["question"]):
        raise InputError(path, line, "question", f"{obj['question']!r} is not a non-empty string", "a non-empty string")
    raw = obj["options"]
    if not isinstance(raw, list):
        raise InputError(path, line, "options", f"a {type(raw).__name__}", "a list of {id, description} objects")
    if not MIN_OPTIONS <= len(raw) <= MAX_OPTIONS:
        raise InputError(path, line, "options", f"{len(raw)} options", f"{MIN_OPTIONS} to {MAX_OPTIONS} options")
    options: list[Option] = []
    seen: set[str] = set()
    for i, opt in enumerate(raw):
        where = f"options[{i}]"
        if not isinstance(opt, dict):
            raise InputError(path, line, where, f"a {type(opt).__name__}", "an object {id, description}")
        for key in ("id", "description"):
            if key not in opt:
                raise InputError(path, line, f"{where}.{key}", "missing", "an object {id, description}")
            if not nonempty_str(opt[key]):
                raise InputError(path, line, f"{where}.{key}", f"{opt[key]!r} is not a non-empty string",
                                 "a non-empty string")
        unknown = sorted(set(opt) - {"id", "description"})
        if unknown:
            raise InputError(path, line, where, f"unknown keys {unknown}", "only id and description")
        if opt["id"] in seen:
            raise InputError(path, line, f"{where}.id", f"duplicate id {opt['id']!r}", "unique option ids")
        seen.add(opt["id"])
        options.append(Option(opt["id"], opt["description"]))
    extra = {k: v for k, v in obj.items() if k not in _ROW_KEYS}
    src = path if line is None else f"{path}:{line}"
    return Decision(obj["id"], state, obj["question"], tuple(options), extra, src)


def load_decisions(path: str | Path) -> list[Decision]:
    """Read and validate a whole JSONL file of decisions (all lines before any model work)."""
    p = Path(path)
    name = str(path)
    if not p.is_file():
        raise InputError(name, None, None, "file not found", "a JSONL file with one decision per line")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(name, None, None, f"not UTF-8 ({exc.reason} at byte {exc.start})", "UTF-8 text") from None
    rows: list[Decision] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            raise InputError(name, lineno, None, "empty line", "one JSON object per line, no blank lines")
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(name, lineno, None, f"invalid JSON ({exc})", "one JSON object per line") from None
        row = parse_decision(obj, name, lineno)
        if row.id in seen:
            raise InputError(name, lineno, "id", f"duplicate id {row.id!r} (first on line {seen[row.id]})",
                             "ids unique within the file")
        seen[row.id] = lineno
        rows.append(row)
    if not rows:
        raise InputError(name, None, None, "no decisions", "at least one JSON line")
    return rows


def dumps_record(record: dict[str, Any]) -> bytes:
    """One record as one JSONL line (orjson; NaN is refused so a record is always valid JSON)."""
    return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of records, with file/line errors."""
    name = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError(name, None, None, "file not found", "a JSONL file of SemIf records")
    out: list[dict[str, Any]] = []
    for lineno, raw in enumerate(p.read_bytes().splitlines(), start=1):
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(name, lineno, None, f"invalid JSON ({exc})", "one record per line") from None
        if not isinstance(rec, dict) or rec.get("schema") not in RECORD_SCHEMAS:
            raise InputError(name, lineno, "schema", f"not a {' or '.join(RECORD_SCHEMAS)} record",
                             f'"schema": "{RECORD_SCHEMA}"')
        out.append(rec)
    return out


def record_schema(version: str = RECORD_SCHEMA) -> dict[str, Any]:
    """The JSON Schema of records of ``version`` (default: what this version writes)."""
    if version not in RECORD_SCHEMAS:
        raise ValueError(f"unknown record schema {version!r} (expected one of {', '.join(RECORD_SCHEMAS)})")
    name = version.removeprefix("semif-")
    return orjson.loads((Path(__file__).parent / "schema" / f"{name}.json").read_bytes())


def validate_records(records: Iterable[dict[str, Any]]) -> None:
    """Raise ``jsonschema.ValidationError`` on the first record that breaks its schema (each record is
    checked against the schema version it names; an unknown version is checked against the newest)."""
    import jsonschema

    validators = {v: jsonschema.Draft202012Validator(record_schema(v)) for v in RECORD_SCHEMAS}
    for rec in records:
        validators.get(rec.get("schema") if isinstance(rec, dict) else None, validators[RECORD_SCHEMA]).validate(rec)
