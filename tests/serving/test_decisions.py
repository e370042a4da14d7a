"""``POST /v1/decisions`` and ``GET /v1/models`` driven by the official ``openai`` 3.51.0 client, unchanged (only its
base URL points at ``semif serve``), with strict response validation on: predicates, typed choices (a boolean and a
string value keep their JSON type), scores, text and message inputs with tool calls, 400 questions, refusals, auth,
unknown models, the SDK's typed errors carrying the server's message and ``param``; answers equal
:meth:`Scorer.ask` on the translated questions. A hostile-client suite: 4xx naming the field, the server keeps
serving."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import orjson
import pytest
from fakes import FakeBackend
from openai.types import Decision
from serve_helpers import live

from scorer import Scorer
from scorer.decision.confidence import choice_confidence, score_confidence
from scorer.serving.decisions import DecisionsRequest, render_input
from scorer.serving.http_server import Limits
from scorer.serving.service import build_app

TEXT = "I was charged twice for order 1182. Refund me now or I call my lawyer."
QUESTIONS: list[dict[str, Any]] = [
    {"type": "predicate", "name": "refund", "instructions": "The customer asks for their money back."},
    {"type": "choice", "name": "team", "instructions": "Which team should handle this ticket?",
     "choices": [{"value": "billing", "description": "payments, refunds"}, {"value": "tech"}, {"value": "sales"}]},
    {"type": "choice", "name": "escalate", "instructions": "Should a manager see this?",
     "choices": [{"value": True}, {"value": False}]},
    {"type": "score", "name": "urgency", "instructions": [{"type": "input_text", "text": "How urgent is it?"}],
     "levels": [{"label": "low"}, {"label": "medium", "description": "this week"}, {"label": "high"}]},
    {"type": "predicate", "instructions": "The message is polite."},
]
ASK = {
    "q0": {"type": "yesno", "question": "The customer asks for their money back.",
           "options": [{"id": "yes", "description": "True"}, {"id": "no", "description": "False"}]},
    "q1": {"type": "choice", "question": "Which team should handle this ticket?", "options": [
        {"id": "billing", "description": "payments, refunds"}, {"id": "tech", "description": "tech"},
        {"id": "sales", "description": "sales"}]},
    "q2": {"type": "choice", "question": "Should a manager see this?",
           "options": [{"id": "true", "description": "true"}, {"id": "false", "description": "false"}]},
    "q3": {"type": "score", "question": "How urgent is it?", "options": [
        {"id": "0", "description": "low"}, {"id": "1", "description": "medium: this week"},
        {"id": "2", "description": "high"}]},
    "q4": {"type": "yesno", "question": "The message is polite.",
           "options": [{"id": "yes", "description": "True"}, {"id": "no", "description": "False"}]},
}
"""What QUESTIONS are, as Scorer.ask questions (the translation the module docstring documents)."""


@pytest.fixture
def url():
    with Scorer(backend=FakeBackend(), mode="shared") as s, live(build_app(s)) as u:
        yield u


def _client(url: str, key: str = "test-key") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, _strict_response_validation=True)


def test_every_question_type_answers_as_scorer_ask_with_its_typed_values(url):
    got = _client(url).decisions.create(model="gpt-6-luna", input=TEXT, questions=QUESTIONS)
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        want = s.ask(TEXT, ASK)
    assert got.model == "qwen2.5-0.5b" and [a.name for a in got.answers] == ["refund", "team", "escalate", "urgency",
                                                                             None]
    refund, team, escalate, urgency, polite = got.answers
    assert refund.type == "predicate" and refund.probability == want["q0"].probabilities["yes"]
    p_team = list(want["q1"].probabilities.values())
    assert team.choice == want["q1"].final_choice and team.confidence == pytest.approx(choice_confidence(p_team))
    assert [(x.value, x.probability) for x in team.probabilities] == list(zip(["billing", "tech", "sales"], p_team,
                                                                              strict=True))
    assert isinstance(escalate.choice, bool)  # the boolean value comes back a boolean
    assert escalate.choice is (want["q2"].final_choice == "true")
    assert {type(x.value) for x in escalate.probabilities} == {bool}
    p_urg = list(want["q3"].probabilities.values())
    assert urgency.score == pytest.approx(sum(i * p for i, p in enumerate(p_urg)))
    assert urgency.confidence == pytest.approx(score_confidence(p_urg))
    assert [(x.value, x.label) for x in urgency.probabilities] == [(0, "low"), (1, "medium"), (2, "high")]
    assert polite.probability == want["q4"].probabilities["yes"]
    u = got.usage
    assert u.output_tokens == 0 and u.total_tokens == u.input_tokens > 0
    assert u.input_tokens_details.cached_tokens + u.input_tokens_details.cache_write_tokens <= u.input_tokens


def test_the_response_validates_against_the_sdks_model_strictly(url):
    r = httpx.post(f"{url}/v1/decisions", json={"model": "gpt-6-luna", "input": TEXT, "questions": QUESTIONS},
                   timeout=60)
    assert r.status_code == 200, r.text
    Decision.model_validate(r.json(), strict=True)  # what pydantic-ai and the SDK's tool runner do


def test_messages_and_tool_calls_render_into_one_documented_state(url):
    items = [
        {"role": "system", "content": "You route support tickets."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TEXT},
                                                         {"type": "input_json", "data": {"order": 1182}}]},
        {"type": "function_call", "call_id": "c1", "name": "lookup_order", "arguments": '{"id": 1182}'},
        {"type": "function_call_output", "call_id": "c1", "output": "charged twice, 2 x 40 EUR"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "I see two charges."}]},
    ]
    state = ("[system] You route support tickets.\n\n[user] " + TEXT + '\n{"order":1182}\n\n'
             '[tool call lookup_order#c1] {"id": 1182}\n\n[tool result lookup_order#c1] charged twice, 2 x 40 EUR'
             "\n\n[assistant] I see two charges.")
    assert render_input(DecisionsRequest.model_validate({"model": "m", "input": items, "questions": QUESTIONS}).input) \
        == state
    got = _client(url).decisions.create(model="gpt-6-luna", input=items, questions=QUESTIONS[:1])
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        want = s.ask(state, {"q0": ASK["q0"]})
    assert got.answers[0].probability == want["q0"].probabilities["yes"]


def test_400_questions_on_one_state_are_answered_in_order(url):
    many = [{"type": "predicate", "name": f"p{i}", "instructions": f"Statement number {i} holds."} for i in range(400)]
    got = _client(url).decisions.create(model="gpt-6-luna", input=TEXT, questions=many)
    assert [a.name for a in got.answers] == [f"p{i}" for i in range(400)]
    with pytest.raises(openai.BadRequestError, match=r"questions: List should have at most 400 items") as err:
        _client(url).decisions.create(model="gpt-6-luna", input=TEXT, questions=[*many, many[0]])
    assert err.value.param == "questions"


def test_255_typed_choices_are_read_by_number_beside_lettered_questions(url):
    """More than 16 choices: numbered 001 … 255 and each number scored whole, in the same request as a lettered
    question, with the numbers Scorer.ask gives the same questions."""
    many = {"type": "choice", "name": "product", "instructions": "Which product is the ticket about?",
            "choices": [{"value": f"p{i}", "description": f"product line {i}"} for i in range(255)]}
    got = _client(url).decisions.create(model="gpt-6-luna", input=TEXT, questions=[QUESTIONS[1], many])
    team, product = got.answers
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        want = s.ask(TEXT, {"q0": ASK["q1"], "q1": {"type": "choice", "question": many["instructions"], "options": [
            {"id": f"p{i}", "description": f"product line {i}"} for i in range(255)]}})
    assert [(x.value, x.probability) for x in team.probabilities] == list(want["q0"].probabilities.items())
    assert [(x.value, x.probability) for x in product.probabilities] == list(want["q1"].probabilities.items())
    assert product.choice == want["q1"].final_choice and len(product.probabilities) == 255
    assert want["q1"].record["slots"]["readout"] == "codes" and want["q1"].record["letters"][-1] == "255"
    assert want["q0"].record["slots"]["readout"] == "letters"


def test_a_question_whose_options_read_alike_is_a_refusal_and_the_others_are_answered(url):
    alike = {"type": "choice", "name": "odd", "instructions": "Which?", "choices": [{"value": True}, {"value": "true"}]}
    got = _client(url).decisions.create(model="gpt-6-luna", input=TEXT, questions=[QUESTIONS[0], alike])
    assert got.answers[0].type == "predicate" and got.answers[1].type == "refusal" and got.answers[1].name == "odd"
    raw = httpx.post(f"{url}/v1/decisions", json={"model": "gpt-6-luna", "input": TEXT, "questions": [alike]}).json()
    assert "cannot be told apart" in raw["answers"][0]["semif"]["reason"]


def test_models_list_and_unknown_models(url):
    assert [m.id for m in _client(url).models.list()] == ["qwen2.5-0.5b", "jev-latest", "gpt-6-luna"]
    with pytest.raises(openai.NotFoundError, match=r"model 'gpt-7' is not served here \(served: qwen2.5-0.5b"):
        _client(url).decisions.create(model="gpt-7", input=TEXT, questions=QUESTIONS[:1])


def test_a_wrong_key_is_an_authentication_error():
    with Scorer(backend=FakeBackend()) as s, live(build_app(s, token="sesame")) as u:
        assert _client(u, "sesame").decisions.create(model="gpt-6-luna", input=TEXT, questions=QUESTIONS[:1])
        with pytest.raises(openai.AuthenticationError, match="bearer token"):
            _client(u, "wrong").decisions.create(model="gpt-6-luna", input=TEXT, questions=QUESTIONS[:1])


@pytest.mark.parametrize(("questions", "param", "fragment"), [
    ([{"type": "choice", "instructions": "x?", "choices": [{"value": "a"}]}], "questions[0].choices",
     "at least 2 items"),
    ([{"type": "choice", "instructions": "x?", "choices": [{"value": f"v{i}"} for i in range(256)]}],
     "questions[0].choices", "at most 255 items"),
    ([{"type": "choice", "instructions": "x?", "choices": [{"value": 1}, {"value": 2}]}],
     "questions[0].choices[0].value", "valid string"),
    ([{"type": "score", "instructions": "x?"}], "questions[0].levels", "Field required"),
    ([{"type": "ranking", "instructions": "x?"}], "questions[0]", "does not match any of the expected tags"),
    ([{"type": "predicate", "instructions": "x?", "extra": 1}], "questions[0].extra", "Extra inputs"),
    ([{"type": "choice", "instructions": "x?", "choices": [{"value": "a\u0001"}, {"value": "b"}]}],
     "questions[0].choices[0].id", "control character U+0001"),
])
def test_bad_questions_are_bad_request_errors_naming_the_param(url, questions, param, fragment):
    with pytest.raises(openai.BadRequestError) as err:
        _client(url).decisions.create(model="gpt-6-luna", input=TEXT, questions=questions)
    assert err.value.param == param and fragment in str(err.value), (err.value.param, str(err.value))


@pytest.mark.parametrize(("body", "status", "fragment"), [
    ({"model": "gpt-6-luna", "questions": [QUESTIONS[0]]}, 400, "input: Field required"),
    ({"model": "gpt-6-luna", "input": [], "questions": [QUESTIONS[0]]}, 400, "input: List should have at least 1"),
    ({"model": "gpt-6-luna", "input": [{"type": "function_call_output", "call_id": "x", "output": "o"}],
      "questions": [QUESTIONS[0]]}, 400, "answers no earlier call"),
    ({"model": "gpt-6-luna", "input": [{"role": "user", "content": [{"type": "input_image",
                                                                     "image_url": "data:image/png;base64,AA"}]}],
      "questions": [QUESTIONS[0]]}, 400, "images are not supported"),
    ({"model": "gpt-6-luna", "input": [{"role": "robot", "content": "x"}], "questions": [QUESTIONS[0]]}, 400,
     "input[0].role"),
    ({"model": "gpt-6-luna", "input": TEXT, "questions": []}, 400, "questions: List should have at least 1"),
])
def test_malformed_bodies_answer_openais_error_shape(url, body, status, fragment):
    r = httpx.post(f"{url}/v1/decisions", content=orjson.dumps(body), headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and fragment in err["message"], err
    assert "Traceback" not in r.text


def test_hostile_clients_get_4xx_and_the_server_keeps_serving():
    lim = Limits(max_body_bytes=2_000_000, max_rows=64)
    with Scorer(backend=FakeBackend()) as s, live(build_app(s, lim)) as u:
        good = {"model": "gpt-6-luna", "input": TEXT, "questions": QUESTIONS[:1]}
        cases = [(b"y" * 3_000_000, 413),
                 (b'{"model": "gpt-6-luna", "input": ' + b"[" * 4000 + b"]" * 4000 + b"}", 400),
                 (b'{"model": "gpt-6-luna", "model": "x", "input": "a", "questions": []}', 422),
                 (orjson.dumps({**good, "questions": [QUESTIONS[0]] * 10_000}), 400), (b"\xff", 400),
                 (b"null", 400)]
        for body, status in cases:
            r = httpx.post(f"{u}/v1/decisions", content=body, headers={"content-type": "application/json"},
                           timeout=60)
            assert r.status_code == status, (body[:60], r.status_code, r.text[:300])
            assert r.json()["error"]["message"] and "Traceback" not in r.text
        assert httpx.post(f"{u}/v1/decisions", json=good, timeout=60).status_code == 200


@pytest.mark.slow
def test_on_smollm2_the_answers_equal_scorer_ask(smol_torch):
    with Scorer(backend=smol_torch, mode="shared") as s, live(build_app(s)) as u:
        got = _client(u).decisions.create(model="gpt-6-luna", input=TEXT, questions=QUESTIONS)
    with Scorer(backend=smol_torch, mode="shared") as s:
        want = s.ask(TEXT, ASK)
    assert got.answers[0].probability == pytest.approx(want["q0"].probabilities["yes"], abs=1e-6)
    for i in (1, 2, 3):
        assert [x.probability for x in got.answers[i].probabilities] == pytest.approx(
            list(want[f"q{i}"].probabilities.values()), abs=1e-6)
