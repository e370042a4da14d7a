"""A measured ``confidence``: the peakedness of an answer (:mod:`scorer.decision.confidence`, the ecosystem's formula)
mapped to how often answers that peaked are right, for weights whose default readout was measured on labelled rows.

The peakedness ``x`` says how sure the readout is, not how often it is right: on qwen2.5-1.5b's default the
answers of the selection sets were right 61–88 % of the time while ``x`` averaged far lower (expected calibration
error 0.23–0.41, ``data/results/confidence-reliability.json``). The map is one logistic curve per weights and readout,
``σ(a + b·x)`` with ``b ≥ 0``, fitted by maximum likelihood on the default's single-request answers to the labelled
selection sets (every kind of question together: one curve keeps the formula's order, so which answers are the most
sure — and how many can be automated at an error budget — is the formula's). ``b ≥ 0`` keeps it monotone in the
acting probability; where the peakedness carries no sign of being right the fit is ``b = 0``, every answer the
sets' accuracy.

The map is a property of the weights, the readout and the questions it was fitted on: on questions unlike them it can
be off (the report measures it on a held-out set it never saw).
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
