"""What the two decision dialects share (:mod:`scorer.serving.wire`): a choice question's option names shown to the
model once — before the description where the readout letters or numbers the options (the model never reads the
ids), not at all where it lists them under their ids (it reads each name there already) — per scorer, so a route
whose two models read differently shows each its own way; an option without a description is described by its
name in both dialects. Unit tests on the fake backend."""

from __future__ import annotations

from typing import Any

from fakes import FakeBackend

from scorer import Scorer
from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import render
from scorer.serving.wire import as_shown, named_description

TEAM = {"type": "choice", "question": "Which team?", "options": [
    {"id": "billing", "description": "payments, refunds"}, {"id": "tech", "description": "tech"},
    {"id": "legal", "description": "Legal"}]}
REFUND = {"type": "yesno", "question": "Refund?", "options": [{"id": "yes", "description": "the customer asks"},
                                                              {"id": "no", "description": "they do not"}]}
URGENCY = {"type": "score", "question": "How urgent?", "options": [{"id": "0", "description": "low"},
                                                                   {"id": "1", "description": "high"}]}
QUESTIONS = {"team": TEAM, "refund": REFUND, "urgency": URGENCY}


def _descriptions(q: dict[str, Any]) -> list[str]:
    return [o["description"] for o in q["options"]]


def test_named_description_spells_a_name_once() -> None:
    assert named_description("yes", "Yes") == "Yes"
    assert named_description("refund", "asks for money back") == "refund: asks for money back"
    assert named_description("refund", None) == "refund"
    assert named_description("refund", "") == "refund"
    assert named_description("Legal", " legal ") == " legal "


def test_letters_show_each_choice_name_before_its_description_and_leave_other_types_alone() -> None:
    got = as_shown(Scorer(backend=FakeBackend()), QUESTIONS)
    assert _descriptions(got["team"]) == ["billing: payments, refunds", "tech", "Legal"]
    assert got["refund"] == REFUND and got["urgency"] == URGENCY  # yes/no and score ids are SemIf's, not names
    assert QUESTIONS["team"] is TEAM and _descriptions(TEAM)[0] == "payments, refunds"  # the request is not changed


def test_readouts_that_list_ids_show_the_descriptions_as_they_came() -> None:
    for slots in ("json", "sequence"):
        assert as_shown(Scorer(backend=FakeBackend(), slots=slots), QUESTIONS) == QUESTIONS


def test_auto_names_the_choice_options_it_letters() -> None:
    got = as_shown(Scorer(backend=FakeBackend(), slots="auto"), QUESTIONS)
    assert _descriptions(got["team"])[0] == "billing: payments, refunds"
    yes_no_choice = {"q": {**TEAM, "options": REFUND["options"]}}  # names yes and no: auto reads it as json
    assert as_shown(Scorer(backend=FakeBackend(), slots="auto"), yes_no_choice) == yes_no_choice


def test_the_prompt_shows_a_name_once_whichever_way_the_options_are_listed() -> None:
    b = FakeBackend()
    for slots, line in (("letters", "A. billing: payments, refunds"), ("json", "billing. payments, refunds")):
        shown = as_shown(Scorer(backend=b, slots=slots), {"team": TEAM})["team"]
        d = Decision("t", "I was charged twice.", shown["question"],
                     tuple(Option(o["id"], o["description"]) for o in shown["options"]), {})
        text = render(b.tokenizer, d, slots=slots).text
        assert line in text and text.count("billing") == (1 if slots == "letters" else 2)  # json: listed, in the cue


def test_a_choice_option_without_a_description_is_described_by_its_name_in_both_dialects() -> None:
    from scorer.serving import decisions, systemone

    sreq = systemone.SystemOneRequest.model_validate({"model": "m", "state": "s", "questions": {"team": {
        "type": "choice", "criteria": {"billing": "payments", "tech": None, "legal": ""}}}})
    assert _descriptions(systemone.to_ask(sreq)["team"]) == ["payments", "tech", "legal"]
    dreq = decisions.DecisionsRequest.model_validate({"model": "m", "input": "s", "questions": [{
        "type": "choice", "instructions": "Which team?",
        "choices": [{"value": "billing", "description": "payments"}, {"value": "tech"}]}]})
    assert _descriptions(decisions.to_ask(dreq)[0]["q0"]) == ["payments", "tech"]
