"""Abstention thresholds per decision signature, chosen out of fold for a target precision
(``semif calibrate thresholds RUNS --labels ROWS --precision 0.9 --output T.json``).

For each signature the threshold is the smallest margin ``t`` of the *acting* readout (calibrated when the
records carry a calibrated block: :func:`scorer.decision.policy.acting`) such that, among its labelled decisions that
are not ties, clear the ``allowed_token_mass`` floor and have margin >= ``t``, at least ``min_accepted`` are
accepted and the share whose choice matches the label is at least ``precision``. The smallest such ``t``
acts on the most decisions; none reaching the precision gives ``null`` (never act). The ``fallback`` is the
same rule over every signature pooled, for signatures the file does not list.

How well that generalises is measured out of fold, by the folds every labelled fit here uses
(:func:`scorer.calibration.temperature.group_folds`: group-disjoint, groups dealt by the sha256 of their name):
each fold's decisions are judged by thresholds chosen on the other folds, and the file reports the precision and the
share acted on of those held-out verdicts, per fold and overall. The deployed thresholds are chosen on all rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scorer.calibration.temperature import DEFAULT_FOLDS, group_folds
from scorer.core.errors import InputError
from scorer.decision.policy import acting, below_mass_floor
from scorer.evaluation import metrics

DEFAULT_MIN_ACCEPTED = 5
"""Labelled decisions a threshold must accept before its precision counts (fewer: that margin is not a
candidate)."""


@dataclass(frozen=True)
class Row:
    """One labelled decision as the threshold fit sees it."""

    signature: str
    margin: float
    """Acting margin."""
    eligible: bool
    """Not a tie and above the mass floor: only these can be acted on."""
    correct: bool
    """The acting choice matches the label."""
    group: str


def choose(rows: Sequence[Row], precision: float, min_accepted: int) -> float | None:
    """The smallest margin whose accepted rows reach ``precision`` (module docstring); None when none does."""
    pool = sorted((r for r in rows if r.eligible), key=lambda r: -r.margin)
    best: float | None = None
    accepted = correct = 0
    for i, r in enumerate(pool):
        accepted += 1
        correct += r.correct
        if i + 1 < len(pool) and pool[i + 1].margin == r.margin:
            continue  # a threshold takes every row with this margin at once
        if accepted >= min_accepted and correct >= precision * accepted:
            best = r.margin
    return best


def fit(rows: Sequence[Row], precision: float, min_accepted: int) -> tuple[dict[str, float | None], float | None]:
    """Per-signature thresholds and the pooled fallback over ``rows``."""
    by_sig: dict[str, list[Row]] = {}
    for r in rows:
        by_sig.setdefault(r.signature, []).append(r)
    return ({s: choose(rs, precision, min_accepted) for s, rs in by_sig.items()},
            choose(rows, precision, min_accepted))


def _judge(rows: Sequence[Row], thresholds: Mapping[str, float | None], fallback: float | None) -> tuple[int, int]:
    """(acted on, of which correct) of ``rows`` under these thresholds."""
    acted = correct = 0
    for r in rows:
        t = thresholds.get(r.signature, fallback)
        if r.eligible and t is not None and r.margin >= t:
            acted += 1
            correct += r.correct
    return acted, correct


def labelled_rows(records: Sequence[dict[str, Any]], signatures: Sequence[str], labels: list[metrics.Label],
                  min_mass: float) -> list[Row]:
    """The :class:`Row` of every labelled record (unlabelled records are left out)."""
    by_id = {lb.id: lb for lb in labels}
    out = []
    for rec, sig in zip(records, signatures, strict=True):
        lb = by_id.get(rec.get("id", ""))
        if lb is None:
            continue
        a = acting(rec)
        eligible = not a["tie"] and not below_mass_floor(rec["allowed_token_mass"], min_mass)
        out.append(Row(sig, float(a["margin"]), eligible, a["choice"] == lb.label, lb.group))
    if not out:
        raise InputError("--labels", None, "id", "no record of the runs has a labelled row",
                         "the labelled rows the runs scored (ids match)")
    return out


def thresholds_report(rows: list[Row], precision: float, min_accepted: int, min_mass: float,
                      folds: int = DEFAULT_FOLDS) -> dict[str, Any]:
    """The body of a thresholds file: deployed thresholds (all rows), fallback, and the out-of-fold check."""
    groups = sorted({r.group for r in rows})
    if len(groups) < 2:
        raise InputError("--labels", None, "group", f"{len(groups)} group(s) among the labelled rows",
                         "at least 2 groups for the out-of-fold check")
    k = max(2, min(folds, len(groups)))
    fold_of = group_folds([r.group for r in rows], k)
    per_fold = []
    acted = correct = 0
    for f in range(k):
        train = [r for r in rows if fold_of[r.group] != f]
        held = [r for r in rows if fold_of[r.group] == f]
        if not train or not held:
            continue
        th, fb = fit(train, precision, min_accepted)
        a, c = _judge(held, th, fb)
        acted, correct = acted + a, correct + c
        per_fold.append({"fold": f, "train_rows": len(train), "held_out_rows": len(held), "acted": a,
                         "correct": c, "precision": c / a if a else None, "acted_share": a / len(held)})
    deployed, fallback = fit(rows, precision, min_accepted)
    per_sig: dict[str, dict[str, Any]] = {}
    for sig, t in deployed.items():
        mine = [r for r in rows if r.signature == sig]
        a, c = _judge(mine, {sig: t}, None)
        per_sig[sig] = {"threshold": t, "rows": len(mine), "in_sample_acted": a,
                        "in_sample_precision": c / a if a else None}
    return {"precision": precision, "min_accepted": min_accepted, "min_allowed_token_mass": min_mass,
            "rule": "per signature, the smallest acting margin (calibrated when the records carry it) whose "
                    "accepted labelled decisions (no tie, mass >= floor, margin >= it) number at least min_accepted "
                    "and reach the precision; null: none does (never act)",
            "thresholds": per_sig,
            "fallback": {"threshold": fallback, "rows": len(rows),
                         "why": "signatures not listed here: the same rule over every signature pooled"},
            "out_of_fold": {"folds": len(per_fold), "fold_assignment": "groups sorted by sha256(group name), dealt "
                            "round-robin", "acted": acted, "correct": correct,
                            "precision": correct / acted if acted else None, "acted_share": acted / len(rows),
                            "per_fold": per_fold}}
