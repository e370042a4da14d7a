"""``POST /v1/systemone`` and ``GET /v1/models`` driven by the official client, ``typesafe-sdk`` 0.7.5, unchanged (only
its base URL points at ``semif serve``): every question type, JSON state, the SDK's own typed errors carrying the
server's message, auth, unknown models; every response validated by the SDK's own pydantic models (strict); answers
equal :meth:`Scorer.ask` on the same questions. A hostile-client suite: the server answers 4xx naming the field and
keeps serving. The real SmolLM2-135M and a framework integration (pydantic-ai's ``SystemOneModel``) at the end."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from typing import Any

import httpx
import orjson
import pytest
import zstandard
from fakes import FakeBackend, WeighedFake
from serve_helpers import GatedBackend, live
from typesafe_sdk import (
    Choice,
    Noul,
    NoulCriteria,
    RetryPolicy,
    Score,
    TypeSafeAuthenticationError,
    TypeSafeClient,
    TypeSafeNotFoundError,
    TypeSafeUnprocessableEntityError,
)
from typesafe_sdk._schemas import models as wire  # the SDK's own wire models (generated from the vendor's OpenAPI)

from scorer import Scorer
from scorer.calibration.label_free_defaults import DEFAULTS
from scorer.decision.confidence import choice_confidence, score_confidence
from scorer.serving.http_server import Limits
from scorer.serving.served import ServedModels, parse_route
from scorer.serving.service import build_app

STATE = "I was charged twice for order 1182 and nobody answers my emails. Refund me now or I call my lawyer."
QUESTIONS: dict[str, Any] = {
    "team": {"type": "choice", "instructions": "Which team should handle this ticket?",
             "criteria": {"billing": "payments, refunds, invoices", "tech": None, "sales": "new orders"}},
    "urgency": {"type": "score", "instructions": "How urgent is it?",
                "criteria": ["can wait", "this week", "today", {"level": "now", "why": "legal threat"}]},
    "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"},
    "legal": {"type": "noul", "criteria": {"true": "the customer threatens legal action", "false": None}},
}
ASK = {
    "team": {"type": "choice", "question": "Which team should handle this ticket?", "options": [
        {"id": "billing", "description": "payments, refunds, invoices"}, {"id": "tech", "description": "tech"},
        {"id": "sales", "description": "new orders"}]},
    "urgency": {"type": "score", "question": "How urgent is it?", "options": [
        {"id": "0", "description": "can wait"}, {"id": "1", "description": "this week"},
        {"id": "2", "description": "today"}, {"id": "3", "description": '{"level":"now","why":"legal threat"}'}]},
    "refund": {"type": "yesno", "question": "Does the customer ask for a refund?"},
    "legal": {"type": "yesno", "question": "Which of the two statements is true?", "options": [
        {"id": "yes", "description": "the customer threatens legal action"}, {"id": "no", "description": "No"}]},
}
"""What QUESTIONS are, as Scorer.ask questions (the translation the module docstring documents)."""


@pytest.fixture
def url():
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, live(build_app(s)) as u:
        yield u


def _client(url: str, key: str = "test-key") -> TypeSafeClient:
    # A longer timeout than the SDK's 10 s: the test machine runs other tests beside this one.
    return TypeSafeClient(base_url=url, api_key=key, retry=RetryPolicy(max_retries=0), timeout=120)


def _raw(url: str, body: Any, **kw: Any) -> httpx.Response:
    return httpx.post(f"{url}/v1/systemone", content=body if isinstance(body, bytes) else orjson.dumps(body),
                      headers={"content-type": "application/json", **kw.pop("headers", {})}, timeout=60, **kw)


def test_every_question_type_answers_as_scorer_ask_and_fits_the_sdks_models(url):
    sdk_questions = {  # the SDK's own question objects send the same JSON as the dicts
        "team": Choice(instructions="Which team should handle this ticket?",
                       criteria={"billing": "payments, refunds, invoices", "tech": None, "sales": "new orders"}),
        "urgency": Score(instructions="How urgent is it?",
                         criteria=["can wait", "this week", "today", {"level": "now", "why": "legal threat"}]),
        "refund": Noul(instructions="Does the customer ask for a refund?"),
        "legal": Noul(criteria=NoulCriteria(true="the customer threatens legal action")),
    }
    with _client(url) as c:
        got = c.system_one(state=STATE, questions=QUESTIONS)
        again = c.system_one(state=STATE, questions=sdk_questions)
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        want = s.ask(STATE, ASK)
    assert got.model == "qwen2.5-0.5b"  # the SDK's default name, jev-latest, is an alias of the default model
    team, urgency = got.answers["team"], got.answers["urgency"]
    p_team = [want["team"].probabilities[k] for k in ("billing", "tech", "sales")]
    assert team.choice == want["team"].final_choice and team.probabilities == dict(want["team"].probabilities)
    assert team.confidence == pytest.approx(choice_confidence(p_team), abs=1e-12)
    p_urg = list(want["urgency"].probabilities.values())
    assert urgency.score == pytest.approx(sum(i * p for i, p in enumerate(p_urg)), abs=1e-12)
    assert urgency.confidence == pytest.approx(score_confidence(p_urg), abs=1e-12)
    assert urgency.legend == {0: "can wait", 1: "this week", 2: "today", 3: {"level": "now", "why": "legal threat"}}
    assert urgency.probabilities == {i: p for i, p in enumerate(p_urg)}
    assert got.answers["refund"].noul == want["refund"].probabilities["yes"]
    assert got.answers["legal"].noul == want["legal"].probabilities["yes"]
    assert got.usage.output_tokens == 0 and got.usage.input_tokens > 0
    assert again.answers == got.answers


def test_the_wire_confidence_is_the_measured_curves_where_the_weights_have_one():
    measured = next(m for m in DEFAULTS if m.model == "qwen2.5-1.5b" and m.slots == "auto")
    with Scorer(backend=WeighedFake(measured.gguf_sha256), mode="shared") as s, live(build_app(s)) as u, \
            _client(u) as c:
        got = c.system_one(state=STATE, questions=QUESTIONS)
        want = s.ask(STATE, ASK)
    assert measured.confidence is not None
    for name in ("team", "urgency"):
        block = want[name].record["confidence"]
        assert got.answers[name].confidence == pytest.approx(want[name].confidence, abs=1e-12)
        curve = measured.confidence.for_kind(block["curve"]["kind"])
        assert block["curve"]["kind"] == {"team": "choice", "urgency": "score"}[name]
        assert want[name].confidence == curve(block["peakedness"]) != block["peakedness"]


def test_255_criteria_are_read_by_number_and_answered_as_scorer_ask(url):
    criteria = {f"sku{i}": f"catalogue item {i}" for i in range(255)}
    with _client(url) as c:
        got = c.system_one(state=STATE, questions={"item": Choice(instructions="Which item is it about?",
                                                                  criteria=criteria), "refund": QUESTIONS["refund"]})
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        want = s.ask(STATE, {"item": {"type": "choice", "question": "Which item is it about?", "options": [
            {"id": k, "description": v} for k, v in criteria.items()]}, "refund": ASK["refund"]})
    item = got.answers["item"]
    assert item.probabilities == dict(want["item"].probabilities) and len(item.probabilities) == 255
    assert item.choice == want["item"].final_choice and want["item"].record["slots"]["readout"] == "codes"
    assert got.answers["refund"].noul == want["refund"].probabilities["yes"]


def test_the_response_validates_against_the_sdks_own_wire_models_strictly(url):
    body = _raw(url, {"model": "jev-latest", "state": {"ticket": STATE, "order": 1182}, "questions": QUESTIONS})
    assert body.status_code == 200, body.text
    wire.SystemOneResponse.model_validate_json(body.content, strict=True)
    doc = body.json()
    for name, answer in doc["answers"].items():
        assert answer["semif"]["model"] == "qwen2.5-0.5b" and answer["semif"]["record_id"] == name
    assert isinstance(doc["usage"]["input_tokens"], int) and doc["usage"]["output_tokens"] == 0


def test_json_state_is_the_state_scorer_ask_gets(url):
    state = {"customer": "Ada", "messages": ["charged twice", "refund please"], "order": {"id": 1182}}
    with _client(url) as c:
        got = c.system_one(state=state, questions={"refund": QUESTIONS["refund"]})
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        want = s.ask(state, {"refund": ASK["refund"]})
    assert got.answers["refund"].noul == want["refund"].probabilities["yes"]


def test_models_list_fits_both_sdks_and_names_the_aliases(url):
    with _client(url) as c:
        listed = c.models.list()
    names = [m.name for m in listed.models]
    assert names == ["qwen2.5-0.5b", "jev-latest", "gpt-6-luna"]
    doc = httpx.get(f"{url}/v1/models").json()
    wire.ModelMetadataList.model_validate(doc, strict=True)
    assert doc["models"][0]["backend"] == "fake"  # the semif dialect's model block is still there


def test_an_unknown_model_is_an_sdk_not_found_error_listing_the_served_names(url):
    with _client(url) as c, pytest.raises(TypeSafeNotFoundError, match=r"model 'jev-9' is not served here \(served: "
                                                                       r"qwen2.5-0.5b, jev-latest, gpt-6-luna\)"):
        c.system_one(state=STATE, questions={"refund": QUESTIONS["refund"]}, model="jev-9")


def test_a_wrong_token_is_an_sdk_authentication_error():
    with Scorer(backend=FakeBackend(), slots="letters") as s, live(build_app(s, token="sesame")) as u:
        with _client(u, "sesame") as ok:
            assert ok.system_one(state=STATE, questions={"refund": QUESTIONS["refund"]}).answers["refund"]
        with _client(u, "wrong") as bad, pytest.raises(TypeSafeAuthenticationError, match="bearer token"):
            bad.system_one(state=STATE, questions={"refund": QUESTIONS["refund"]})


@pytest.mark.parametrize(("questions", "fragment"), [
    ({"q": {"type": "choice", "instructions": "x?", "criteria": {"a\u0001": None, "b": None}}},
     "422 questions.q.criteria[0].id: 'a\\x01' holds the control character U+0001"),
    ({"q": {"type": "choice", "instructions": "x?", "criteria": {f"o{i}": None for i in range(300)}}},
     "422 questions.q.criteria: 300 options"),
])
def test_questions_semif_cannot_read_are_sdk_422s_naming_the_question(url, questions, fragment):
    with _client(url) as c, pytest.raises(TypeSafeUnprocessableEntityError) as err:
        c.system_one(state=STATE, questions=questions)
    assert fragment in str(err.value)


@pytest.mark.parametrize(("body", "loc", "msg"), [
    ({"model": "jev-latest", "questions": {"q": {"type": "noul", "instructions": "x?"}}}, ["body", "state"],
     "Field required"),
    ({"model": "jev-latest", "state": "s", "questions": {}}, ["body", "questions"], "at least 1 item"),
    ({"model": "jev-latest", "state": "s", "questions": {"q": {"type": "score", "criteria": []}}},
     ["body", "questions", "q", "score", "criteria"], "at least 1 item"),
    ({"model": "jev-latest", "state": "s", "questions": {"q": {"type": "choice"}}},
     ["body", "questions", "q", "choice", "criteria"], "Field required"),
    ({"model": "jev-latest", "state": "s", "questions": {"q": {"type": "vote", "criteria": {}}}},
     ["body", "questions", "q"], "does not match any of the expected tags"),
    ({"model": "jev-latest", "state": "s", "questions": {"q": {"type": "noul", "instructions": 7}}},
     ["body", "questions", "q", "noul", "instructions"], "Input should be"),
    ({"model": 3, "state": "s", "questions": {"q": {"type": "noul"}}}, ["body", "model"], "valid string"),
    ({"model": "jev-latest", "state": "", "questions": {"q": {"type": "noul", "instructions": "x?"}}},
     ["body", "state"], "empty"),
])
def test_malformed_bodies_answer_the_vendors_422_shape(url, body, loc, msg):
    r = _raw(url, body)
    assert r.status_code == 422, r.text
    doc = r.json()
    wire.HTTPValidationError.model_validate(doc)  # the vendor's documented 422 shape
    assert any(d["loc"][:len(loc)] == loc and msg in d["msg"] for d in doc["detail"]), doc
    assert doc["error"]["message"] and "Traceback" not in r.text
    assert _raw(url, {"model": "jev-latest", "state": "s", "questions": {"q": QUESTIONS["refund"]}}).status_code == 200


def test_images_are_refused_with_a_reason(url):
    r = _raw(url, {"model": "jev-latest", "state": "s", "questions": {"where": {"type": "box", "instructions": "cat"}}})
    assert r.status_code == 422 and "text models" in r.json()["detail"][0]["msg"]
    r = _raw(url, {"model": "jev-latest", "state": "<image:1>", "questions": {"q": QUESTIONS["refund"]},
                   "assets": {"<image:1>": {"type": "image", "format": "png", "data_base64": "AAAA"}}})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "assets"]
    r = httpx.post(f"{url}/v1/systemone", files={"request": (None, b"{}", "application/json"),
                                                 "asset-0": ("asset-0", b"\x89PNG", "image/png")}, timeout=30)
    assert r.status_code == 422 and "image assets are not supported" in r.json()["error"]["message"]


def test_compressed_bodies_are_read_and_bad_encodings_refused(url):
    body = orjson.dumps({"model": "jev-latest", "state": STATE, "questions": {"q": QUESTIONS["refund"]}})
    for enc, data in (("gzip", gzip.compress(body)), ("zstd", zstandard.ZstdCompressor().compress(body))):
        r = _raw(url, data, headers={"content-encoding": enc})
        assert r.status_code == 200, (enc, r.text)
    assert _raw(url, body, headers={"content-encoding": "br"}).status_code == 415
    assert _raw(url, b"not gzip", headers={"content-encoding": "gzip"}).status_code == 400
    bomb = gzip.compress(b'{"state": "' + b"x" * (8 << 20) + b'"}')  # 8 MiB once inflated, past the 4 MiB limit
    assert _raw(url, bomb, headers={"content-encoding": "gzip"}).status_code == 413


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_hostile_clients_get_4xx_and_the_server_keeps_serving():
    lim = Limits(max_body_bytes=200_000, max_rows=64, header_timeout_s=1.0)
    with Scorer(backend=FakeBackend(), slots="letters") as s, live(build_app(s, lim)) as u:
        good = {"model": "jev-latest", "state": STATE, "questions": {"q": QUESTIONS["refund"]}}
        cases = [
            (b"x" * 300_000, 413),  # over the limit: drained, answered
            (b'{"model": "jev-latest", "state": ' + b"[" * 5000 + b"]" * 5000 + b', "questions": {}}', 400),
            (b'{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "noul"}, "q": {"type": "noul"}}}',
             422),
            (orjson.dumps({**good, "questions": {f"q{i}": QUESTIONS["refund"] for i in range(10_000)}}), 413),
            (orjson.dumps({**good, "state": _nested(66)}), 422),  # past the 64 levels a state may nest
            (b"[1, 2]", 422),
            (b"\xff\xfe not utf-8", 400),
        ]
        for body, status in cases:
            r = _raw(u, body)
            assert r.status_code == status, (body[:60], r.status_code, r.text[:300])
            assert "Traceback" not in r.text and r.json()["error"]["message"]
        with socket.create_connection(("127.0.0.1", int(u.rsplit(":", 1)[1]))) as slow:  # a slow-loris client
            slow.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\n")
            time.sleep(1.5)
            assert b"408" in slow.recv(4096)
        assert _raw(u, good).status_code == 200


def test_an_identical_request_in_flight_is_joined_not_scored_twice():
    backend = GatedBackend()
    with Scorer(backend=backend, slots="letters") as s, live(build_app(s)) as u:
        body = {"model": "jev-latest", "state": STATE, "questions": {"q": QUESTIONS["refund"]}}
        out: list[httpx.Response] = []
        threads = [threading.Thread(target=lambda: out.append(_raw(u, body))) for _ in range(3)]
        threads[0].start()
        assert backend.entered.wait(30)
        for t in threads[1:]:
            t.start()
        time.sleep(0.5)  # the retries arrive while the first is held
        backend.gate.set()
        for t in threads:
            t.join(60)
    assert [r.status_code for r in out] == [200, 200, 200]
    assert len({r.json()["answers"]["q"]["noul"] for r in out}) == 1
    assert backend.calls["prefill"] == 1  # scored once


def test_a_full_queue_answers_503_with_retry_after():
    backend = GatedBackend()
    with Scorer(backend=backend, slots="letters") as s, live(build_app(s, Limits(queue_size=1, retry_after_s=3))) as u:
        bodies = [{"model": "jev-latest", "state": f"{STATE} #{i}", "questions": {"q": QUESTIONS["refund"]}}
                  for i in range(3)]
        out: list[httpx.Response] = []
        first = threading.Thread(target=lambda: out.append(_raw(u, bodies[0])))
        first.start()
        assert backend.entered.wait(30)
        second = threading.Thread(target=lambda: out.append(_raw(u, bodies[1])))
        second.start()
        time.sleep(0.5)
        busy = _raw(u, bodies[2])
        backend.gate.set()
        first.join(60)
        second.join(60)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "3"
    assert sorted(r.status_code for r in out) == [200, 200]


class _Sure(FakeBackend):
    """A fake whose readout puts almost all the mass on the first option (large margins)."""

    def __init__(self) -> None:
        super().__init__(bias={"A": 12.0})


def test_a_route_asks_fast_first_and_escalates_low_margins_to_the_accurate_model():
    with Scorer(backend=FakeBackend(), slots="letters") as fast, Scorer(backend=_Sure(), slots="letters") as accurate:
        served = ServedModels({"fast": fast, "accurate": accurate},
                              routes={"auto": parse_route("auto=fast>accurate@0.99")})
        with live(build_app(served)) as u:
            doc = _raw(u, {"model": "auto", "state": STATE, "questions": QUESTIONS}).json()
            low = _raw(u, {"model": "fast", "state": STATE, "questions": QUESTIONS}).json()
    assert doc["model"] == "auto"
    assert all(a["semif"]["model"] == "accurate" and a["semif"]["escalated"] for a in doc["answers"].values())
    assert all(a["semif"]["model"] == "fast" and not a["semif"]["escalated"] for a in low["answers"].values())
    assert doc["answers"]["team"]["choice"] == "billing"  # the accurate model's (option A) answer


@pytest.mark.slow
def test_on_smollm2_the_answers_equal_scorer_ask(smol_torch):
    with Scorer(backend=smol_torch, slots="letters", mode="shared") as s, live(build_app(s)) as u, _client(u) as c:
        got = c.system_one(state=STATE, questions=QUESTIONS)
    with Scorer(backend=smol_torch, slots="letters", mode="shared") as s:
        want = s.ask(STATE, ASK)
    for name in ("team", "legal", "refund"):
        assert list(got.answers[name].probabilities.values() if name == "team" else
                    [got.answers[name].noul]) == pytest.approx(
            list(want[name].probabilities.values()) if name == "team" else [want[name].probabilities["yes"]],
            abs=1e-6)
    assert list(got.answers["urgency"].probabilities.values()) == pytest.approx(
        list(want["urgency"].probabilities.values()), abs=1e-6)


def test_semif_serve_serves_several_models_aliases_and_routes_named_on_the_command_line(monkeypatch, capsys):
    """``--model`` repeated (a name, or a SPEC with its own backend), ``--alias`` and ``--route`` reach the server's
    models; bad ones are one-line errors before any model loads."""
    import scorer.backends as backends
    import scorer.serving.service as service
    from scorer import cli

    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("a model loaded"))
    seen: dict[str, Any] = {}

    def fake_serve(models, cfg):
        served, _ = service._checked(models, cfg)
        seen.update(names=served.names(), routes=served.routes, backends=[m.backend for m in models])

    monkeypatch.setattr(service, "serve", fake_serve)
    assert cli.main(["serve", "--model", "smollm2-135m", "--model", "backend=llamacpp,model=qwen2.5-0.5b",
                     "--alias", "jev-1=smollm2-135m", "--route", "auto=smollm2-135m>qwen2.5-0.5b@0.2"]) == 0
    assert seen["names"] == ["smollm2-135m", "qwen2.5-0.5b", "auto", "jev-latest", "gpt-6-luna", "jev-1"]
    assert seen["routes"]["auto"].threshold == 0.2 and seen["backends"] == ["torch", "llamacpp"]
    for argv, fragment in ((["--route", "auto=smollm2-135m>gemma@0.2"], "'gemma' is not a served --model"),
                           (["--route", "auto=a>b"], "NAME=FAST>ACCURATE@THRESHOLD"),
                           (["--route", "auto=smollm2-135m>smollm2-135m@1.5"], "a margin from 0 to 1"),
                           (["--alias", "x"], "NAME=SERVED_NAME"),
                           (["--model", "smollm2-135m"], "'smollm2-135m' given twice")):
        assert cli.main(["serve", "--model", "smollm2-135m", *argv]) == 2, argv
        assert fragment in capsys.readouterr().err, argv
