"""Question types (``choice``, ``yesno``, ``score``), the one option normaliser, and typed answers.

A question is a row's ``question`` with its declared options and a ``type`` that says how its readout is
meant (the prompt and the probabilities are the same for every type: a softmax over the declared options'
slot logits). ``choice`` is the plain decision; ``yesno`` has exactly the options ``yes`` and ``no`` (default
wording :data:`YES_NO_OPTIONS`, overridable) and is answered by ``p_yes``; ``score`` has ordered labels,
lowest first, and is answered by the distribution, its expected value over the label positions 0, 1, … and
the argmax label.

Options are given in any of three forms, everywhere (rows, :meth:`scorer.api.Scorer.decide`,
:meth:`scorer.api.Scorer.ask`, ``semif ask``, the service): a plain list of ids (each id is also its
description), an object ``{id: description}``, or the row form ``[{"id", "description"}, …]``.
:func:`normalize_options` turns the first two into the row form; the row validation
(:func:`scorer.formats.rows.parse_decision`) then judges the result.

An :class:`Answer` is the typed view of one record: its numbers are the *acting* readout (the calibrated block
when the record carries one, else the raw one; :func:`scorer.decision.policy.acting`), with the raw choice beside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from scorer.core.checks import OptionError
from scorer.core.errors import InputError, SemifError, brief
from scorer.decision.confidence import peakedness
from scorer.decision.policy import ANY_MARGIN, Policy, Verdict, acting

QUESTION_TYPES = ("choice", "yesno", "score")
"""The values of a row's ``type`` (absent: a plain decision, read like ``choice``)."""
YES, NO = "yes", "no"
"""The option ids of a ``yesno`` question."""
YES_NO_OPTIONS: tuple[tuple[str, str], ...] = ((YES, "Yes"), (NO, "No"))
"""A ``yesno`` question's options when none are given: ``A. Yes``, ``B. No``."""
YES_NO_IDS = frozenset((YES, NO))
"""The option ids that make a question a yes/no one whatever its ``type`` (:func:`answer_kind`)."""
ANSWER_KINDS = ("choice", "yesno", "score")
"""How a question is answered, for what reads questions apart (:func:`answer_kind`)."""
OPTION_FORMS = "a list of option ids, an object id -> description, or a list of {id, description} objects"
"""What ``options`` may be (the ``expected`` of a refusal)."""


def normalize_options(raw: Any, path: str, line: int | None, field: str = "options") -> Any:
    """``raw`` in the row form ``[{"id", "description"}, …]``: an object ``{id: description}`` becomes one
    item per key (in its order), a plain id ``"x"`` in a list becomes ``{"id": "x", "description": "x"}``.
    Anything else is returned as it is, for the row validation to judge; a key that is not a string raises
    :class:`InputError` here (an in-memory mapping can hold one; a JSON object cannot)."""
    if isinstance(raw, Mapping):
        for k in raw:
            if not isinstance(k, str):
                raise InputError(path, line, field, f"the key {brief(k)} is a {type(k).__name__}, not a string",
                                 OPTION_FORMS)
        return [{"id": k, "description": v} for k, v in raw.items()]
    if isinstance(raw, list | tuple):
        out = []
        for i, o in enumerate(raw):
            if isinstance(o, str):
                if not o.strip():
                    raise InputError(path, line, f"{field}[{i}]", f"{brief(o)} is a blank option id",
                                     "a non-empty option id or an object {id, description}")
                o = {"id": o, "description": o}
            out.append(o)
        return out
    return raw


def answer_kind(qtype: str | None, ids: Sequence[str]) -> str:
    """What a question with type ``qtype`` and option ids ``ids`` asks for: ``yesno`` when its options are exactly
    ``yes`` and ``no`` (in either order, whatever its type: a ``choice`` between them is a yes/no question to the
    model), ``score`` for a ``score`` question, else ``choice``. The readout ``auto`` and the label-free default
    both tell questions apart by it."""
    if len(ids) == 2 and set(ids) == YES_NO_IDS:
        return "yesno"
    return "score" if qtype == "score" else "choice"


def check_type(value: Any, path: str, line: int | None) -> str:
    """A row's ``type``: one of :data:`QUESTION_TYPES`, else :class:`InputError`."""
    if not isinstance(value, str) or value not in QUESTION_TYPES:
        raise InputError(path, line, "type", f"{brief(value)} is not a question type", "one of "
                         + ", ".join(QUESTION_TYPES))
    return str(value)


def default_options(qtype: str | None) -> list[dict[str, str]] | None:
    """The options a row of ``qtype`` gets when it declares none (``yesno`` only; None: options are required)."""
    return [{"id": i, "description": d} for i, d in YES_NO_OPTIONS] if qtype == "yesno" else None


def check_option_ids(qtype: str | None, ids: Sequence[str], path: str, line: int | None,
                     field: str = "options") -> None:
    """What a type asks of the declared option ids: ``yesno`` has exactly ``yes`` and ``no``."""
    if qtype == "yesno" and sorted(ids) != sorted((YES, NO)):
        raise InputError(path, line, field, f"ids {brief(list(ids))} for a yesno question",
                         f"exactly the ids {YES!r} and {NO!r} (their descriptions are free; default "
                         f"{dict(YES_NO_OPTIONS)})")


# --- question specs (the Python API) -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    """Pick one of 2–255 declared options (lettered A–P up to 16, numbered beyond)."""

    question: str
    """The criterion to decide (shown to the model)."""
    options: Any
    """A list of ids, ``{id: description}`` or ``[{"id", "description"}, …]``, lettered A, B, … in this order."""

    type = "choice"

    def row_fields(self) -> dict[str, Any]:
        """The ``question``, ``options`` and ``type`` fields of the row this question is scored as."""
        return {"question": self.question, "options": self.options, "type": self.type}


@dataclass(frozen=True)
class YesNo:
    """A yes/no question, answered by ``p_yes``."""

    question: str
    """The question (shown to the model)."""
    yes: str = YES_NO_OPTIONS[0][1]
    """What the ``yes`` option says to the model (lettered A)."""
    no: str = YES_NO_OPTIONS[1][1]
    """What the ``no`` option says to the model (lettered B)."""

    type = "yesno"

    def row_fields(self) -> dict[str, Any]:
        return {"question": self.question, "options": [{"id": YES, "description": self.yes},
                                                       {"id": NO, "description": self.no}], "type": self.type}


@dataclass(frozen=True)
class Score(Choice):
    """A rating over ordered labels, lowest first (``options``: a list of ids, ``{id: description}`` or the row
    list form), answered by its distribution, expected value and argmax: ``Score(question, labels)``."""

    type = "score"

    @property
    def labels(self) -> Any:
        """The ordered labels, lowest first (the ``options`` given)."""
        return self.options


Question = Choice | YesNo | Score
"""What :meth:`scorer.api.Scorer.ask` takes per name."""
_SPECS: dict[str, type[Choice] | type[YesNo] | type[Score]] = {"choice": Choice, "yesno": YesNo, "score": Score}


def question_fields(name: str, spec: Any, source: str) -> dict[str, Any]:
    """The row fields (``question``, ``options``, ``type``) of one named question of ``ask``: a
    :class:`Choice`/:class:`YesNo`/:class:`Score`, or its JSON form ``{"type", "question", "options"}``
    (``yesno``: options optional). Errors name ``source`` and the field ``questions.NAME…``."""
    where = f"questions.{name}"
    if isinstance(spec, Choice | YesNo | Score):
        return spec.row_fields()
    if not isinstance(spec, Mapping):
        raise InputError(source, None, where, f"a {type(spec).__name__}",
                         'Choice/YesNo/Score, or an object {"type", "question", "options"}')
    unknown = sorted(set(spec) - {"type", "question", "options"}, key=str)
    if unknown:
        raise InputError(source, None, where, f"unknown keys {brief(unknown)}", "only type, question, options")
    if "type" not in spec:
        raise InputError(source, None, f"{where}.type", "missing", "one of " + ", ".join(QUESTION_TYPES))
    qtype = spec["type"]
    if not isinstance(qtype, str) or qtype not in _SPECS:
        raise InputError(source, None, f"{where}.type", f"{brief(qtype)} is not a question type",
                         "one of " + ", ".join(QUESTION_TYPES))
    if "question" not in spec:
        raise InputError(source, None, f"{where}.question", "missing", "a non-empty string")
    if "options" not in spec and qtype != "yesno":
        raise InputError(source, None, f"{where}.options", "missing", OPTION_FORMS)
    # In the order row_fields() gives them, so that a question sent as JSON (the service, MCP, the client) is the same
    # row, byte for byte, as the same question given as a Choice/YesNo/Score: the same run, the same config_sha256.
    out = {"question": spec["question"]}
    if "options" in spec:
        out["options"] = spec["options"]
    return {**out, "type": qtype}


# --- typed answers -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """The typed answer to one question: the acting readout of its record (calibrated when present)."""

    name: str
    """The question's name (its record's id)."""
    type: str
    """``choice``, ``yesno`` or ``score``."""
    probabilities: Mapping[str, float]
    """Probability of each option id, declared order, of the acting readout."""
    final_choice: str | None
    """The choice to act on: the calibrated choice when the record was calibrated, else the raw one; None on
    a tie."""
    margin: float
    """Top minus second probability of the acting readout."""
    tie: bool
    """The top two logits of the acting readout are equal within the dtype's resolution."""
    raw_choice: str | None
    """The raw (uncalibrated) choice, kept beside the acting one."""
    calibrated: bool
    """True when the acting readout is a calibration that applied (a calibrated block with ``applied``)."""
    uncovered: bool
    """True when a calibration was asked for but covered nothing for this question (``on_uncovered="raw"``):
    the numbers are then the raw ones."""
    allowed_token_mass: float | None
    """Mass of the option letters in the full-vocabulary softmax (low: the model wanted to say something else); None
    for a remote decision API's record, which sees no token distribution."""
    record: Mapping[str, Any]
    """The exact record (schema ``semif-record-v2``), read-only."""

    @property
    def confidence(self) -> float:
        """How sure the answer is, in [0, 1], from the acting readout: the number the System One and Decisions faces
        answer with. Its peakedness (:mod:`scorer.decision.confidence`: ``(p_max − 1/K)/(1 − 1/K)`` for a choice or
        yes/no question, the spread about the most probable level for a score), mapped — where the weights and
        readout have a measured curve, the record's ``confidence`` block — to how often answers that peaked were
        right (:mod:`scorer.calibration.confidence_map`); how far that holds is measured per model
        (``data/results/confidence-reliability.json``)."""
        block = self.record.get("confidence")
        if isinstance(block, Mapping):
            return float(block["value"])
        return peakedness(list(self.probabilities.values()), self.type)

    def verdict(self, policy: Policy) -> Verdict:
        """Whether ``policy`` lets this answer be acted on, and why (:meth:`scorer.decision.policy.Policy.verdict`)."""
        if not isinstance(policy, Policy):
            raise OptionError("policy", f"{brief(policy)} is not a scorer.decision.policy.Policy (Policy(margin=0.1), "
                                        "or load_policy('T.json'))")
        return policy.verdict(self.record)

    def confident(self, policy: Policy) -> bool:
        """True when ``policy`` lets this answer be acted on (never on a tie)."""
        return self.verdict(policy).confident

    def final_choice_or(self, default: Any = None, policy: Policy | None = None) -> Any:
        """:attr:`final_choice` when ``policy`` is confident about it, else ``default``. Without a policy only a
        tie abstains (:data:`scorer.decision.policy.ANY_MARGIN`)."""
        return self.final_choice if self.verdict(ANY_MARGIN if policy is None else policy).confident else default

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON (what ``semif ask`` prints and the service's ``/v1/ask`` answers)."""
        return {"type": self.type, "final_choice": self.final_choice, "raw_choice": self.raw_choice,
                "probabilities": dict(self.probabilities), "confidence": self.confidence, "margin": self.margin,
                "tie": self.tie, "calibrated": self.calibrated, "uncovered": self.uncovered,
                "allowed_token_mass": self.allowed_token_mass, **self._typed_json()}

    def _typed_json(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class ChoiceAnswer(Answer):
    """A ``choice`` question's answer (or a plain decision's)."""


@dataclass(frozen=True)
class YesNoAnswer(Answer):
    """A ``yesno`` question's answer."""

    p_yes: float
    """Probability of ``yes`` in the acting readout."""

    def _typed_json(self) -> dict[str, Any]:
        return {"p_yes": self.p_yes}


@dataclass(frozen=True)
class ScoreAnswer(Answer):
    """A ``score`` question's answer."""

    labels: tuple[str, ...]
    """The ordered labels, lowest first (the option ids)."""
    expected: float
    """Expected label position, ``sum(p_i * i)`` for i = 0, 1, … over :attr:`labels` (acting readout)."""
    argmax: str | None
    """The most probable label (equal to :attr:`final_choice`; None on a tie)."""

    def _typed_json(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "expected": self.expected, "argmax": self.argmax}


def answer_of(record: Mapping[str, Any], name: str | None = None) -> Answer:
    """The typed answer of one record (its ``type``; a record without one is a ``choice``)."""
    qtype = record.get("type") or "choice"
    if qtype not in _SPECS:
        raise SemifError(f"record {record.get('id')!r}: type {brief(qtype)} is not one of "
                         f"{', '.join(QUESTION_TYPES)}")
    r = acting(record)
    ids = list(record["option_ids"])
    p = [float(v) for v in r["probabilities"]]
    block = record.get("calibrated")
    common: dict[str, Any] = {
        "name": record["id"] if name is None else name, "type": qtype,
        "probabilities": MappingProxyType(dict(zip(ids, p, strict=True))), "final_choice": r["choice"],
        "margin": float(r["margin"]), "tie": bool(r["tie"]), "raw_choice": record["choice"],
        "calibrated": isinstance(block, dict) and bool(block.get("applied")),
        "uncovered": isinstance(block, dict) and bool(block.get("uncovered")),
        "allowed_token_mass": None if record["allowed_token_mass"] is None else float(record["allowed_token_mass"]),
        "record": MappingProxyType(dict(record))}
    if qtype == "yesno":
        return YesNoAnswer(**common, p_yes=p[ids.index(YES)])
    if qtype == "score":
        return ScoreAnswer(**common, labels=tuple(ids), expected=sum(i * v for i, v in enumerate(p)),
                           argmax=r["choice"])
    return ChoiceAnswer(**common)


class Answers(Mapping[str, Answer]):
    """The answers of :meth:`scorer.api.Scorer.ask`, by question name, in the order the questions were given."""

    def __init__(self, answers: Mapping[str, Answer]) -> None:
        self._answers = dict(answers)

    def __getitem__(self, name: str) -> Answer:
        return self._answers[name]

    def __iter__(self) -> Any:
        return iter(self._answers)

    def __len__(self) -> int:
        return len(self._answers)

    def __repr__(self) -> str:
        return f"Answers({', '.join(f'{k}={a.final_choice!r}' for k, a in self._answers.items())})"

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every question's record (a copy, as :func:`scorer.formats.records.dumps_record` writes it), in question
        order."""
        return [dict(a.record) for a in self._answers.values()]

    def to_json(self) -> dict[str, Any]:
        return {k: a.to_json() for k, a in self._answers.items()}
