"""``semif calibrate report``: what changes decisions on a labelled set, label-free and out of fold.

One report per scored set (``--run`` records, ``--labels`` rows), written create-only as JSON
(schema ``semif-eval-v1``, kind ``calibration``). Every method is evaluated with the metrics of
``semif eval`` on all labelled rows, next to the raw readout:

* **label-free priors** (:mod:`scorer.calibration.prior`): each estimator, per signature with the
  default ``--min-rows`` (small signatures stay raw), per signature whatever its size, with the
  family fallback, with the pooled fallback (family, then the same options, then per option id), and
  *stored* (fitted on the other folds' rows only — what a prior from a reference
  batch gives a new batch). No label is read.
* **orderings**: with ``--permuted`` (``semif score --permute 2``) and ``--permuted-reversed`` runs, each
  ordering's pass is a decision of its own signature (the options are lettered differently); methods
  are run on the plain pass, on the order-averaged readout, and "calibrate every ordering, then average
  the calibrated probabilities".
* **labelled bias** (:mod:`scorer.calibration.bias`), strictly out of fold (group-disjoint folds, or
  leave-one-group-out with ``--folds groups``): levels signature → family → global, with and without a
  temperature, class-balanced or not, on raw logits and on top of the in-batch prior.
* **bound**: the best per-family offsets chosen *in-sample* to maximise balanced accuracy (a grid over
  families with one option set of at most 3 options) — no offset calibration at the family level can
  do better on these rows, which says when a target is out of reach of this whole class of methods.
* **skew** (``--skew``): class-skewed subsamples (50/50, 75/25, 90/10, and a single decision) of every
  binary signature with enough rows of each class; in-run prior vs a stored prior and a stored
  labelled fit from the signature's other rows, and how often the extreme-mix warning fires.
* **routing** (``--route-fast FAST.jsonl``): the two-path margin policy with raw and with calibrated
  margins (fast path = that run, reference = ``--run``) at equal escalation shares (the lowest-margin
  10 %, 25 %, …), and routing by decision family (each fold's families sent to the path that was
  better on the other folds).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scorer.calibration.batch import MIX_MIN_ROWS, mix_warnings
from scorer.calibration.bias import fit_bias
from scorer.calibration.core import Calibration
from scorer.calibration.prior import BATCH_ESTIMATORS, DEFAULT_MIN_ROWS, fit_prior, log_softmax
from scorer.calibration.temperature import group_folds
from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.evaluation import metrics
from scorer.evaluation.report_files import enveloped, run_info
from scorer.formats.records import read_records
from scorer.formats.rows import Decision, load_decisions
from scorer.formats.signature import decision_signature

SKEW_RATIOS = (0.5, 0.75, 0.9)
SKEW_SIZE = 12
SKEW_DRAWS = 100
_TIE = 1e-12

Probs = dict[str, np.ndarray]
"""Calibrated (or raw) probabilities per row id, aligned to the labelled row's option order."""


@dataclass
class View:
    """One ordering's records of the labelled rows: pseudo-records with their own signatures."""

    name: str
    """``plain``, ``pass1``, ``rev0``, ``rev1`` or ``permute-K`` (the order-averaged readout)."""
    records: list[dict[str, Any]]
    """Records (id, option_ids in this view's order, raw option_logits, model, extra.family)."""
    signatures: list[str]
    """Signature of each record in this view."""


# --- loading ------------------------------------------------------------------------------------------------------
def _labels(rows: list[Decision], family_field: str, group_field: str, path: str) -> list[metrics.Label]:
    out = []
    for d in rows:
        if "label" not in d.extra:
            continue
        if d.extra["label"] not in d.option_ids:
            raise InputError(path, None, "label", f"row {d.id!r}: {d.extra['label']!r} is not an option id",
                             "a declared option id")
        out.append(metrics.Label(d.id, d.extra["label"], str(d.extra.get(family_field, "all")),
                                 str(d.extra.get(group_field, d.id)), tuple(d.option_ids)))
    if not out:
        raise InputError(path, None, "label", "no row carries a label", "rows with a `label` field")
    return out


def _pseudo(rec: dict[str, Any], d: Decision, ids: list[str], logits: np.ndarray, family: str,
            readout: str = "plain") -> tuple[dict[str, Any], str]:
    desc = {o.id: o.description for o in d.options}
    sig = decision_signature(str(rec.get("prompt_version")), d.question, [(o, desc[o]) for o in ids],
                             rec.get("model") or {}, readout)
    return ({"id": d.id, "option_ids": ids, "option_logits": [float(v) for v in logits], "model": rec.get("model"),
             "extra": {"family": family}, "choice": None, "tie": False, "tied_option_ids": [],
             "timing": rec.get("timing") or {"total_s": 0.0},
             **({"permute": rec["permute"]} if readout != "plain" else {})}, sig)


def load_views(labels: list[metrics.Label], rows: dict[str, Decision], run: str, permuted: str | None,
               permuted_reversed: str | None) -> dict[str, View]:
    """The plain view of ``run`` and, when given, the passes and readouts of the --permute runs."""
    fam = {lb.id: lb.family for lb in labels}
    views: dict[str, View] = {}

    def add(name: str, item: tuple[dict[str, Any], str]) -> None:
        views.setdefault(name, View(name, [], [])).records.append(item[0])
        views[name].signatures.append(item[1])

    def row_of(path: str, line: int, rec: dict[str, Any]) -> Decision:
        d = rows.get(rec.get("id", ""))  # row ids are non-empty strings: a record without one matches none
        if d is None:
            raise InputError(path, line, "id", f"{rec.get('id')!r} is not a row of --labels", "the labelled rows")
        return d

    for line, rec in enumerate(read_records(run), start=1):
        if rec.get("id") in fam:
            d = row_of(run, line, rec)
            add("plain", _pseudo(rec, d, list(rec["option_ids"]), np.asarray(rec["option_logits"]), fam[d.id]))
    for path, prefix in ((permuted, "fwd"), (permuted_reversed, "rev")):
        if path is None:
            continue
        for line, rec in enumerate(read_records(path), start=1):
            if rec.get("id") not in fam:
                continue
            d = row_of(path, line, rec)
            perm = rec.get("permute")
            if not isinstance(perm, dict):
                raise InputError(path, line, "permute", "missing", "records of semif score --permute K")
            base = list(rec["option_ids"])
            for j, (ids, probs) in enumerate(zip(perm["option_ids"], perm["probabilities"], strict=True)):
                p = np.asarray(probs, dtype=np.float64)  # aligned to the record's option order
                lp = np.log(np.maximum(p[[base.index(o) for o in ids]], 1e-300))
                add(f"{prefix}{j}", _pseudo(rec, d, list(ids), lp, fam[d.id]))
            add(f"{prefix}-permute-{perm['k']}", _pseudo(rec, d, base, np.asarray(rec["option_logits"]), fam[d.id],
                                                        f"permute-{perm['k']}"))
    return views


# --- turning calibrations into per-row probabilities ----------------------------------------------------------------
def _aligned(rec: dict[str, Any], lab: metrics.Label, c: np.ndarray) -> np.ndarray:
    p = np.exp(log_softmax(c[None, :])[0])
    return p[[list(rec["option_ids"]).index(o) for o in lab.option_ids]]


def raw_probs(view: View, labels: dict[str, metrics.Label]) -> Probs:
    return {r["id"]: _aligned(r, labels[r["id"]], np.asarray(r["option_logits"])) for r in view.records}


def applied_probs(cal: Calibration, view: View, labels: dict[str, metrics.Label],
                  only: set[str] | None = None) -> Probs:
    """Probabilities after ``cal`` (rows it does not cover keep their raw numbers)."""
    out = {}
    for r, s in zip(view.records, view.signatures, strict=True):
        if only is not None and r["id"] not in only:
            continue
        try:
            c = np.asarray(cal.apply(r, s)["calibrated"]["option_logits"])
        except InputError:
            c = np.asarray(r["option_logits"])
        out[r["id"]] = _aligned(r, labels[r["id"]], c)
    return out


def combine(parts: Sequence[Probs]) -> Probs:
    """Mean of probabilities over orderings, aligned by option id (the --permute readout)."""
    ids = set.intersection(*(set(p) for p in parts))
    return {i: np.mean([p[i] for p in parts], axis=0) for i in ids}


def folds_of(labels: list[metrics.Label], folds: int | None) -> dict[str, int]:
    """Fold of each row id: group-disjoint folds, or one fold per group (``folds=None``)."""
    groups = [lb.group for lb in labels]
    n = len(set(groups))
    fo = group_folds(groups, n if folds is None else max(2, min(folds, n)))
    return {lb.id: fo[lb.group] for lb in labels}


def out_of_fold_probs(view: View, labels: dict[str, metrics.Label], fold: dict[str, int],
                      fit: Callable[[list[dict[str, Any]], list[str]], Calibration]) -> Probs:
    """Each fold's rows calibrated by ``fit`` on the other folds' records of ``view``."""
    out: Probs = {}
    for f in sorted(set(fold.values())):
        train = [(r, s) for r, s in zip(view.records, view.signatures, strict=True) if fold.get(r["id"]) != f]
        held = {r["id"] for r in view.records if fold.get(r["id"]) == f}
        if not train or not held:
            continue
        cal = fit([r for r, _ in train], [s for _, s in train])
        out.update(applied_probs(cal, view, labels, held))
    return out


def transformed(view: View, probs: Probs, labels: dict[str, metrics.Label]) -> View:
    """``view`` with its logits replaced by ``ln probs`` (to stack a fit on top of a calibration)."""
    recs = []
    for r in view.records:
        lab = labels[r["id"]]
        p = probs[r["id"]]
        recs.append({**r, "option_logits": [float(np.log(max(p[lab.option_ids.index(o)], 1e-300)))
                                            for o in r["option_ids"]]})
    return View(view.name, recs, view.signatures)


# --- evaluation -----------------------------------------------------------------------------------------------------
def table(labels: list[metrics.Label], probs: Probs) -> metrics.Table:
    recs = []
    for lb in labels:
        p = probs.get(lb.id)
        if p is None:
            continue
        order = np.argsort(-p, kind="stable")
        tie = p[order[0]] - p[order[1]] <= _TIE
        recs.append({"id": lb.id, "option_ids": list(lb.option_ids), "probabilities": [float(v) for v in p],
                     "option_logits": [float(v) for v in np.log(np.maximum(p, 1e-300))],
                     "choice": None if tie else lb.option_ids[int(order[0])], "timing": {"total_s": 0.0}})
    return metrics.align(labels, recs, "calibrated")[0]


def evaluate(labels: list[metrics.Label], probs: Probs, raw: metrics.Table | None, reps: int,
             seed: int) -> dict[str, Any]:
    t = table(labels, probs)
    boot = metrics.bootstrap(t, reps, seed)
    auc = metrics.auc_per_family(t, reps, seed)
    out = {"accuracy": boot["accuracy"], "balanced_accuracy": boot["balanced_accuracy"],
           "nll": boot["nll"]["value"], "brier": boot["brier"]["value"], "ece": boot["ece"]["value"],
           "per_family": {f["family"]: round(f["balanced_accuracy"], 6) for f in metrics.per_family(t)},
           "per_family_accuracy": {f["family"]: round(f["accuracy"], 6) for f in metrics.per_family(t)},
           "auc_per_family": {a["family"]: a["auc"] for a in auc}, "mean_auc": metrics.mean_auc(auc),
           "reliability": metrics.reliability(t), "counts": t.counts()}
    if raw is not None:
        out["changed_choices"] = int(sum(a != b for a, b in zip(raw.choice, t.choice, strict=True)))
    return out


OFFSET_STEPS, OFFSET_SPAN = 161, 4.0
OFFSET_GRID = np.linspace(-OFFSET_SPAN, OFFSET_SPAN, OFFSET_STEPS)
"""The offsets the in-sample bounds search, per option (the defaults of :func:`family_offset_bound`)."""


def best_offsets(lp: np.ndarray, y: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The per-option offsets on ``grid`` (option 0's fixed at 0) that maximise the balanced accuracy of rows of
    log-probabilities ``lp`` against gold option indices ``y``, with that balanced accuracy and the best plain
    accuracy over the grid (chosen separately)."""
    k = lp.shape[1]
    offs = np.array(np.meshgrid(*([grid] * (k - 1)), indexing="ij")).reshape(k - 1, -1).T
    full = np.concatenate([np.zeros((len(offs), 1)), offs], axis=1)  # option 0 is the reference: offset 0
    # Every offset vector at once (offsets × rows): argmax keeps the first of equals, as a row-by-row loop would.
    correct = (lp[None, :, :] - full[:, None, :]).argmax(axis=2) == y[None, :]
    balanced = np.stack([correct[:, y == c].mean(axis=1) for c in np.unique(y)]).mean(axis=0)
    best = int(balanced.argmax())
    return full[best], float(balanced[best]), float(correct.mean(axis=1).max())


def family_offset_bound(labels: list[metrics.Label], probs: Probs, steps: int = OFFSET_STEPS,
                        span: float = OFFSET_SPAN) -> dict[str, Any]:
    """Best in-sample balanced accuracy (and, separately, accuracy) per family over per-option offsets
    (families with one option set of at most 3 options; others keep their raw value) — an upper bound of
    every family-level offset fit, label-free or labelled."""
    grid = np.linspace(-span, span, steps)
    per: dict[str, Any] = {}
    for fam in sorted({lb.family for lb in labels}):
        rows = [lb for lb in labels if lb.family == fam and lb.id in probs]
        sets = {lb.option_ids for lb in rows}
        t = table(rows, {lb.id: probs[lb.id] for lb in rows})
        raw, raw_acc = metrics.family_balanced_accuracy(t), metrics.accuracy(t)
        if len(sets) != 1 or len(next(iter(sets))) > 3:
            per[fam] = {"raw": raw, "bound": None, "raw_accuracy": raw_acc, "accuracy_bound": None, "rows": len(rows),
                        "note": "several option sets or more than 3 options: not searched"}
            continue
        lp = np.log(np.maximum(np.stack([probs[lb.id] for lb in rows]), 1e-300))
        y = np.array([lb.option_ids.index(lb.label) for lb in rows])
        _, best, best_acc = best_offsets(lp, y, grid)
        per[fam] = {"raw": raw, "bound": best, "raw_accuracy": raw_acc, "accuracy_bound": best_acc, "rows": len(rows)}
    vals = [v["bound"] if v["bound"] is not None else v["raw"] for v in per.values()]
    accs = [(v["accuracy_bound"] if v["accuracy_bound"] is not None else v["raw_accuracy"], v["rows"])
            for v in per.values()]
    return {"mean_per_family_balanced_accuracy": float(np.mean(vals)),
            "accuracy": float(sum(a * n for a, n in accs) / sum(n for _, n in accs)), "per_family": per,
            "grid": {"steps": steps, "span": span}}


# --- the methods ----------------------------------------------------------------------------------------------------
def _prior_fit(est: str, min_rows: int, fallback: str) -> Callable[[list[dict[str, Any]], list[str]], Calibration]:
    return lambda r, s: fit_prior(r, s, est, min_rows, fallback)


def _bias_fit(gold: dict[str, str], temperature: bool, balanced: bool,
              ) -> Callable[[list[dict[str, Any]], list[str]], Calibration]:
    return lambda r, s: fit_bias(r, s, gold, DEFAULT_MIN_ROWS, temperature, 0.01, balanced)


def view_sets(views: dict[str, View]) -> list[tuple[str, list[str]]]:
    """The orderings to try: plain; each order-averaged readout; every ordering calibrated then averaged."""
    out = [("plain", ["plain"])]
    for name in views:
        if "-permute-" in name:
            out.append((f"{name} readout", [name]))
    fwd = sorted(n for n in views if n.startswith("fwd") and "-permute-" not in n)
    rev = sorted(n for n in views if n.startswith("rev") and "-permute-" not in n)
    if len(fwd) > 1:
        out.append((f"{len(fwd)} orderings", fwd))
    if fwd and rev:
        out.append((f"{len(fwd) + len(rev)} orderings", fwd + rev))
    return out


def methods(labels: list[metrics.Label], views: dict[str, View], fold: dict[str, int], with_labels: bool,
            reps: int, seed: int) -> list[dict[str, Any]]:
    """Every method of the module docstring, evaluated on all labelled rows."""
    lab = {lb.id: lb for lb in labels}
    gold = {lb.id: lb.label for lb in labels}
    raw_t = table(labels, raw_probs(views["plain"], lab))
    out: list[dict[str, Any]] = []

    def add(name: str, kind: str, vset: list[str], probs: Probs, note: str = "") -> None:
        out.append({"method": name, "labels": kind, "orderings": vset, "note": note,
                    **evaluate(labels, probs, raw_t, reps, seed)})

    for vname, vset in view_sets(views):
        vs = [views[v] for v in vset]
        add(f"raw · {vname}", "none", vset, combine([raw_probs(v, lab) for v in vs]))
        for est in BATCH_ESTIMATORS:
            add(f"prior {est} · per signature, min rows {DEFAULT_MIN_ROWS} · {vname}", "none", vset,
                combine([applied_probs(fit_prior(v.records, v.signatures, est, DEFAULT_MIN_ROWS), v, lab) for v in vs]))
            add(f"prior {est} · per signature, every size · {vname}", "none", vset,
                combine([applied_probs(fit_prior(v.records, v.signatures, est, 1), v, lab) for v in vs]))
            for fb, what in (("family", "family fallback"), ("pooled", "pooled fallback (family, options, global)")):
                add(f"prior {est} · {what} · {vname}", "none", vset,
                    combine([applied_probs(fit_prior(v.records, v.signatures, est, DEFAULT_MIN_ROWS, fb), v, lab)
                             for v in vs]))
        add(f"prior mean · stored (fitted on the other folds) · {vname}", "none (folds only)", vset,
            combine([out_of_fold_probs(v, lab, fold, _prior_fit("mean", 1, "none")) for v in vs]),
            "a prior from a reference batch applied to a new batch: no row contributes to its own prior")
        if not with_labels:
            continue
        for base in ("raw", "prior mean"):
            for temp in (False, True):
                for bal in (False, True):
                    parts = []
                    for v in vs:
                        vv = v if base == "raw" else transformed(
                            v, applied_probs(fit_prior(v.records, v.signatures, "mean", 1), v, lab), lab)
                        parts.append(out_of_fold_probs(vv, lab, fold, _bias_fit(gold, temp, bal)))
                    add(f"bias{' +T' if temp else ''}{' balanced' if bal else ''} on {base} · out of fold · {vname}",
                        "out of fold", vset, combine(parts))
    return out


# --- skew robustness ------------------------------------------------------------------------------------------------
def skew(labels: list[metrics.Label], view: View, size: int = SKEW_SIZE, draws: int = SKEW_DRAWS,
         seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """Class-skewed subsamples of every binary signature (module docstring)."""
    lab = {lb.id: lb for lb in labels}
    gold = {lb.id: lb.label for lb in labels}
    by_sig: dict[str, list[int]] = defaultdict(list)
    for i, (r, s) in enumerate(zip(view.records, view.signatures, strict=True)):
        if len(r["option_ids"]) == 2 and r["id"] in lab:
            by_sig[s].append(i)
    rng = np.random.default_rng(seed)
    need = math.ceil(max(SKEW_RATIOS) * size)
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    used = []
    for sig, idx in by_sig.items():
        cls = Counter(gold[view.records[i]["id"]] for i in idx)
        if len(cls) != 2 or min(cls.values()) < need or len(idx) < size + 2:
            continue
        used.append({"signature": sig, "rows": len(idx), "classes": dict(cls)})
        by_cls = {c: [i for i in idx if gold[view.records[i]["id"]] == c] for c in cls}
        for ratio in (*SKEW_RATIOS, "single"):
            for major in sorted(cls):
                minor = next(c for c in cls if c != major)
                for _ in range(draws):
                    if ratio == "single":
                        pick = [int(rng.choice(by_cls[major]))]
                    else:
                        n_maj = round(float(ratio) * size)
                        pick = list(rng.choice(by_cls[major], n_maj, replace=False)) + \
                            list(rng.choice(by_cls[minor], size - n_maj, replace=False))
                    _skew_draw(view, pick, idx, lab, gold, results[str(ratio)])
    return {"subsample_size": size, "draws_per_ratio_and_majority_class": draws, "signatures": used,
            "methods": {"raw": "the model's own choice",
                        "in-run prior": "prior (mean) over the subsample itself (--batch-calibrate, "
                                        "--calibration-min-rows 1)",
                        "in-run prior, min rows 8": "the same with the default minimum: subsamples below it stay raw",
                        "stored prior": "prior (mean) over the signature's other rows (a balanced reference batch)",
                        "stored bias": "labelled signature offsets (balanced) fitted on the signature's other rows"},
            "ratios": {k: {m: float(np.mean(v)) for m, v in d.items()} for k, d in results.items()}}


def _skew_draw(view: View, pick: list[int], idx: list[int], lab: dict[str, metrics.Label], gold: dict[str, str],
               acc: dict[str, list[float]]) -> None:
    sub = View("sub", [view.records[i] for i in pick], [view.signatures[i] for i in pick])
    rest_i = [i for i in idx if i not in set(pick)]
    rest = ([view.records[i] for i in rest_i], [view.signatures[i] for i in rest_i])
    y = [gold[r["id"]] for r in sub.records]

    def score(probs: Probs, name: str) -> None:
        hits = []
        for r in sub.records:
            p = probs[r["id"]]
            lb = lab[r["id"]]
            top = np.sort(p)[::-1]
            hits.append(top[0] - top[1] > _TIE and lb.option_ids[int(np.argmax(p))] == lb.label)
        acc[name].append(float(np.mean(hits)))

    score(raw_probs(sub, lab), "raw")
    inrun = fit_prior(sub.records, sub.signatures, "mean", 1)
    score(applied_probs(inrun, sub, lab), "in-run prior")
    score(applied_probs(fit_prior(sub.records, sub.signatures, "mean", DEFAULT_MIN_ROWS), sub, lab),
          "in-run prior, min rows 8")
    stored = fit_prior(rest[0], rest[1], "mean", 1)
    score(applied_probs(stored, sub, lab), "stored prior")
    score(applied_probs(fit_bias(rest[0], rest[1], gold, 1, False, 0.01, True, ("signature",)), sub, lab),
          "stored bias")
    if len(pick) >= MIX_MIN_ROWS:  # the warning needs a batch (a single decision has no class mix)
        warned = mix_warnings(list(inrun.apply_all(sub.records, sub.signatures)))
        acc["warning fired, in-run prior (share of draws)"].append(1.0 if warned else 0.0)
        warned = mix_warnings(list(stored.apply_all(sub.records, sub.signatures)))
        acc["warning fired, stored prior (share of draws)"].append(1.0 if warned else 0.0)
    calib = applied_probs(inrun, sub, lab)
    chosen = Counter(lab[r["id"]].option_ids[int(np.argmax(calib[r["id"]]))] for r in sub.records)
    acc["calibrated majority share"].append(max(chosen.values()) / len(sub.records))
    acc["true majority share"].append(max(Counter(y).values()) / len(y))


# --- routing --------------------------------------------------------------------------------------------------------
def routing(labels: list[metrics.Label], fast: dict[str, View], ref: dict[str, View], fold: dict[str, int],
            shares: Sequence[float], reps: int, seed: int) -> dict[str, Any]:
    """Margin routing with raw and calibrated margins, and routing by family (module docstring)."""
    lab = {lb.id: lb for lb in labels}
    rows: list[dict[str, Any]] = []
    secs = {name: {r["id"]: float((r.get("timing") or {}).get("total_s", 0.0)) for r in v["plain"].records}
            for name, v in (("fast", fast), ("reference", ref))}
    paths = {}
    for kind in ("raw", "calibrated"):
        for name, v in (("fast", fast), ("reference", ref)):
            pv = v["plain"]
            paths[(kind, name)] = raw_probs(pv, lab) if kind == "raw" else \
                applied_probs(fit_prior(pv.records, pv.signatures, "mean", 1), pv, lab)

    def margin(p: np.ndarray) -> float:
        top = np.sort(p)[::-1]
        return float(top[0] - top[1])

    ref_time = sum(secs["reference"].values())
    for kind in ("raw", "calibrated"):
        pf, pr = paths[(kind, "fast")], paths[(kind, "reference")]
        for name, probs, esc in (("fast only", pf, set()), ("reference only", pr, set(lab))):
            rows.append(_route_row(labels, probs, esc, secs, kind, name, None, ref_time, reps, seed))
        # Equal escalation shares, not equal thresholds: calibrated margins live on another scale.
        order = sorted(lab, key=lambda i: (margin(pf[i]) if i in pf else -1.0, i))
        for share in shares:
            esc = set(order[: round(share * len(order))])
            th = max((margin(pf[i]) for i in esc if i in pf), default=None)
            probs = {i: (pr[i] if i in esc else pf[i]) for i in lab if i in pr or i in pf}
            rows.append(_route_row(labels, probs, esc, secs, kind, f"lowest {100 * share:g}% margins", th,
                                   ref_time, reps, seed))
        # by family: a held-out fold's family goes to the path with the higher balanced accuracy on the other folds
        esc = set()
        choice: dict[int, dict[str, str]] = {}
        for f in sorted(set(fold.values())):
            train = [lb for lb in labels if fold[lb.id] != f]
            choice[f] = {}
            for fam in sorted({lb.family for lb in train}):
                rows_f = [lb for lb in train if lb.family == fam]
                bf = metrics.family_balanced_accuracy(table(rows_f, pf))
                br = metrics.family_balanced_accuracy(table(rows_f, pr))
                choice[f][fam] = "reference" if br > bf else "fast"
            esc |= {lb.id for lb in labels if fold[lb.id] == f and choice[f].get(lb.family, "reference") == "reference"}
        probs = {i: (pr[i] if i in esc else pf[i]) for i in lab}
        row = _route_row(labels, probs, esc, secs, kind, "by family (out of fold)", None, ref_time, reps, seed)
        row["family_paths_per_fold"] = {str(k): v for k, v in choice.items()}
        rows.append(row)
    return {"policy": "escalate to the reference path the given share of decisions with the lowest fast-path margin "
                      "(top minus second probability; threshold = the largest escalated margin); calibrated: both "
                      "paths calibrated by the in-batch prior (mean, every signature), margins taken after calibration",
            "time_accounting": "fast time for every row + reference time for escalated rows (timing.total_s)",
            "table": rows}


def _route_row(labels: list[metrics.Label], probs: Probs, esc: set[str], secs: dict[str, dict[str, float]],
               kind: str, name: str, th: float | None, ref_time: float, reps: int, seed: int) -> dict[str, Any]:
    ids = [lb.id for lb in labels]
    if name == "reference only":
        t = sum(secs["reference"].get(i, 0.0) for i in ids)
    else:
        t = sum(secs["fast"].get(i, 0.0) for i in ids) + sum(secs["reference"].get(i, 0.0) for i in ids if i in esc)
    ev = evaluate(labels, probs, None, reps, seed)
    return {"margins": kind, "policy": name, "threshold": th, "accuracy": ev["accuracy"],
            "balanced_accuracy": ev["balanced_accuracy"], "per_family": ev["per_family"],
            "escalated_share": len([i for i in ids if i in esc]) / len(ids), "time_s": t,
            "time_vs_reference": t / ref_time if ref_time else None}


# --- the report ------------------------------------------------------------------------------------------------------
def report(run: str, labels_path: str, permuted: str | None = None, permuted_reversed: str | None = None,
           family_field: str = "family", group_field: str = "group", folds: int | None = 5,
           with_labels: bool = True, do_skew: bool = False, route_fast: str | None = None,
           shares: Sequence[float] = (0.1, 0.25, 0.5, 0.75), reps: int = metrics.BOOTSTRAP_REPS,
           seed: int = metrics.BOOTSTRAP_SEED, skew_draws: int = SKEW_DRAWS) -> dict[str, Any]:
    """The whole report (plain data); see the module docstring."""

    rows_list = load_decisions(labels_path)
    rows = {d.id: d for d in rows_list}
    labels = _labels(rows_list, family_field, group_field, labels_path)
    views = load_views(labels, rows, run, permuted, permuted_reversed)
    if "plain" not in views:
        raise InputError(run, None, "id", "no record of a labelled row", "records of the --labels rows")
    fold = folds_of(labels, folds)
    lab = {lb.id: lb for lb in labels}
    raw_plain = raw_probs(views["plain"], lab)
    info = run_info(run, read_records(run))
    m = info.get("model") or {}
    rep: dict[str, Any] = {
        "title": f"Calibration methods · {m.get('key')} {m.get('backend')} {info.get('mode')} · {Path(run).stem} "
                 f"({len(labels)} rows)",
        "run": info,
        "labels": {"path": labels_path, "sha256": sha256_file(Path(labels_path)), "family_field": family_field,
                   "group_field": group_field},
        "extra_runs": {k: {"path": v, "sha256": sha256_file(Path(v))} for k, v in
                       (("permuted", permuted), ("permuted_reversed", permuted_reversed), ("route_fast", route_fast))
                       if v},
        "folds": {"kind": "leave one group out" if folds is None else f"{len(set(fold.values()))} group-disjoint folds",
                  "assignment": "groups sorted by sha256(group name), dealt round-robin"},
        "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
        "rows": len(labels), "signatures": len(set(views["plain"].signatures)),
        "rows_per_signature": {str(k): v for k, v in
                               sorted(Counter(Counter(views["plain"].signatures).values()).items())},
        "raw": evaluate(labels, raw_plain, None, reps, seed),
        "methods": methods(labels, views, fold, with_labels, reps, seed),
        "bound": family_offset_bound(labels, raw_plain),
    }
    best = max((x for x in rep["methods"] if x["labels"] == "none"),
               key=lambda x: x["balanced_accuracy"]["value"])
    rep["best_label_free"] = {"method": best["method"], "balanced_accuracy": best["balanced_accuracy"],
                              "accuracy": best["accuracy"]}
    labelled = [x for x in rep["methods"] if x["labels"] != "none"]
    if labelled:
        b2 = max(labelled, key=lambda x: x["balanced_accuracy"]["value"])
        rep["best_with_labels_or_folds"] = {"method": b2["method"], "balanced_accuracy": b2["balanced_accuracy"],
                                            "accuracy": b2["accuracy"]}
    if do_skew:
        rep["skew"] = skew(labels, views["plain"], draws=skew_draws, seed=seed)
    if route_fast:
        fast_views = load_views(labels, rows, route_fast, None, None)
        rep["routing"] = {"fast": run_info(route_fast, read_records(route_fast)),
                          **routing(labels, fast_views, views, fold, shares, reps, seed)}
    return enveloped("calibration", rep)


def print_report(rep: dict[str, Any]) -> None:
    r = rep["raw"]
    print(rep["title"])
    print(f"{rep['rows']} rows, {rep['signatures']} signatures (rows per signature: {rep['rows_per_signature']}); "
          f"folds: {rep['folds']['kind']}")
    print(f"{'method':<82} {'labels':<17} {'bal.acc':>7} {'acc':>6} {'NLL':>6} {'ECE':>6} {'chg':>4}")
    print(f"{'raw (plain)':<82} {'':<17} {r['balanced_accuracy']['value']:>7.3f} {r['accuracy']['value']:>6.3f} "
          f"{r['nll']:>6.3f} {r['ece']:>6.3f}")
    for x in rep["methods"]:
        print(f"{x['method'][:82]:<82} {x['labels'][:17]:<17} {x['balanced_accuracy']['value']:>7.3f} "
              f"{x['accuracy']['value']:>6.3f} {x['nll']:>6.3f} {x['ece']:>6.3f} {x['changed_choices']:>4}")
    b = rep["bound"]
    print(f"bound (in-sample best per-family offsets): {b['mean_per_family_balanced_accuracy']:.3f} "
          f"(accuracy {b['accuracy']:.3f}) "
          + " ".join(f"{k}={v['bound'] if v['bound'] is not None else v['raw']:.3f}"
                     for k, v in b["per_family"].items()))
    print(f"best label-free: {rep['best_label_free']['method']} -> "
          f"{rep['best_label_free']['balanced_accuracy']['value']:.3f}")
    if "best_with_labels_or_folds" in rep:
        x = rep["best_with_labels_or_folds"]
        print(f"best with labels (out of fold): {x['method']} -> {x['balanced_accuracy']['value']:.3f}")
    if "skew" in rep:
        print("skew (accuracy, mean over draws):")
        for ratio, d in rep["skew"]["ratios"].items():
            print(f"  {ratio:>6}: " + "  ".join(f"{k} {v:.3f}" for k, v in d.items()))
    if "routing" in rep:
        print("routing:")
        for x in rep["routing"]["table"]:
            print(f"  {x['margins']:<10} {x['policy']:<24} bal.acc {x['balanced_accuracy']['value']:.3f} "
                  f"acc {x['accuracy']['value']:.3f} escalated {100 * x['escalated_share']:5.1f}% "
                  f"time x{x['time_vs_reference'] or 0:.2f}")
