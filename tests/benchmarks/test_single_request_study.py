"""benchmarks/single_request_study.py end to end on the fake backend: every method judged from the study's own
derived prompts, read through the slots asked for, written as an enveloped report; ``--reuse`` takes from an earlier
report exactly the prompts this run would read the same way (``auto`` after ``letters``: only the yes/no questions
are scored again) and the result equals a run that scores everything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend

from benchmarks import single_request_study as study
from scorer import Scorer
from scorer.formats.envelope import envelope_problems
from scorer.formats.records import read_records


def _rows(path: Path) -> Path:
    rows = []
    for i, state in enumerate(["I was charged twice.", "My app crashes on start.", "Please close my account."]):
        rows.append({"id": f"yn{i}", "state": state, "question": "Does the customer ask for money back?",
                     "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}],
                     "label": "yes" if i == 0 else "no", "family": "refund", "type": "yesno"})
        rows.append({"id": f"team{i}", "state": state, "question": "Which team?",
                     "options": [{"id": "billing", "description": "Billing"}, {"id": "tech", "description": "Tech"},
                                 {"id": "accounts", "description": "Accounts"}],
                     "label": ["billing", "tech", "accounts"][i], "family": "routing"})
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_a_study_and_its_reuse_equal_a_study_that_scores_everything(tmp_path, monkeypatch) -> None:
    calls: list[int] = []

    def fake_scorer(model: str, backend: str, **kw: Any) -> Scorer:
        s = Scorer(backend=FakeBackend(), **kw)
        score = s.score_decisions

        def counted(decisions, *a: Any, **k: Any):  # type: ignore[no-untyped-def]
            calls.append(len(decisions))
            return score(decisions, *a, **k)
        s.score_decisions = counted  # type: ignore[method-assign]
        return s

    monkeypatch.setattr(study, "Scorer", fake_scorer)
    monkeypatch.setattr(study, "ROOT", tmp_path)
    rows = _rows(tmp_path / "rows.jsonl")
    letters, auto, alone = tmp_path / "letters.json", tmp_path / "auto.json", tmp_path / "alone.json"
    assert study.main(["--sets", str(rows), "--slots", "letters", "--output", str(letters)]) == 0
    assert study.main(["--sets", str(rows), "--slots", "auto", "--output", str(alone)]) == 0
    assert study.main(["--sets", str(rows), "--slots", "auto", "--reuse", str(letters), "--output", str(auto)]) == 0
    every, _, reused_run = calls
    docs = {p: json.loads(p.read_text()) for p in (letters, auto, alone)}
    for doc in docs.values():
        assert envelope_problems(doc) == [] and doc["kind"] == "single-request-study"
    got, ref = docs[auto]["sets"][str(rows)], docs[alone]["sets"][str(rows)]
    assert got["reused_rows"] > 0 and reused_run == every - got["reused_rows"] < every
    assert got["methods"] == ref["methods"]
    assert docs[auto]["slots"] == "auto" and docs[letters]["slots"] == "letters"
    # auto changed the yes/no readout only: the routing prompts are the letters run's, the yes/no ones are words
    def records(report: Path) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in read_records(tmp_path / docs[report]["sets"][str(rows)]["records"]["path"])}

    by_letters, by_auto = records(letters), records(alone)
    for rid, rec in by_auto.items():
        readout = rec["slots"]["readout"]
        assert readout == ("sequence" if rid.startswith("yn") else "letters")
        if readout == "letters":
            assert rec["probabilities"] == by_letters[rid]["probabilities"]


def test_the_site_draws_a_study_report_and_refuses_a_broken_one(tmp_path, monkeypatch) -> None:
    from scorer.site.inputs import BuildError, ReportFile
    from scorer.site.reports import _KINDS

    monkeypatch.setattr(study, "Scorer", lambda model, backend, **kw: Scorer(backend=FakeBackend(), **kw))
    monkeypatch.setattr(study, "ROOT", tmp_path)
    rows, out = _rows(tmp_path / "rows.jsonl"), tmp_path / "study.json"
    assert study.main(["--sets", str(rows), "--slots", "auto", "--output", str(out)]) == 0
    draw = _KINDS["single-request-study"].draw
    assert draw is not None
    rep = ReportFile(rel="r", slug="r", raw=out.read_bytes(), sha256="x", obj=json.loads(out.read_text()),
                     kind="single-request-study")
    draw("r", rep)
    assert len(rep.charts) == 1 and "read through auto" in str(rep.charts[0])
    assert len(rep.tables[0]["rows"]) == len(study.METHODS) * 3  # all, choice and yesno per method
    with pytest.raises(BuildError, match=r"sets\.x\.methods\.none\.balanced_accuracy"):
        draw("r", ReportFile(rel="r", slug="r", raw=b"", sha256="x", kind="single-request-study",
                             obj={"sets": {"x": {"methods": {"none": {}}}}}))


def test_records_are_read_gzipped_and_a_broken_gzip_file_is_named(tmp_path) -> None:
    import gzip

    from scorer.core.errors import InputError

    monkey_rows = _rows(tmp_path / "rows.jsonl")
    with Scorer(backend=FakeBackend(), slots="letters") as s:
        recs = [d.record for d in s.decide_many([orjson.loads(x) for x in monkey_rows.read_bytes().splitlines()])]
    plain, packed, broken = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz", tmp_path / "bad.jsonl.gz"
    plain.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    broken.write_bytes(plain.read_bytes())
    assert read_records(packed) == read_records(plain)
    with pytest.raises(InputError, match=r"bad\.jsonl\.gz: not a gzip file") as e:
        read_records(broken)
    assert e.value.exit_code == 2
