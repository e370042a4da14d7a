"""How far the wire ``confidence`` (:mod:`scorer.decision.confidence`) can be trusted on labelled rows: its
reliability (decisions grouped by confidence: how often each group was right), its expected calibration error, how
often a confidence of 0.9 or more occurs and how often such answers are right, and how much can be automated — the
largest share of decisions that can be acted on, the most confident first, at 1 %, 5 % and 10 % error, the rest
going to a person (or to an accurate engine).

Reads records and labels only (no model). The confidence of a row is the choice formula over its declared options
(the ``score`` formula for rows of type ``score``), computed from the probabilities a decision acts on (the
calibrated ones when the record carries a ``calibrated`` block: :func:`scorer.decision.policy.calibrated_view`); a
missing or invalid record counts as wrong at confidence 1, as ``semif eval`` counts it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from scorer.decision.confidence import peakedness
from scorer.decision.policy import calibrated_view
from scorer.evaluation import metrics

HIGH = 0.9
"""The confidence the ecosystem's clients threshold on ("answers with confidence >= 0.9 …")."""
ERROR_BUDGETS = (0.01, 0.05, 0.10)
"""Error rates at which :func:`automation` says how much can be acted on."""


def wire_table(labels: list[metrics.Label], records: Sequence[dict[str, Any]], name: str) -> metrics.Table:
    """The labelled rows aligned with ``records`` (their acting readout), with ``conf`` the wire confidence."""
    acting = [calibrated_view(r) for r in records]
    table, _ = metrics.align(labels, acting, name)
    kinds = {r["id"]: r.get("type") for r in records}
    conf = np.ones(table.n)
    for i, (lab, p) in enumerate(zip(table.labels, table.probs, strict=True)):
        if p is not None:
            conf[i] = peakedness([float(v) for v in p], kinds.get(lab.id))
    out = copy.copy(table)
    out.conf = conf
    return out


def automation(t: metrics.Table, budgets: Sequence[float] = ERROR_BUDGETS) -> list[dict[str, Any]]:
    """Per error budget: the largest share of rows that can be acted on, taking the most confident first, with at
    most that share of them wrong; the confidence it takes (the least confidence acted on) and the error reached."""
    order = np.argsort(-t.conf, kind="stable")
    wrong = np.cumsum(~t.correct[order])
    k = np.arange(1, t.n + 1)
    out = []
    for budget in budgets:
        ok = np.nonzero(wrong / k <= budget + 1e-12)[0]
        n = int(ok[-1] + 1) if len(ok) else 0
        out.append({"max_error": budget, "rows": n, "share": n / t.n if t.n else 0.0,
                    "min_confidence": float(t.conf[order[n - 1]]) if n else None,
                    "error": float(wrong[n - 1] / n) if n else None})
    return out


def summary(t: metrics.Table) -> dict[str, Any]:
    """Accuracy, ECE and the reliability bins of the wire confidence; the answers at :data:`HIGH` or more; the
    automation table."""
    high = t.conf >= HIGH
    n_high = int(high.sum())
    return {"rows": t.n, "accuracy": metrics.accuracy(t), "ece": metrics.ece(t),
            "mean_confidence": float(t.conf.mean()) if t.n else None,
            "high": {"threshold": HIGH, "rows": n_high, "share": n_high / t.n if t.n else 0.0,
                     "accuracy": float(t.correct[high].mean()) if n_high else None},
            "reliability": metrics.reliability(t), "automation": automation(t)}
