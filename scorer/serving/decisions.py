"""``POST /v1/decisions``: the OpenAI Decisions wire format (``openai`` 3.51.0, ``client.decisions.create``), answered
by :meth:`scorer.api.Scorer.ask` on a local model.

**Input** is text, or an ordered list of items rendered deterministically into one text state
(:func:`render_input`), one block per item, in order:

* a message: ``[ROLE] text`` (``user``, ``developer``, ``system``, ``assistant``; a ``type`` is optional as the SDK's
  own tool runner omits it); its content is a string or parts, joined by newlines: ``input_text``/``output_text``
  as text, ``input_json`` as compact JSON, an assistant's ``refusal`` as ``(refused: text)``;
* a function call: ``[tool call NAME#CALL_ID] ARGUMENTS``; its output: ``[tool result NAME#CALL_ID] OUTPUT`` (the
  name found from the call with the same ``call_id``; an output whose call is absent is refused);
* a custom tool call and its output: the same, with the call's ``input``.

Images (``input_image`` anywhere) are refused: SemIf serves text models.

**Questions** (1–400, answered in order; ``name`` echoed, null when absent):

* ``predicate`` → a ``yesno`` question whose text is the instructions (the statement), options *True* / *False*:
  ``{probability: p(true)}``;
* ``choice`` → ``choice`` with one option per value (2–255; a string value is its own id, a boolean ``true`` the id
  ``true``; a description, when given, is what the model reads, else the id:
  :func:`scorer.serving.wire.option_description`): ``{choice: the value with its JSON type, confidence,
  probabilities: [{value, probability}]}``;
* ``score`` → ``score`` over the levels in order (ids ``"0"``…; what the model reads is ``label: description``):
  ``{score: Σ i·p_i, confidence, probabilities: [{value: i, label, probability}]}``.

A question SemIf cannot read (its options cannot be told apart by the readout, e.g. the boolean ``true`` and the
string ``"true"`` in one question, whose ids would be equal) is answered ``{type: "refusal"}`` (the others still
are), with the reason in its ``semif`` block. ``usage`` counts input tokens once per shared prefix, cached tokens from
the radix prefix cache, and 0 output tokens.

Errors: OpenAI's shape ``{"error": {message, type, param, code}}``; 400 for a request that breaks the schema (``param``
names the JSON path, as ``questions[1].choices``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictBool, StrictStr, Tag

from scorer.decision.confidence import expected_level
from scorer.decision.questions import NO, YES
from scorer.serving.wire import AskResult, extension, option_description, probabilities, text_of, usage

MAX_QUESTIONS = 400
MAX_CHOICES = 255
PREDICATE_OPTIONS = ({"id": YES, "description": "True"}, {"id": NO, "description": "False"})
"""What a predicate's two options say to the model."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputText(_Model):
    type: Literal["input_text"]
    text: StrictStr
    prompt_cache_breakpoint: dict[str, Any] | None = None


class InputImage(_Model):
    type: Literal["input_image"]
    image_url: StrictStr | None = None
    file_id: StrictStr | None = None
    detail: StrictStr | None = None
    prompt_cache_breakpoint: dict[str, Any] | None = None


class InputJson(_Model):
    type: Literal["input_json"]
    data: dict[str, Any] | list[dict[str, Any]]
    prompt_cache_breakpoint: dict[str, Any] | None = None


class OutputText(_Model):
    type: Literal["output_text"]
    text: StrictStr
    annotations: list[Any] | None = None


class RefusalPart(_Model):
    type: Literal["refusal"]
    refusal: StrictStr


Part = Annotated[InputText | InputImage | InputJson | OutputText | RefusalPart, Field(discriminator="type")]


class Message(_Model):
    role: Literal["user", "developer", "system", "assistant"]
    content: StrictStr | list[Part]
    type: Literal["message"] | None = None
    phase: StrictStr | None = None
    id: StrictStr | None = None
    status: StrictStr | None = None


class FunctionCall(_Model):
    type: Literal["function_call"]
    call_id: StrictStr
    name: StrictStr
    arguments: StrictStr
    id: StrictStr | None = None
    namespace: StrictStr | None = None
    status: StrictStr | None = None


class FunctionCallOutput(_Model):
    type: Literal["function_call_output"]
    call_id: StrictStr
    output: StrictStr | list[Part]
    id: StrictStr | None = None
    status: StrictStr | None = None


class CustomToolCall(_Model):
    type: Literal["custom_tool_call"]
    call_id: StrictStr
    name: StrictStr
    input: StrictStr
    id: StrictStr | None = None
    namespace: StrictStr | None = None
    status: StrictStr | None = None


class CustomToolCallOutput(_Model):
    type: Literal["custom_tool_call_output"]
    call_id: StrictStr
    output: StrictStr | list[Part]
    id: StrictStr | None = None
    status: StrictStr | None = None


def _item_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return "message" if kind in (None, "message") else str(kind)


InputItem = Annotated[
    Annotated[Message, Tag("message")] | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[FunctionCallOutput, Tag("function_call_output")] | Annotated[CustomToolCall, Tag("custom_tool_call")]
    | Annotated[CustomToolCallOutput, Tag("custom_tool_call_output")],
    Discriminator(_item_kind)]

QuestionPart = Annotated[InputText | InputImage | InputJson, Field(discriminator="type")]
Instructions = StrictStr | Annotated[list[QuestionPart], Field(min_length=1)]


class Predicate(_Model):
    type: Literal["predicate"]
    instructions: Instructions
    name: StrictStr | None = None


class ChoiceValue(_Model):
    value: StrictStr | StrictBool
    description: StrictStr | None = None


class Choice(_Model):
    type: Literal["choice"]
    instructions: Instructions
    choices: Annotated[list[ChoiceValue], Field(min_length=2, max_length=MAX_CHOICES)]
    name: StrictStr | None = None


class Level(_Model):
    label: StrictStr
    description: StrictStr | None = None


class Score(_Model):
    type: Literal["score"]
    instructions: Instructions
    levels: Annotated[list[Level], Field(min_length=1)]
    name: StrictStr | None = None


Question = Annotated[Predicate | Choice | Score, Field(discriminator="type")]


class DecisionsRequest(BaseModel):
    """The request body (``openai.types.decision_create_params``); unknown top-level keys are ignored."""

    model_config = ConfigDict(extra="ignore")
    model: StrictStr
    input: StrictStr | Annotated[list[InputItem], Field(min_length=1)]
    questions: Annotated[list[Question], Field(min_length=1, max_length=MAX_QUESTIONS)]
    prompt_cache_key: StrictStr | None = None
    prompt_cache_options: dict[str, Any] | None = None
    safety_identifier: StrictStr | None = None


class Unsupported(Exception):
    """A well-formed request SemIf cannot answer (an image, an output without its call): 400 naming ``param``."""

    def __init__(self, param: str, msg: str) -> None:
        super().__init__(msg)
        self.param, self.msg = param, msg


def _parts(parts: str | list[Any], where: str) -> str:
    if isinstance(parts, str):
        return parts
    out = []
    for k, p in enumerate(parts):
        if isinstance(p, InputImage):
            raise Unsupported(f"{where}[{k}]", "images are not supported: SemIf serves text models")
        if isinstance(p, InputText | OutputText):
            out.append(p.text)
        elif isinstance(p, InputJson):
            out.append(text_of(p.data))
        elif isinstance(p, RefusalPart):
            out.append(f"(refused: {p.refusal})")
    return "\n".join(out)


def render_input(items: str | list[Any]) -> str:
    """The state a request's ``input`` becomes (module docstring): the text itself, or one block per item."""
    if isinstance(items, str):
        return items
    calls: dict[str, str] = {}
    blocks = []
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if isinstance(item, Message):
            blocks.append(f"[{item.role}] {_parts(item.content, f'{where}.content')}")
        elif isinstance(item, FunctionCall | CustomToolCall):
            calls[item.call_id] = item.name
            args = item.arguments if isinstance(item, FunctionCall) else item.input
            blocks.append(f"[tool call {item.name}#{item.call_id}] {args}")
        else:
            name = calls.get(item.call_id)
            if name is None:
                raise Unsupported(f"{where}.call_id", f"{item.call_id!r} answers no earlier call in input (a tool "
                                                      "output follows its call)")
            blocks.append(f"[tool result {name}#{item.call_id}] {_parts(item.output, f'{where}.output')}")
    return "\n\n".join(blocks)


def _instructions(q: Any, i: int) -> str:
    return _parts(q.instructions, f"questions[{i}].instructions")


def choice_id(value: str | bool) -> str:
    """The option id of a choice value: a string is itself, a boolean its JSON text."""
    return value if isinstance(value, str) else ("true" if value else "false")


def to_ask(req: DecisionsRequest) -> tuple[dict[str, dict[str, Any]], dict[int, str]]:
    """The :meth:`~scorer.api.Scorer.ask` questions of a request, named ``q0``, ``q1``… by position, and the
    questions refused before asking (position → reason)."""
    out: dict[str, dict[str, Any]] = {}
    refused: dict[int, str] = {}
    for i, q in enumerate(req.questions):
        text = _instructions(q, i)
        if isinstance(q, Predicate):
            out[f"q{i}"] = {"type": "yesno", "question": text, "options": [dict(o) for o in PREDICATE_OPTIONS]}
        elif isinstance(q, Choice):
            ids = [choice_id(c.value) for c in q.choices]
            if len(set(ids)) < len(ids):
                refused[i] = ("two values read alike (a boolean and the string that spells it): SemIf reads each "
                              "option by its id, so they cannot be told apart")
                continue
            out[f"q{i}"] = {"type": "choice", "question": text, "options": [
                {"id": oid, "description": option_description(oid, c.description)}
                for oid, c in zip(ids, q.choices, strict=True)]}
        else:
            out[f"q{i}"] = {"type": "score", "question": text, "options": [
                {"id": str(k), "description": lv.label if not lv.description else f"{lv.label}: {lv.description}"}
                for k, lv in enumerate(q.levels)]}
    return out, refused


def response(req: DecisionsRequest, result: AskResult, refused: dict[int, str]) -> dict[str, Any]:
    """The response body: ``{model, answers: [...] (question order), usage: {...}}``."""
    answers: list[dict[str, Any]] = []
    for i, q in enumerate(req.questions):
        if i in refused:
            answers.append({"type": "refusal", "name": q.name, "semif": {"reason": refused[i]}})
            continue
        asked = result.asked[f"q{i}"]
        a = asked.answer
        p = probabilities(a)
        if isinstance(q, Predicate):
            body: dict[str, Any] = {"type": "predicate", "probability": float(a.probabilities[YES])}
        elif isinstance(q, Choice):
            top = max(range(len(p)), key=lambda k: p[k])
            body = {"type": "choice", "choice": q.choices[top].value, "confidence": a.confidence,
                    "probabilities": [{"value": c.value, "probability": v} for c, v in zip(q.choices, p, strict=True)]}
        else:
            body = {"type": "score", "score": expected_level(p), "confidence": a.confidence,
                    "probabilities": [{"value": k, "label": lv.label, "probability": v}
                                      for k, (lv, v) in enumerate(zip(q.levels, p, strict=True))]}
        answers.append({**body, "name": q.name, "semif": extension(asked)})
    u = usage(result.records)
    return {"model": result.model, "answers": answers,
            "usage": {"input_tokens": u["input_tokens"],
                      "input_tokens_details": {"cached_tokens": u["cached_tokens"],
                                               "cache_write_tokens": u["cache_write_tokens"]},
                      "output_tokens": u["output_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": u["input_tokens"] + u["output_tokens"]}}
