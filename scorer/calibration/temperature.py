"""Temperature scaling (``semif calibrate temperature``): one temperature per workload, fitted by minimising NLL,
checked out of fold; and the group-disjoint folds every out-of-fold check of the calibration package uses.

The calibrated probabilities are ``softmax(option_logits / T)``. ``T > 0`` only rescales the logits,
so the argmax (and a tie) can never change; the tests hold every path to that.

NLL as a function of ``1/T`` is convex (log-sum-exp minus a linear term), hence unimodal in ``log T``:
a golden-section search over ``log T`` in ``[log T_MIN, log T_MAX]`` finds the minimum without scipy.
Out-of-fold checks use group-disjoint folds (every variant of a source scenario falls in the same
fold): groups are sorted by the sha256 of their name and dealt round-robin into K folds, so the
assignment is deterministic and the folds are balanced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.core.hashing import sha256_text
from scorer.evaluation import metrics
from scorer.evaluation.metrics import Table

T_MIN, T_MAX = 0.01, 100.0
DEFAULT_FOLDS = 5
_TOL_LOG_T = 1e-7
_INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class Fit:
    """A fitted temperature."""

    temperature: float
    """The NLL-minimising temperature."""
    nll_before: float
    """Mean NLL at T = 1 on the rows it was fitted on."""
    nll_after: float
    """Mean NLL at the fitted T on the same rows."""
    rows: int
    """Rows with logits that the fit used (missing/invalid rows carry no logits)."""
    at_bound: bool
    """True when the optimum sits at T_MIN or T_MAX (the search range, not the data, decided it)."""
    iterations: int
    """Golden-section iterations."""


def _matrix(logits: list[np.ndarray], label_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logits padded with -inf to a rectangle (rows have 2–255 options), and the label indices."""
    width = max(len(z) for z in logits)
    z = np.full((len(logits), width), -np.inf)
    for i, row in enumerate(logits):
        z[i, : len(row)] = row
    return z, np.asarray(label_idx, dtype=np.int64)


def _mean_nll(z: np.ndarray, y: np.ndarray, t: float) -> float:
    s = z / t
    m = s.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(s - m).sum(axis=1))
    return float((lse - s[np.arange(len(y)), y]).mean())


def scale(logits: np.ndarray, t: float) -> np.ndarray:
    """``softmax(logits / t)`` in float64."""
    if not t > 0 or not math.isfinite(t):
        raise ValueError(f"temperature must be a finite number > 0, got {t!r}")
    s = np.asarray(logits, dtype=np.float64) / t
    e = np.exp(s - s.max())
    return e / e.sum()


def fit_temperature(logits: list[np.ndarray], label_idx: np.ndarray | list[int]) -> Fit:
    """The temperature that minimises mean NLL of ``softmax(logits / T)`` at the labels."""
    if not logits:
        raise ValueError("no rows with logits to fit a temperature on")
    z, y = _matrix(logits, np.asarray(label_idx))
    lo, hi = math.log(T_MIN), math.log(T_MAX)
    c, d = hi - _INV_PHI * (hi - lo), lo + _INV_PHI * (hi - lo)
    fc, fd = _mean_nll(z, y, math.exp(c)), _mean_nll(z, y, math.exp(d))
    it = 0
    while hi - lo > _TOL_LOG_T:
        it += 1
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - _INV_PHI * (hi - lo)
            fc = _mean_nll(z, y, math.exp(c))
        else:
            lo, c, fc = c, d, fd
            d = lo + _INV_PHI * (hi - lo)
            fd = _mean_nll(z, y, math.exp(d))
    best = (lo + hi) / 2.0
    # The interior search cannot return the end points themselves: compare with them explicitly.
    cands = [(_mean_nll(z, y, math.exp(best)), best), (_mean_nll(z, y, T_MIN), math.log(T_MIN)),
             (_mean_nll(z, y, T_MAX), math.log(T_MAX))]
    f_best, log_t = min(cands)
    t = math.exp(log_t)
    at_bound = abs(log_t - math.log(T_MIN)) < 1e-3 or abs(log_t - math.log(T_MAX)) < 1e-3
    return Fit(t, _mean_nll(z, y, 1.0), f_best, len(logits), at_bound, it)


def fit_table(t: Table) -> Fit:
    """Fit on the rows of a table that have logits."""
    keep = [i for i, z in enumerate(t.logits) if z is not None]
    return fit_temperature([t.logits[i] for i in keep], t.label_idx[keep])  # type: ignore[misc]


def scaled_table(t: Table, temps: list[float] | float) -> Table:
    """The table with probabilities ``softmax(logits / T_i)`` (one T for all rows, or one per row)."""
    per_row = temps if isinstance(temps, list) else [temps] * t.n
    probs: list[np.ndarray | None] = []
    margins = np.zeros(t.n)
    for i, (z, temp) in enumerate(zip(t.logits, per_row, strict=True)):
        if z is None:
            probs.append(None)
            continue
        p = scale(z, temp)
        probs.append(p)
        top2 = np.sort(p)[::-1][:2]
        margins[i] = float(top2[0] - top2[1])
    return t.with_probs(probs, margins)


def group_folds(groups: list[str], k: int) -> dict[str, int]:
    """Fold of each group: groups sorted by sha256 of their name, dealt round-robin into ``k`` folds."""
    uniq = sorted(set(groups), key=lambda g: (sha256_text(g), g))
    return {g: i % k for i, g in enumerate(uniq)}


def out_of_fold(t: Table, k: int = DEFAULT_FOLDS, reps: int = metrics.BOOTSTRAP_REPS,
                seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """Fit T on K−1 group-disjoint folds, apply it to the held-out fold; metrics before/after on all rows."""
    n_groups = len({lb.group for lb in t.labels})
    k = max(2, min(k, n_groups))
    fold_of = group_folds([lb.group for lb in t.labels], k)
    row_fold = np.array([fold_of[lb.group] for lb in t.labels])
    temps = [1.0] * t.n
    folds = []
    for f in range(k):
        train = [i for i in range(t.n) if row_fold[i] != f and t.logits[i] is not None]
        held = [i for i in range(t.n) if row_fold[i] == f]
        if not train or not held:
            continue
        fit = fit_temperature([t.logits[i] for i in train], t.label_idx[train])  # type: ignore[misc]
        for i in held:
            temps[i] = fit.temperature
        folds.append({"fold": f, "train_rows": len(train), "held_out_rows": len(held),
                      "groups": sorted({t.labels[i].group for i in held}), "temperature": fit.temperature,
                      "at_bound": fit.at_bound})
    after = scaled_table(t, temps)
    before_m, after_m = metrics.bootstrap(t, reps, seed), metrics.bootstrap(after, reps, seed)
    same = bool(np.array_equal(t.correct, after.correct)) and _argmax_kept(t, after)
    return {
        "folds": k,
        "fold_assignment": "groups sorted by sha256(group name), dealt round-robin",
        "per_fold": folds,
        "before": {m: before_m[m] for m in ("ece", "nll", "brier", "accuracy")},
        "after": {m: after_m[m] for m in ("ece", "nll", "brier", "accuracy")},
        "reliability_before": metrics.reliability(t),
        "reliability_after": metrics.reliability(after),
        "argmax_unchanged": same,
    }


def _argmax_kept(a: Table, b: Table) -> bool:
    for pa, pb in zip(a.probs, b.probs, strict=True):
        if (pa is None) != (pb is None):
            return False
        if pa is not None and pb is not None and int(np.argmax(pa)) != int(np.argmax(pb)) \
                and not np.isclose(np.sort(pa)[-1], np.sort(pa)[-2], rtol=0, atol=1e-12):
            return False
    return True


def calibrated_kind(t: float, base: str) -> str:
    return f"temperature-scaled (T={t:.6g}, softmax(option_logits / T)) {base}"


def apply_temperature(record: dict[str, Any], t: float) -> dict[str, Any]:
    """A copy of ``record`` with probabilities ``softmax(option_logits / t)``, its margin updated and
    ``temperature`` recorded. The choice, the tie flag and the raw ``option_logits`` stay as they were."""
    if record.get("temperature") not in (None, 1.0):
        raise ValueError(f"record {record.get('id')!r} already carries temperature {record['temperature']}; "
                         "apply a temperature to raw records only")
    p = scale(np.asarray(record["option_logits"], dtype=np.float64), t)
    out = dict(record)
    out["probabilities"] = [float(v) for v in p]
    top2 = np.sort(p)[::-1][:2]
    out["margin"] = float(top2[0] - top2[1])
    out["temperature"] = float(t)
    out["score_kind"] = calibrated_kind(t, record.get("score_kind", ""))
    if record["choice"] is not None and record["option_ids"][int(np.argmax(p))] != record["choice"]:
        # A monotone rescaling cannot move the argmax; reaching this means the record was inconsistent.
        raise ValueError(f"record {record.get('id')!r}: choice {record['choice']!r} is not the argmax of its "
                         "option_logits")
    return out
