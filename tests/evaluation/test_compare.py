"""``semif compare``: alignment, refusals, flips, ties, |dp| and the CLI (fake records, no model)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend

from scorer.cli import main
from scorer.core.errors import InputError
from scorer.evaluation.compare import compare_files, compare_records
from scorer.formats.envelope import envelope_problems
from scorer.formats.records import dumps_record
from scorer.formats.rows import Decision, Option
from scorer.scoring.modes import prepare, score_items


def _records(n: int = 4, drift: float = 0.0) -> list[dict[str, Any]]:
    rows = [Decision(f"r{i}", f"state {i}", "Pick one.", (Option("yes", "Yes"), Option("no", "No")),
                     {"label": "yes" if i % 2 else "no"}) for i in range(n)]
    be = FakeBackend(drift=drift)
    return list(score_items(be, prepare(be, rows), "serial", {"config_sha256": "x"}))


def _write(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(dumps_record(r) for r in recs))
    return path


def _flip(rec: dict[str, Any]) -> None:
    rec["probabilities"] = rec["probabilities"][::-1]
    rec["option_logits"] = rec["option_logits"][::-1]  # a record whose probabilities are its logits' softmax
    rec["choice"] = rec["option_ids"][rec["probabilities"].index(max(rec["probabilities"]))]


def test_identical_runs_do_not_differ() -> None:
    a = _records()
    rep = compare_records(a, copy.deepcopy(a))
    s = rep["summary"]
    assert s["flips"] == 0 and s["max_abs_dp"] == 0.0 and rep["rows"] == []
    assert s["tokens_sha256_equal"] == s["decisions"] == 4


def test_flip_and_dp_are_counted_and_listed_first() -> None:
    a = _records()
    b = copy.deepcopy(a)
    _flip(b[2])
    b[0]["probabilities"] = [b[0]["probabilities"][0] + 0.02, b[0]["probabilities"][1] - 0.02]
    rep = compare_records(a, b, tolerance=0.01)
    s = rep["summary"]
    assert s["flips"] == 1
    assert rep["rows"][0]["id"] == "r2" and rep["rows"][0]["flip"]
    assert [r["id"] for r in rep["rows"]] == ["r2", "r0"]
    expect = abs(a[2]["probabilities"][0] - b[2]["probabilities"][0])
    assert s["max_abs_dp"] == pytest.approx(max(expect, 0.02))
    assert s["flipped_margin_a_max"] == pytest.approx(a[2]["margin"])


def test_ties_and_hash_differences_are_reported() -> None:
    a = _records()
    b = copy.deepcopy(a)
    b[1]["tie"], b[1]["choice"], b[1]["tied_option_ids"] = True, None, ["yes", "no"]
    b[3]["tokens_sha256"] = "0" * 64
    rep = compare_records(a, b)
    s = rep["summary"]
    assert s["ties_b"] == 1 and s["tie_changes"] == 1 and s["flips"] == 1
    assert s["tokens_sha256_equal"] == 3
    assert {r["id"] for r in rep["rows"]} == {"r1", "r3"}


def test_order_does_not_matter_ids_do() -> None:
    a = _records()
    assert compare_records(a, a[::-1])["summary"]["flips"] == 0
    with pytest.raises(InputError, match=r"different decisions: 1 id\(s\) only in A \['r3'\]"):
        compare_records(a, a[:3])


def test_different_option_ids_are_refused() -> None:
    a = _records()
    b = copy.deepcopy(a)
    b[0]["option_ids"] = ["no", "yes"]
    with pytest.raises(InputError, match="has options"):
        compare_records(a, b)


def test_duplicate_ids_are_refused() -> None:
    a = _records()
    with pytest.raises(InputError, match="duplicate id"):
        compare_records([*a, a[0]], a)


def test_labels_accuracy_each_side() -> None:
    a = _records()
    s = compare_records(a, a)["summary"]
    assert s["labels_a"]["labelled"] == 4
    assert s["labels_a"]["correct"] == sum(r["choice"] == r["extra"]["label"] for r in a)


def test_cli_writes_report_and_refuses_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _records()
    b = copy.deepcopy(a)
    _flip(b[1])
    pa, pb = _write(tmp_path / "a.jsonl", a), _write(tmp_path / "b.jsonl", b)
    out = tmp_path / "cmp.json"
    assert main(["compare", str(pa), str(pb), "--output", str(out)]) == 0
    rep = orjson.loads(out.read_bytes())
    assert (rep["kind"], rep["format"]) == ("compare", "semif-compare-v2") and not envelope_problems(rep)
    assert rep["summary"]["flips"] == 1 and set(rep["inputs"]) == {"a", "b"}
    assert rep == {**compare_files(str(pa), str(pb)), "a": rep["a"], "b": rep["b"], "created_utc": rep["created_utc"]}
    assert "FLIP" in capsys.readouterr().out
    assert main(["compare", str(pa), str(pb), "--output", str(out)]) == 2  # never overwritten silently
    short = _write(tmp_path / "short.jsonl", a[:2])
    assert main(["compare", str(pa), str(short)]) == 2
    assert "different decisions" in capsys.readouterr().err
