"""Decision rows (the input) and decision records (the output): types, parsing and validation.

Every input line is validated before any model loads; an error names the file, the line, the field,
what was wrong and what would be right. Records are plain JSON described by ``scorer/schema/record-v2.json``
(new records: v1 plus the decision ``signature`` and the optional ``calibrated`` block); records of earlier
runs keep validating against ``record-v1.json``. Every command that reads a records file reads it through
:func:`read_records`, which validates each record the same way (:func:`check_record`: the schema of the
version the record names, then the consistency between its numbers that the commands rely on).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scorer.errors import InputError, brief
from scorer.questions import OPTION_FORMS, check_option_ids, check_type, default_options, normalize_options

RECORD_SCHEMA = "semif-record-v2"
# Every record schema this version reads (v1: before decision signatures and calibrated blocks).
RECORD_SCHEMAS = ("semif-record-v1", "semif-record-v2")
MIN_OPTIONS, MAX_OPTIONS = 2, 16
SCORE_KIND = (
    "uncalibrated conditional option score: softmax over the declared options' answer-slot logits "
    "at the answer position, conditional on the prompt; not a calibrated probability of correctness"
)
SEQUENCE_SCORE_KIND = (
    "uncalibrated conditional option score of the sequence readout: softmax over each option's {norm} of the "
    "log-probabilities of its id's tokens as a continuation of the prompt, conditional on the prompt ({backend} "
    "{dtype} weights); not a calibrated probability of correctness"
)
"""``score_kind`` of a ``--slots sequence`` record (filled with its normalisation and the model's backend and dtype)."""
_ROW_KEYS = ("id", "state", "question", "options")
_RESERVED = (*_ROW_KEYS, "type")
"""Row keys that are not carried to ``extra``: the four above and the question ``type``."""
MAX_DEPTH = 64
"""Deepest nesting of JSON arrays/objects accepted in a row's state or extra fields ([] is 1 deep)."""


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
    type: str | None = None
    """The question type (``choice``, ``yesno``, ``score``: :mod:`scorer.questions`), or None for a row that
    names none. It changes how the readout is meant, never the prompt or the signature."""

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
    if not nonempty_str(obj["id"]):
        raise InputError(path, line, "id", f"{brief(obj['id'])} is not a non-empty string", "a non-empty string")
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


def _read_input(p: Path, name: str, what: str) -> bytes:
    if not p.is_file():
        raise InputError(name, None, None, "file not found" if not p.exists() else "not a regular file", what)
    return p.read_bytes()


def _loads(raw: str, name: str, lineno: int, expected: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(name, lineno, None, f"invalid JSON ({exc})", expected) from None


def load_decisions(path: str | Path) -> list[Decision]:
    """Read and validate a whole JSONL file of decisions (all lines before any model work)."""
    name = str(path)
    data = _read_input(Path(path), name, "a JSONL file with one decision per line")
    rows: list[Decision] = []
    seen: dict[str, int] = {}
    for lineno, raw in jsonl_lines(data, name):
        if not raw.strip():
            raise InputError(name, lineno, None, "empty line", "one JSON object per line, no blank lines")
        obj = _loads(raw, name, lineno, "one JSON object per line")
        row = parse_decision(obj, name, lineno)
        if row.id in seen:
            raise InputError(name, lineno, "id", f"duplicate id {brief(row.id)} (first on line {seen[row.id]})",
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
    """Read and validate a whole JSONL file of records: every command that reads records reads them here.

    Each line must be one record that :func:`check_record` accepts (the JSON Schema of the version it
    names, then the consistency the commands rely on); ids are unique within the file and the file holds
    at least one record. The first problem raises :class:`InputError` naming the file, the line, the
    field, what was wrong and what would be right.
    """
    name = str(path)
    data = _read_input(Path(path), name, "a JSONL file of SemIf records")
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for lineno, raw in jsonl_lines(data, name):
        if not raw.strip():
            raise InputError(name, lineno, None, "empty line", "one record per line, no blank lines")
        rec = check_record(_loads(raw, name, lineno, "one record per line"), name, lineno)
        first = seen.setdefault(rec["id"], lineno)
        if first != lineno:
            raise InputError(name, lineno, "id", f"duplicate id {brief(rec['id'])} (first on line {first})",
                             "one record per decision id")
        out.append(rec)
    if not out:
        raise InputError(name, None, None, "no records", "a JSONL file with at least one SemIf record")
    return out


def record_schema(version: str = RECORD_SCHEMA) -> dict[str, Any]:
    """The JSON Schema of records of ``version`` (default: what this version writes)."""
    if version not in RECORD_SCHEMAS:
        raise ValueError(f"unknown record schema {version!r} (expected one of {', '.join(RECORD_SCHEMAS)})")
    name = version.removeprefix("semif-")
    return orjson.loads((Path(__file__).parent / "schema" / f"{name}.json").read_bytes())


def validate_records(records: Iterable[Any], name: str = "records") -> None:
    """Raise :class:`InputError` on the first record that :func:`check_record` refuses (``name``:1 is the
    first record); for records held in memory, e.g. a command's output in a test."""
    for i, rec in enumerate(records, start=1):
        check_record(rec, name, i)


# --- checking one record ------------------------------------------------------------------------------------------
READOUT_TOL = 1e-6
"""Tolerance of the consistency checks between a record's numbers (probabilities against the softmax of
its logits, the margin, the choice's probability, calibrated logits against raw logits and offsets): far
above float64 rounding in what SemIf writes, far below a difference a decision could turn on."""
LETTERS = "ABCDEFGHIJKLMNOP"
"""The answer letters of the prompt, in the order options are lettered."""
RECORD_MAX_DEPTH = MAX_DEPTH + 2
"""Deepest nesting in a record: a row's extra value (:data:`MAX_DEPTH`) sits under ``extra`` in the record."""
_SHA256 = "^[0-9a-f]{64}$"


SchemaError = tuple[list[Any], str, Any, Any]
"""A schema violation: (path in the record, reversed while it is built; keyword; the keyword's value; the value)."""
Check = Callable[[Any], "SchemaError | None"]
_JSON_TYPES: dict[type, str] = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string",
                                list: "array", dict: "object"}
"""JSON type of each Python type a JSON decoder gives (an integral float is also an ``integer``)."""
_NOTES = {"$id", "$schema", "title", "description"}


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality (``true`` is not ``1``)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def compile_schema(node: dict[str, Any]) -> Check:
    """A checker for the JSON Schema ``node``: it returns the first violation (:data:`SchemaError`) or None.

    Covers exactly the keywords the record schemas use (type, const, enum, minimum, maximum,
    exclusiveMinimum, minLength, pattern, minItems, maxItems, items, required, properties,
    additionalProperties) with draft 2020-12 semantics, and refuses a schema with any other keyword, so
    a schema that grows one fails here rather than being half-checked. About 13 times faster than the
    ``jsonschema`` package (56 against 729 µs of CPU per committed record); the tests
    (``test_fuzz_records.py``) hold the two to the same verdicts.
    """
    unknown = set(node) - _NOTES - {"type", "const", "enum", "minimum", "maximum", "exclusiveMinimum", "minLength",
                                    "pattern", "minItems", "maxItems", "items", "required", "properties",
                                    "additionalProperties"}
    if unknown:
        raise ValueError(f"record schema keywords {sorted(unknown)} are not supported by compile_schema")
    checks: list[Check] = []
    if "type" in node:
        want = node["type"]
        allowed = frozenset([want] if isinstance(want, str) else want)
        if "number" in allowed:
            allowed |= {"integer"}

        def type_(v: Any) -> SchemaError | None:
            t = _JSON_TYPES.get(type(v))
            if t in allowed or (t == "number" and "integer" in allowed and v.is_integer()):
                return None
            return [], "type", want, v
        checks.append(type_)
    if "const" in node:
        const = node["const"]
        checks.append(lambda v: None if _same_json(v, const) else ([], "const", const, v))
    if "enum" in node:
        enum = node["enum"]
        checks.append(lambda v: None if any(_same_json(v, e) for e in enum) else ([], "enum", enum, v))
    for kw in ("minimum", "maximum", "exclusiveMinimum"):
        if kw in node:
            checks.append(_bound(kw, node[kw]))
    if "minLength" in node:
        n_min = node["minLength"]
        checks.append(lambda v: None if not isinstance(v, str) or len(v) >= n_min else ([], "minLength", n_min, v))
    if "pattern" in node:
        pat, rx = node["pattern"], re.compile(node["pattern"])
        checks.append(lambda v: None if not isinstance(v, str) or rx.search(v) else ([], "pattern", pat, v))
    for kw in ("minItems", "maxItems"):
        if kw in node:
            checks.append(_count(kw, node[kw]))
    if "items" in node:
        item = compile_schema(node["items"])

        def items(v: Any) -> SchemaError | None:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    err = item(x)
                    if err is not None:
                        err[0].append(i)
                        return err
            return None
        checks.append(items)
    if "required" in node:
        req = node["required"]
        checks.append(lambda v: None if not isinstance(v, dict) or all(k in v for k in req)
                      else ([], "required", req, v))
    props = {k: compile_schema(sub) for k, sub in node.get("properties", {}).items()}
    extra = compile_schema(node["additionalProperties"]) if isinstance(node.get("additionalProperties"), dict) \
        else None
    if props or extra:
        def fields(v: Any) -> SchemaError | None:
            if isinstance(v, dict):
                for k, x in v.items():
                    check = props.get(k, extra)
                    err = None if check is None else check(x)
                    if err is not None:
                        err[0].append(k)
                        return err
            return None
        checks.append(fields)

    def check(v: Any) -> SchemaError | None:
        for c in checks:
            err = c(v)
            if err is not None:
                return err
        return None
    return check


def _bound(kw: str, w: float) -> Check:
    ok = {"minimum": lambda v: v >= w, "maximum": lambda v: v <= w, "exclusiveMinimum": lambda v: v > w}[kw]
    return lambda v: None if type(v) not in (int, float) or ok(v) else ([], kw, w, v)


def _count(kw: str, w: int) -> Check:
    ok = (lambda v: len(v) >= w) if kw == "minItems" else (lambda v: len(v) <= w)
    return lambda v: None if not isinstance(v, list) or ok(v) else ([], kw, w, v)


@functools.cache
def _record_checks() -> dict[str, Check]:
    """One compiled checker per record version (built once per process)."""
    return {v: compile_schema(record_schema(v)) for v in RECORD_SCHEMAS}


def _field(path: Iterable[Any]) -> str:
    """A JSON path as a message field: ``calibrated.offsets[1]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _a(value: Any) -> str:
    """What JSON calls ``value``'s type, with an article: ``a string``, ``an array``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


_TYPE_WORDS = {"null": "null", "boolean": "a boolean", "integer": "an integer", "number": "a number",
               "string": "a string", "array": "an array", "object": "an object"}


def _schema_problem(err: SchemaError, version: str) -> tuple[str, str, str]:
    """``(field, what was wrong, what would be right)`` of one schema violation."""
    path, kw, want, got = list(reversed(err[0])), err[1], err[2], err[3]
    if kw == "required":
        missing = next((k for k in want if k not in got), want[0])
        return _field([*path, missing]), "missing", f"a field every {version} record has"
    field = _field(path) or "(record)"
    if kw == "type":
        types = [want] if isinstance(want, str) else list(want)
        return field, f"{brief(got)} is {_a(got)}", " or ".join(_TYPE_WORDS.get(t, t) for t in types)
    if kw in ("const", "enum"):
        options = [want] if kw == "const" else list(want)
        return field, brief(got), "one of " + ", ".join(orjson.dumps(o).decode() for o in options) \
            if len(options) > 1 else orjson.dumps(options[0]).decode()
    if kw in ("minItems", "maxItems"):
        return field, f"{len(got)} items", f"at {'least' if kw == 'minItems' else 'most'} {want} items"
    if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kw]
        return field, brief(got), f"a number {op} {want}"
    if kw == "pattern":
        what = {_SHA256: "a sha256: 64 lowercase hex digits", "^[A-P]$": "one capital letter A to P"}
        return field, brief(got), what.get(want, f"a string matching {want}")
    if kw == "minLength":
        return field, brief(got), "a non-empty string" if want == 1 else f"a string of at least {want} characters"
    return field, f"{brief(got)} breaks {kw!r}", f"what scorer/schema/{version.removeprefix('semif-')}.json says"


def _walk(rec: dict[str, Any], name: str, line: int | None) -> None:
    """Refuse a number that is not finite (possible in records built in memory; orjson refuses ``1e999`` and
    ``NaN`` as JSON) or nesting deeper than :data:`RECORD_MAX_DEPTH` anywhere in ``rec``, without recursion.
    Paths are only worked out once a problem is found (:func:`_locate`)."""
    stack: list[tuple[Any, int]] = [(rec, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > RECORD_MAX_DEPTH:
            _locate(rec, name, line)
        for v in (value.values() if isinstance(value, dict) else value):
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
            elif isinstance(v, float) and not math.isfinite(v):
                _locate(rec, name, line)


def _locate(rec: dict[str, Any], name: str, line: int | None) -> None:
    """The error of :func:`_walk`, with the field where it is."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(v, (k,)) for k, v in rec.items()]
    while stack:
        value, at = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(name, line, _field(at), f"{value}", "a finite number")
        if isinstance(value, (dict, list)):
            if len(at) >= RECORD_MAX_DEPTH:
                raise InputError(name, line, _field(at[:2]), f"JSON nested more than {RECORD_MAX_DEPTH} levels deep",
                                 f"at most {RECORD_MAX_DEPTH} levels of nested arrays/objects in a record")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((v, (*at, k)) for k, v in items)


def _softmax(z: list[float]) -> list[float]:
    top = max(z)
    e = [math.exp(v - top) for v in z]
    s = sum(e)
    return [v / s for v in e]


def _check_readout(blk: dict[str, Any], ids: list[str], where: str, temperature: float, name: str,
                   line: int | None) -> None:
    """The readout fields of a record or of its ``calibrated`` block agree with each other and the options."""
    n = len(ids)
    p, z = blk["probabilities"], blk["option_logits"]
    for key, values in (("probabilities", p), ("option_logits", z)):
        if len(values) != n:
            raise InputError(name, line, where + key, f"{len(values)} values for {n} options {brief(ids)}",
                             "one value per option id, in the order of option_ids")
    if any(not 0 <= v <= 1 for v in p):
        raise InputError(name, line, where + "probabilities", f"{brief(p)} has a value outside [0, 1]",
                         "probabilities between 0 and 1")
    soft = _softmax([v / temperature for v in z])
    worst = max(range(n), key=lambda i: abs(p[i] - soft[i]))
    if abs(p[worst] - soft[worst]) > READOUT_TOL:
        scaled = " / temperature" if temperature != 1.0 else ""
        raise InputError(name, line, where + "probabilities",
                         f"{brief(p)} is not the softmax of {where}option_logits{scaled} (value {worst} "
                         f"should be {soft[worst]:.9g})",
                         f"probabilities = softmax(option_logits{scaled}) within {READOUT_TOL:g}")
    choice, tie, tied = blk["choice"], blk["tie"], blk["tied_option_ids"]
    if choice is not None and choice not in ids:
        raise InputError(name, line, where + "choice", f"{brief(choice)} is not an option id",
                         f"one of {brief(ids)}, or null on a tie")
    if tie != (choice is None):
        raise InputError(name, line, where + "tie", f"{'true' if tie else 'false'} with choice {brief(choice)}",
                         "true exactly when choice is null")
    for i, t in enumerate(tied):
        if t not in ids or t in tied[:i]:
            raise InputError(name, line, f"{where}tied_option_ids[{i}]",
                             f"{brief(t)} is {'a repeated' if t in ids else 'not an'} option id",
                             f"distinct ids among {brief(ids)}")
    if tie and len(tied) < 2:
        raise InputError(name, line, where + "tied_option_ids", f"{len(tied)} tied options on a tie",
                         "the 2 or more options whose logits tie")
    if not tie and tied:
        raise InputError(name, line, where + "tied_option_ids", f"{brief(tied)} without a tie", "[] when tie is false")
    if choice is not None:
        c = ids.index(choice)
        rival = max((j for j in range(n) if j != c), key=lambda j: z[j])
        if z[c] <= z[rival]:
            raise InputError(name, line, where + "choice", f"{brief(choice)} has logit {z[c]!r}, not above the "
                             f"{z[rival]!r} of {ids[rival]!r}", "the option with the largest logit (on a tie, null)")
    top = sorted(p, reverse=True)
    if abs(blk["margin"] - (top[0] - top[1])) > READOUT_TOL:
        raise InputError(name, line, where + "margin", f"{blk['margin']!r} is not the top probability minus the "
                         f"second ({top[0] - top[1]:.9g})", f"top minus second probability within {READOUT_TOL:g}")


def _check_calibrated(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``calibrated`` block: its own readout, and its logits = raw logits / temperature - offsets."""
    blk = rec["calibrated"]
    n = len(ids)
    offsets = blk["offsets"]
    if len(offsets) != n:
        raise InputError(name, line, "calibrated.offsets", f"{len(offsets)} values for {n} options {brief(ids)}",
                         "one offset per option id, in the order of option_ids")
    for i, u in enumerate(blk["unseen_option_ids"]):
        if u not in ids:
            raise InputError(name, line, f"calibrated.unseen_option_ids[{i}]", f"{brief(u)} is not an option id",
                             f"ids among {brief(ids)}")
    if blk["signature"] != rec["signature"]:
        raise InputError(name, line, "calibrated.signature", f"{brief(blk['signature'])} differs from the record's "
                         f"signature {rec['signature']!r}", "the signature of the record it calibrates")
    applied, level = blk["applied"], blk["level"]
    if blk["method"] != "none" and applied != (level is not None):
        raise InputError(name, line, "calibrated.level", f"{brief(level)} with applied {str(applied).lower()}",
                         "the level of the entry that applied (signature, family, options or global); null exactly "
                         "when applied is false")
    if not applied and (blk["temperature"] != 1.0 or any(v != 0 for v in offsets)):
        raise InputError(name, line, "calibrated.offsets", f"{brief(offsets)} (temperature {blk['temperature']!r}) "
                         "with applied false", "offsets 0 and temperature 1 when applied is false (the raw readout)")
    _check_readout(blk, ids, "calibrated.", 1.0, name, line)
    t, z, c = blk["temperature"], rec["option_logits"], blk["option_logits"]
    for i in range(n):
        want = z[i] / t - offsets[i]
        if abs(c[i] - want) > READOUT_TOL * max(1.0, abs(want)):
            raise InputError(name, line, f"calibrated.option_logits[{i}]",
                             f"{c[i]!r} is not option_logits / temperature - offsets ({want:.9g})",
                             f"option_logits[i] / calibrated.temperature - calibrated.offsets[i] within "
                             f"{READOUT_TOL:g} (relative)")


def _check_slots(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``slots`` block: one distinct slot token per option, whose texts are the letters or the option ids (as
    its ``readout`` says), and the full vocabulary's argmax is a slot exactly when it is one of them."""
    slots = rec["slots"]
    texts, tokens = slots["texts"], slots["token_ids"]
    want = rec["letters"] if slots["readout"] == "letters" else ids
    if texts != want:
        raise InputError(name, line, "slots.texts", f"{brief(texts)} for readout {slots['readout']!r}",
                         f"{brief(want)}: the {'letters' if slots['readout'] == 'letters' else 'option ids'}")
    if slots["readout"] == "sequence":
        _check_sequence(rec, ids, name, line)
        tokens = [t[0] for t in tokens]  # the argmax at the answer position is a slot when it starts an option
    elif len(tokens) != len(ids) or len(set(tokens)) != len(tokens) or not all(isinstance(t, int) for t in tokens):
        raise InputError(name, line, "slots.token_ids", f"{brief(tokens)} for {len(ids)} options",
                         "one distinct token id per option, in the order of option_ids")
    else:
        for key in ("normalisation", "token_counts", "token_logprobs"):
            if key in slots:
                raise InputError(name, line, f"slots.{key}", f"present with readout {slots['readout']!r}",
                                 "absent: only the sequence readout has it")
    arg = rec["full_vocab_argmax"]
    if arg["is_slot"] != (arg["token_id"] in tokens):
        raise InputError(name, line, "full_vocab_argmax.is_slot", f"{str(arg['is_slot']).lower()} for token "
                         f"{arg['token_id']} (slots {brief(tokens)})", "true exactly when the token is a slot")


def _check_sequence(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``--slots sequence`` block: per option a continuation (none the start of another's), its token count and its
    tokens' log-probabilities, whose sum or mean (``normalisation``) is the option's logit, and whose exponentiated sums
    add up to ``allowed_token_mass``."""
    slots = rec["slots"]
    for key in ("normalisation", "token_counts", "token_logprobs"):
        if key not in slots:
            raise InputError(name, line, f"slots.{key}", "missing with readout 'sequence'",
                             "the sequence readout's normalisation, token counts and token log-probabilities")
    conts, counts, lps = slots["token_ids"], slots["token_counts"], slots["token_logprobs"]
    norm = slots["normalisation"]
    if len(conts) != len(ids) or not all(isinstance(c, list) for c in conts):
        raise InputError(name, line, "slots.token_ids", f"{brief(conts)} for {len(ids)} options",
                         "one list of token ids per option (its continuation), in the order of option_ids")
    for i, c in enumerate(conts):
        for j, other in enumerate(conts[:i]):
            short, long_ = (other, c) if len(other) <= len(c) else (c, other)
            if long_[: len(short)] == short:
                raise InputError(name, line, f"slots.token_ids[{i}]", f"{brief(c)} and option {j}'s {brief(other)}",
                                 "continuations none of which begins another")
    if counts != [len(c) for c in conts]:
        raise InputError(name, line, "slots.token_counts", f"{brief(counts)}",
                         f"{[len(c) for c in conts]}: the length of each option's continuation")
    for i, (lp, c) in enumerate(zip(lps, conts, strict=False)):
        if len(lp) != len(c) or any(v > READOUT_TOL for v in lp):
            raise InputError(name, line, f"slots.token_logprobs[{i}]", f"{brief(lp)} for {len(c)} tokens",
                             "one log-probability (<= 0) per token of the option's continuation")
    if len(lps) != len(ids):
        raise InputError(name, line, "slots.token_logprobs", f"{len(lps)} lists for {len(ids)} options",
                         "one list per option, in the order of option_ids")
    for i, lp in enumerate(lps):
        score = sum(lp) if norm == "sum" else sum(lp) / len(lp)
        z = rec["option_logits"][i]
        if abs(z - score) > READOUT_TOL * max(1.0, abs(score)):
            raise InputError(name, line, f"option_logits[{i}]", f"{z!r} is not the {norm} of slots.token_logprobs[{i}] "
                             f"({score:.9g})", f"the {norm} of the option's token log-probabilities within "
                             f"{READOUT_TOL:g} (relative)")
    mass = sum(math.exp(sum(lp)) for lp in lps)
    # relative: a multi-token continuation's probability may be far below any absolute tolerance
    if not math.isclose(rec["allowed_token_mass"], min(mass, 1.0), rel_tol=READOUT_TOL, abs_tol=1e-300):
        raise InputError(name, line, "allowed_token_mass", f"{rec['allowed_token_mass']!r} for continuations of "
                         f"total probability {mass:.9g}", "sum_i exp(sum slots.token_logprobs[i]) within "
                         f"{READOUT_TOL:g} (relative)")


def _check_permute(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``permute`` block: one row of probabilities per ordering, aligned with option_ids, averaging to the
    record's probabilities (unless a temperature rescaled them since)."""
    perm = rec["permute"]
    passes, n = perm["probabilities"], len(ids)
    if not passes or len(passes) != len(perm["shifts"]):
        raise InputError(name, line, "permute.probabilities", f"{len(passes)} orderings for {len(perm['shifts'])} "
                         "shifts", "one list of probabilities per shift (at least one)")
    for j, row in enumerate(passes):
        if len(row) != n or any(not 0 <= v <= 1 for v in row):
            raise InputError(name, line, f"permute.probabilities[{j}]", f"{brief(row)}",
                             f"{n} probabilities between 0 and 1, aligned with option_ids")
    orders = perm.get("option_ids")
    if orders is not None:
        if not isinstance(orders, list) or len(orders) != len(passes):
            raise InputError(name, line, "permute.option_ids", f"{brief(orders)}",
                             f"a list of {len(passes)} orderings of option_ids, one per shift")
        for j, order in enumerate(orders):
            if not isinstance(order, list) or sorted(map(str, order)) != sorted(ids) \
                    or not all(isinstance(o, str) for o in order):
                raise InputError(name, line, f"permute.option_ids[{j}]", f"{brief(order)}",
                                 f"an ordering of {brief(ids)}")
    if rec.get("temperature") in (None, 1.0):
        mean = [sum(row[i] for row in passes) for i in range(n)]
        total = sum(mean)
        for i in range(n):
            if total <= 0 or abs(mean[i] / total - rec["probabilities"][i]) > READOUT_TOL:
                raise InputError(name, line, "probabilities", f"{brief(rec['probabilities'])} is not the mean of "
                                 "permute.probabilities", f"the mean over the orderings within {READOUT_TOL:g}")


def _check_cache(rec: dict[str, Any], name: str, line: int | None) -> None:
    """A ``cache`` block: its token counts add up to the record's prefix, and ``cache_hit`` agrees with its lookup."""
    blk, pre = rec["cache"], rec["prefix_tokens"]
    if pre is None:
        raise InputError(name, line, "cache", "a block with prefix_tokens null", "null in a direct record")
    reused, filled, kind = blk["reused_tokens"], blk["prefilled_tokens"], blk["lookup"]
    if reused + filled != pre:
        raise InputError(name, line, "cache.prefilled_tokens", f"{reused} reused + {filled} prefilled tokens for a "
                         f"{pre}-token prefix", "reused_tokens + prefilled_tokens = prefix_tokens")
    full = kind in ("hit", "group")
    if (full and filled) or (kind == "miss" and reused) or (kind == "partial" and not (reused and filled)):
        raise InputError(name, line, "cache.lookup", f"{kind!r} with {reused} reused and {filled} prefilled tokens",
                         "hit/group: nothing prefilled; miss: nothing reused; partial: some of each")
    if rec["cache_hit"] is not full:
        raise InputError(name, line, "cache_hit", f"{brief(rec['cache_hit'])} with cache.lookup {kind!r}",
                         "true exactly when cache.lookup is hit or group")


def check_record(rec: Any, name: str, line: int | None) -> dict[str, Any]:
    """Validate one decoded record, or raise :class:`InputError` naming ``name``, ``line`` and the field.

    Checked, in this order: a JSON object whose ``schema`` is one of :data:`RECORD_SCHEMAS`; no number that
    is not finite and no nesting deeper than :data:`RECORD_MAX_DEPTH`; the JSON Schema of the version the
    record names (``scorer/schema/record-v1.json`` or ``record-v2.json``); then what a schema cannot say
    and the commands rely on: option ids distinct and non-empty, the letters A, B, … one per option,
    probabilities and logits one per option, probabilities = softmax(option_logits / temperature),
    ``choice`` one of the option ids (the one with the largest logit) or null exactly on a tie, the tied ids among the
    options, the margin = top minus second probability; the same for a ``calibrated`` block, whose
    logits are the raw ones / temperature - offsets, whose signature is the record's and whose ``level`` is
    null exactly when it was not applied (then with offsets 0 and temperature 1); a ``slots`` block whose
    texts are the letters or the option ids as its readout says, one distinct token per option (v2 only: a v1
    record carries neither a signature nor a calibrated block); and a ``permute`` block whose
    per-ordering probabilities average to the record's; and a ``cache`` block whose reused and prefilled tokens
    add up to ``prefix_tokens``, as its lookup and ``cache_hit`` say. Returns ``rec``.
    """
    if not isinstance(rec, dict):
        raise InputError(name, line, None, f"a line holds {_a(rec)}", "one JSON object (a SemIf record) per line")
    version = rec.get("schema")
    if version not in RECORD_SCHEMAS:
        what = "missing" if "schema" not in rec else f"{brief(version)} is not a record schema this version reads"
        raise InputError(name, line, "schema", what, " or ".join(f'"{v}"' for v in RECORD_SCHEMAS))
    _walk(rec, name, line)
    err = _record_checks()[version](rec)
    if err is not None:
        raise InputError(name, line, *_schema_problem(err, version))
    ids: list[str] = rec["option_ids"]
    for i, o in enumerate(ids):
        if not nonempty_str(o) or o in ids[:i]:
            what = "a repeated id" if o in ids[:i] else "not a non-empty string"
            raise InputError(name, line, f"option_ids[{i}]", f"{brief(o)} is {what}", "distinct, non-empty option ids")
    if rec["letters"] != list(LETTERS[:len(ids)]):
        raise InputError(name, line, "letters", f"{brief(rec['letters'])} for {len(ids)} options",
                         f"{list(LETTERS[:len(ids)])}: options are lettered A, B, … in order")
    if version == "semif-record-v1":
        for key in ("signature", "calibrated"):
            if key in rec:
                raise InputError(name, line, key, "present in a semif-record-v1 record",
                                 'schema "semif-record-v2" (v1 records carry no signature and no calibrated block)')
    _check_readout(rec, ids, "", float(rec.get("temperature") or 1.0), name, line)
    if rec.get("type") is not None:  # what a typed answer is read from (scorer.questions.answer_of)
        check_option_ids(rec["type"], ids, name, line, "option_ids")
    if "echo" in rec and [o["id"] for o in rec["echo"]["options"]] != ids:
        raise InputError(name, line, "echo.options", f"ids {brief([o['id'] for o in rec['echo']['options']])}",
                         f"the option_ids {brief(ids)}, in order")
    if "calibrated" in rec:
        if rec["calibrated"].get("uncovered") and rec["calibrated"]["applied"]:
            raise InputError(name, line, "calibrated.applied", "true with uncovered true",
                             "false: an uncovered decision keeps its raw numbers")
        _check_calibrated(rec, ids, name, line)
    if "slots" in rec:
        _check_slots(rec, ids, name, line)
    if "permute" in rec:
        _check_permute(rec, ids, name, line)
    if isinstance(rec.get("cache"), dict):
        _check_cache(rec, name, line)
    return rec
