"""A measured ``confidence``: the peakedness of an answer (:mod:`scorer.decision.confidence`, the ecosystem's formula)
mapped to how often answers that peaked are right, for weights whose default readout was measured on labelled rows.

The peakedness ``x`` says how sure the readout is, not how often it is right: on qwen2.5-1.5b's default the
answers of the selection sets were right 61–88 % of the time while ``x`` averaged far lower (expected calibration
error 0.23–0.41, ``data/results/confidence-reliability.json``). The map is a logistic curve per weights, readout and
kind of question (choice, score, yes/no: :class:`KindCurves`), ``σ(a + b·x)`` with ``b ≥ 0``, fitted by maximum
likelihood on the default's single-request answers of that kind to the labelled selection sets. One curve per kind,
because the kinds' peakedness is not on one scale: under one curve over every kind, the kind whose answers peak
highest set the slope for the others and no answer reached 0.9 (qwen2.5-1.5b, choice questions read as JSON answers).
``b ≥ 0`` keeps each curve monotone in the acting probability, so within a kind the surest answers are the formula's;
where the peakedness carries no sign of being right the fit is ``b = 0``, every answer of the kind its accuracy.

The map is a property of the weights, the readout and the questions it was fitted on: on questions unlike them it can
be off (the report measures it on held-out sets it never saw).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

_RIDGE = 1e-2
"""A weak L2 penalty on the slope: keeps the fit finite when the rows separate (every sure answer right)."""
_STEPS = 100


@dataclass(frozen=True)
class ConfidenceMap:
    """``confidence = σ(a + b·x)`` for an answer of peakedness ``x``."""

    a: float
    b: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.a) and math.isfinite(self.b)) or self.b < 0:
            raise ValueError(f"a confidence map needs finite a and b >= 0 (got a={self.a!r}, b={self.b!r})")

    def __call__(self, peakedness: float) -> float:
        z = self.a + self.b * float(peakedness)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def fit(peakedness: Sequence[float], right: Sequence[bool]) -> ConfidenceMap:
    """The maximum-likelihood ``σ(a + b·x)`` of ``right`` on ``peakedness`` (Newton's method, a weak penalty on
    ``b``); when the best slope is negative, ``b = 0`` and ``a`` the log-odds of the rows' accuracy."""
    x = np.asarray(peakedness, dtype=np.float64)
    y = np.asarray(right, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"fit needs two or more rows, as many peakednesses as outcomes (got {x.shape}, {y.shape})")
    design = np.column_stack([np.ones_like(x), x])
    w = np.zeros(2)
    penalty = np.diag([0.0, _RIDGE])
    for _ in range(_STEPS):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (p - y) + penalty @ w
        hess = design.T @ (design * (p * (1.0 - p))[:, None]) + penalty + 1e-9 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.abs(step).max()) < 1e-10:
            break
    if w[1] < 0:
        rate = min(max(float(y.mean()), 1e-3), 1.0 - 1e-3)
        return ConfidenceMap(math.log(rate / (1.0 - rate)), 0.0)
    return ConfidenceMap(float(w[0]), float(w[1]))


KINDS = ("choice", "score", "yesno")
"""The kinds of question a curve is fitted for (:func:`scorer.decision.questions.answer_kind`)."""


@dataclass(frozen=True)
class KindCurves:
    """One curve per kind of question: a choice answer's peakedness, a score's and a yes/no answer's are not on one
    scale (on qwen2.5-1.5b's default a yes/no answer of peakedness 0.5 was right about 80 % of the time, a choice
    answer of the same peakedness about half the time: ``data/results/confidence-reliability.json``). The form "one
    for every kind" is the same curve three times."""

    choice: ConfidenceMap
    score: ConfidenceMap
    yesno: ConfidenceMap

    def for_kind(self, kind: str) -> ConfidenceMap:
        """The curve of ``kind`` (one of :data:`KINDS`)."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind of question {kind!r} (expected one of {', '.join(KINDS)})")
        curve: ConfidenceMap = getattr(self, kind)
        return curve


def fit_by_kind(peakedness: Sequence[float], right: Sequence[bool], kinds: Sequence[str]) -> KindCurves:
    """:func:`fit` on each kind's rows (every kind of :data:`KINDS` needs two rows or more)."""
    if not len(peakedness) == len(right) == len(kinds):
        raise ValueError("fit_by_kind needs one peakedness, outcome and kind per row")
    curves = {}
    for kind in KINDS:
        rows = [i for i, k in enumerate(kinds) if k == kind]
        curves[kind] = fit([peakedness[i] for i in rows], [right[i] for i in rows])
    return KindCurves(**curves)


def cross_fitted_by_kind(peakedness: Sequence[float], right: Sequence[bool], groups: Sequence[Hashable],
                         kinds: Sequence[str]) -> list[float]:
    """Each row's confidence under its kind's curve fitted without its group (:func:`cross_fitted` within each
    kind)."""
    if not len(peakedness) == len(right) == len(groups) == len(kinds):
        raise ValueError("cross_fitted_by_kind needs one peakedness, outcome, group and kind per row")
    out = [0.0] * len(kinds)
    for kind in dict.fromkeys(kinds):
        rows = [i for i, k in enumerate(kinds) if k == kind]
        got = cross_fitted([peakedness[i] for i in rows], [right[i] for i in rows], [groups[i] for i in rows])
        for i, value in zip(rows, got, strict=True):
            out[i] = value
    return out


def cross_fitted(peakedness: Sequence[float], right: Sequence[bool], groups: Sequence[Hashable]) -> list[float]:
    """Each row's confidence under the map fitted without its group (a family of questions): how the map does on
    questions it was not fitted on."""
    if not len(peakedness) == len(right) == len(groups):
        raise ValueError("cross_fitted needs one peakedness, outcome and group per row")
    out = [0.0] * len(groups)
    for g in dict.fromkeys(groups):
        rest = [i for i, h in enumerate(groups) if h != g]
        m = fit([peakedness[i] for i in rest], [right[i] for i in rest])
        for i, h in enumerate(groups):
            if h == g:
                out[i] = m(peakedness[i])
    return out
