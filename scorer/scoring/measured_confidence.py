"""The ``confidence`` block of a record whose weights and readout have a measured confidence curve
(:mod:`scorer.calibration.confidence_map`, one per kind of question, carried by the label-free default
:mod:`scorer.calibration.label_free_defaults` resolved for them): the answer's peakedness, its kind's curve, and the
confidence it maps to — what :attr:`scorer.decision.questions.Answer.confidence`, and through it every face, answers
with.

The curve was fitted on the default's own answers, so it is applied only to a record whose acting readout is the
default's: the raw readout (no ``calibrated`` block, or one that left a question a calibration file does not cover
raw) or the default's label-free correction. A question a calibration file covers is read through a prior the curve
never saw: its record keeps the peakedness as its confidence (no block).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from scorer.calibration.label_free_defaults import CONFIDENCE_REPORT, Measured
from scorer.decision.confidence import peakedness
from scorer.decision.policy import acting
from scorer.decision.questions import answer_kind


def acts_as_measured(record: Mapping[str, Any]) -> bool:
    """True when ``record``'s acting readout is the one its weights' curve was fitted on (module docstring)."""
    block = record.get("calibrated")
    if not isinstance(block, Mapping):
        return True
    if "label_free" in block:
        return True
    return bool(block.get("uncovered")) and not block.get("applied")


def confidence_block(record: Mapping[str, Any], measured: Measured) -> dict[str, Any] | None:
    """``record``'s ``confidence`` block under ``measured``'s curve; None when it has none, or the record's acting
    readout is not the default's, or it carries no probabilities."""
    curves = measured.confidence
    if curves is None or not acts_as_measured(record):
        return None
    probabilities = acting(record).get("probabilities")
    if not probabilities:
        return None
    kind = answer_kind(record.get("type"), record["option_ids"])
    curve = curves.for_kind(kind)
    peak = peakedness([float(x) for x in probabilities], record.get("type"))
    return {"value": curve(peak), "peakedness": peak,
            "curve": {"form": "sigma(a + b * peakedness)", "a": curve.a, "b": curve.b, "kind": kind,
                      "model": measured.model, "slots": measured.slots, "report": CONFIDENCE_REPORT}}


def with_confidence(records: Iterable[dict[str, Any]], measured: Measured | None) -> Iterator[dict[str, Any]]:
    """``records``, each with its ``confidence`` block where ``measured``'s curve applies (:func:`confidence_block`)."""
    for rec in records:
        block = None if measured is None else confidence_block(rec, measured)
        yield rec if block is None else {**rec, "confidence": block}
