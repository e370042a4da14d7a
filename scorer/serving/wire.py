"""What the two decision-API dialects of ``semif serve`` share (``/v1/systemone``: :mod:`scorer.serving.systemone`;
``/v1/decisions``: :mod:`scorer.serving.decisions`): text of JSON-valued fields, what a choice option is shown to
the model as, the translation of a request into one :meth:`~scorer.api.Scorer.ask` per served model (a route asks
twice), token usage read off the records, and the error every dialect answers with.

Both dialects are thin translators onto :meth:`Scorer.ask`: the same question gets the same numbers through
``/v1/ask``, ``/v1/systemone``, ``/v1/decisions``, the Python API and ``semif ask``. What a dialect adds is its wire
shape, its ``confidence`` (:attr:`scorer.decision.questions.Answer.confidence`) and its extension block ``semif`` on
every answer (which model decided, whether the question was escalated, the raw readout beside the acting one), which
the official SDKs ignore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from scorer.api import Scorer
from scorer.decision.policy import escalates
from scorer.decision.questions import Answer, Answers
from scorer.serving.served import ServedModels


def text_of(value: Any) -> str:
    """A JSON-valued field (instructions, a description) as the text shown to the model: a string as it is, an
    object or array as compact JSON (key order kept)."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def option_description(name: str, description: str | None) -> str:
    """What the model reads for a choice option named ``name`` (a criteria key, a choice value): its description as
    the client gave it, or the name where it gave none (null or empty). The name is not put before a description:
    the single-request studies' prompts list each option by its description alone (``A. 45.00 EUR as store credit``),
    and beside them the dialects' earlier ``name: description`` lines were right less often on choice questions in
    three of the four measurements (both models, the authored and single sets; docs/results.md)."""
    return description or name


@dataclass(frozen=True)
class Asked:
    """One question's answer and where it came from."""

    answer: Answer
    model: str
    """The served model whose readout the answer is."""
    escalated: bool
    """Asked on a route and re-asked on its accurate model."""


@dataclass(frozen=True)
class AskResult:
    """A request's answers by question name (in question order), and every record scored for it (a route's fast
    records of escalated questions included: they were computed)."""

    asked: dict[str, Asked]
    records: list[dict[str, Any]]
    model: str
    """The served name the request was answered as (a model or a route)."""


def ask(models: ServedModels, served: str, state: Any, questions: Mapping[str, Any]) -> AskResult:
    """``questions`` (``{name: {type, question, options}}``, validated) about ``state`` on the served model or route
    ``served`` (resolved: :meth:`ServedModels.resolve`). A route asks its fast model, then its accurate model the
    questions whose fast answer :func:`~scorer.decision.policy.escalates` at the route's threshold (acting margin,
    or a tie), in one more :meth:`Scorer.ask`."""
    route = models.routes.get(served)
    if route is None:
        scorer = models.scorers[served]
        answers = scorer.ask(state, questions)
        return AskResult({n: Asked(a, served, False) for n, a in answers.items()}, answers.records, served)
    fast_scorer, accurate_scorer = models.scorers[route.fast], models.scorers[route.accurate]
    fast = fast_scorer.ask(state, questions)
    up = [n for n, a in fast.items() if escalates(a.record, route.threshold)]
    asked = {n: Asked(a, route.fast, False) for n, a in fast.items()}
    records = fast.records
    if up:
        accurate: Answers = accurate_scorer.ask(state, {n: questions[n] for n in up})
        asked.update({n: Asked(accurate[n], route.accurate, True) for n in up})
        records += accurate.records
    return AskResult({n: asked[n] for n in questions}, records, served)


def usage(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Tokens a request cost, from its records: ``input_tokens`` counts each prompt token once (a prefix several
    questions share, once: shared mode prefills it once), ``cached_tokens`` those taken from the radix prefix cache
    (filled by earlier requests), ``cache_write_tokens`` the prefix tokens prefilled now and kept there;
    ``output_tokens`` is 0 (a typed decision generates nothing)."""
    prefixes: dict[str, Mapping[str, Any]] = {}
    suffix = whole = 0
    for r in records:
        if r.get("prefix_sha256") is None:
            whole += int(r["input_tokens"])
            continue
        prefixes.setdefault(str(r["prefix_sha256"]), r)
        suffix += int(r.get("suffix_tokens") or 0)
    prefix = sum(int(r["prefix_tokens"] or 0) for r in prefixes.values())
    cached = sum(int((r.get("cache") or {}).get("reused_tokens") or 0) for r in prefixes.values())
    return {"input_tokens": whole + prefix + suffix, "cached_tokens": cached,
            "cache_write_tokens": prefix - cached, "output_tokens": 0}


def extension(asked: Asked) -> dict[str, Any]:
    """An answer's ``semif`` block: which model decided, whether it was escalated, the raw readout (the acting one
    is the wire answer), whether a calibration applied, the declared options' share of the model's mass, and the
    record's id, so an answer can be matched to its record."""
    a = asked.answer
    return {"model": asked.model, "escalated": asked.escalated, "calibrated": a.calibrated,
            "raw_choice": a.raw_choice, "margin": a.margin, "tie": a.tie,
            "allowed_token_mass": a.allowed_token_mass, "record_id": a.record["id"]}


def probabilities(answer: Answer) -> list[float]:
    """The acting probabilities in the question's option order."""
    return [float(p) for p in answer.probabilities.values()]


def default_scorer(models: ServedModels) -> Scorer:
    """The default model's scorer (the semif dialect's)."""
    return models.scorers[models.default]
