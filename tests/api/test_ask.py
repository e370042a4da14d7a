"""Named questions per state (`Scorer.ask`, `semif ask`, row `type`), the three option forms, `--echo`,
`on_uncovered="raw"`, the calibration's model checked before the model loads — with the fake backend; one slow
run of `ask` on smollm2-135m against `semif score --mode shared`."""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend, prior_for

from scorer import Choice, Score, Scorer, YesNo, cli
from scorer.calibration.core import Calibration
from scorer.core.errors import InputError, SemifError
from scorer.decision.confidence import binary_confidence, choice_confidence, score_confidence
from scorer.decision.questions import ChoiceAnswer, ScoreAnswer, YesNoAnswer, answer_of
from scorer.formats.echo import state_sha256
from scorer.formats.records import read_records, validate_records
from scorer.formats.signature import identity_sha256
from scorer.models import store

STATE = "Ticket 41: I was charged twice for my order last week and want my money back. The app also crashes."
QUESTIONS = {
    "team": Choice("Which team should handle this ticket?",
                   {"billing": "Billing: charges, refunds", "tech": "Technical: crashes, bugs", "sales": "Sales"}),
    "refund": YesNo("Is the customer asking for a refund?"),
    "severity": Score("How severe is the problem?", ["cosmetic", "minor", "major", "critical"]),
}


def _stable(rec: dict) -> dict:
    # what earlier calls left in the scorer's prefix cache decides cache/cache_hit, not the answer
    out = {k: v for k, v in rec.items() if k not in ("timing", "cache", "cache_hit")}
    out["run"] = {k: v for k, v in rec["run"].items() if k != "started_unix"}
    return out


def _score_file(tmp_path: Path, rows: list[dict], monkeypatch, backend, *extra: str) -> list[dict]:
    inp, out = tmp_path / "ask-rows.jsonl", tmp_path / "ask-out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: backend)
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared", *extra]) == 0
    return read_records(out)


def test_ask_prefills_the_state_once_and_types_every_answer():
    fake = FakeBackend()
    # ask scores in shared mode whatever the scorer's mode
    with Scorer(backend=fake, slots="letters", mode="direct") as s:
        answers = s.ask(STATE, QUESTIONS)
    assert fake.calls["prefill"] == 1 and fake.calls["fresh"] == 0 and fake.calls["fan_out"] == 1
    assert list(answers) == ["team", "refund", "severity"]
    team, refund, sev = answers["team"], answers["refund"], answers["severity"]
    assert isinstance(team, ChoiceAnswer) and isinstance(refund, YesNoAnswer) and isinstance(sev, ScoreAnswer)
    assert list(team.probabilities) == ["billing", "tech", "sales"] and team.final_choice in team.probabilities
    assert refund.p_yes == refund.probabilities["yes"] and abs(refund.p_yes + refund.probabilities["no"] - 1) < 1e-9
    assert sev.labels == ("cosmetic", "minor", "major", "critical") and sev.argmax == sev.final_choice
    assert sev.expected == pytest.approx(sum(i * p for i, p in enumerate(sev.probabilities.values())))
    assert 0 <= sev.expected <= 3
    recs = [dict(r) for r in answers.records]
    validate_records(recs)
    assert [r["type"] for r in recs] == ["choice", "yesno", "score"] and [r["mode"] for r in recs] == ["shared"] * 3
    assert [r["cache_hit"] for r in recs] == [False, True, True]
    assert recs[1]["option_ids"] == ["yes", "no"]
    doc = answers.to_json()
    assert doc["refund"]["p_yes"] == refund.p_yes and doc["severity"]["expected"] == sev.expected
    assert doc["team"]["final_choice"] == team.final_choice and doc["team"]["raw_choice"] == team.raw_choice


def test_every_answer_has_the_wire_confidence_of_its_acting_readout():
    with Scorer(backend=FakeBackend(), slots="letters") as s:
        answers = s.ask(STATE, QUESTIONS)
    team, refund, sev = answers["team"], answers["refund"], answers["severity"]
    # the faces' own functions, on the acting probabilities
    assert team.confidence == choice_confidence(list(team.probabilities.values()))
    assert refund.confidence == pytest.approx(binary_confidence(refund.p_yes))
    assert sev.confidence == score_confidence(list(sev.probabilities.values()))
    doc = answers.to_json()
    assert [doc[k]["confidence"] for k in ("team", "refund", "severity")] == [team.confidence, refund.confidence,
                                                                                sev.confidence]
    # in [0, 1] and monotone in the acting probability of the answer, a calibrated readout included
    rec = dict(team.record)
    seen = []
    for top in (0.34, 0.5, 0.7, 0.9, 1.0):
        rest = (1 - top) / 2
        cal = {"applied": True, "probabilities": [top, rest, rest], "option_logits": [0.0, 0.0, 0.0],
               "choice": rec["option_ids"][0], "margin": top - rest, "tie": False}
        a = answer_of({**rec, "calibrated": cal})
        assert a.calibrated and 0.0 <= a.confidence <= 1.0
        seen.append(a.confidence)
    assert seen == sorted(seen) and seen[0] < 0.02 and seen[-1] == 1.0


def test_ask_equals_semif_score_shared_on_its_rows(tmp_path, monkeypatch):
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        rows = s.ask_rows(STATE, QUESTIONS, id="t41", ticket="t41")
        answers = s.ask(STATE, QUESTIONS, id="t41", ticket="t41")
        many = s.decide_many(rows)
    want = _score_file(tmp_path, rows, monkeypatch, FakeBackend())
    got = [dict(r) for r in answers.records]
    assert [r["id"] for r in got] == ["t41/team", "t41/refund", "t41/severity"]
    assert [_stable(r) for r in got] == [_stable(r) for r in want] == [_stable(d.record) for d in many]
    assert all(r["extra"] == {"ticket": "t41"} for r in got)
    for a, d in zip(answers.values(), many, strict=True):
        assert d.answer == answer_of(d.record) and d.answer.to_json() == a.to_json()


def test_the_three_option_forms_are_one_question():
    forms = [["billing", "tech"], {"billing": "billing", "tech": "tech"},
             [{"id": "billing", "description": "billing"}, {"id": "tech", "description": "tech"}],
             ["billing", {"id": "tech", "description": "tech"}]]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        sigs = {s.ask(STATE, {"team": Choice("Which team?", f)})["team"].record["signature"] for f in forms}
        via_decide = {s.decide(STATE, "Which team?", f).record["signature"] for f in forms}
        via_row = {s.decide_row({"id": "r", "state": STATE, "question": "Which team?", "options": f}).record[
            "signature"] for f in forms}
    assert len(sigs) == 1 and sigs == via_decide == via_row


def test_yesno_wording_is_documented_and_overridable():
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        plain = s.ask(STATE, {"r": YesNo("Refund?")})["r"]
        worded = s.ask(STATE, {"r": YesNo("Refund?", yes="money back is asked for", no="anything else")})["r"]
        as_row = s.decide_row({"id": "r", "state": STATE, "question": "Refund?", "type": "yesno"})
    assert plain.record["signature"] == as_row.record["signature"]  # a yesno row without options: the default
    assert plain.record["signature"] != worded.record["signature"]
    assert isinstance(as_row.answer, YesNoAnswer) and as_row.answer.p_yes == plain.p_yes


@pytest.mark.parametrize(("questions", "field", "fragment"), [
    ({}, "questions", "non-empty mapping"),
    (["team"], "questions", "non-empty mapping"),
    ({"": YesNo("q")}, "questions", "non-empty strings"),
    ({"team": Choice("Which?", ["billing"])}, "questions.team.options", "2 to 255 options"),
    ({"team": Choice("Which?", ["a", "a"])}, "questions.team.options[1].id", "duplicate id"),
    ({"team": Choice("Which?", ["a", " "])}, "questions.team.options[1]", "blank option id"),
    ({"team": Choice("", ["a", "b"])}, "questions.team.question", "non-empty string"),
    ({"team": Choice("Which?", {1: "a", 2: "b"})}, "questions.team.options", "not a string"),
    ({"team": Choice("Which?", "a|b")}, "questions.team.options", "a list of option ids"),
    ({"sev": Score("How bad?", 7)}, "questions.sev.options", "a list of option ids"),
    ({"x": {"type": "rating", "question": "q", "options": ["a", "b"]}}, "questions.x.type", "not a question type"),
    ({"x": {"question": "q", "options": ["a", "b"]}}, "questions.x.type", "missing"),
    ({"x": {"type": "choice", "question": "q"}}, "questions.x.options", "missing"),
    ({"x": {"type": "choice", "question": "q", "options": ["a", "b"], "label": "a"}}, "questions.x", "unknown keys"),
    ({"x": {"type": "yesno", "question": "q", "options": ["y", "n"]}}, "questions.x.options", "exactly the ids"),
    ({"x": 3}, "questions.x", "Choice/YesNo/Score"),
])
def test_bad_questions_name_their_field(questions, field, fragment):
    fake = FakeBackend()
    with Scorer(backend=fake, slots="letters", mode="shared") as s, pytest.raises(InputError) as exc:
        s.ask(STATE, questions)
    assert exc.value.field == field and fragment in str(exc.value), str(exc.value)
    assert str(exc.value).startswith("ask: ") and fake.calls["prefill"] == fake.calls["fresh"] == 0


def test_bad_state_id_and_extra_fields_name_their_field():
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        for kwargs, field in (({"state": " "}, "state"), ({"state": STATE, "id": ""}, "id"),
                              ({"state": STATE, "type": "x"}, "type"), ({"state": STATE, "meta": {1, 2}}, "meta")):
            with pytest.raises(InputError) as exc:
                s.ask(questions={"r": YesNo("q")}, **kwargs)
            assert exc.value.field == field, str(exc.value)


def test_rows_with_a_type_validate_and_type_their_records(tmp_path, monkeypatch, capsys):
    rows = [{"id": "a", "state": STATE, "question": "Refund?", "type": "yesno", "family": "f"},
            {"id": "b", "state": STATE, "question": "How bad?", "type": "score", "options": ["low", "mid", "high"]},
            {"id": "c", "state": STATE, "question": "Team?", "type": "choice", "options": {"x": "X", "y": "Y"}},
            {"id": "d", "state": STATE, "question": "Team?", "options": ["x", "y"]}]
    recs = _score_file(tmp_path, rows, monkeypatch, FakeBackend())
    assert [r.get("type") for r in recs] == ["yesno", "score", "choice", None]
    assert recs[0]["extra"] == {"family": "f"} and "type" not in recs[1]["extra"]
    assert recs[2]["signature"] != recs[3]["signature"]  # descriptions differ: X/Y against x/y
    bad = tmp_path / "bad.jsonl"
    for row, field in (({**rows[0], "type": "rating"}, "type"), ({**rows[0], "options": ["y", "n"]}, "options"),
                       ({**rows[1], "options": None}, "options"), ({**rows[3], "type": ["choice"]}, "type")):
        bad.write_bytes(orjson.dumps(row) + b"\n")
        assert cli.main(["score", "--input", str(bad), "--output", str(tmp_path / "never.jsonl")]) == 2
        assert f"{bad}:1: field '{field}': " in capsys.readouterr().err
        assert not (tmp_path / "never.jsonl").exists()
    with pytest.raises(InputError) as exc:  # a record claiming yesno over other options is refused when read
        validate_records([{**recs[1], "type": "yesno"}])
    assert exc.value.field == "option_ids"


def test_echo_stores_question_options_and_the_state_digest_or_the_state(tmp_path, monkeypatch):
    state = {"ticket": 41, "text": "charged twice"}
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo=True) as s:
        digest = s.ask(state, QUESTIONS)
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo="full") as s:
        full = s.ask(state, QUESTIONS)
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        plain = s.ask(state, QUESTIONS)
    rec = dict(digest["team"].record)
    assert rec["echo"] == {"level": "digest", "question": "Which team should handle this ticket?",
                           "options": [{"id": "billing", "description": "Billing: charges, refunds"},
                                       {"id": "tech", "description": "Technical: crashes, bugs"},
                                       {"id": "sales", "description": "Sales"}],
                           "state_sha256": state_sha256(state)}
    assert state_sha256(state) == hashlib.sha256(orjson.dumps(state)).hexdigest()
    assert dict(full["team"].record)["echo"]["state"] == state and "echo" not in plain["team"].record
    assert len({a["team"].record["run"]["config_sha256"] for a in (digest, full, plain)}) == 3
    validate_records([dict(r) for a in (digest, full) for r in a.records])
    with pytest.raises(SemifError, match="echo"):
        Scorer(backend=FakeBackend(), slots="letters", echo="yes")
    rows = [{"id": "a", "state": "text state", "question": "Refund?", "type": "yesno"}]
    recs = _score_file(tmp_path, rows, monkeypatch, FakeBackend(), "--echo")
    assert recs[0]["echo"]["state_sha256"] == state_sha256("text state") and "state" not in recs[0]["echo"]


def test_on_uncovered_raw_flags_the_record_and_error_refuses_before_scoring():
    fake = FakeBackend()
    cal = prior_for(FakeBackend(), "Refund?")
    qs = {"covered": YesNo("Refund?"), "reworded": YesNo("Is it a refund?")}
    with Scorer(backend=fake, slots="letters", mode="shared", calibration=cal) as s, pytest.raises(InputError) as exc:
        s.ask(STATE, qs)
    assert "no calibration for signature" in str(exc.value) and fake.calls["prefill"] == 0
    with Scorer(backend=fake, slots="letters", mode="shared", calibration=cal, on_uncovered="raw") as s:
        answers = s.ask(STATE, qs)
    cov, new = answers["covered"], answers["reworded"]
    assert cov.calibrated and not cov.uncovered and cov.record["calibrated"]["applied"]
    assert new.uncovered and not new.calibrated and new.record["calibrated"]["applied"] is False
    assert dict(new.probabilities) == pytest.approx(dict(zip(new.record["option_ids"], new.record["probabilities"],
                                                              strict=True)), abs=1e-9)
    assert new.final_choice == new.raw_choice and "uncovered" in new.record["calibrated"]["reason"]
    validate_records([dict(r) for r in answers.records])
    with pytest.raises(InputError):  # uncovered says applied is false
        validate_records([{**dict(new.record), "calibrated": {**new.record["calibrated"], "applied": True}}])
    with pytest.raises(SemifError, match="on_uncovered"):
        Scorer(backend=fake, slots="letters", on_uncovered="skip")


def test_a_calibration_for_another_model_is_refused_before_the_model_loads(tmp_path, monkeypatch, capsys):
    from scorer import backends
    from scorer.calibration.core import write_calibration

    cal = prior_for(FakeBackend(), "Refund?")  # fitted on the fake: not smollm2 on torch
    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("the model was loaded"))
    with pytest.raises(InputError) as exc:
        Scorer(model="smollm2-135m", backend="torch", calibration=cal)
    assert exc.value.field == "models" and "before the model loads" in str(exc.value)
    ident = {"backend": "torch", "dtype": "float32", "gguf_sha256": store.REGISTRY["smollm2-135m"].sha256,
             "revision": None, "local_sha256": None, "hub": None}
    ok = Calibration("prior", "mean", {identity_sha256(ident): ident}, cal.entries[:0], source=cal.source)
    Scorer(model="smollm2-135m", backend="torch", calibration=ok)  # the same identity passes (nothing loads)
    with pytest.raises(InputError):
        Scorer(model="smollm2-135m", backend="torch", dtype="bfloat16", calibration=ok)
    path = tmp_path / "prior.json"
    write_calibration(cal, path)
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(orjson.dumps({"id": "a", "state": STATE, "question": "Refund?", "type": "yesno"}) + b"\n")
    assert cli.load_backend is cli._SHIPPED_LOADER  # SemIf's own loader, which must not be reached:
    monkeypatch.setattr(store, "resolve", lambda *a, **k: pytest.fail("the model was resolved for loading"))
    for argv in (["score", "--input", str(rows), "--output", str(tmp_path / "o.jsonl")],
                 ["ask", "--state", STATE, "--yesno", "r=Refund?"]):
        assert cli.main([*argv, "--model", "smollm2-135m", "--calibration", str(path)]) == 2
        err = capsys.readouterr().err
        assert "field 'models'" in err and "before the model loads" in err and "Traceback" not in err


def _ask_cli(monkeypatch, *argv: str, backend=None) -> tuple[int, dict | None]:
    monkeypatch.setattr(cli, "load_backend", lambda cfg: backend or FakeBackend())
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["ask", *argv])
    return code, json.loads(buf.getvalue()) if code == 0 else None


def test_semif_ask_prints_the_api_answers(tmp_path, monkeypatch):
    (tmp_path / "t.txt").write_text(STATE, encoding="utf-8")
    code, doc = _ask_cli(monkeypatch, "--state", f"@{tmp_path / 't.txt'}",
                         "--choice", "team=Which team should handle this ticket?:billing=Billing: charges, refunds|"
                                     "tech=Technical: crashes, bugs|sales=Sales",
                         "--yesno", "refund=Is the customer asking for a refund?",
                         "--score", "severity=How severe is the problem?:cosmetic|minor|major|critical",
                         "--policy", "0.05", "--records", str(tmp_path / "r.jsonl"))
    assert code == 0 and doc is not None
    with Scorer(backend=FakeBackend(), mode="shared") as s:  # semif ask's default readout is the API's
        want = s.ask(STATE, QUESTIONS)
    for name, a in want.items():
        got = dict(doc["answers"][name])
        assert got.pop("act") == (a.margin >= 0.05 and not a.tie) and "margin" in got.pop("reason")
        assert got == a.to_json()
    assert doc["policy"]["policy"] == "margin" and doc["records"] == str(tmp_path / "r.jsonl")
    recs = read_records(tmp_path / "r.jsonl")
    assert [_stable(r)["signature"] for r in recs] == [r["signature"] for r in want.records]


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--state", "s"], "no question given"),
    (["--state", "s", "--choice", "Which team?"], "no NAME="),
    (["--state", "s", "--choice", "team=Which team? billing|tech"], "no ':'"),
    (["--state", "s", "--choice", "team=Which?:a|a"], "twice"),
    (["--state", "s", "--choice", "t=Which?:a|b", "--yesno", "t=Refund?"], "used twice"),
    (["--state", "s", "--choice", "t=Which?:a"], "field 'questions.t.options': 1 options"),
    (["--state", "s", "--choice", "t=Which?:a|"], "field 'questions.t.options[1].id'"),
    (["--state", "@/nonexistent/state.txt", "--yesno", "r=Refund?"], "file not found"),
    (["--state", "{", "--json-state", "--yesno", "r=Refund?"], "invalid JSON"),
    (["--state", "s", "--yesno", "r=Refund?", "--policy", "1.5"], "from 0 to 1"),
    (["--state", "s", "--yesno", "r=Refund?", "--policy", "nofile.json"], "neither a number nor a file"),
    (["--state", "s", "--yesno", "r=Refund?", "--min-mass", "0.5"], "without --policy"),
    (["--state", "s", "--yesno", "r=Refund?", "--uncovered", "raw"], "without --calibration"),
])
def test_semif_ask_refuses_bad_specs_before_the_model_loads(monkeypatch, capsys, argv, fragment):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model was loaded"))
    assert cli.main(["ask", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err, err


def test_score_uncovered_raw_and_show_count_the_acting_choice(tmp_path, monkeypatch, capsys):
    from scorer.calibration.core import write_calibration

    fake = FakeBackend()
    path = tmp_path / "prior.json"
    write_calibration(prior_for(fake, "Refund?"), path)
    rows = [{"id": f"{q}-{i}", "state": f"{STATE} #{i}", "question": q, "type": "yesno", "label": "no"}
            for q in ("Refund?", "Is it a refund?") for i in range(3)]
    inp = tmp_path / "rows.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: fake)
    out = tmp_path / "out.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--calibration", str(path)]) == 2
    assert "no calibration for signature" in capsys.readouterr().err and not out.exists()
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--uncovered", "raw"]) == 2
    assert "without --calibration" in capsys.readouterr().err
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--calibration", str(path),
                     "--uncovered", "raw", "--summary"]) == 0
    recs = read_records(out)
    assert [bool(r["calibrated"].get("uncovered")) for r in recs] == [False] * 3 + [True] * 3
    table = capsys.readouterr().out
    acting = sum(r["calibrated"]["choice"] == "no" for r in recs)
    raw = sum(r["choice"] == "no" for r in recs)
    assert f"{acting}/6 calibrated choices match their label (raw: {raw}/6)" in table
    assert "3 decisions uncovered" in table and "p_yes" in table
    assert cli.main(["show", str(out), "--policy", "0.99", "--min-mass", "0"]) == 0
    shown = capsys.readouterr().out
    assert "abstain" in shown and "act on 0/6" in shown


def test_the_service_ask_endpoint_equals_the_api(monkeypatch):
    import httpx
    from serve_helpers import live as _live

    from scorer.serving.service import build_app

    body = {"state": STATE, "id": "t41", "extra": {"ticket": 41}, "questions": {
        "team": {"type": "choice", "question": "Which team should handle this ticket?",
                 "options": {"billing": "Billing: charges, refunds", "tech": "Technical: crashes, bugs",
                             "sales": "Sales"}},
        "refund": {"type": "yesno", "question": "Is the customer asking for a refund?"},
        "severity": {"type": "score", "question": "How severe is the problem?",
                     "options": ["cosmetic", "minor", "major", "critical"]}}}
    with Scorer(backend=FakeBackend(), slots="letters", mode="direct") as s:
        want = s.ask(STATE, QUESTIONS, id="t41", ticket=41)
        same = s.ask(STATE, body["questions"], id="t41", ticket=41)  # the same rows, byte for byte
        with _live(build_app(s)) as url:
            r = httpx.post(f"{url}/v1/ask", json=body)
            assert r.status_code == 200, r.text
            doc = r.json()
            assert doc["answers"] == want.to_json()
            assert [_stable(g) for g in doc["records"]] == [_stable(w) for w in same.records]
            assert [g["signature"] for g in doc["records"]] == [w["signature"] for w in want.records]
            for bad, status, field in (
                    ({**body, "questions": {"t": {"type": "choice", "question": "q", "options": ["a"]}}}, 422,
                     "questions.t.options"),
                    ({**body, "questions": {"t": {"type": "rating", "question": "q"}}}, 422, "questions.t.type"),
                    ({**body, "questions": []}, 422, "questions"), ({"state": STATE}, 422, "questions"),
                    ({**body, "mode": "direct"}, 422, "mode"), ({**body, "extra": [1]}, 422, "extra"),
                    ({**body, "questions": {f"q{i}": {"type": "yesno", "question": "q"} for i in range(1025)}}, 413,
                     "questions")):
                r = httpx.post(f"{url}/v1/ask", json=bad)
                assert r.status_code == status and r.json()["field"] == field, r.text
            assert "/v1/ask" in httpx.get(f"{url}/v1/schema").json()["openapi"]["paths"]


@pytest.mark.slow
def test_ask_on_smollm2_equals_semif_score_shared(tmp_path, monkeypatch, smol_torch):
    with Scorer(backend=smol_torch, slots="letters", mode="shared") as s:
        rows = s.ask_rows(STATE, QUESTIONS)
        answers = s.ask(STATE, QUESTIONS)
    want = _score_file(tmp_path, rows, monkeypatch, smol_torch)
    for a, w in zip(answers.values(), want, strict=True):
        got = dict(a.record)
        assert got["prompt_sha256"] == w["prompt_sha256"] and got["tokens_sha256"] == w["tokens_sha256"]
        assert got["signature"] == w["signature"] and got["run"]["config_sha256"] == w["run"]["config_sha256"]
        assert got["choice"] == w["choice"] and got["probabilities"] == pytest.approx(w["probabilities"], abs=1e-6)
        assert a.to_json()["final_choice"] == answer_of(w).final_choice
    assert answers["refund"].p_yes == pytest.approx(answer_of(want[1]).p_yes, abs=1e-6)
    assert answers["severity"].expected == pytest.approx(answer_of(want[2]).expected, abs=1e-5)


def test_the_service_scores_an_uncovered_row_raw_when_asked(monkeypatch, capsys):
    import httpx
    from serve_helpers import live as _live

    from scorer.serving.service import build_app

    cal = prior_for(FakeBackend(), "Refund?")
    row = {"id": "r", "state": STATE, "question": "Is it a refund?", "type": "yesno"}
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", calibration=cal) as strict, \
            _live(build_app(strict)) as url:
        r = httpx.post(f"{url}/v1/decide", json=row)
        assert r.status_code == 422 and "no calibration for signature" in r.json()["error"]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", calibration=cal, on_uncovered="raw") as lax, \
            _live(build_app(lax)) as url:
        r = httpx.post(f"{url}/v1/decide", json=row)
        assert r.status_code == 200 and r.json()["calibrated"]["uncovered"] is True
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model was loaded"))
    assert cli.main(["serve", "--uncovered", "raw"]) == 2
    assert "--uncovered" in capsys.readouterr().err
