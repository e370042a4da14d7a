"""Decision-quality metrics over labelled rows (pure numpy): accuracy, balanced accuracy, macro-F1, NLL,
Brier, top-label ECE with a reliability table, risk–coverage, group-bootstrap intervals, paired comparison.

Every labelled row counts. A row whose record is missing or invalid is scored as a *confidently wrong*
answer: its choice is wrong, its gold option gets probability :data:`FLOOR_P` (NLL ≈ 13.8), its Brier
score is 2 (the worst possible) and its top-label confidence is 1. A tie (``choice`` null) counts as
wrong for accuracy, but its probabilities are real and are used for NLL, Brier and ECE. How many rows
were missing, invalid or tied is always reported next to the numbers.

Definitions (the tests hold each one to hand-computed examples):

* accuracy: share of rows whose choice equals the label.
* balanced accuracy: mean per-class recall over the classes present as labels; ``mean per-family
  balanced accuracy`` computes it within each family, then averages the families (each family weighs
  the same, whatever its size).
* macro-F1: within each family, the unweighted mean of per-class F1 over the classes present as labels
  (equal to scikit-learn's ``f1_score(y, pred, labels=sorted(set(y)), average="macro")`` on that
  family's rows), then averaged over families like balanced accuracy (pooled over all rows, the 30
  single-row routing classes would swamp the rest). A prediction of an option id that is never a label
  in its family, and a missing prediction, count only as a miss of the true class.
* NLL: mean of ``-ln p(label)``, with ``p`` clamped below at :data:`FLOOR_P`.
* Brier: mean over rows of ``sum_k (p_k - y_k)^2`` (multi-class; 0 best, 2 worst).
* ECE: top-label, :data:`ECE_BINS` equal-width bins ``[0, .1], (.1, .2], …, (.9, 1]`` on the top
  probability; ``sum_b n_b / N * |accuracy_b - confidence_b|``.
* risk–coverage: keep the ``ceil(c * N)`` most confident rows (stable sort, input order breaks equal
  confidences) and report their accuracy and risk (1 - accuracy) at each coverage ``c``.
* group bootstrap: resample the *groups* (variants of one source stay together) with replacement,
  :data:`BOOTSTRAP_REPS` times with the fixed seed :data:`BOOTSTRAP_SEED`; 95 % percentile intervals.
* ROC AUC per family (ranking quality, blind to any threshold or prior): for each class ``c`` present
  as a label in the family, the rows that offer option ``c`` are ranked by ``p(c)`` against the
  indicator ``label == c`` (Mann–Whitney, ties count one half); the family's AUC is the mean over
  classes with both positives and negatives (for a binary family with one pair of option ids both
  classes give the same number, so it is the plain binary AUC). Rows without probabilities are left
  out and counted. Intervals: the same group bootstrap; a replicate where no class has both
  positives and negatives is dropped and the number of valid replicates reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.core.errors import InputError
from scorer.formats.rows import load_decisions

FLOOR_P = 1e-6
ECE_BINS = 10
COVERAGES = (0.25, 0.5, 0.75, 1.0)
BOOTSTRAP_SEED = 20261129
BOOTSTRAP_REPS = 1000
CI_LEVEL = 0.95
_SUM_TOL = 1e-4
# The headline metrics that get a bootstrap interval, in report order.
HEADLINE = ("accuracy", "balanced_accuracy", "macro_f1", "nll", "brier", "ece")
LOWER_IS_BETTER = frozenset({"nll", "brier", "ece"})


@dataclass(frozen=True)
class Label:
    """The gold answer of one row, and what ties it to other rows."""

    id: str
    """Row id (records are matched to labels by it)."""
    label: str
    """Gold option id."""
    family: str
    """Workload family (``evidence``, ``rule``, …); ``all`` when the input gives none."""
    group: str
    """Source scenario the row is a variant of (the bootstrap resamples these); the row id when none."""
    option_ids: tuple[str, ...]
    """The row's declared option ids, in the input's order (probabilities are aligned to this order)."""


@dataclass
class Table:
    """Labelled rows aligned with one run's records; every array has one entry per labelled row."""

    labels: list[Label]
    """The labelled rows, in label-file order."""
    status: list[str]
    """``ok``, ``tie`` (choice null), ``missing`` (no record) or ``invalid: why``."""
    choice: list[str | None]
    """Predicted option id; ``None`` for a tie, a missing or an invalid record."""
    probs: list[np.ndarray | None]
    """Option probabilities aligned to ``Label.option_ids`` (``None`` when missing/invalid)."""
    logits: list[np.ndarray | None]
    """Option logits aligned the same way (``None`` when missing/invalid)."""
    seconds: np.ndarray
    """``timing.total_s`` of each record (0 when missing)."""
    margin: np.ndarray
    """Top minus second probability of each record (0 when missing/invalid)."""

    def __post_init__(self) -> None:
        n = len(self.labels)
        self.label_idx = np.array([lb.option_ids.index(lb.label) for lb in self.labels], dtype=np.int64)
        self.correct = np.array([c is not None and c == lb.label for c, lb in zip(self.choice, self.labels,
                                                                                     strict=True)], dtype=bool)
        p_label = np.full(n, FLOOR_P)
        conf = np.ones(n)
        brier = np.full(n, 2.0)
        for i, p in enumerate(self.probs):
            if p is None:
                continue
            y = np.zeros(len(p))
            y[self.label_idx[i]] = 1.0
            p_label[i] = max(float(p[self.label_idx[i]]), FLOOR_P)
            conf[i] = float(p.max())
            brier[i] = float(((p - y) ** 2).sum())
        self.p_label, self.conf, self.brier = p_label, conf, brier

    @property
    def n(self) -> int:
        return len(self.labels)

    def with_probs(self, probs: list[np.ndarray | None], margins: np.ndarray) -> Table:
        """The same rows with new probabilities (e.g. temperature-scaled); choices are kept."""
        return Table(self.labels, self.status, self.choice, probs, self.logits, self.seconds, margins)

    def counts(self) -> dict[str, int]:
        n_missing = sum(s == "missing" for s in self.status)
        n_invalid = sum(s.startswith("invalid") for s in self.status)
        return {"rows": self.n, "scored": self.n - n_missing - n_invalid, "missing": n_missing,
                "invalid": n_invalid, "ties": sum(s == "tie" for s in self.status)}


# --- labels and alignment -----------------------------------------------------------------------------------------
def labels_from_decisions(path: str) -> list[Label]:
    """Labels of a decision input file (``label``, ``family``, ``group`` fields); unlabelled rows skipped."""
    out: list[Label] = []
    for d in load_decisions(path):
        if "label" not in d.extra:
            continue
        lab = d.extra["label"]
        if lab not in d.option_ids:
            raise InputError(path, int(d.source.rsplit(":", 1)[1]), "label",
                             f"{lab!r} is not one of the row's option ids {d.option_ids}", "a declared option id")
        out.append(Label(d.id, lab, str(d.extra.get("family", "all")), str(d.extra.get("group", d.id)),
                         tuple(d.option_ids)))
    if not out:
        raise InputError(path, None, "label", "no row carries a label", "rows with a `label` field")
    return out


def labels_from_records(records: list[dict[str, Any]], name: str) -> list[Label]:
    """Labels carried in records' ``extra`` (when no ``--labels`` file is given)."""
    out: list[Label] = []
    for i, rec in enumerate(records, start=1):
        extra = rec.get("extra") or {}
        if "label" not in extra:
            continue
        ids = tuple(rec["option_ids"])
        if extra["label"] not in ids:
            raise InputError(name, i, "extra.label", f"{extra['label']!r} is not one of {list(ids)}",
                             "a declared option id")
        out.append(Label(rec["id"], extra["label"], str(extra.get("family", "all")),
                         str(extra.get("group", rec["id"])), ids))
    if not out:
        raise InputError(name, None, "extra.label", "no record carries a label",
                         "records whose input rows had `label` (or pass --labels FILE)")
    return out


def _check_record(rec: dict[str, Any], lab: Label) -> tuple[str, np.ndarray | None, np.ndarray | None]:
    """Status and id-aligned probabilities/logits of one record against its label row."""
    ids = rec.get("option_ids")
    if not isinstance(ids, list) or sorted(ids) != sorted(lab.option_ids) or len(set(ids)) != len(ids):
        return f"invalid: option ids {ids} differ from the labelled row's {list(lab.option_ids)}", None, None
    try:
        p = np.asarray(rec.get("probabilities"), dtype=np.float64)
        z = np.asarray(rec.get("option_logits"), dtype=np.float64)
    except (TypeError, ValueError):
        return "invalid: probabilities or option_logits are not numbers", None, None
    if p.shape != (len(ids),) or z.shape != (len(ids),):
        return "invalid: probabilities/option_logits do not have one value per option", None, None
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(z))):
        return "invalid: non-finite probabilities or logits", None, None
    if p.min() < 0 or p.max() > 1 or abs(p.sum() - 1.0) > _SUM_TOL:
        return f"invalid: probabilities sum to {p.sum():.6f}", None, None
    choice = rec.get("choice")
    if choice is not None and choice not in ids:
        return f"invalid: choice {choice!r} is not an option id", None, None
    order = [ids.index(o) for o in lab.option_ids]
    return ("tie" if choice is None else "ok"), p[order], z[order]


def align(labels: list[Label], records: Iterable[dict[str, Any]], name: str = "records") -> tuple[Table, int]:
    """Match records to labelled rows by id. Returns the table and the number of records without a label.

    A duplicate record id is an input error (which one would count?); a labelled row without a
    record is ``missing``; a record whose options do not match its row is ``invalid``.
    """
    by_id: dict[Any, dict[str, Any]] = {}  # keyed by whatever the record says (a missing id is None)
    for i, rec in enumerate(records, start=1):
        rid = rec.get("id")
        if rid in by_id:
            raise InputError(name, i, "id", f"duplicate record id {rid!r}", "one record per row id")
        by_id[rid] = rec
    wanted = {lb.id for lb in labels}
    status: list[str] = []
    choice: list[str | None] = []
    probs: list[np.ndarray | None] = []
    logits: list[np.ndarray | None] = []
    seconds = np.zeros(len(labels))
    margin = np.zeros(len(labels))
    for i, lab in enumerate(labels):
        found = by_id.get(lab.id)
        if found is None:
            st, p, z = "missing", None, None
        else:
            st, p, z = _check_record(found, lab)
            seconds[i] = float((found.get("timing") or {}).get("total_s", 0.0) or 0.0)
        status.append(st)
        ok = st in ("ok", "tie")
        choice.append(found["choice"] if ok and found is not None else None)
        probs.append(p)
        logits.append(z)
        if ok and p is not None:
            top2 = np.sort(p)[::-1][:2]
            margin[i] = float(top2[0] - top2[1])
    unlabelled = sum(1 for rid in by_id if rid not in wanted)
    return Table(labels, status, choice, probs, logits, seconds, margin), unlabelled


# --- point metrics on index arrays (the bootstrap calls these on resampled indices) -------------------------------
class _Codes:
    """Integer codes of labels, predictions and families, so resampled metrics are vectorised."""

    def __init__(self, t: Table):
        classes = sorted({lb.label for lb in t.labels})
        self.classes = classes
        cidx = {c: i for i, c in enumerate(classes)}
        fams = sorted({lb.family for lb in t.labels})
        self.families = fams
        fidx = {f: i for i, f in enumerate(fams)}
        self.y = np.array([cidx[lb.label] for lb in t.labels], dtype=np.int64)
        self.pred = np.array([cidx.get(c, -1) if c is not None else -1 for c in t.choice], dtype=np.int64)
        self.fam = np.array([fidx[lb.family] for lb in t.labels], dtype=np.int64)
        self.n_classes, self.n_fams = len(classes), len(fams)


def _accuracy(t: Table, idx: np.ndarray) -> float:
    return float(t.correct[idx].mean())


def _balanced(correct: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    support = np.bincount(y, minlength=n_classes)
    hits = np.bincount(y, weights=correct.astype(np.float64), minlength=n_classes)
    present = support > 0
    return float((hits[present] / support[present]).mean())


def _family_balanced(t: Table, c: _Codes, idx: np.ndarray) -> float:
    key = c.fam[idx] * c.n_classes + c.y[idx]
    size = c.n_fams * c.n_classes
    support = np.bincount(key, minlength=size).reshape(c.n_fams, c.n_classes)
    hits = np.bincount(key, weights=t.correct[idx].astype(np.float64), minlength=size).reshape(c.n_fams,
                                                                                              c.n_classes)
    per_fam = []
    for f in range(c.n_fams):
        present = support[f] > 0
        if present.any():
            per_fam.append((hits[f][present] / support[f][present]).mean())
    return float(np.mean(per_fam))


def _macro_f1(c: _Codes, idx: np.ndarray) -> float:
    # Classes are (family, option id): F1 per class, unweighted mean within each family, then over families.
    k = c.n_classes
    size = c.n_fams * k
    fam, y, pred = c.fam[idx], c.y[idx], c.pred[idx]
    yk = fam * k + y
    tp = np.bincount(yk[pred == y], minlength=size).astype(np.float64)
    support = np.bincount(yk, minlength=size).astype(np.float64)
    predicted = np.bincount((fam * k + pred)[pred >= 0], minlength=size).astype(np.float64)
    fn, fp = support - tp, predicted - tp
    per_fam = []
    for f in range(c.n_fams):
        sl = slice(f * k, (f + 1) * k)
        present = support[sl] > 0
        if present.any():
            f1 = 2 * tp[sl][present] / (2 * tp[sl][present] + fp[sl][present] + fn[sl][present])
            per_fam.append(f1.mean())
    return float(np.mean(per_fam))


def _ece(conf: np.ndarray, correct: np.ndarray) -> float:
    bins = _bin_of(conf)
    n = len(conf)
    cnt = np.bincount(bins, minlength=ECE_BINS)
    s_conf = np.bincount(bins, weights=conf, minlength=ECE_BINS)
    s_acc = np.bincount(bins, weights=correct.astype(np.float64), minlength=ECE_BINS)
    used = cnt > 0
    return float((np.abs(s_acc[used] - s_conf[used])).sum() / n)


def _bin_of(conf: np.ndarray) -> np.ndarray:
    # Bins are (lo, hi] with the first one closed at 0; edges as exact tenths.
    inner = np.arange(1, ECE_BINS) / ECE_BINS
    return np.searchsorted(inner, conf, side="left")


def _point(t: Table, c: _Codes, idx: np.ndarray) -> dict[str, float]:
    return {
        "accuracy": _accuracy(t, idx),
        "balanced_accuracy": _family_balanced(t, c, idx),
        "macro_f1": _macro_f1(c, idx),
        "nll": float(-np.log(t.p_label[idx]).mean()),
        "brier": float(t.brier[idx].mean()),
        "ece": _ece(t.conf[idx], t.correct[idx]),
    }


# --- public metric functions --------------------------------------------------------------------------------------
def accuracy(t: Table) -> float:
    return _accuracy(t, np.arange(t.n))


def balanced_accuracy(t: Table) -> float:
    """Mean per-class recall over all rows (ignoring families)."""
    c = _Codes(t)
    return _balanced(t.correct, c.y, c.n_classes)


def family_balanced_accuracy(t: Table) -> float:
    """Balanced accuracy within each family, averaged over families."""
    return _family_balanced(t, _Codes(t), np.arange(t.n))


def macro_f1(t: Table) -> float:
    return _macro_f1(_Codes(t), np.arange(t.n))


def nll(t: Table) -> float:
    return float(-np.log(t.p_label).mean())


def brier(t: Table) -> float:
    return float(t.brier.mean())


def ece(t: Table) -> float:
    return _ece(t.conf, t.correct)


def reliability(t: Table) -> list[dict[str, Any]]:
    """One row per confidence bin: range, count, mean confidence, accuracy, gap (accuracy − confidence)."""
    bins = _bin_of(t.conf)
    out = []
    for b in range(ECE_BINS):
        m = bins == b
        n = int(m.sum())
        row: dict[str, Any] = {"lo": b / ECE_BINS, "hi": (b + 1) / ECE_BINS, "n": n, "confidence": None,
                               "accuracy": None, "gap": None}
        if n:
            conf, acc = float(t.conf[m].mean()), float(t.correct[m].mean())
            row.update(confidence=conf, accuracy=acc, gap=acc - conf)
        out.append(row)
    return out


def risk_coverage(t: Table, coverages: tuple[float, ...] = COVERAGES) -> list[dict[str, Any]]:
    """Accuracy of the most confident ``ceil(c * N)`` rows at each coverage ``c``."""
    order = np.argsort(-t.conf, kind="stable")
    out = []
    for cov in coverages:
        k = max(1, math.ceil(cov * t.n - 1e-9))
        kept = order[:k]
        acc = float(t.correct[kept].mean())
        out.append({"coverage": cov, "rows": k, "min_confidence": float(t.conf[order[k - 1]]), "accuracy": acc,
                    "risk": 1.0 - acc})
    return out


def chance_accuracy(t: Table) -> float:
    """Expected accuracy of a uniform random choice among each row's options."""
    return float(np.mean([1.0 / len(lb.option_ids) for lb in t.labels]))


def point_metrics(t: Table) -> dict[str, float]:
    return _point(t, _Codes(t), np.arange(t.n))


# --- bootstrap ----------------------------------------------------------------------------------------------------
def _group_index(labels: list[Label]) -> list[np.ndarray]:
    groups: dict[str, list[int]] = {}
    for i, lb in enumerate(labels):
        groups.setdefault(lb.group, []).append(i)
    return [np.array(v, dtype=np.int64) for v in groups.values()]


def bootstrap_draws(labels: list[Label], reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> list[np.ndarray]:
    """Row indices of each bootstrap replicate: groups drawn with replacement (fixed seed)."""
    groups = _group_index(labels)
    rng = np.random.default_rng(seed)
    return [np.concatenate([groups[g] for g in rng.integers(0, len(groups), len(groups))]) for _ in range(reps)]


def _interval(values: np.ndarray) -> tuple[float, float]:
    a = (1 - CI_LEVEL) / 2 * 100
    lo, hi = np.percentile(values, [a, 100 - a])
    return float(lo), float(hi)


def bootstrap(t: Table, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> dict[str, dict[str, float]]:
    """Point value and group-bootstrap 95 % percentile interval of each headline metric."""
    c = _Codes(t)
    point = _point(t, c, np.arange(t.n))
    samples = {k: np.empty(reps) for k in HEADLINE}
    for r, idx in enumerate(bootstrap_draws(t.labels, reps, seed)):
        for k, v in _point(t, c, idx).items():
            samples[k][r] = v
    out = {}
    for k in HEADLINE:
        lo, hi = _interval(samples[k])
        out[k] = {"value": point[k], "ci_lo": lo, "ci_hi": hi}
    return out


# --- per family ---------------------------------------------------------------------------------------------------
def subset(t: Table, keep: np.ndarray) -> Table:
    """The rows of ``t`` at the indices ``keep``."""
    ks = [int(i) for i in keep]
    return Table([t.labels[i] for i in ks], [t.status[i] for i in ks], [t.choice[i] for i in ks],
                 [t.probs[i] for i in ks], [t.logits[i] for i in ks], t.seconds[keep], t.margin[keep])


def per_family(t: Table) -> list[dict[str, Any]]:
    """Headline metrics (no intervals) and chance accuracy for each family."""
    fams = sorted({lb.family for lb in t.labels})
    out = []
    for f in fams:
        s = subset(t, np.array([i for i, lb in enumerate(t.labels) if lb.family == f], dtype=np.int64))
        out.append({"family": f, "rows": s.n, "groups": len({lb.group for lb in s.labels}),
                    "chance_accuracy": chance_accuracy(s), **point_metrics(s), **s.counts()})
    return out


# --- ranking: ROC AUC per family ----------------------------------------------------------------------------------
def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float | None:
    """Mann–Whitney ROC AUC (ties count 1/2); ``None`` without both positives and negatives."""
    s = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    # average ranks over runs of equal scores
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _family_auc_parts(t: Table, family: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per class of ``family``: (row indices, p(class), label == class) over rows that offer the class."""
    rows = [i for i, lb in enumerate(t.labels) if lb.family == family and t.probs[i] is not None]
    classes = sorted({t.labels[i].label for i in rows})
    parts = []
    for c in classes:
        idx = np.array([i for i in rows if c in t.labels[i].option_ids], dtype=np.int64)
        score = np.array([t.probs[i][t.labels[i].option_ids.index(c)] for i in idx])
        parts.append((idx, score, np.array([t.labels[i].label == c for i in idx], dtype=bool)))
    return parts


def _macro_auc(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], draw: np.ndarray | None) -> float | None:
    vals = []
    for idx, score, pos in parts:
        if draw is None:
            a = roc_auc(score, pos)
        else:
            # multiplicity of each row in the bootstrap draw
            mult = draw[idx]
            keep = mult > 0
            a = roc_auc(np.repeat(score[keep], mult[keep]), np.repeat(pos[keep], mult[keep]))
        if a is not None:
            vals.append(a)
    return float(np.mean(vals)) if vals else None


def auc_per_family(t: Table, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> list[dict[str, Any]]:
    """ROC AUC of each family (module docstring) with a group-bootstrap 95 % interval."""
    fams = sorted({lb.family for lb in t.labels})
    parts = {f: _family_auc_parts(t, f) for f in fams}
    samples: dict[str, list[float]] = {f: [] for f in fams}
    for idx in bootstrap_draws(t.labels, reps, seed):
        draw = np.bincount(idx, minlength=t.n)
        for f in fams:
            a = _macro_auc(parts[f], draw)
            if a is not None:
                samples[f].append(a)
    out = []
    for f in fams:
        fam_rows = [i for i, lb in enumerate(t.labels) if lb.family == f]
        binary = all(len(t.labels[i].option_ids) == 2 for i in fam_rows)
        point = _macro_auc(parts[f], None)
        lo, hi = _interval(np.array(samples[f])) if samples[f] else (None, None)
        out.append({"family": f, "kind": "binary" if binary else "one-vs-rest (macro over classes)",
                    "auc": point, "ci_lo": lo, "ci_hi": hi, "valid_replicates": len(samples[f]),
                    "classes": len(parts[f]), "rows": len(fam_rows),
                    "rows_without_probabilities": sum(1 for i in fam_rows if t.probs[i] is None)})
    return out


def mean_auc(per_family: list[dict[str, Any]]) -> float | None:
    """Mean of the defined per-family AUCs."""
    vals = [f["auc"] for f in per_family if f["auc"] is not None]
    return float(np.mean(vals)) if vals else None


# --- paired comparison --------------------------------------------------------------------------------------------
def _mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of the discordant pairs at 1/2."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def paired(a: Table, b: Table, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Compare run B with run A on the very same labelled rows: deltas (B − A) with paired
    group-bootstrap intervals, flips of the choice, and the probability shift aligned by option id."""
    if [lb.id for lb in a.labels] != [lb.id for lb in b.labels]:
        raise ValueError("paired comparison needs both runs aligned to the same labelled rows")
    ca, cb = _Codes(a), _Codes(b)
    everything = np.arange(a.n)
    pa, pb = _point(a, ca, everything), _point(b, cb, everything)
    samples = {k: np.empty(reps) for k in HEADLINE}
    for r, idx in enumerate(bootstrap_draws(a.labels, reps, seed)):
        xa, xb = _point(a, ca, idx), _point(b, cb, idx)
        for k in HEADLINE:
            samples[k][r] = xb[k] - xa[k]
    deltas = {}
    for k in HEADLINE:
        lo, hi = _interval(samples[k])
        deltas[k] = {"a": pa[k], "b": pb[k], "delta": pb[k] - pa[k], "ci_lo": lo, "ci_hi": hi}
    only_a = int((a.correct & ~b.correct).sum())
    only_b = int((b.correct & ~a.correct).sum())
    flips = [lb.id for lb, x, y in zip(a.labels, a.choice, b.choice, strict=True) if x != y]
    tv = [0.5 * float(np.abs(x - y).sum()) for x, y in zip(a.probs, b.probs, strict=True)
          if x is not None and y is not None]
    return {
        "rows": a.n,
        "deltas": deltas,
        "both_correct": int((a.correct & b.correct).sum()),
        "a_only_correct": only_a,
        "b_only_correct": only_b,
        "both_wrong": int((~a.correct & ~b.correct).sum()),
        "mcnemar_exact_p": _mcnemar_exact(only_a, only_b),
        "flips": len(flips),
        "flip_rate": len(flips) / a.n,
        "flipped_ids": flips,
        "mean_total_variation": float(np.mean(tv)) if tv else None,
        "max_total_variation": float(np.max(tv)) if tv else None,
    }


def _time(t: Table) -> dict[str, Any]:
    """Seconds spent (``timing.total_s``) over the rows that have a record."""
    have = np.array([s != "missing" for s in t.status], dtype=bool)
    sec = t.seconds[have]
    return {"total_s": float(sec.sum()), "rows_timed": int(have.sum()),
            "mean_s": float(sec.mean()) if sec.size else None, "median_s": float(np.median(sec)) if sec.size else None}


# --- one report ---------------------------------------------------------------------------------------------------
def evaluate(t: Table, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Everything ``semif eval`` reports about one run (plain data)."""
    return {
        "counts": t.counts(),
        "chance_accuracy": chance_accuracy(t),
        "metrics": bootstrap(t, reps, seed),
        "balanced_accuracy_all_rows": balanced_accuracy(t),
        "per_family": per_family(t),
        "auc_per_family": auc_per_family(t, reps, seed),
        "reliability": reliability(t),
        "risk_coverage": risk_coverage(t),
        "time": _time(t),
        "problems": [{"id": lb.id, "status": s} for lb, s in zip(t.labels, t.status, strict=True)
                     if s not in ("ok",)],
    }
