"""Every entry — the API (`Scorer.decide`/`decide_row`/`ask`), the command line (`semif score`, `semif ask`), the
service (`/v1/decide`, `/v1/ask`) and the MCP tools (`decide`, `ask`) — refuses the same bad question, options, type
or policy with the same field-named message (exit 2 / HTTP 422 / a tool error, never a traceback), table-driven on
the fake backend; and, on smollm2-135m with one model load, gives identical answers for the same question."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fakes import FakeBackend
from serve_helpers import live

from scorer import Choice, Score, Scorer, YesNo, cli
from scorer.core.errors import InputError, SemifError
from scorer.decision.policy import Policy, load_policy, policy_of
from scorer.formats.records import read_records
from scorer.scoring.options import DEFAULT_SLOTS
from scorer.serving.mcp import call_tool
from scorer.serving.service import build_app

STATE = "Ticket 41: I was charged twice for my order last week and want my money back. The app also crashes."
SEVENTEEN = [f"o{i}" for i in range(256)]  # one more than MAX_OPTIONS

# label, the question in the JSON form (type, question, options), the row field it breaks, a fragment of the message,
# and whether `semif ask`'s spec syntax can say it (NAME=QUESTION:ID|ID…: plain ids without | = :)
BAD_QUESTIONS: list[tuple[str, dict[str, Any], str, str, bool]] = [
    ("one option", {"type": "choice", "question": "Which team?", "options": ["billing"]}, "options",
     "1 options (expected 2 to 255 options)", True),
    ("256 options", {"type": "choice", "question": "Which team?", "options": SEVENTEEN}, "options",
     "256 options (expected 2 to 255 options)", True),
    ("duplicate ids", {"type": "choice", "question": "Which team?", "options": ["a", "b", "a"]}, "options[2].id",
     "duplicate id", False),
    ("blank id", {"type": "choice", "question": "Which team?", "options": ["a", " "]}, "options[1]",
     "blank option id", False),
    ("options as text", {"type": "choice", "question": "Which team?", "options": "a|b"}, "options",
     "a list of option ids", False),
    ("blank description", {"type": "choice", "question": "Which team?",
                           "options": [{"id": "a", "description": " "}, {"id": "b", "description": "B"}]},
     "options[0].description", "", False),
    ("option object with another key", {"type": "choice", "question": "Which team?",
                                        "options": [{"id": "a", "description": "A", "label": "a"}, "b"]},
     "options[0]", "", False),
    ("blank question", {"type": "choice", "question": "  ", "options": ["a", "b"]}, "question", "non-empty", True),
    ("question not text", {"type": "choice", "question": 7, "options": ["a", "b"]}, "question", "", False),
    ("unknown type", {"type": "rating", "question": "How bad?", "options": ["low", "high"]}, "type",
     "not a question type", False),
    ("type not text", {"type": ["choice"], "question": "How bad?", "options": ["low", "high"]}, "type",
     "not a question type", False),
    ("yesno over other ids", {"type": "yesno", "question": "Refund?", "options": ["y", "n"]}, "options",
     "exactly the ids 'yes' and 'no'", False),
    ("score with one label", {"type": "score", "question": "How bad?", "options": ["low"]}, "options",
     "1 options", True),
]
IDS = [c[0] for c in BAD_QUESTIONS]


def _row(spec: dict[str, Any]) -> dict[str, Any]:
    return {"id": "r", "state": STATE, **spec}


def _tail(message: str, field: str) -> str:
    """What a message says after ``field 'F': `` (the same in every entry; only the place in front differs)."""
    head = f"field '{field}': "
    assert head in message, (head, message)
    return message.split(head, 1)[1]


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[str, FakeBackend]]:
    backend = FakeBackend()
    with Scorer(backend=backend, mode="shared") as s, live(build_app(s)) as url:
        yield url, backend


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return code, err.strip()


@pytest.mark.parametrize(("label", "spec", "field", "fragment", "in_shell"), BAD_QUESTIONS, ids=IDS)
def test_a_bad_question_gets_the_same_field_named_error_in_every_entry(
        label: str, spec: dict[str, Any], field: str, fragment: str, in_shell: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], service: tuple[str, FakeBackend]):
    url, served = service
    asked = f"questions.q.{field}"
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model was loaded for a bad question"))
    row_form: dict[str, str] = {}  # entry -> message
    ask_form: dict[str, str] = {}
    fake = FakeBackend()
    with Scorer(backend=fake, mode="shared") as s:
        for entry, call in (("api decide_row", lambda: s.decide_row(_row(spec))),
                            ("api ask", lambda: s.ask(STATE, {"q": spec}))):
            with pytest.raises(InputError) as exc:
                call()
            (row_form if "ask" not in entry else ask_form)[entry] = str(exc.value)
            assert exc.value.field == (asked if "ask" in entry else field), str(exc.value)
        if isinstance(spec.get("question"), str) and "options" in spec:
            with pytest.raises(InputError) as exc:
                s.decide(STATE, spec["question"], spec["options"], id="r", type=spec["type"])
            assert exc.value.field == field and str(exc.value).startswith("decision: ")
            row_form["api decide"] = str(exc.value)
        for entry, args in (("mcp decide", {"state": STATE, "question": spec["question"], "options": spec["options"],
                                             "id": "r", "extra": {"type": spec["type"]}}),
                            ("mcp ask", {"state": STATE, "questions": {"q": spec}})):
            got, text, err = call_tool(s, entry.split()[1], args)
            assert err and got is None and "Traceback" not in text, text
            (row_form if "ask" not in entry else ask_form)[entry] = text
    assert fake.calls["prefill"] == fake.calls["fresh"] == 0

    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(orjson.dumps(_row(spec)) + b"\n")
    code, err = _cli(["score", "--input", str(rows), "--output", str(tmp_path / "out.jsonl")], capsys)
    assert code == 2 and err.startswith(f"semif: error: {rows}:1: field '{field}': ")
    assert not (tmp_path / "out.jsonl").exists()
    row_form["semif score"] = err
    if in_shell:
        flag = f"--{spec['type']}"
        code, err = _cli(["ask", "--state", STATE, flag, f"q={spec['question']}:{'|'.join(spec['options'])}"], capsys)
        assert code == 2 and f"field '{asked}': " in err
        ask_form["semif ask"] = err

    r = httpx.post(f"{url}/v1/decide", json=_row(spec))
    assert r.status_code == 422 and r.json()["field"] == field and r.json()["error"].startswith("body: "), r.text
    row_form["/v1/decide"] = r.json()["error"]
    r = httpx.post(f"{url}/v1/ask", json={"state": STATE, "questions": {"q": spec}})
    assert r.status_code == 422 and r.json()["field"] == asked, r.text
    ask_form["/v1/ask"] = r.json()["error"]
    assert served.calls["prefill"] == served.calls["fresh"] == 0

    for form, f in ((row_form, field), (ask_form, asked)):
        tails = {entry: _tail(m, f) for entry, m in form.items()}
        assert len(set(tails.values())) == 1, tails  # one wording whatever the entry
        assert fragment in next(iter(tails.values()))
    assert _tail(next(iter(row_form.values())), field) == _tail(next(iter(ask_form.values())), asked)


@pytest.mark.parametrize(("questions", "field"), [
    ({}, "questions"), (["team"], "questions"), ({"": {"type": "yesno", "question": "q"}}, "questions"),
    ({"q": {"question": "Which?", "options": ["a", "b"]}}, "questions.q.type"),
    ({"q": {"type": "choice", "question": "Which?"}}, "questions.q.options"),
    ({"q": {"type": "choice", "options": ["a", "b"]}}, "questions.q.question"),
    ({"q": {"type": "choice", "question": "Which?", "options": ["a", "b"], "label": "a"}}, "questions.q"),
    ({"q": 3}, "questions.q"),
])
def test_a_bad_questions_mapping_is_refused_alike_by_the_ask_entries(questions: Any, field: str,
                                                                     service: tuple[str, FakeBackend]):
    url, _ = service
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        with pytest.raises(InputError) as exc:
            s.ask(STATE, questions)
        api = str(exc.value)
        _, mcp_text, err = call_tool(s, "ask", {"state": STATE, "questions": questions})
    r = httpx.post(f"{url}/v1/ask", json={"state": STATE, "questions": questions})
    assert exc.value.field == field and err and r.status_code == 422 and r.json()["field"] == field, r.text
    assert api == mcp_text == r.json()["error"] and api.startswith("ask: ")  # a question's place: ask, any entry


def _threshold_file(tmp_path: Path, name: str, doc: Any) -> Path:
    p = tmp_path / name
    p.write_bytes(orjson.dumps(doc))
    return p


def test_a_bad_policy_gets_the_same_field_named_error_in_the_api_and_the_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Policies are the API's (Policy, load_policy) and the command line's (--policy on ask and show): the service
    and MCP answer the readout and leave abstention to the caller, so they take none."""
    good = {"kind": "abstain-thresholds", "format": "semif-thresholds-v1", "thresholds": {},
            "fallback": {"threshold": 0.2}}
    files = [
        (_threshold_file(tmp_path, "kind.json", {**good, "kind": "prior"}), "kind"),
        (_threshold_file(tmp_path, "format.json", {**good, "format": "semif-thresholds-v0"}), "format"),
        (_threshold_file(tmp_path, "threshold.json", {**good, "thresholds": {"abc": {"threshold": 2}}}),
         "thresholds.abc.threshold"),
        (_threshold_file(tmp_path, "fallback.json", {**good, "fallback": {"threshold": "high"}}), "fallback.threshold"),
        (_threshold_file(tmp_path, "floor.json", {**good, "min_allowed_token_mass": 3}), "min_allowed_token_mass"),
    ]
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        rec = s.decide(STATE, "Refund?", ["yes", "no"], id="r").record
    run = tmp_path / "run.jsonl"
    run.write_bytes(orjson.dumps(rec) + b"\n")
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model was loaded for a bad policy"))
    for path, field in files:
        with pytest.raises(InputError) as exc:
            load_policy(path)
        assert exc.value.field == field and str(exc.value).startswith(f"{path}: field '{field}': ")
        for argv in (["ask", "--state", STATE, "--yesno", "r=Refund?", "--policy", str(path)],
                     ["show", str(run), "--policy", str(path)]):
            code, err = _cli(argv, capsys)
            assert code == 2 and err == f"semif: error: {exc.value}", (argv, err)
    for text in ("1.5", "-0.1", "nan"):
        with pytest.raises(SemifError) as exc:
            policy_of(text)
        for argv in (["ask", "--state", STATE, "--yesno", "r=Refund?", "--policy", text],
                     ["show", str(run), "--policy", text]):
            code, err = _cli(argv, capsys)
            assert code == 2 and err == f"semif: error: {exc.value}" and "--policy" in err, (argv, err)
    with pytest.raises(SemifError, match=r"^margin: 1.5 is not a number from 0 to 1"):  # as --policy 1.5 says
        Policy(margin=1.5)


# --- one question, every entry, the real model ----------------------------------------------------------------------
QUESTIONS = {
    "team": Choice("Which team should handle this ticket?",
                   {"billing": "Billing: charges, refunds", "tech": "Technical: crashes, bugs", "sales": "Sales"}),
    "refund": YesNo("Is the customer asking for a refund?"),
    "severity": Score("How severe is the problem?", ["cosmetic", "minor", "major", "critical"]),
}
SHELL = ["--choice", "team=Which team should handle this ticket?:billing=Billing: charges, refunds|"
                     "tech=Technical: crashes, bugs|sales=Sales",
         "--yesno", "refund=Is the customer asking for a refund?",
         "--score", "severity=How severe is the problem?:cosmetic|minor|major|critical"]
JSON_QUESTIONS = {"team": {"type": "choice", "question": "Which team should handle this ticket?",
                           "options": {"billing": "Billing: charges, refunds", "tech": "Technical: crashes, bugs",
                                       "sales": "Sales"}},
                  "refund": {"type": "yesno", "question": "Is the customer asking for a refund?"},
                  "severity": {"type": "score", "question": "How severe is the problem?",
                               "options": ["cosmetic", "minor", "major", "critical"]}}
DECIDE = {"question": "Which team should handle this ticket?",
          "options": [{"id": "billing", "description": "Billing: charges, refunds"},
                      {"id": "tech", "description": "Technical: crashes, bugs"},
                      {"id": "sales", "description": "Sales"}]}


def _same(rec: dict[str, Any]) -> dict[str, Any]:
    """A record less what differs between two runs of one row by design: timings, the run's start time, and how its
    prefix came out of this scorer's cache (every entry below starts with an empty one)."""
    out = {k: v for k, v in rec.items() if k not in ("timing", "cache")}
    out["run"] = {k: v for k, v in rec["run"].items() if k != "started_unix"}
    return out


@pytest.mark.slow
def test_every_entry_gives_identical_answers_on_smollm2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        smol_torch: Any):
    """One model load (the session's smollm2): each entry gets a fresh Scorer over it, hence an empty prefix cache, so
    one row takes the same computation everywhere and the answers are equal to the bit."""
    row = {"id": "t1", "state": STATE, **DECIDE}
    monkeypatch.setattr(cli, "load_backend", lambda cfg: smol_torch)
    decided: dict[str, dict[str, Any]] = {}
    asked: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}

    def fresh() -> Scorer:
        return Scorer(backend=smol_torch, mode="shared")

    with fresh() as s:
        decided["api decide"] = s.decide(STATE, DECIDE["question"], DECIDE["options"], id="t1").record
    with fresh() as s:
        a = s.ask(STATE, JSON_QUESTIONS, id="t1")
        asked["api ask"] = a.to_json(), a.records
    with fresh() as s:
        a = s.ask(STATE, QUESTIONS, id="t1")  # the Python question types: the same rows in another spelling
        asked["api ask (Choice, YesNo, Score)"] = a.to_json(), a.records
    with fresh() as s:
        got, _, err = call_tool(s, "decide", {"state": STATE, **DECIDE, "id": "t1"})
        assert not err and got is not None
        decided["mcp decide"] = got["record"]
    with fresh() as s:
        got, _, err = call_tool(s, "ask", {"state": STATE, "questions": JSON_QUESTIONS, "id": "t1"})
        assert not err and got is not None
        asked["mcp ask"] = got["answers"], got["records"]
    with fresh() as s, live(build_app(s)) as url:
        r = httpx.post(f"{url}/v1/decide", json=row, timeout=600)
        assert r.status_code == 200, r.text
        decided["/v1/decide"] = r.json()
    with fresh() as s, live(build_app(s)) as url:
        r = httpx.post(f"{url}/v1/ask", json={"state": STATE, "questions": JSON_QUESTIONS, "id": "t1"}, timeout=600)
        assert r.status_code == 200, r.text
        asked["/v1/ask"] = r.json()["answers"], r.json()["records"]
    for name, rows in (("decide", [row]), ("ask", Scorer(backend=smol_torch).ask_rows(STATE, JSON_QUESTIONS, id="t1"))):
        inp, out = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-out.jsonl"
        inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        # a records run reads letters unless told: asked for the scorer's default readout, it names the same run
        assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared",
                         "--slots", DEFAULT_SLOTS]) == 0
        if name == "decide":
            decided["semif score"] = read_records(out)[0]
        else:
            asked["semif score"] = {}, read_records(out)
    buf, kept = io.StringIO(), tmp_path / "asked.jsonl"
    with redirect_stdout(buf):
        assert cli.main(["ask", "--state", STATE, *SHELL, "--id", "t1", "--records", str(kept)]) == 0
    asked["semif ask"] = json.loads(buf.getvalue())["answers"], read_records(kept)

    want = _same(decided.pop("api decide"))
    for entry, rec in decided.items():
        assert _same(rec) == want, entry
    want_answers, want_records = asked.pop("api ask")
    respelled = ("api ask (Choice, YesNo, Score)", "semif ask")  # other bytes of the same rows: another run hash
    for entry, (answers, records) in asked.items():
        strip = (lambda r: {k: v for k, v in _same(r).items() if k != "run"}) if entry in respelled else _same
        assert [strip(r) for r in records] == [strip(r) for r in want_records], entry
        if answers:  # semif score writes records only
            assert answers == want_answers, entry
    # the decision alone and the same question packed with two others: one prompt, the packed pass's float noise
    team = want_records[0]
    assert want["prompt_sha256"] == team["prompt_sha256"] and want["tokens_sha256"] == team["tokens_sha256"]
    assert want["signature"] == team["signature"] and want["choice"] == want_answers["team"]["raw_choice"]
    assert want["probabilities"] == pytest.approx(team["probabilities"], abs=1e-5)
