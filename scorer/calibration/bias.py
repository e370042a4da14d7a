"""Labelled bias calibration: per-option logit offsets (optionally a temperature) fitted by NLL.

The model is ``p = softmax(a·z - b)`` with ``a = 1/T`` (fixed at 1 unless a temperature is fitted) and
one offset ``b_o`` per option id ``o``. It is fitted by minimising the weighted mean NLL of the labels
plus ``l2 · Σ b_o²`` — a light ridge that pins the offsets' common level (a softmax cannot see it) and
shrinks offsets of rarely seen options towards 0. The objective is convex in ``(a, b)``, so a damped
Newton method (exact gradient and Hessian, Armijo backtracking; a dozen parameters at most per
entry) reaches the optimum in a few iterations without scipy.

Levels (fitted independently, applied most specific first, see :mod:`scorer.calibration.core`):
``signature`` entries for signatures with at least ``min_rows`` labelled rows, ``family`` entries per
``extra.family`` (offsets per option id, shared by the family's questions) and one ``global`` entry
per model and readout. ``balanced=True`` weighs each row by ``1 / (rows with its label)`` within
the fit, so the offsets target balanced accuracy rather than the label mix of the training rows.

Out-of-fold evaluation reuses the group-disjoint folds of :func:`scorer.calibration.temperature.group_folds`: every
row is calibrated by a fit that never saw its group.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.calibration.core import Calibration, Entry, Skipped
from scorer.calibration.temperature import T_MAX, T_MIN
from scorer.formats.signature import identity_sha256, model_identity, readout_of

DEFAULT_L2 = 0.01
DEFAULT_MIN_ROWS = 8
LEVELS = ("signature", "family", "global")
_MAX_ITERS = 200
_GRAD_TOL = 1e-10


@dataclass(frozen=True)
class OffsetFit:
    """The result of one NLL fit."""

    a: float
    """Inverse temperature (1 when not fitted)."""
    offsets: np.ndarray
    """One offset per parameter (option id)."""
    objective: float
    """Weighted mean NLL + l2 · |b|² at the optimum."""
    nll_before: float
    """Weighted mean NLL at a = 1, b = 0."""
    iterations: int
    """Newton iterations."""
    at_bound: bool
    """True when the temperature sits at the search bounds [T_MIN, T_MAX]."""


def _pad(logits: Sequence[np.ndarray], index: Sequence[np.ndarray], m: int) -> tuple[np.ndarray, np.ndarray,
                                                                                      np.ndarray]:
    width = max(len(z) for z in logits)
    n = len(logits)
    z = np.zeros((n, width))
    ix = np.full((n, width), m, dtype=np.int64)  # parameter m is a dummy slot fixed at 0
    mask = np.zeros((n, width), dtype=bool)
    for i, (row, idx) in enumerate(zip(logits, index, strict=True)):
        z[i, : len(row)] = row
        ix[i, : len(row)] = idx
        mask[i, : len(row)] = True
    return z, ix, mask


def _probs(z: np.ndarray, ix: np.ndarray, mask: np.ndarray, a: float, b: np.ndarray) -> tuple[np.ndarray,
                                                                                             np.ndarray]:
    u = np.where(mask, a * z - np.append(b, 0.0)[ix], -np.inf)
    m = u.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(u - m).sum(axis=1))
    p = np.exp(u - lse[:, None])
    return p, lse


def fit_offsets(logits: Sequence[np.ndarray], labels: Sequence[int], index: Sequence[np.ndarray], n_params: int,
                l2: float = DEFAULT_L2, temperature: bool = False, weights: Sequence[float] | None = None) -> OffsetFit:
    """Minimise ``Σ w_i NLL_i / Σ w_i + l2·|b|²`` over offsets ``b`` (and ``a = 1/T`` if ``temperature``).

    ``logits[i]`` are row i's raw option logits, ``labels[i]`` the index of its gold option among them
    and ``index[i][j]`` the parameter (option id) of its j-th option.
    """
    if not logits:
        raise ValueError("no labelled rows to fit offsets on")
    if l2 < 0 or not math.isfinite(l2):
        raise ValueError("l2 must be a finite number >= 0")
    z, ix, mask = _pad(logits, index, n_params)
    n, width = z.shape
    y = np.asarray(labels, dtype=np.int64)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    rows = np.arange(n)
    a_lo, a_hi = 1.0 / T_MAX, 1.0 / T_MIN

    def objective(a: float, b: np.ndarray) -> float:
        _, lse = _probs(z, ix, mask, a, b)
        u_y = a * z[rows, y] - np.append(b, 0.0)[ix[rows, y]]
        return float((w * (lse - u_y)).sum() + l2 * (b @ b))

    a, b = 1.0, np.zeros(n_params)
    f = nll0 = objective(a, b)
    iterations = 0
    for _ in range(_MAX_ITERS):
        iterations += 1
        p, _ = _probs(z, ix, mask, a, b)
        onehot = np.zeros_like(p)
        onehot[rows, y] = 1.0
        ps = np.zeros((n, n_params + 1))
        np.add.at(ps, (np.repeat(rows, width), ix.ravel()), p.ravel())
        pzs = np.zeros((n, n_params + 1))
        np.add.at(pzs, (np.repeat(rows, width), ix.ravel()), (p * z).ravel())
        ys = np.zeros((n, n_params + 1))
        np.add.at(ys, (np.repeat(rows, width), ix.ravel()), onehot.ravel())
        pz = (p * z).sum(axis=1)
        g_b = (w[:, None] * (ys - ps)).sum(axis=0)[:n_params] + 2 * l2 * b
        h_bb = np.diag((w[:, None] * ps).sum(axis=0)) - (ps * w[:, None]).T @ ps
        h_bb = h_bb[:n_params, :n_params] + 2 * l2 * np.eye(n_params)
        if temperature:
            g_a = float((w * (pz - z[rows, y])).sum())
            h_aa = float((w * ((p * z * z).sum(axis=1) - pz**2)).sum())
            h_ab = ((-pzs + pz[:, None] * ps) * w[:, None]).sum(axis=0)[:n_params]
            g = np.concatenate([[g_a], g_b])
            h = np.block([[np.array([[h_aa]]), h_ab[None, :]], [h_ab[:, None], h_bb]])
        else:
            g, h = g_b, h_bb
        if np.abs(g).max() < _GRAD_TOL:
            break
        try:
            step = np.linalg.solve(h + 1e-12 * np.eye(len(g)), g)
        except np.linalg.LinAlgError:
            step = g
        t = 1.0
        while True:
            na = min(max(a - t * step[0], a_lo), a_hi) if temperature else a
            nb = b - t * (step[1:] if temperature else step)
            nf = objective(na, nb)
            if nf <= f - 1e-4 * t * float(g @ step) or t < 1e-10:
                break
            t /= 2
        if nf >= f - 1e-15:  # no further decrease possible in float64
            break
        a, b, f = na, nb, nf
    at_bound = temperature and (abs(a - a_lo) < 1e-9 or abs(a - a_hi) < 1e-9)
    return OffsetFit(a, b, f, nll0, iterations, bool(at_bound))


@dataclass
class _Rows:
    """Labelled rows of one fit key."""

    logits: list[np.ndarray]
    """Raw option logits of each row."""
    labels: list[int]
    """Index of each row's gold option among its options."""
    option_ids: list[list[str]]
    """Each row's option ids, in its own order."""

    def add(self, z: np.ndarray, y: int, ids: list[str]) -> None:
        self.logits.append(z)
        self.labels.append(y)
        self.option_ids.append(ids)


def _fit_rows(rows: _Rows, l2: float, temperature: bool, balanced: bool) -> tuple[dict[str, float], float, OffsetFit]:
    keys = sorted({o for ids in rows.option_ids for o in ids})
    pos = {o: i for i, o in enumerate(keys)}
    index = [np.array([pos[o] for o in ids]) for ids in rows.option_ids]
    weights = None
    if balanced:
        gold = [ids[y] for ids, y in zip(rows.option_ids, rows.labels, strict=True)]
        count = {g: gold.count(g) for g in set(gold)}
        weights = [1.0 / count[g] for g in gold]
    fit = fit_offsets(rows.logits, rows.labels, index, len(keys), l2, temperature, weights)
    return {o: float(fit.offsets[pos[o]]) for o in keys}, 1.0 / fit.a, fit


def fit_bias(records: Sequence[dict[str, Any]], signatures: Sequence[str], labels: dict[str, str],
             min_rows: int = DEFAULT_MIN_ROWS, temperature: bool = False, l2: float = DEFAULT_L2,
             balanced: bool = False, levels: Sequence[str] = LEVELS, source: dict[str, Any] | None = None,
             meta: dict[str, Any] | None = None) -> Calibration:
    """Fit offsets on the labelled records (``labels``: record id → gold option id) at each level.

    Records without a label, or without usable logits, are ignored; a signature with fewer than
    ``min_rows`` labelled rows gets no signature entry (listed as uncalibrated when no other level
    was asked for).
    """
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad or not levels:
        raise ValueError(f"levels {bad or levels} (expected a non-empty subset of {', '.join(LEVELS)})")
    models: dict[str, dict[str, Any]] = {}
    by_sig: OrderedDict[str, tuple[str, str, _Rows]] = OrderedDict()
    by_fam: OrderedDict[tuple[str, str, str], _Rows] = OrderedDict()
    by_model: OrderedDict[tuple[str, str], _Rows] = OrderedDict()
    for rec, sig in zip(records, signatures, strict=True):
        gold = labels.get(rec.get("id", ""))  # row ids are non-empty strings: a record without one matches none
        ids = list(rec.get("option_ids") or [])
        z = np.asarray(rec.get("option_logits") or [], dtype=np.float64)
        if gold is None or gold not in ids or z.shape != (len(ids),) or not np.all(np.isfinite(z)):
            continue
        ident = model_identity(rec.get("model") or {})
        msha = identity_sha256(ident)
        models[msha] = ident
        ro = readout_of(rec)
        y = ids.index(gold)
        by_sig.setdefault(sig, (msha, ro, _Rows([], [], [])))[2].add(z, y, ids)
        fam = (rec.get("extra") or {}).get("family")
        if fam is not None:
            by_fam.setdefault((msha, ro, str(fam)), _Rows([], [], [])).add(z, y, ids)
        by_model.setdefault((msha, ro), _Rows([], [], [])).add(z, y, ids)
    if not by_model:
        raise ValueError("no labelled record with usable logits to fit on")
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    fits: list[dict[str, Any]] = []

    def add(level: str, msha: str, ro: str, rows: _Rows, sig: str | None = None, fam: str | None = None) -> None:
        offs, t, fit = _fit_rows(rows, l2, temperature, balanced)
        ids = tuple(rows.option_ids[0]) if level == "signature" else None
        entries.append(Entry(level, msha, ro, offs, t, len(rows.labels), sig, fam, ids))
        fits.append({"level": level, "key": sig or fam or "global", "rows": len(rows.labels),
                     "nll_before": fit.nll_before, "objective": fit.objective, "temperature": t,
                     "iterations": fit.iterations, "at_bound": fit.at_bound})

    for sig, (msha, ro, rows) in by_sig.items():
        if "signature" in levels and len(rows.labels) >= min_rows:
            add("signature", msha, ro, rows, sig=sig)
        else:
            skipped.append(Skipped(sig, msha, len(rows.labels), f"{len(rows.labels)} labelled rows < --min-rows "
                                                                  f"{min_rows}" if "signature" in levels else
                                   "signature level not fitted"))
    if "family" in levels:
        for (msha, ro, fam), rows in by_fam.items():
            add("family", msha, ro, rows, fam=fam)
    if "global" in levels:
        for (msha, ro), rows in by_model.items():
            add("global", msha, ro, rows)
    return Calibration("bias", "nll-offsets" + ("+temperature" if temperature else ""), models, entries, skipped,
                       source or {"kind": "in-run"},
                       {"min_rows": min_rows, "l2": l2, "temperature_fitted": temperature, "balanced": balanced,
                        "levels": list(levels), "fits": fits, **(meta or {})})
