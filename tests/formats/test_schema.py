"""Input validation: every error names file, line, field and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scorer.core.errors import InputError
from scorer.formats.rows import load_decisions, parse_decision

GOOD = {"id": "r1", "state": "The sky is blue.", "question": "Is the sky blue?",
        "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]}


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "rows.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _row(**over) -> str:
    d = dict(GOOD)
    d.update(over)
    return json.dumps({k: v for k, v in d.items() if v is not ...})


def test_good_rows_and_extra_fields_are_carried(tmp_path):
    p = _write(tmp_path, [_row(label="yes", family="f"), _row(id="r2", state={"a": 1})])
    rows = load_decisions(p)
    assert [r.id for r in rows] == ["r1", "r2"]
    assert rows[0].extra == {"label": "yes", "family": "f"}
    assert rows[0].option_ids == ["yes", "no"]
    assert rows[1].source.endswith("rows.jsonl:2")


@pytest.mark.parametrize(("line", "field", "fragment"), [
    (_row(id=...), "id", "missing"),
    (_row(id=""), "id", "non-empty string"),
    (_row(id=7), "id", "non-empty string"),
    (_row(state=""), "state", "empty text"),
    (_row(state="   "), "state", "empty text"),
    (_row(state={}), "state", "empty JSON value"),
    (_row(state=[]), "state", "empty JSON value"),
    (_row(state=3), "state", "a int"),
    (_row(question=""), "question", "non-empty string"),
    (_row(question=...), "question", "missing"),
    (_row(options="yes"), "options", "a str"),
    (_row(options=[{"id": "a", "description": "A"}]), "options", "1 options"),
    (_row(options=[{"id": str(i), "description": "x"} for i in range(256)]), "options", "256 options"),
    (_row(options=[{"id": "a", "description": "A"}, 7]), "options[1]", "a int"),
    (_row(options=[{"id": "a", "description": "A"}, " "]), "options[1]", "blank option id"),
    (_row(options={"a": "A", "b": ""}), "options[1].description", "non-empty string"),
    (_row(options={"a": "A"}), "options", "1 options"),
    (_row(type="rating"), "type", "not a question type"),
    (_row(type="yesno", options=["y", "n"]), "options", "exactly the ids 'yes' and 'no'"),
    (_row(type="score", options=...), "options", "missing"),
    (_row(options=[{"id": "a", "description": "A"}, {"id": "b"}]), "options[1].description", "missing"),
    (_row(options=[{"id": "a", "description": "A"}, {"id": "", "description": "B"}]), "options[1].id",
     "non-empty string"),
    (_row(options=[{"id": "a", "description": "A"}, {"id": "a", "description": "B"}]), "options[1].id",
     "duplicate id 'a'"),
    (_row(options=[{"id": "a", "description": "A"}, {"id": "b", "description": "B", "x": 1}]), "options[1]",
     "unknown keys"),
])
def test_each_field_error_names_file_line_field(tmp_path, line, field, fragment):
    p = _write(tmp_path, [_row(id="ok"), line])
    with pytest.raises(InputError) as exc:
        load_decisions(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:2: field '{field}': ")
    assert fragment in msg
    assert "(expected " in msg
    assert exc.value.line == 2 and exc.value.field == field


def test_not_an_object_invalid_json_blank_line_duplicate_id(tmp_path):
    for lines, fragment, lineno in [
        ([_row(), "[1, 2]"], "a line holds list", 2),
        ([_row(), "{not json"], "invalid JSON", 2),
        ([_row(), "", _row(id="r3")], "empty line", 2),
        ([_row(), _row()], "duplicate id 'r1' (first on line 1)", 2),
    ]:
        p = _write(tmp_path, lines)
        with pytest.raises(InputError) as exc:
            load_decisions(p)
        assert f"rows.jsonl:{lineno}:" in str(exc.value) and fragment in str(exc.value)


def test_missing_file_empty_file_and_bad_encoding(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_decisions(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no decisions"):
        load_decisions(empty)
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps({**GOOD, "state": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        load_decisions(bad)


def test_parse_decision_without_line():
    with pytest.raises(InputError) as exc:
        parse_decision({"id": "x"}, "inline", None)
    assert str(exc.value).startswith("inline: field 'state': missing")


def test_shipped_data_files_are_valid(data_dir):
    for name in ["examples/decisions.jsonl", "workloads/shape-small.jsonl", "eval/authored.jsonl",
                 "eval/boundary.jsonl"]:
        rows = load_decisions(data_dir / name)
        assert rows
        for r in rows:
            if "label" in r.extra:
                assert r.extra["label"] in r.option_ids, (name, r.id)
