"""``POST /v1/systemone``: the TypeSafe System One wire format (the hosted Jev model's; ``typesafe-sdk`` 0.7.5),
answered by :meth:`scorer.api.Scorer.ask` on a local model.

Request ``{model, state, questions: {name: question}}`` (unknown top-level keys, as the SDK's ``extra_body`` adds,
are ignored), each question translated to one of SemIf's question types:

==========  =============================================================  =========================================
System One  SemIf question                                                  answer
==========  =============================================================  =========================================
``choice``  ``choice``: one option per ``criteria`` entry, its id the      ``{choice, confidence, probabilities
            name, its description the entry's text (null or empty: the    {name: p}}``
            name): :func:`scorer.serving.wire.option_description`
``score``   ``score``: the ``criteria`` levels in order, ids ``"0"``…      ``{score: Σ i·p_i, confidence, legend
            (the level index), descriptions the level texts                {"0": text}, probabilities {"0": p}}``
``noul``    ``yesno``: ``yes``/``no``, described by ``criteria.true`` /    ``{noul: p(yes)}``
            ``criteria.false`` when given (else Yes/No)
``box``     refused (422): it locates things in images; SemIf serves text models
==========  =============================================================  =========================================

A question's text is its ``instructions`` (JSON instructions and descriptions as compact JSON text); without
instructions it is :data:`DEFAULT_QUESTION` for its type. ``state`` is text or JSON, rendered as ``/v1/ask`` renders
it. The numbers are the acting readout (the calibrated one when the server has a calibration);
``confidence`` is the answer's own (:attr:`scorer.decision.questions.Answer.confidence`). Every answer also carries a
``semif`` block (:func:`scorer.serving.wire.extension`) that the SDK ignores. Image assets (a ``multipart/form-data``
body, or ``assets``) are refused with 422: text models only.

Errors: 422 with the vendor's shape ``{"detail": [{loc, msg, type, input?, ctx?}]}`` (``loc`` from ``"body"``), plus
an ``error`` object that the OpenAI-style clients read; the SDK shows ``questions.tone.choice.criteria: Field
required``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from scorer.decision.confidence import expected_level
from scorer.decision.questions import NO, YES, YES_NO_OPTIONS
from scorer.serving.wire import AskResult, extension, option_description, probabilities, text_of, usage

JSONText = StrictStr | dict[str, Any] | list[Any]
"""A text field that may also be JSON (instructions, descriptions)."""
DEFAULT_QUESTION = {"choice": "Which option applies?", "score": "Which level applies?",
                    "noul": "Which of the two statements is true?"}
"""A question's text when it gives no ``instructions``."""


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChoiceQuestion(_Question):
    type: Literal["choice"]
    instructions: JSONText | None = None
    criteria: Annotated[dict[str, JSONText | None], Field(min_length=1)]


class ScoreQuestion(_Question):
    type: Literal["score"]
    instructions: JSONText | None = None
    criteria: Annotated[list[JSONText], Field(min_length=1)]


class NoulCriteria(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    true: JSONText | None = None
    false: JSONText | None = None


class NoulQuestion(_Question):
    type: Literal["noul"]
    instructions: JSONText | None = None
    criteria: NoulCriteria | None = None


class BoxQuestion(_Question):
    type: Literal["box"]
    instructions: JSONText | None = None


Question = Annotated[ChoiceQuestion | ScoreQuestion | NoulQuestion | BoxQuestion, Field(discriminator="type")]


class SystemOneRequest(BaseModel):
    """The request body (``typesafe_sdk._schemas.models.SystemOneRequest``); unknown top-level keys are ignored."""

    model_config = ConfigDict(extra="ignore")
    model: StrictStr
    state: JSONText
    questions: Annotated[dict[str, Question], Field(min_length=1)]
    assets: dict[str, Any] | None = None


class Unsupported(Exception):
    """A well-formed request SemIf cannot answer (images): 422 with ``loc`` and a message."""

    def __init__(self, loc: list[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc, self.msg = loc, msg


def to_ask(req: SystemOneRequest) -> dict[str, dict[str, Any]]:
    """The :meth:`~scorer.api.Scorer.ask` questions of a request, by name (module docstring); an image question or
    asset raises :class:`Unsupported`."""
    if req.assets:
        raise Unsupported(["body", "assets"], "image assets are not supported: SemIf serves text models")
    out: dict[str, dict[str, Any]] = {}
    for name, q in req.questions.items():
        question = DEFAULT_QUESTION.get(q.type, "") if q.instructions is None else text_of(q.instructions)
        if isinstance(q, BoxQuestion):
            raise Unsupported(["body", "questions", name, "box"],
                              "box questions locate things in images: SemIf serves text models")
        if isinstance(q, ChoiceQuestion):
            options = [{"id": k, "description": option_description(k, None if v is None else text_of(v))}
                       for k, v in q.criteria.items()]
            out[name] = {"type": "choice", "question": question, "options": options}
        elif isinstance(q, ScoreQuestion):
            out[name] = {"type": "score", "question": question,
                         "options": [{"id": str(i), "description": text_of(v)} for i, v in enumerate(q.criteria)]}
        else:
            c = q.criteria or NoulCriteria()
            yes, no = dict(YES_NO_OPTIONS)[YES], dict(YES_NO_OPTIONS)[NO]
            out[name] = {"type": "yesno", "question": question, "options": [
                {"id": YES, "description": yes if c.true is None else text_of(c.true)},
                {"id": NO, "description": no if c.false is None else text_of(c.false)}]}
    return out


def response(req: SystemOneRequest, result: AskResult) -> dict[str, Any]:
    """The response body: ``{model, answers: {name: answer}, usage: {input_tokens, output_tokens}}``."""
    answers: dict[str, Any] = {}
    for name, asked in result.asked.items():
        a, q = asked.answer, req.questions[name]
        p = probabilities(a)
        if isinstance(q, ChoiceQuestion):
            body: dict[str, Any] = {"type": "choice", "choice": a.final_choice if a.final_choice is not None
                                    else max(a.probabilities, key=lambda k: a.probabilities[k]),
                                    "confidence": a.confidence, "probabilities": dict(a.probabilities)}
        elif isinstance(q, ScoreQuestion):
            body = {"type": "score", "score": expected_level(p), "confidence": a.confidence,
                    "legend": {str(i): v for i, v in enumerate(q.criteria)},
                    "probabilities": {str(i): v for i, v in enumerate(p)}}
        else:
            body = {"type": "noul", "noul": float(a.probabilities[YES])}
        answers[name] = {**body, "semif": extension(asked)}
    u = usage(result.records)
    return {"model": result.model, "answers": answers,
            "usage": {"input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"],
                      "cached_input_tokens": u["cached_tokens"]}}
