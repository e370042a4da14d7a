"""``semif score --backend systemone``: rows asked of a fake System One server on loopback (tests/fake_systemone.py),
records checked against what it served; grouping by state, retries, refusals, resume and create-only outputs; and
the records read by the commands that read records (show, eval, compare, calibrate, route)."""

from __future__ import annotations

import math
import socket
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_systemone import MODEL, FakeSystemOne
from serve_helpers import ROWS_FILE, live

from scorer import cli
from scorer.core.hashing import canonical_sha256
from scorer.formats.records import read_records

_VOLATILE = ("timing", "run")


def _rows(tmp_path: Path, rows: list[dict[str, Any]], name: str = "rows.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return p


MIXED = [
    {"id": "t1", "state": "I was charged twice for my order!", "question": "What is the tone?",
     "options": [{"id": "calm", "description": "calm and polite"}, {"id": "angry", "description": "hostile"},
                 {"id": "sad", "description": "disappointed"}], "label": "angry"},
    {"id": "b1", "state": {"ticket": "T-1", "message": "refund please"}, "type": "yesno",
     "question": "Is it about billing?", "options": [{"id": "yes", "description": "It is"},
                                                      {"id": "no", "description": "It is not"}], "label": "yes"},
    {"id": "u1", "state": "I was charged twice for my order!", "type": "score", "question": "How urgent?",
     "options": [{"id": "low", "description": "Can wait"}, {"id": "mid", "description": "This week"},
                 {"id": "high", "description": "Today"}], "label": "high"},
    {"id": "b2", "state": "I was charged twice for my order!", "type": "yesno", "question": "Is it about billing?",
     "label": "yes"},
    {"id": "t2", "state": {"ticket": "T-1", "message": "refund please"}, "question": "What is the tone?",
     "options": ["calm", "angry"], "label": "calm"},
]


@pytest.fixture
def server():
    fake = FakeSystemOne()
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        yield fake


def _score(fake: FakeSystemOne, inp: Path, out: Path, *more: str) -> int:
    return cli.main(["score", "--input", str(inp), "--output", str(out), "--backend", "systemone",
                     "--base-url", fake.url, *more])  # type: ignore[attr-defined]


def _one_error_line(err: str) -> bool:
    """stderr holds one ``semif: error:`` line and no traceback (a progress bar may precede it)."""
    return "Traceback" not in err and len([ln for ln in err.split("\n") if "semif: error:" in ln]) == 1 \
        and err.rstrip("\n").rsplit("\n", 1)[-1].lstrip("\r").startswith("semif: error:")


def _served(fake: FakeSystemOne, rec: dict[str, Any]) -> list[float]:
    """What the fake served for a record's row, in the record's option order."""
    post = next(c for c in fake.posts if rec["id"] in c.body["questions"])
    q = post.body["questions"][rec["id"]]
    ans = fake.answer(post.body["state"], rec["id"], q)
    if ans["type"] == "noul":
        return [ans["noul"] if i == "yes" else 1 - ans["noul"] for i in rec["option_ids"]]
    if ans["type"] == "score":
        return [ans["probabilities"][str(k)] for k in range(len(rec["option_ids"]))]
    return [ans["probabilities"][i] for i in rec["option_ids"]]


# --- records ----------------------------------------------------------------------------------------------------------
def test_records_hold_the_served_probabilities_under_the_callers_ids(server, tmp_path, capsys):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    assert _score(server, inp, out, "--summary") == 0
    recs = read_records(out)  # every record schema-valid and consistent (scorer.formats.records.check_record)
    assert [r["id"] for r in recs] == [r["id"] for r in MIXED]
    for rec, row in zip(recs, MIXED, strict=True):
        opts = row.get("options") or [{"id": "yes"}, {"id": "no"}]
        assert rec["option_ids"] == [o if isinstance(o, str) else o["id"] for o in opts]
        served = _served(server, rec)
        assert rec["probabilities"] == pytest.approx(served, abs=1e-12)
        assert rec["option_logits"] == pytest.approx([math.log(p) for p in served], abs=1e-9)
        top = max(range(len(served)), key=lambda i: served[i])
        assert rec["choice"] == rec["option_ids"][top] and not rec["tie"]
        second = sorted(served)[-2]
        assert rec["margin"] == pytest.approx(served[top] - second, abs=1e-12)
        # what this is, said honestly
        assert rec["mode"] == "remote" and rec["kernel"] == "typesafe-systemone.remote-decision"
        assert "remote decision API" in rec["score_kind"] and "no token-level audit" in rec["score_kind"]
        for key in ("allowed_token_mass", "full_vocab_argmax", "input_tokens", "prompt_sha256", "tokens_sha256",
                    "prompt_template"):
            assert rec[key] is None
        remote = rec["remote"]
        assert remote["endpoint"] == f"{server.url}/v1/systemone" and remote["served_model"] == MODEL
        assert remote["question"] == rec["id"] and remote["attempts"] == 1
        assert remote["usage"]["output_tokens"] == remote["questions"]
        post = next(c for c in server.posts if rec["id"] in c.body["questions"])
        assert remote["request_sha256"] == canonical_sha256(post.body)
        assert remote["request_id"].startswith("req-")
        assert rec["model"]["key"] == MODEL and rec["model"]["source"] == "remote"
        assert rec["model"]["base_url"] == server.url and rec["model"]["listed"]["name"] == MODEL
        assert rec["extra"] == {"label": row["label"]}
        assert rec.get("type") == row.get("type")
    kinds = {r["id"]: r["remote"]["question_type"] for r in recs}
    assert kinds == {"t1": "choice", "b1": "noul", "u1": "score", "b2": "noul", "t2": "choice"}
    assert [r["prompt_version"] for r in recs][:3] == ["typesafe-systemone-choice-v1", "typesafe-systemone-noul-v1",
                                                       "typesafe-systemone-score-v1"]
    shown = capsys.readouterr().out
    assert "remote decision API" in shown and "b1" in shown


def test_questions_are_sent_as_the_wire_spec_says(server, tmp_path):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    assert _score(server, inp, out) == 0
    by_state = {orjson.dumps(c.body["state"]): c.body for c in server.posts}
    text = by_state[orjson.dumps(MIXED[0]["state"])]
    assert list(text) == ["state", "model", "questions"] and text["model"] == MODEL
    assert list(text["questions"]) == ["t1", "u1", "b2"]  # the state's rows, in input order
    assert text["questions"]["t1"] == {"type": "choice", "instructions": "What is the tone?",
                                       "criteria": {"calm": "calm and polite", "angry": "hostile",
                                                    "sad": "disappointed"}}
    assert text["questions"]["u1"] == {"type": "score", "instructions": "How urgent?",
                                       "criteria": ["Can wait", "This week", "Today"]}
    assert text["questions"]["b2"] == {"type": "noul", "instructions": "Is it about billing?",
                                       "criteria": {"true": "Yes", "false": "No"}}
    headers = server.posts[0].headers
    assert headers["content-type"] == "application/json" and "authorization" not in headers


def test_question_types_choice_sends_every_row_as_a_choice(server, tmp_path):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    assert _score(server, inp, out, "--question-types", "choice") == 0
    recs = read_records(out)
    assert {r["remote"]["question_type"] for r in recs} == {"choice"}
    assert {r["prompt_version"] for r in recs} == {"typesafe-systemone-choice-v1"}
    for rec in recs:
        assert rec["probabilities"] == pytest.approx(_served(server, rec), abs=1e-12)


def test_one_request_per_state_and_records_in_input_order(server, tmp_path):
    rows = [orjson.loads(line) for line in ROWS_FILE.read_bytes().splitlines()]
    interleaved = [rows[i] for i in range(0, len(rows), 2)] + [rows[i] for i in range(1, len(rows), 2)]
    inp, out = _rows(tmp_path, interleaved), tmp_path / "out.jsonl"
    assert _score(server, inp, out, "--concurrency", "2") == 0
    states = {orjson.dumps(r["state"]) for r in rows}
    assert len(server.posts) == len(states) == 2
    for post in server.posts:
        want = [r["id"] for r in interleaved if orjson.dumps(r["state"]) == orjson.dumps(post.body["state"])]
        assert list(post.body["questions"]) == want
    recs = read_records(out)
    assert [r["id"] for r in recs] == [r["id"] for r in interleaved]
    assert {r["remote"]["questions"] for r in recs} == {len(rows) // 2}
    assert len({r["remote"]["request_sha256"] for r in recs}) == 2


def test_rounded_and_zero_probabilities_are_renormalised_and_kept_as_served(tmp_path):
    fake = FakeSystemOne(round4=True, zero_last=True)
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
        assert _score(fake, inp, out) == 0
        recs = read_records(out)
    t1 = recs[0]
    served = list(t1["remote"]["answer"]["probabilities"].values())
    assert served[-1] == 0.0 and t1["remote"]["probability_sum"] == pytest.approx(sum(served))
    assert t1["probabilities"] == pytest.approx([p / sum(served) for p in served], abs=1e-12)
    assert t1["option_logits"][-1] == pytest.approx(math.log(2.2250738585072014e-308))


def test_an_api_key_is_sent_as_a_bearer_token_and_never_recorded(tmp_path, monkeypatch):
    fake = FakeSystemOne(api_key="sk-test-123")
    monkeypatch.setenv("SEMIF_TEST_KEY", "sk-test-123")
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
        assert _score(fake, inp, out, "--api-key-env", "SEMIF_TEST_KEY") == 0
    assert all(c.headers["authorization"] == "Bearer sk-test-123" for c in fake.calls)
    assert b"sk-test-123" not in out.read_bytes()


def test_the_model_is_named_by_served_model_or_model(tmp_path):
    fake = FakeSystemOne(models=["a-1", "b-2"])
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp = _rows(tmp_path, MIXED)
        assert _score(fake, inp, tmp_path / "o1.jsonl", "--served-model", "b-2") == 0
        assert _score(fake, inp, tmp_path / "o2.jsonl", "--model", "a-1") == 0
    assert {r["model"]["key"] for r in read_records(tmp_path / "o1.jsonl")} == {"b-2"}
    assert {r["model"]["key"] for r in read_records(tmp_path / "o2.jsonl")} == {"a-1"}


# --- retries, timeouts and refusals by the server ---------------------------------------------------------------------
def test_429_is_retried_after_retry_after(tmp_path):
    fake = FakeSystemOne(too_many=2, retry_after="0.3")
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
        t0 = time.monotonic()
        assert _score(fake, inp, out) == 0
        took = time.monotonic() - t0
    assert len(fake.posts) == 3 and took >= 0.6
    assert read_records(out)[0]["remote"]["attempts"] == 3


def test_503_is_retried_with_backoff(tmp_path):
    fake = FakeSystemOne(unavailable=1)
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
        assert _score(fake, inp, out) == 0
    assert read_records(out)[0]["remote"]["attempts"] == 2


def test_a_retry_after_beyond_two_minutes_is_reported_not_waited(tmp_path, capsys):
    fake = FakeSystemOne(too_many=1, retry_after="500")
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
        t0 = time.monotonic()
        assert _score(fake, inp, out) == 1
        assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert _one_error_line(err) and "asked to retry POST" in err and "after 500 s (more than 120 s)" in err


def test_an_answer_that_does_not_fit_the_question_is_one_line_and_exit_1(tmp_path, capsys):
    fake = FakeSystemOne(drop_last=True)
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
        assert _score(fake, inp, out) == 1
    err = capsys.readouterr().err
    assert _one_error_line(err) and "does not hold row 't1''s decision: answers.t1.probabilities has keys" in err
    assert not out.exists()


def test_a_422_is_one_line_naming_the_fields_and_rows(server, tmp_path, capsys):
    rows = [*MIXED[:3], {**MIXED[4], "question": "REJECT this"}]
    inp, out = _rows(tmp_path, rows), tmp_path / "out.jsonl"
    assert _score(server, inp, out, "--concurrency", "1") == 2
    err = capsys.readouterr().err
    assert _one_error_line(err)
    assert "HTTP 422: questions.t2.choice.criteria: List should have at least 1 item after validation, not 0" in err
    assert "rows 'b1', 't2'" in err
    recs = read_records(out)  # the rows before the refused state's first row were written
    assert [r["id"] for r in recs] == ["t1"]


def test_a_slow_reply_times_out_into_one_line_and_exit_1(tmp_path, capsys):
    fake = FakeSystemOne(delay_s=2.0)
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
        assert _score(fake, inp, out, "--request-timeout", "0.3", "--retries", "1") == 1
    err = capsys.readouterr().err
    assert _one_error_line(err)
    assert "after 2 tries (no answer within 0.3 s (--request-timeout))" in err
    assert not out.exists()  # the empty output this run created is removed again


def test_an_unreachable_server_and_a_bad_url_are_one_line(tmp_path, capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--backend", "systemone",
                     "--base-url", f"http://127.0.0.1:{port}", "--retries", "0"]) == 1
    err = capsys.readouterr().err
    assert _one_error_line(err) and "did not answer GET" in err and "ConnectError" in err
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--backend", "systemone",
                     "--base-url", "ftp://example"]) == 2
    err = capsys.readouterr().err
    assert "--base-url 'ftp://example'" in err and "Traceback" not in err
    assert not out.exists()


def test_401_without_a_key_hints_at_api_key_env(tmp_path, capsys, monkeypatch):
    fake = FakeSystemOne(api_key="k")
    with live(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
        assert _score(fake, inp, out) == 2
        err = capsys.readouterr().err
        assert "HTTP 401: Invalid API key (no API key was sent: name the variable holding it with --api-key-env" in err
        monkeypatch.delenv("SEMIF_NO_SUCH_KEY", raising=False)
        assert _score(fake, inp, out, "--api-key-env", "SEMIF_NO_SUCH_KEY") == 2
        assert "--api-key-env SEMIF_NO_SUCH_KEY: that environment variable is not set" in capsys.readouterr().err
    assert not out.exists()


def test_an_unknown_model_is_the_servers_404_message(server, tmp_path, capsys):
    inp, out = _rows(tmp_path, MIXED[:1]), tmp_path / "out.jsonl"
    assert _score(server, inp, out, "--served-model", "nope") == 2
    assert "HTTP 404: Unknown model 'nope'" in capsys.readouterr().err


# --- options that need token-level work are refused -------------------------------------------------------------------
@pytest.mark.parametrize(("flags", "named"), [
    (["--exact"], "--exact"), (["--permute", "2"], "--permute"), (["--slots", "ids"], "--slots ids"),
    (["--slots", "sequence"], "--slots sequence"), (["--layout", "question-major"], "--layout question-major"),
    (["--demos", "DEMOS"], "--demos"), (["--mode", "shared"], "--mode shared"), (["--engine", "ray"], "--engine ray"),
    (["--calibration", "x.json"], "--calibration"), (["--batch-calibrate", "mean"], "--batch-calibrate"),
    (["--preset", "x"], "--preset"), (["--fast", "model=x"], "--fast"), (["--gguf", "x.gguf"], "--gguf"),
    (["--device", "cuda"], "--device cuda"),
])
def test_token_level_options_are_refused_naming_the_flag(server, tmp_path, capsys, flags, named):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    demos = _rows(tmp_path, MIXED, "demos.jsonl")
    flags = [str(demos) if f == "DEMOS" else f for f in flags]
    assert _score(server, inp, out, *flags) == 2
    err = capsys.readouterr().err
    assert f"semif: error: {named}: given with --backend systemone" in err and _one_error_line(err)
    assert not out.exists() and server.calls == []


def test_systemone_flags_are_refused_with_another_backend(tmp_path, capsys):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--question-types", "choice"]) == 2
    assert "--question-types: given with --backend torch" in capsys.readouterr().err
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--backend", "systemone"]) == 2
    assert "--base-url: missing for --backend systemone" in capsys.readouterr().err


def test_systemone_is_a_choice_of_semif_score_only(capsys):
    """A decision API is no token-level backend: the registry (held to the logits contract by
    tests/backends/test_backend_contract.py) does not list it, and commands that need logits do not offer it."""
    from scorer.backends.registry import BACKENDS

    assert "systemone" not in BACKENDS
    with pytest.raises(SystemExit) as exc:
        cli.main(["ask", "--backend", "systemone", "--state", "s", "--question", "q?", "--options", "a,b"])
    assert exc.value.code == 2
    assert "argument --backend: 'systemone' is not one of torch, llamacpp, openai" in capsys.readouterr().err


# --- create-only and resume -------------------------------------------------------------------------------------------
def test_an_existing_output_is_never_overwritten(server, tmp_path, capsys):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    out.write_text("precious\n")
    assert _score(server, inp, out) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert out.read_text() == "precious\n" and server.calls == []


def _stable(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in rec.items() if k not in _VOLATILE}
    out["remote"] = {k: v for k, v in rec["remote"].items() if k not in ("request_id", "request_sha256", "questions",
                                                                          "usage")}
    return out


def test_resume_after_a_kill_asks_only_the_missing_rows_and_equals_a_whole_run(server, tmp_path, capsys):
    inp = _rows(tmp_path, MIXED)
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    assert _score(server, inp, full) == 0
    lines = full.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(lines[:2]) + lines[2][:40])  # killed while writing the third record
    server.calls.clear()
    assert _score(server, inp, part, "--resume") == 0
    assert "resuming: 2 of 5 records already in" in capsys.readouterr().err
    asked = [q for c in server.posts for q in c.body["questions"]]
    assert sorted(asked) == ["b2", "t2", "u1"]  # t1 and b1 were written: never asked again
    a, b = read_records(full), read_records(part)
    assert [_stable(r) for r in a] == [_stable(r) for r in b]
    assert {r["run"]["config_sha256"] for r in a} == {r["run"]["config_sha256"] for r in b}
    assert [r["run"]["resumed_from"] for r in b] == [0, 0, 2, 2, 2]


def test_resume_refuses_another_configuration_unchanged(server, tmp_path, capsys):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    assert _score(server, inp, out) == 0
    before = out.read_bytes()
    assert _score(server, inp, out, "--resume", "--question-types", "choice") == 2
    err = capsys.readouterr().err
    assert "field 'run.config_sha256'" in err and "nothing was changed" in err
    assert out.read_bytes() == before


def test_temperature_and_echo_apply_to_remote_records(server, tmp_path):
    inp, out = _rows(tmp_path, MIXED), tmp_path / "out.jsonl"
    assert _score(server, inp, out, "--temperature", "2", "--echo") == 0
    for rec in read_records(out):
        served = _served(server, rec)
        want = [math.sqrt(p) for p in served]
        assert rec["probabilities"] == pytest.approx([w / sum(want) for w in want], abs=1e-9)
        assert rec["temperature"] == 2.0 and rec["echo"]["level"] == "digest"


# --- the commands that read records -----------------------------------------------------------------------------------
def test_show_eval_compare_calibrate_and_route_read_remote_records(server, tmp_path, capsys, monkeypatch):
    from fakes import FakeBackend

    rows = [orjson.loads(line) for line in ROWS_FILE.read_bytes().splitlines()]
    inp = _rows(tmp_path, rows)
    remote, local = tmp_path / "remote.jsonl", tmp_path / "local.jsonl"
    assert _score(server, inp, remote) == 0
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(local)]) == 0
    assert cli.main(["show", str(remote)]) == 0
    assert cli.main(["eval", str(remote), "--labels", str(inp), "--output", str(tmp_path / "eval.json"),
                     "--reps", "20"]) == 0
    assert cli.main(["compare", str(local), str(remote), "--output", str(tmp_path / "cmp.json")]) == 0
    out = capsys.readouterr().out
    assert "answered by a remote decision API: no prompt to compare" in out
    prior = tmp_path / "prior.json"
    assert cli.main(["calibrate", "prior", str(remote), "--output", str(prior), "--min-rows", "2"]) == 0
    applied = tmp_path / "applied.jsonl"
    assert cli.main(["calibrate", "apply", str(remote), "--calibration", str(prior), "--output", str(applied)]) == 0
    recs = read_records(applied)
    assert all(r["calibrated"]["applied"] for r in recs) and all("remote" in r for r in recs)
    assert cli.main(["route", "--fast", str(local), "--reference", str(remote), "--labels", str(inp),
                     "--output", str(tmp_path / "route.json"), "--reps", "20", "--apply", "0.2",
                     "--routed-output", str(tmp_path / "routed.jsonl")]) == 0
    routed = read_records(tmp_path / "routed.jsonl")
    assert {r["route"]["path"] for r in routed} <= {"fast", "reference"}
    capsys.readouterr()
    assert cli.main(["show", str(remote), "--policy", "0", "--min-mass", "0.5"]) == 0  # a floor a remote record
    assert f"act on 0/{len(rows)}" in capsys.readouterr().out  # cannot be held to is not cleared
    assert cli.main(["show", str(remote), "--policy", "0"]) == 0
    assert f"act on {len(rows)}/{len(rows)}" in capsys.readouterr().out


def test_semif_score_against_semif_serve_records_what_scorer_ask_answers(tmp_path):
    """SemIf as the client of SemIf: ``semif score --backend systemone`` pointed at ``semif serve``'s /v1/systemone
    records, under the rows' own ids, the probabilities :meth:`Scorer.ask` gives the same questions."""
    from fakes import FakeBackend
    from serve_helpers import live

    from scorer import Scorer
    from scorer.formats.records import read_records
    from scorer.serving.service import build_app

    rows = [{"id": "t1", "state": "I was charged twice.", "question": "Which team?", "options": {
                "billing": "payments", "tech": "bugs", "sales": "orders"}},
            {"id": "t2", "state": "I was charged twice.", "question": "Refund?", "type": "yesno"},
            {"id": "t3", "state": "The app crashes on start.", "question": "How urgent?", "type": "score",
             "options": ["low", "high"]}]
    inp, out = _rows(tmp_path, rows), tmp_path / "out.jsonl"
    with Scorer(backend=FakeBackend(), mode="shared") as s, live(build_app(s)) as url:
        assert cli.main(["score", "--input", str(inp), "--output", str(out), "--backend", "systemone",
                         "--base-url", url, "--served-model", "jev-latest"]) == 0
    recs = {r["id"]: r for r in read_records(out)}
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        team = s.ask(rows[0]["state"], {"t1": {"type": "choice", "question": "Which team?", "options": [
            {"id": k, "description": v} for k, v in rows[0]["options"].items()]}})["t1"]
        refund = s.ask(rows[1]["state"], {"t2": {"type": "yesno", "question": "Refund?"}})["t2"]
    assert recs["t1"]["probabilities"] == pytest.approx(list(team.probabilities.values()), abs=1e-9)
    assert recs["t2"]["probabilities"][0] == pytest.approx(refund.probabilities["yes"], abs=1e-9)
    assert {r["mode"] for r in recs.values()} == {"remote"} and recs["t3"]["option_ids"] == ["low", "high"]
