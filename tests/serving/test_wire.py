"""What the two decision dialects share (:mod:`scorer.serving.wire`): a choice option is shown to the model as its
description, or its name where it has none — in both dialects, whatever the readout, as the single-request studies'
prompts show their options. Unit tests on the fake backend."""

from __future__ import annotations

from typing import Any

from fakes import FakeBackend

from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import render
from scorer.serving import decisions, systemone
from scorer.serving.wire import option_description


def _descriptions(q: dict[str, Any]) -> list[str]:
    return [o["description"] for o in q["options"]]


def test_an_option_reads_as_its_description_or_its_name_without_one() -> None:
    assert option_description("refund", "asks for money back") == "asks for money back"
    assert option_description("yes", "Yes") == "Yes"
    assert option_description("refund", None) == "refund"
    assert option_description("refund", "") == "refund"


def test_both_dialects_show_a_choice_option_as_its_description_or_its_name() -> None:
    sreq = systemone.SystemOneRequest.model_validate({"model": "m", "state": "s", "questions": {"team": {
        "type": "choice", "criteria": {"billing": "payments", "tech": None, "legal": ""}}}})
    assert _descriptions(systemone.to_ask(sreq)["team"]) == ["payments", "tech", "legal"]
    dreq = decisions.DecisionsRequest.model_validate({"model": "m", "input": "s", "questions": [{
        "type": "choice", "instructions": "Which team?",
        "choices": [{"value": "billing", "description": "payments"}, {"value": "tech"}]}]})
    assert _descriptions(decisions.to_ask(dreq)[0]["q0"]) == ["payments", "tech"]


def test_the_prompt_lists_a_described_option_by_its_description_alone_under_letters() -> None:
    b = FakeBackend()
    sreq = systemone.SystemOneRequest.model_validate({"model": "m", "state": "I was charged twice.", "questions": {
        "team": {"type": "choice", "instructions": "Which team?",
                 "criteria": {"billing": "payments, refunds", "tech": None}}}})
    q = systemone.to_ask(sreq)["team"]
    d = Decision("t", "I was charged twice.", q["question"], tuple(Option(o["id"], o["description"])
                                                                  for o in q["options"]), {})
    text = render(b.tokenizer, d, slots="letters").text
    assert "A. payments, refunds" in text and "B. tech" in text and "billing" not in text
