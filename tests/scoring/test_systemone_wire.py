"""The System One wire without a server: URLs, questions, answers read back, error messages as the SDK finds them,
Retry-After; and a remote decision record held by the record checks (scorer/formats/records.py)."""

from __future__ import annotations

import email.utils
import math
import time

import pytest

from scorer.core.errors import InputError, ValidationError
from scorer.formats.records import check_record
from scorer.formats.rows import parse_decision
from scorer.scoring.systemone_run import make_record, model_block, retry_after
from scorer.scoring.systemone_wire import (
    WireError,
    error_message,
    normalize_base_url,
    question_of,
    question_type,
    served_probabilities,
)


def test_base_urls_are_the_servers_root():
    assert normalize_base_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert normalize_base_url("https://api.example.com/v1") == "https://api.example.com"
    assert normalize_base_url(" http://h/prefix/v1/ ") == "http://h/prefix"
    for bad in ("ftp://h", "127.0.0.1:8080", "http://h:99999", "http://h/?x=1", "http:///v1"):
        with pytest.raises(ValidationError, match="--base-url"):
            normalize_base_url(bad)


def _row(**kw):
    base = {"id": "r", "state": "s", "question": "q?", "options": [{"id": "a", "description": "A thing"},
                                                                   {"id": "b", "description": "B thing"}]}
    return parse_decision({**base, **kw}, "rows.jsonl", 1)


def test_rows_become_questions():
    yn = _row(type="yesno", options=[{"id": "no", "description": "Nope"}, {"id": "yes", "description": "Yep"}])
    sc = _row(type="score", options=["low", "high"])
    assert question_type(_row()) == "choice" and question_type(yn) == "noul" and question_type(sc) == "score"
    assert question_type(yn, "choice") == question_type(sc, "choice") == "choice"
    assert question_of(yn, "noul") == {"type": "noul", "instructions": "q?",
                                       "criteria": {"true": "Yep", "false": "Nope"}}
    assert question_of(sc, "score") == {"type": "score", "instructions": "q?", "criteria": ["low", "high"]}
    assert question_of(_row(), "choice")["criteria"] == {"a": "A thing", "b": "B thing"}


def test_answers_are_read_into_option_order_and_checked():
    ans = {"q": {"type": "choice", "choice": "b", "confidence": 0.2, "probabilities": {"b": 0.6, "a": 0.4}}}
    assert served_probabilities(ans, "q", "choice", ["a", "b"])[0] == [0.4, 0.6]
    noul = {"q": {"type": "noul", "noul": 0.25}}
    assert served_probabilities(noul, "q", "noul", ["no", "yes"])[0] == [0.75, 0.25]
    score = {"q": {"type": "score", "score": 1.5, "confidence": 0.1, "legend": {"0": "x", "1": "y"},
                   "probabilities": {"1": 0.75, "0": 0.25}}}
    assert served_probabilities(score, "q", "score", ["lo", "hi"])[0] == [0.25, 0.75]
    bad = [
        ({}, "choice", "no answer to question 'q'"),
        ({"q": {"type": "noul", "noul": 0.5}}, "choice", "answers.q.type is 'noul' for a choice question"),
        ({"q": {"type": "choice", "probabilities": {"a": 1.0}}}, "choice", "has keys ['a'] (expected exactly"),
        ({"q": {"type": "choice", "probabilities": {"a": 0.9, "b": 0.9}}}, "choice", "sum to 1.8"),
        ({"q": {"type": "choice", "probabilities": {"a": "0.5", "b": 0.5}}}, "choice", "probabilities.a is '0.5'"),
        ({"q": {"type": "noul", "noul": 1.5}}, "noul", "answers.q.noul is 1.5"),
        ({"q": {"type": "score", "probabilities": {"a": 0.5, "b": 0.5}}}, "score", "expected exactly ['0', '1']"),
    ]
    for answers, kind, msg in bad:
        with pytest.raises(WireError, match=msg.replace("[", r"\[").replace("(", r"\(")):
            served_probabilities(answers, "q", kind, ["no", "yes"] if kind == "noul" else ["a", "b"])


def test_error_messages_are_found_as_the_sdk_finds_them():
    detail = {"detail": [{"loc": ["body", "questions", "urgency", "score", "criteria"],
                          "msg": "List should have at least 1 item after validation, not 0"},
                         {"loc": ["body", "state"], "msg": "Field required"}]}
    assert error_message(detail, "") == ("questions.urgency.score.criteria: List should have at least 1 item after "
                                         "validation, not 0; state: Field required")
    assert error_message({"detail": "Invalid API key"}, "") == "Invalid API key"
    assert error_message({"error": {"message": "forbidden"}}, "") == "forbidden"
    assert error_message({"message": "Unknown model 'x'"}, "") == "Unknown model 'x'"
    assert error_message({"error": "plain"}, "") == "plain"
    assert error_message(None, "boom\n") == "boom"
    assert error_message(None, "") == "(no body)"
    assert error_message({"other": 1}, "") == "{'other': 1}"


def test_retry_after_in_ms_seconds_or_a_date():
    assert retry_after({"retry-after-ms": "50", "retry-after": "9"}) == 0.05
    assert retry_after({"retry-after": "1.5"}) == 1.5
    assert retry_after({}) is None and retry_after({"retry-after": "soon"}) is None
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after({"retry-after": when}) or 0) <= 31


def _remote_record(**answer_kw):
    d = _row(id="q1", options=[{"id": "a", "description": "x"}, {"id": "b", "description": "y"},
                               {"id": "c", "description": "z"}])
    answer = {"type": "choice", "choice": "b", "confidence": 0.3,
              "probabilities": {"a": 0.2, "b": 0.5, "c": 0.3}, **answer_kw}
    served = [answer["probabilities"][i] for i in "abc"]
    remote = {"api": "typesafe-systemone", "endpoint": "http://h/v1/systemone", "question": "q1",
              "question_type": "choice", "request_sha256": "0" * 64, "questions": 1, "served_model": "m",
              "usage": {"input_tokens": 3, "output_tokens": 1}, "answer": answer, "probability_sum": sum(served),
              "request_id": None, "attempts": 1}
    timing = {"encode_s": 0.0, "forward_s": 0.1, "total_s": 0.1, "request_s": 0.1}
    return make_record(d, 0, "choice", served, remote, model_block("http://h", "m", "m", None), timing,
                       {"config_sha256": "c"})


def test_a_remote_record_is_valid_and_its_rules_are_held():
    rec = _remote_record()
    check_record(rec, "r.jsonl", 1)
    assert rec["choice"] == "b" and rec["probabilities"] == pytest.approx([0.2, 0.5, 0.3])
    assert rec["option_logits"] == pytest.approx([math.log(0.2), math.log(0.5), math.log(0.3)])
    broken = [
        ({"mode": "direct"}, "field 'mode': 'direct' with a remote block"),
        ({"prompt_sha256": "a" * 64}, "field 'prompt_sha256'"),
        ({"allowed_token_mass": 1.0}, "field 'allowed_token_mass': 1.0 in a remote decision record"),
        ({"remote": {**rec["remote"], "answer": {**rec["remote"]["answer"],
                                                 "probabilities": {"a": 0.5, "b": 0.2, "c": 0.3}}}},
         "field 'probabilities[0]'"),
        ({"remote": {**rec["remote"], "probability_sum": 2.0}}, "field 'remote.probability_sum'"),
        ({"permute": {"k": 2, "shifts": [0, 1], "probabilities": [rec["probabilities"]] * 2}},
         "field 'permute': present in a remote decision record"),
    ]
    for change, msg in broken:
        with pytest.raises(InputError, match=msg.replace("[", r"\[")):
            check_record({**rec, **change}, "r.jsonl", 1)
    local = {k: v for k, v in rec.items() if k != "remote"}
    with pytest.raises(InputError, match="field 'mode': 'remote' without a remote block"):
        check_record(local, "r.jsonl", 1)
    with pytest.raises(InputError, match="field 'allowed_token_mass': null in a record without a remote block"):
        check_record({**local, "mode": "direct"}, "r.jsonl", 1)


def test_a_remote_models_signature_names_the_server_and_model():
    from scorer.formats.signature import describe_identity, model_identity

    a, b = _remote_record(), _remote_record()
    assert a["signature"] == b["signature"]
    ident = model_identity(a["model"])
    assert ident["remote"] == {"base_url": "http://h", "model": "m"}
    assert describe_identity(ident) == "systemone model 'm' at http://h"
    assert "remote" not in model_identity({"backend": "torch", "dtype": "float32", "source": "store"})
