"""Label-free option priors per decision signature, and the calibrations built from them.

A prior ``π`` over a signature's options is estimated from the raw option distributions
``p_i = softmax(z_i)`` of its rows; calibration divides by it: ``softmax(z - ln π)``. Estimators
(the tests hold each one to a hand-computed example):

* ``mean`` — arithmetic mean in probability space, ``π = mean_i p_i`` ("batch calibration",
  Zhou et al. 2023). Robust to a few confident rows; the one that worked best on the project's sets.
* ``geometric`` — mean in log space, ``ln π = mean_i ln p_i`` (renormalised). Equivalent to centring
  every option's logit on its batch mean; exact for a constant additive logit bias, but one
  near-zero probability drags the whole prior.
* ``balanced`` — the offsets ``b`` that make the calibrated batch's mean distribution uniform,
  ``mean_i softmax(z_i - b) = 1/K`` (fixed-point iteration; ``mean`` is its first step). Forces a
  balanced predicted mix, so it assumes a balanced batch most strongly.
* ``content-free`` — ``π = mean_s softmax(z(s))`` over the same question scored with content-free
  states ``s`` (``N/A``, ``[MASK]``, ``None``; Zhao et al. 2021). Needs the model, none of the batch.

Every estimator returns offsets normalised so that ``logsumexp(offsets) = 0`` (then ``exp(offsets)``
is the prior itself). A signature with fewer than ``min_rows`` scored rows gets no entry of its own (a
prior from two rows mostly measures those two rows' content). What covers it then is the ``fallback``
(:data:`FALLBACKS`), pooled like the labelled offsets of :mod:`scorer.calibration.bias`; every pool must
hold at least ``min_rows`` usable rows:

* ``none`` — nothing: the signature stays raw (its calibrated block says ``applied: false``);
* ``family`` — the prior of all rows of its ``extra.family`` with the same ordered option ids;
* ``pooled`` — that family pool, else the ``options`` pool (every row with the same ordered option ids,
  whatever its question or family), else the ``global`` entry of the model and readout: one offset per
  option id over every row, from :func:`estimate_pooled`.

The level that applied is recorded in each record's calibrated block (``level``).

**The global pool, per option id.** Its rows have different option sets, so a prior *distribution* does not
exist; what does is each option's probability relative to a uniform guess over its row's ``K`` options,
``K · p_i(o)``. ``mean``: ``b_o = ln mean_{i∋o} K_i p_i(o)``; ``geometric``: ``b_o = mean_{i∋o}
(ln p_i(o) − mean_j ln p_i(j))``; ``balanced``: the ``b`` that make ``mean_{i∋o} K_i softmax(z_i − b)(o) = 1``
for every option. Over rows of one option set each is the signature estimator plus a constant (the same
calibrated probabilities: tested). ``b_o = 0`` means "no bias", so an option id seen in fewer than
``min_rows`` rows gets no offset (0: its block lists it in ``unseen_option_ids``), never a noisy one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scorer.calibration.core import Calibration, Entry, Skipped
from scorer.core.errors import InputError
from scorer.formats.rows import Decision
from scorer.formats.signature import identity_sha256, model_identity, readout_of, signature_of
from scorer.prompting.prompt import PROMPT_VERSION

ESTIMATORS = ("mean", "geometric", "balanced", "content-free")
BATCH_ESTIMATORS = ("mean", "geometric", "balanced")
FALLBACKS = ("none", "family", "pooled")
"""What covers a signature with too few rows of its own (module docstring)."""
DEFAULT_FALLBACK = "none"
DEFAULT_MIN_ROWS = 8
CONTENT_FREE_STATES = ("N/A", "[MASK]", "None")
RowScorer = Callable[[list[Any]], Iterable[dict[str, Any]]]
"""Scores decision rows fresh and yields their records in order (:func:`scorer.scoring.modes.fresh_scorer`)."""
_BALANCE_TOL = 1e-12
_BALANCE_ITERS = 10_000


def log_softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax of a 2-D array (float64)."""
    z = np.asarray(z, dtype=np.float64)
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def _normalise(log_prior: np.ndarray) -> np.ndarray:
    m = log_prior.max()
    return log_prior - (m + np.log(np.exp(log_prior - m).sum()))


def estimate(logits: np.ndarray, estimator: str) -> np.ndarray:
    """Offsets ``ln π`` (normalised) of one signature from its rows' raw option logits (``n × K``)."""
    lp = log_softmax(np.atleast_2d(logits))
    if lp.shape[0] == 0:
        raise ValueError("no rows to estimate a prior from")
    if estimator in ("mean", "content-free"):
        m = lp.max(axis=0)
        return _normalise(m + np.log(np.exp(lp - m).mean(axis=0)))
    if estimator == "geometric":
        return _normalise(lp.mean(axis=0))
    if estimator == "balanced":
        k = lp.shape[1]
        b = np.zeros(k)
        for _ in range(_BALANCE_ITERS):
            q = np.exp(log_softmax(lp - b)).mean(axis=0)
            step = np.log(q * k)
            b = b + step
            if np.abs(step).max() < _BALANCE_TOL:
                break
        return _normalise(b)
    raise ValueError(f"unknown estimator {estimator!r} (expected one of {', '.join(ESTIMATORS)})")


def estimate_pooled(logits: Sequence[np.ndarray], option_ids: Sequence[Sequence[str]], estimator: str,
                    min_rows: int = 1) -> dict[str, float]:
    """Offsets per option id over rows with different option sets (the global pool, module docstring):
    ``b_o`` relative to a uniform guess, so 0 is "no bias". Option ids in fewer than ``min_rows`` rows are
    left out (they get offset 0 where applied)."""
    if not logits:
        raise ValueError("no rows to estimate a prior from")
    keys = sorted({o for ids in option_ids for o in ids})
    pos = {o: i for i, o in enumerate(keys)}
    index = [np.array([pos[o] for o in ids], dtype=np.int64) for ids in option_ids]
    lps = [log_softmax(np.atleast_2d(z))[0] for z in logits]
    seen = np.zeros(len(keys))
    for ix in index:
        seen[ix] += 1

    def mean_per_option(values: Sequence[np.ndarray]) -> np.ndarray:
        tot = np.zeros(len(keys))
        for ix, v in zip(index, values, strict=True):
            tot[ix] += v
        return tot / seen

    if estimator == "mean":
        b = np.log(mean_per_option([np.exp(lp) * len(lp) for lp in lps]))
    elif estimator == "geometric":
        b = mean_per_option([lp - lp.mean() for lp in lps])
    elif estimator == "balanced":
        b = np.zeros(len(keys))
        for _ in range(_BALANCE_ITERS):
            q = [np.exp(log_softmax((lp - b[ix])[None, :])[0]) * len(lp) for lp, ix in zip(lps, index, strict=True)]
            step = np.log(mean_per_option(q))
            b = b + step
            if np.abs(step).max() < _BALANCE_TOL:
                break
    else:
        raise ValueError(f"estimator {estimator!r} does not pool over option sets (expected one of "
                         f"{', '.join(BATCH_ESTIMATORS)})")
    return {o: float(b[pos[o]]) for o in keys if seen[pos[o]] >= min_rows}


@dataclass
class _Group:
    """Rows sharing one lookup key (a signature, or a family with its option ids)."""

    model: str
    """sha256 of the rows' model identity."""
    readout: str
    """``plain`` or ``permute-K``."""
    option_ids: tuple[str, ...]
    """The ordered option ids every row of the group has."""
    family: str | None
    """The rows' ``extra.family`` (``None`` when the input gave none)."""
    logits: list[np.ndarray]
    """Raw option logits of each usable row."""
    signature: str | None = None
    """The decision signature (signature groups only)."""
    option_sets: list[tuple[str, ...]] = field(default_factory=list)
    """Each usable row's option ids (kept for the global pool, whose rows differ in them)."""


def _usable(rec: dict[str, Any]) -> np.ndarray | None:
    z = np.asarray(rec.get("option_logits") or [], dtype=np.float64)
    if z.ndim != 1 or z.size != len(rec.get("option_ids") or []) or z.size < 2 or not np.all(np.isfinite(z)):
        return None
    return z


def _entry(level: str, g: _Group, offsets: np.ndarray, question: str | None = None) -> Entry:
    return Entry(level, g.model, g.readout, {o: float(b) for o, b in zip(g.option_ids, offsets, strict=True)}, 1.0,
                 len(g.logits), g.signature, g.family if level == "family" else None, g.option_ids, question,
                 tuple(float(v) for v in np.exp(offsets)))


def _global_entry(g: _Group, estimator: str, min_rows: int) -> Entry | None:
    """The global pool's entry (offsets per option id, any option set), or None when no option id has
    ``min_rows`` rows."""
    offsets = estimate_pooled(g.logits, g.option_sets, estimator, min_rows)
    return Entry("global", g.model, g.readout, offsets, 1.0, len(g.logits)) if offsets else None


def fit_prior(records: Sequence[dict[str, Any]], signatures: Sequence[str], estimator: str = "mean",
              min_rows: int = DEFAULT_MIN_ROWS, fallback: str = DEFAULT_FALLBACK, source: dict[str, Any] | None = None,
              meta: dict[str, Any] | None = None, questions: dict[str, str] | None = None) -> Calibration:
    """A prior calibration from scored records (label-free): one entry per signature with at least
    ``min_rows`` usable rows; the others are listed as uncalibrated, and covered by the pools of
    ``fallback`` (module docstring) that hold ``min_rows`` rows. ``questions`` (signature → question text)
    only annotates the entries."""
    if estimator not in BATCH_ESTIMATORS:
        raise ValueError(f"estimator {estimator!r} does not estimate from records (expected one of "
                         f"{', '.join(BATCH_ESTIMATORS)})")
    if fallback not in FALLBACKS:
        raise ValueError(f"unknown fallback {fallback!r} (expected one of {', '.join(FALLBACKS)})")
    if min_rows < 1:
        raise ValueError("min_rows must be >= 1")
    models: dict[str, dict[str, Any]] = {}
    sigs: OrderedDict[str, _Group] = OrderedDict()
    fams: OrderedDict[tuple[Any, ...], _Group] = OrderedDict()
    opts: OrderedDict[tuple[Any, ...], _Group] = OrderedDict()
    glob: OrderedDict[tuple[str, str], _Group] = OrderedDict()
    for rec, sig in zip(records, signatures, strict=True):
        ident = model_identity(rec.get("model") or {})
        msha = identity_sha256(ident)
        models[msha] = ident
        z = _usable(rec)
        ids = tuple(rec["option_ids"])
        ro = readout_of(rec)
        fam = (rec.get("extra") or {}).get("family")
        g = sigs.setdefault(sig, _Group(msha, ro, ids, None if fam is None else str(fam), [], sig))
        if z is None:
            continue
        g.logits.append(z)
        if fam is not None:
            fams.setdefault((msha, ro, str(fam), ids), _Group(msha, ro, ids, str(fam), [])).logits.append(z)
        opts.setdefault((msha, ro, ids), _Group(msha, ro, ids, None, [])).logits.append(z)
        pool = glob.setdefault((msha, ro), _Group(msha, ro, (), None, []))
        pool.logits.append(z)
        pool.option_sets.append(ids)
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    for sig, g in sigs.items():
        if len(g.logits) >= min_rows:
            entries.append(_entry("signature", g, estimate(np.stack(g.logits), estimator),
                                  (questions or {}).get(sig)))
        else:
            skipped.append(Skipped(sig, g.model, len(g.logits), f"{len(g.logits)} rows < --min-rows {min_rows}"))
    if fallback != "none" and skipped:
        small = [sigs[s.signature] for s in skipped]
        # Only the pools a small signature would fall back to are fitted (and only when large enough): a file
        # holds what it applies, nothing more. A pool is needed when no more specific one covers the signature.
        need_fam = {(g.model, g.readout, g.family, g.option_ids) for g in small}
        fam_ok = {k for k in need_fam if k in fams and len(fams[k].logits) >= min_rows}
        entries += [_entry("family", fams[k], estimate(np.stack(fams[k].logits), estimator)) for k in fams
                    if k in fam_ok]
        if fallback == "pooled":
            rest = [g for g in small if (g.model, g.readout, g.family, g.option_ids) not in fam_ok]
            need_opt = {(g.model, g.readout, g.option_ids) for g in rest}
            opt_ok = {k for k in need_opt if k in opts and len(opts[k].logits) >= min_rows}
            entries += [_entry("options", opts[k], estimate(np.stack(opts[k].logits), estimator)) for k in opts
                        if k in opt_ok]
            need_glob = [g for g in rest if (g.model, g.readout, g.option_ids) not in opt_ok]
            for k, pool in glob.items():
                wanting = [g for g in need_glob if (g.model, g.readout) == k]
                e = _global_entry(pool, estimator, min_rows) if wanting and len(pool.logits) >= min_rows else None
                # kept only when it covers one of them: it knows at least one of its options (Calibration.lookup)
                if e is not None and any(o in e.offsets for g in wanting for o in g.option_ids):
                    entries.append(e)
    return Calibration("prior", estimator, models, entries, skipped, source or {"kind": "in-run"},
                       {"min_rows": min_rows, "fallback": fallback, **(meta or {})})


def content_free_prior(info: dict[str, Any], decisions: Sequence[Any], records: Sequence[dict[str, Any]],
                       signatures: Sequence[str], score: RowScorer, states: Sequence[str] = CONTENT_FREE_STATES,
                       source: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> Calibration:
    """Content-free priors: every signature of ``records`` scored once per content-free state by ``score``
    (the model whose ``model_info()`` is ``info``, direct mode, plain readout:
    :func:`scorer.scoring.modes.fresh_scorer`), ``π`` = the mean of those distributions.

    ``decisions`` are the input rows the records came from (records carry no question text). The
    model must be the records' model: each rebuilt decision's signature is recomputed with ``info``
    and must equal the records' one, else :class:`InputError` (before anything is scored).
    """

    by_id = {d.id: d for d in decisions}
    msha = identity_sha256(model_identity(info))
    models = {msha: model_identity(info)}
    reps: OrderedDict[str, tuple[Any, dict[str, Any]]] = OrderedDict()
    for rec, sig in zip(records, signatures, strict=True):
        if sig in reps:
            continue
        d = by_id.get(rec.get("id"))
        if d is None:
            raise InputError("--input", None, "id", f"record {rec.get('id')!r} has no row", "the rows the run scored")
        if readout_of(rec) != "plain":
            raise InputError(str(rec.get("id")), None, "permute", f"readout {readout_of(rec)}",
                             "plain records for --estimator content-free")
        mine = signature_of(d, PROMPT_VERSION, info, "plain")
        if mine != sig:
            raise InputError("--model", None, "signature",
                             f"the loaded model gives row {d.id!r} signature {mine[:12]}…, the records say {sig[:12]}…",
                             "the very model, backend and dtype (and prompt version) that scored the records")
        reps[sig] = (d, rec)
    cf_rows: list[Decision] = []
    owner: list[str] = []
    for sig, (d, _) in reps.items():
        for j, s in enumerate(states):
            cf_rows.append(Decision(f"{d.id}#content-free-{j}", s, d.question, d.options, {}, f"content-free:{j}"))
            owner.append(sig)
    logits: dict[str, list[np.ndarray]] = {}
    for sig, rec in zip(owner, score(cf_rows), strict=True):
        logits.setdefault(sig, []).append(np.asarray(rec["option_logits"], dtype=np.float64))
    entries = []
    for sig, (d, _) in reps.items():
        g = _Group(msha, "plain", tuple(d.option_ids), None, logits[sig], sig)
        entries.append(_entry("signature", g, estimate(np.stack(g.logits), "content-free"), d.question))
    return Calibration("prior", "content-free", models, entries, [], source or {"kind": "in-run"},
                       {"content_free_states": list(states), "forward_passes": len(cf_rows), **(meta or {})})
