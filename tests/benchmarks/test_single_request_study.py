"""benchmarks/single_request_study.py end to end on the fake backend: every method judged from the study's own
derived prompts, read through the slots asked for, written as an enveloped report; ``--reuse`` takes from an earlier
report exactly the prompts this run would read the same way (``auto`` after ``letters``: only the yes/no questions
are scored again) and the result equals a run that scores everything."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend

from benchmarks import single_request_study as study
from scorer import Scorer
from scorer.formats.envelope import envelope_problems
from scorer.formats.records import dumps_record, read_records


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


def _recording(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """Point the study at ``tmp_path`` and at a fake-backed Scorer whose every ``score_decisions`` call is recorded
    (the ids it was asked to score, one list per call)."""
    scored: list[list[str]] = []

    def fake_scorer(model: str, backend: str, **kw: Any) -> Scorer:
        s = Scorer(backend=FakeBackend(), **kw)
        score = s.score_decisions

        def recorded(decisions, *a: Any, **k: Any):  # type: ignore[no-untyped-def]
            scored.append([d.id for d in decisions])
            return score(decisions, *a, **k)
        s.score_decisions = recorded  # type: ignore[method-assign]
        return s

    monkeypatch.setattr(study, "Scorer", fake_scorer)
    monkeypatch.setattr(study, "ROOT", tmp_path)
    return scored


def test_a_study_and_its_reuse_equal_a_study_that_scores_everything(tmp_path, monkeypatch) -> None:
    scored = _recording(monkeypatch, tmp_path)
    rows = _rows(tmp_path / "rows.jsonl")
    letters, auto, alone = tmp_path / "letters.json", tmp_path / "auto.json", tmp_path / "alone.json"
    assert study.main(["--sets", str(rows), "--slots", "letters", "--output", str(letters)]) == 0
    assert study.main(["--sets", str(rows), "--slots", "auto", "--output", str(alone)]) == 0
    assert study.main(["--sets", str(rows), "--slots", "auto", "--reuse", str(letters), "--output", str(auto)]) == 0
    every, _, reused_run = (len(ids) for ids in scored)
    docs = {p: json.loads(p.read_text()) for p in (letters, auto, alone)}
    for doc in docs.values():
        assert envelope_problems(doc) == [] and doc["kind"] == "single-request-study"
    got, ref = docs[auto]["sets"][str(rows)], docs[alone]["sets"][str(rows)]
    assert got["reused_rows"] > 0 and reused_run == every - got["reused_rows"] < every
    assert got["methods"] == ref["methods"]
    assert docs[auto]["slots"] == "auto" and docs[letters]["slots"] == "letters"
    # auto changed the yes/no readout only: the routing prompts are the letters run's, the yes/no ones are JSON answers
    def records(report: Path) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in read_records(tmp_path / docs[report]["sets"][str(rows)]["records"]["path"])}

    by_letters, by_auto = records(letters), records(alone)
    for rid, rec in by_auto.items():
        readout = rec["slots"]["readout"]
        assert readout == ("json" if rid.startswith("yn") else "letters")
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
    # all, choice and yesno per method and per batch-calibrated reference (each fallback)
    assert len(rep.tables[0]["rows"]) == (len(study.METHODS) + len(study.BATCH_FALLBACKS)) * 3
    assert "batch-calibrated on the whole set (the reference)" in str(rep.charts[0])
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


def test_methods_score_only_the_prompts_they_read_and_judge_as_the_whole_study_does(tmp_path, monkeypatch) -> None:
    scored = _recording(monkeypatch, tmp_path)
    rows = _rows(tmp_path / "rows.jsonl")
    whole, raw, cf = tmp_path / "whole.json", tmp_path / "raw.json", tmp_path / "cf.json"
    assert study.main(["--sets", str(rows), "--output", str(whole)]) == 0
    assert study.main(["--sets", str(rows), "--methods", "none", "--output", str(raw)]) == 0
    assert study.main(["--sets", str(rows), "--methods", "none,content-free", "--output", str(cf)]) == 0
    _, only_rows, with_cf = scored
    assert sorted(only_rows) == sorted(f"{p}{i}#rot0" for p in ("yn", "team") for i in range(3))
    # the content-free prompts of each question once, under the identity order only
    assert sorted(set(with_cf) - set(only_rows)) == sorted(f"{q}0#cf{j}.rot0" for q in ("yn", "team")
                                                           for j in range(len(study.CONTENT_FREE)))
    docs = {p: json.loads(p.read_text()) for p in (whole, raw, cf)}
    every = docs[whole]["sets"][str(rows)]["methods"]
    assert list(docs[raw]["sets"][str(rows)]["methods"]) == ["none"] and list(docs[raw]["methods"]) == ["none"]
    assert docs[raw]["sets"][str(rows)]["methods"]["none"] == every["none"]
    assert docs[cf]["sets"][str(rows)]["methods"]["content-free"] == every["content-free"]


@pytest.mark.parametrize("slots", ["sequence", "json"])
def test_a_sequence_norm_is_recorded_and_reuse_reads_sum_records_again_as_a_mean_run_would(tmp_path, monkeypatch,
                                                                                            slots: str) -> None:
    scored = _recording(monkeypatch, tmp_path)
    rows = _rows(tmp_path / "rows.jsonl")
    sums, reread, means = tmp_path / "sum.json", tmp_path / "reread.json", tmp_path / "mean.json"
    seq = ["--sets", str(rows), "--slots", slots, "--methods", "none"]
    assert study.main([*seq, "--sequence-norm", "sum", "--output", str(sums)]) == 0
    assert study.main([*seq, "--sequence-norm", "mean", "--reuse", str(sums), "--output", str(reread)]) == 0
    assert study.main([*seq, "--sequence-norm", "mean", "--output", str(means)]) == 0
    # the mean run after the sum run scored nothing: the same prompts, read again
    assert [len(ids) for ids in scored] == [6, 0, 6]

    def records(report: Path) -> dict[str, dict[str, Any]]:
        doc = json.loads(report.read_text())
        return {r["id"]: r for r in read_records(tmp_path / doc["sets"][str(rows)]["records"]["path"])}

    got, ref, before = records(reread), records(means), records(sums)
    assert got.keys() == ref.keys()
    multi = [rid for rid, r in ref.items() if max(r["slots"]["token_counts"]) > 1]
    assert multi, "the fake tokenizer gives some option ids several tokens: mean then differs from sum"
    for rid, r in got.items():
        assert r["renormalised_from"] == "sum" and r["slots"]["normalisation"] == "mean" == ref[rid]["slots"][
            "normalisation"]
        assert r["probabilities"] == pytest.approx(ref[rid]["probabilities"], abs=1e-12)
        assert r["choice"] == ref[rid]["choice"] and "mean of" in r["score_kind"]
    assert any(before[rid]["probabilities"] != pytest.approx(ref[rid]["probabilities"]) for rid in multi)
    doc = json.loads(reread.read_text())
    assert doc["sequence_norm"] == "mean" and f"{slots} (mean)" in doc["title"]
    assert doc["sets"][str(rows)]["methods"] == json.loads(means.read_text())["sets"][str(rows)]["methods"]
    with pytest.raises(SystemExit) as e:  # letters read no sequence
        study.main(["--sets", str(rows), "--sequence-norm", "mean", "--output", str(tmp_path / "x.json")])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        study.main(["--sets", str(rows), "--methods", "none,shrug", "--output", str(tmp_path / "y.json")])


def test_records_judged_again_give_the_same_methods_and_keep_the_scoring_seconds(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(study, "Scorer", lambda model, backend, **kw: Scorer(backend=FakeBackend(), **kw))
    monkeypatch.setattr(study, "ROOT", tmp_path)
    rows, first, again = _rows(tmp_path / "rows.jsonl"), tmp_path / "first.json", tmp_path / "again.json"
    assert study.main(["--sets", str(rows), "--output", str(first)]) == 0
    monkeypatch.setattr(study, "Scorer", None)  # judging again must not need a model
    assert study.main(["--sets", str(rows), "--from-records", str(first.with_suffix(".records")),
                       "--output", str(again)]) == 0
    a, b = (json.loads(p.read_text())["sets"][str(rows)] for p in (first, again))
    assert b["methods"] == a["methods"] and b["batch_calibrated"] == a["batch_calibrated"]
    assert b["seconds"] == a["seconds"] is not None and b["records"] == a["records"]
    assert set(b["batch_calibrated"]) == set(study.BATCH_FALLBACKS)


def test_json_records_read_with_the_lone_closing_quote_are_scored_again(tmp_path, monkeypatch) -> None:
    scored = _recording(monkeypatch, tmp_path)
    rows = _rows(tmp_path / "rows.jsonl")
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    run = ["--sets", str(rows), "--slots", "json", "--methods", "none"]
    assert study.main([*run, "--output", str(first)]) == 0
    doc = json.loads(first.read_text())
    path = tmp_path / doc["sets"][str(rows)]["records"]["path"]
    recs = read_records(path)
    assert all(r["slots"]["closing"] for r in recs)
    old = {r["id"] for r in recs if r["id"].startswith("yn")}  # these as an older run wrote them
    path.write_bytes(gzip.compress(b"".join(dumps_record(
        {**r, "slots": {k: v for k, v in r["slots"].items() if k != "closing"}} if r["id"] in old else r)
        for r in recs)))
    assert study.main([*run, "--reuse", str(first), "--output", str(again)]) == 0
    assert sorted(scored[1]) == sorted(old)
    assert json.loads(again.read_text())["sets"][str(rows)]["methods"] == doc["sets"][str(rows)]["methods"]
