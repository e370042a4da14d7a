"""Property-based fuzzing of the decision-row schema through the ``semif score`` command line.

Each generated file holds valid rows with exactly one fault planted at a known line (a missing or mistyped
field, blank strings, wrong option counts, bad or duplicate options, duplicate row ids, JSON nested too
deep, broken JSON, a line that is not an object, a blank line, invalid UTF-8, a huge bad value). For every
one: exit 2, a single ``semif: error: FILE:LINE: field 'F': …`` line (no field for faults below the field
level), no traceback, a short message, no output file, and the model never loads. ``cli.main`` runs in
process (validation comes before the model load); a few cases run the real entry point in a subprocess in
``test_faults.py``. At least :data:`BAD_EXAMPLES` generated files per run.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorer import cli
from scorer.formats.rows import MAX_DEPTH, MAX_OPTIONS, load_decisions

pytestmark = pytest.mark.fuzz  # thousands of generated inputs: make test runs them, make test-fast does not

BAD_EXAMPLES = 1000
_SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}

# Text with the characters that have bitten line splitting and stripping before; mostly from a pool (each
# random character is a draw, and draws are most of the time an example takes).
_POOL = ["yes", "no", "a\u2028b", "x\x85y", "line\u2029two", "\u00a0nbsp", "café", "tab\there", 'quote"d',
         "back\\slash", "{not json}", "new\nline", "日本語", "emoji 🙂", " padded ", "<|im_end|>"]
_RANDOM = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=6)
TEXT = st.one_of(st.sampled_from(_POOL), _RANDOM).filter(lambda s: s.strip() != "")
BLANK = st.text(alphabet=" \t\n\r\u2028\u00a0\u3000\x85", max_size=4)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2**53, 2**53), st.floats(allow_nan=False,
                                                                                    allow_infinity=False), TEXT)
NOT_STR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.lists(SCALAR, max_size=2), st.dictionaries(TEXT, SCALAR, max_size=2))
NOT_LIST = st.one_of(st.none(), st.booleans(), st.integers(), TEXT)
"""Neither a list nor an object: no form of options (ids, {id: description}, [{id, description}])."""
NOT_OPTION = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                       st.lists(SCALAR, max_size=2), BLANK)
"""Not an option: neither a non-empty id nor an object."""
IDENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=8)


@dataclass(frozen=True)
class Case:
    """One generated input file with one planted fault."""

    lines: list[bytes]
    """The file's lines, without newlines."""
    line: int
    """1-based line of the fault."""
    field: str | None
    """The field the message must name (None for faults below the field level: JSON, UTF-8, blank line)."""
    kind: str
    """Which fault was planted (for the failure report)."""


def _nest(depth: int, leaf: Any) -> Any:
    out = leaf
    for _ in range(depth):
        out = [out]
    return out


@st.composite
def valid_row(draw: st.DrawFn, i: int) -> dict[str, Any]:
    n = draw(st.integers(2, 4))
    ids = draw(st.lists(IDENT, min_size=n, max_size=n, unique=True))
    state = draw(st.one_of(TEXT, st.dictionaries(TEXT, SCALAR, min_size=1, max_size=3),
                           st.lists(SCALAR, min_size=1, max_size=3)))
    row: dict[str, Any] = {"id": f"row-{i}", "state": state, "question": draw(TEXT),
                           "options": [{"id": x, "description": draw(TEXT)} for x in ids]}
    if draw(st.booleans()):
        row["label"] = ids[0]
    return row


def _options_as(row: dict[str, Any], form: str) -> None:
    """Rewrite ``row``'s options (row list form) in another of the forms every entry accepts."""
    if form == "ids":
        row["options"] = [o["id"] for o in row["options"]]
    elif form == "object":
        row["options"] = {o["id"]: o["description"] for o in row["options"]}


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


@st.composite
def bad_file(draw: st.DrawFn) -> Case:
    n = draw(st.integers(1, 4))
    rows = [draw(valid_row(i)) for i in range(n)]
    j = draw(st.integers(0, n - 1))
    row = rows[j]
    kind = draw(st.sampled_from([
        "missing", "id", "state", "state-deep", "question", "options-type", "options-count", "option-type",
        "option-missing", "option-value", "option-unknown", "option-duplicate", "extra-deep", "duplicate-row-id",
        "not-object", "invalid-json", "blank-line", "bad-utf8", "huge", "type", "yesno-ids", "object-value"]))
    field: str | None
    line_bytes: bytes | None = None
    k = draw(st.integers(0, len(row["options"]) - 1))
    opt = f"options[{k}]"
    if kind == "missing":
        field = draw(st.sampled_from(["id", "state", "question", "options"]))
        del row[field]
    elif kind == "id":
        field, row["id"] = "id", draw(st.one_of(NOT_STR, BLANK))
    elif kind == "state":
        field, row["state"] = "state", draw(st.one_of(st.none(), st.booleans(), st.integers(), BLANK,
                                                      st.just({}), st.just([])))
    elif kind == "state-deep":
        field, row["state"] = "state", _nest(draw(st.integers(MAX_DEPTH + 1, 400)), draw(SCALAR))
    elif kind == "question":
        field, row["question"] = "question", draw(st.one_of(NOT_STR, BLANK))
    elif kind == "options-type":
        field, row["options"] = "options", draw(NOT_LIST)
    elif kind == "options-count":
        m = draw(st.sampled_from([0, 1, MAX_OPTIONS + 1, MAX_OPTIONS + 4]))
        field, row["options"] = "options", [{"id": f"o{x}", "description": "d"} for x in range(m)]
    elif kind == "option-type":
        field, row["options"][k] = opt, draw(NOT_OPTION)
    elif kind == "type":
        field, row["type"] = "type", draw(st.one_of(NOT_STR, TEXT.filter(lambda s: s not in ("choice", "yesno",
                                                                                              "score"))))
    elif kind == "yesno-ids":
        field, row["type"] = "options", "yesno"
        ids = draw(st.sampled_from([["yes", "maybe"], ["Yes", "No"], ["yes", "no", "maybe"], ["no", "nope"]]))
        row["options"] = [{"id": x, "description": draw(TEXT)} for x in ids]
        _options_as(row, draw(st.sampled_from(["rows", "ids", "object"])))
    elif kind == "object-value":
        field = f"{opt}.description"
        row["options"] = {o["id"]: o["description"] for o in row["options"]}
        row["options"][list(row["options"])[k]] = draw(st.one_of(NOT_STR, BLANK))
    elif kind == "option-missing":
        key = draw(st.sampled_from(["id", "description"]))
        field = f"{opt}.{key}"
        del row["options"][k][key]
    elif kind == "option-value":
        key = draw(st.sampled_from(["id", "description"]))
        field, row["options"][k][key] = f"{opt}.{key}", draw(st.one_of(NOT_STR, BLANK))
    elif kind == "option-unknown":
        field = opt
        row["options"][k][draw(TEXT.filter(lambda s: s not in ("id", "description")))] = draw(SCALAR)
    elif kind == "option-duplicate":
        k = max(k, 1)
        field = f"options[{k}].id"
        row["options"][k]["id"] = row["options"][draw(st.integers(0, k - 1))]["id"]
    elif kind == "extra-deep":
        key = draw(TEXT.filter(lambda s: s not in ("id", "state", "question", "options", "type")))
        field, row[key] = key, _nest(draw(st.integers(MAX_DEPTH + 1, 300)), draw(SCALAR))
    elif kind == "duplicate-row-id":
        if n == 1:
            rows.append(draw(valid_row(1)))
            n = 2
        j = max(j, 1)
        row = rows[j]
        field, row["id"] = "id", rows[draw(st.integers(0, j - 1))]["id"]
    elif kind == "not-object":
        field, line_bytes = None, _dumps(draw(st.one_of(SCALAR, st.lists(SCALAR, max_size=3))))
    elif kind == "invalid-json":
        full = _dumps(row)
        field, line_bytes = None, full[: draw(st.integers(1, len(full) - 1))]
    elif kind == "blank-line":
        field, line_bytes = None, draw(st.text(alphabet=" \t\r", max_size=3)).encode()
    elif kind == "bad-utf8":
        full = _dumps(row)
        at = draw(st.integers(1, len(full) - 1))
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xe9", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]))
        field, line_bytes = None, full[:at] + bad + full[at:]
    else:  # huge: a bad value far longer than any message should be
        size = draw(st.integers(1_000, 300_000))
        field = draw(st.sampled_from(["id", "question", f"{opt}.description"]))
        value = ["x" * size] if draw(st.booleans()) else {"k": "y" * size}
        if field == "id":
            row["id"] = value
        elif field == "question":
            row["question"] = value
        else:
            row["options"][k]["description"] = value
    lines = [_dumps(r) for r in rows]
    if line_bytes is not None:
        lines[j] = line_bytes
    return Case(lines, j + 1, field, kind)


def _forbidden_load(cfg: Any) -> Any:
    raise AssertionError("the model was loaded although the input is bad")


_PARSER = functools.lru_cache(maxsize=1)(cli.build_parser)
"""The argument parser, built once: building it is most of an in-process run's cost (parsing is stateless)."""


EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples" / "decisions.jsonl"
DEMOS_EXAMPLES = 300
"""Generated bad files given as ``score --demos FILE`` (the same row schema, read the same way)."""


def _run_cli(case: Case, folder: Path, demos: bool = False) -> tuple[int, str, Path, Path]:
    rows, out = folder / "rows.jsonl", folder / "out.jsonl"
    rows.write_bytes(b"".join(x + b"\n" for x in case.lines))
    argv = ["score", "--input", str(EXAMPLES), "--demos", str(rows)] if demos else ["score", "--input", str(rows)]
    err = io.StringIO()
    with mock.patch.object(cli, "load_backend", _forbidden_load), mock.patch.object(cli, "build_parser", _PARSER), \
            contextlib.redirect_stderr(err):
        code = cli.main([*argv, "--output", str(out)])
    return code, err.getvalue(), rows, out


def _check_refused(case: Case, folder: Path, seen: dict[str, int], demos: bool = False) -> None:
    code, err, rows, out = _run_cli(case, folder, demos)  # one folder: the output must never appear in it
    assert code == 2, (case.kind, err)
    assert "Traceback" not in err and len(err) < 1200, (case.kind, err[:2000])
    lines = err.splitlines()
    assert len(lines) == 1, (case.kind, err)
    where = f"semif: error: {rows}:{case.line}: "
    field = case.field and (case.field if case.field.isprintable() else repr(case.field)[1:-1])
    assert lines[0].startswith(where + (f"field '{field}': " if field else "")), (case.kind, field, err)
    assert not out.exists(), case.kind
    seen[case.kind] = seen.get(case.kind, 0) + 1


def test_every_generated_bad_file_is_refused_with_file_line_field(tmp_path):
    seen: dict[str, int] = {}

    @settings(max_examples=BAD_EXAMPLES, **_SETTINGS)
    @given(case=bad_file())
    def check(case: Case) -> None:
        _check_refused(case, tmp_path, seen)

    check()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]
    assert sum(seen.values()) >= BAD_EXAMPLES, seen
    assert len(seen) == 22, seen  # every kind of fault was exercised


@st.composite
def bad_demos_file(draw: st.DrawFn) -> Case:
    """A bad row (any fault of :func:`bad_file`), or valid rows one of whose demonstration fields is wrong."""
    if draw(st.booleans()):
        return draw(bad_file())
    n = draw(st.integers(1, 4))
    rows = [draw(valid_row(i)) for i in range(n)]
    for r in rows:
        r["label"] = r["options"][0]["id"]
    j = draw(st.integers(0, n - 1))
    kind = draw(st.sampled_from(["label-missing", "label-unknown", "group", "family"]))
    if kind == "label-missing":
        del rows[j]["label"]
        field = "label"
    elif kind == "label-unknown":
        ids = {o["id"] for o in rows[j]["options"]}
        rows[j]["label"] = draw(st.one_of(NOT_STR, TEXT).filter(lambda v: v not in ids if isinstance(v, str) else True))
        field = "label"
    else:
        field = kind
        rows[j][kind] = draw(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.booleans(), BLANK,
                                       st.lists(SCALAR, max_size=2), st.dictionaries(TEXT, SCALAR, max_size=2)))
    return Case([_dumps(r) for r in rows], j + 1, field, kind)


def test_every_generated_bad_demos_file_is_refused_with_file_line_field(tmp_path):
    seen: dict[str, int] = {}

    @settings(max_examples=DEMOS_EXAMPLES, **_SETTINGS)
    @given(case=bad_demos_file())
    def check(case: Case) -> None:
        _check_refused(case, tmp_path, seen, demos=True)

    check()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]
    assert sum(seen.values()) >= DEMOS_EXAMPLES, seen
    assert {"label-missing", "label-unknown", "group", "family"} <= set(seen), seen


@settings(max_examples=150, **_SETTINGS)
@given(rows=st.integers(1, 4).flatmap(lambda n: st.tuples(*[valid_row(i) for i in range(n)])),
       forms=st.lists(st.sampled_from(["rows", "ids", "object"]), min_size=4, max_size=4))
def test_valid_rows_load_unchanged(rows, forms):
    """Valid files load with every string as written: U+2028, U+0085 and friends stay inside their line; the
    three forms of options (row list, plain ids, id -> description) load as the same options."""
    want = [[(o["id"], o["description"]) for o in r["options"]] for r in rows]
    for n, (r, form) in enumerate(zip(rows, forms, strict=False)):
        _options_as(r, form)
        if form == "ids":
            want[n] = [(i, i) for i, _ in want[n]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        path.write_bytes(b"".join(_dumps(r) + b"\n" for r in rows))
        got = load_decisions(path)
    assert [d.id for d in got] == [r["id"] for r in rows]
    for d, r, w in zip(got, rows, want, strict=True):
        assert d.state == r["state"] and d.question == r["question"]
        assert [(o.id, o.description) for o in d.options] == w
        assert d.extra == {k: v for k, v in r.items() if k not in ("id", "state", "question", "options")}
