"""Before/after metrics of a calibration on labelled rows, and the out-of-fold check of a bias fit.

All numbers come from :mod:`scorer.metrics` (the same definitions as ``semif eval``): the calibrated
side is the records seen through :func:`scorer.calibration.apply.calibrated_view`. A labelled bias fit
is judged out of fold only: rows are dealt into group-disjoint folds
(:func:`scorer.calibration.temperature.group_folds`), each fold is calibrated by a fit on the other folds,
and the before/after tables compare the raw records with those held-out calibrated records. A label-free
prior needs no folds (it never sees a label), so its before/after tables are computed on all rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scorer import metrics
from scorer.calibration.apply import calibrated_view
from scorer.calibration.core import Calibration, Skipped
from scorer.calibration.temperature import DEFAULT_FOLDS, group_folds
from scorer.errors import InputError

SUMMARY_METRICS = ("accuracy", "balanced_accuracy", "macro_f1", "nll", "brier", "ece")


def summary(t: metrics.Table, reps: int, seed: int) -> dict[str, Any]:
    """Headline metrics with intervals, per-family balanced accuracy and AUC, reliability."""
    return {"metrics": metrics.bootstrap(t, reps, seed),
            "per_family": {f["family"]: {"balanced_accuracy": f["balanced_accuracy"], "accuracy": f["accuracy"],
                                         "rows": f["rows"]} for f in metrics.per_family(t)},
            "auc_per_family": metrics.auc_per_family(t, reps, seed),
            "reliability": metrics.reliability(t), "counts": t.counts()}


def before_after(labels: list[metrics.Label], raw: Sequence[dict[str, Any]], calibrated: Sequence[dict[str, Any]],
                 reps: int = metrics.BOOTSTRAP_REPS, seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """Metrics of the raw records and of their calibrated view on the same labelled rows, the paired
    deltas (after − before) and the verdict ``beats_uncalibrated`` (mean per-family balanced accuracy
    higher after calibration)."""
    t_raw, _ = metrics.align(labels, raw, "raw records")
    t_cal, _ = metrics.align(labels, [calibrated_view(r) for r in calibrated], "calibrated records")
    b, a = summary(t_raw, reps, seed), summary(t_cal, reps, seed)
    paired = metrics.paired(t_raw, t_cal, reps, seed)
    gain = a["metrics"]["balanced_accuracy"]["value"] - b["metrics"]["balanced_accuracy"]["value"]
    return {"before": b, "after": a, "paired": {k: v for k, v in paired.items() if k != "flipped_ids"},
            "changed_choices": paired["flips"], "balanced_accuracy_gain": gain, "beats_uncalibrated": gain > 0}


def out_of_fold(records: Sequence[dict[str, Any]], signatures: Sequence[str], labels: list[metrics.Label],
                fit: Callable[[list[dict[str, Any]], list[str]], Calibration], k: int = DEFAULT_FOLDS
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every labelled record calibrated by ``fit`` on the records of the other group-disjoint folds.

    Returns the held-out calibrated records (in ``records`` order; unlabelled records are left out)
    and one summary per fold. A held-out record that no entry of its fold's fit covers keeps its raw
    numbers (``applied: false``) and is counted in the fold summary.
    """
    group = {lb.id: lb.group for lb in labels}
    idx = [i for i, r in enumerate(records) if r.get("id") in group]
    n_groups = len({group[records[i]["id"]] for i in idx})
    if n_groups < 2:
        raise InputError("--labels", None, "group", f"{n_groups} group(s) among the labelled rows",
                         "at least 2 groups for out-of-fold evaluation")
    k = max(2, min(k, n_groups))
    fold_of = group_folds([group[records[i]["id"]] for i in idx], k)
    out: dict[int, dict[str, Any]] = {}
    folds = []
    for f in range(k):
        train = [i for i in idx if fold_of[group[records[i]["id"]]] != f]
        held = [i for i in idx if fold_of[group[records[i]["id"]]] == f]
        if not train or not held:
            continue
        cal = fit([records[i] for i in train], [signatures[i] for i in train])
        uncovered = 0
        levels: dict[str, int] = {}
        for i in held:
            rec, covered = apply_held_out(cal, records[i], signatures[i])
            uncovered += not covered
            out[i] = rec
            lv = str(rec["calibrated"].get("level"))
            levels[lv] = levels.get(lv, 0) + 1
        folds.append({"fold": f, "train_rows": len(train), "held_out_rows": len(held),
                      "groups": sorted({group[records[i]["id"]] for i in held}), "levels": levels,
                      "uncovered": uncovered})
    return [out[i] for i in idx if i in out], folds


def apply_held_out(cal: Calibration, record: dict[str, Any], signature: str) -> tuple[dict[str, Any], bool]:
    """``record`` calibrated by a fit on other rows, and whether the fit covered it: a record no entry of the fit
    covers keeps its raw numbers in a block with ``applied: false`` (never an error: a held-out fold may hold a
    signature the training folds never saw)."""
    try:
        return cal.apply(record, signature), True
    except InputError:
        skip = Skipped(signature, "", 0, "no entry of this fold's fit covers the record")
        return {**record, "calibrated": cal.block(record, skip, signature)}, False


def print_before_after(title: str, ev: dict[str, Any]) -> None:
    """A before/after table (headline metrics with intervals, per-family balanced accuracy and AUC)."""
    def ci(m: dict[str, float]) -> str:
        return f"{m['value']:.3f} [{m['ci_lo']:.3f}, {m['ci_hi']:.3f}]"

    print(title)
    print(f"  {'metric':<18} {'before':>22} {'after':>22}")
    for k in ("accuracy", "balanced_accuracy", "nll", "brier", "ece"):
        print(f"  {k:<18} {ci(ev['before']['metrics'][k]):>22} {ci(ev['after']['metrics'][k]):>22}")
    auc_b = {a["family"]: a for a in ev["before"]["auc_per_family"]}
    auc_a = {a["family"]: a for a in ev["after"]["auc_per_family"]}
    print(f"  {'family':<12} {'bal.acc before':>14} {'after':>7} {'AUC before':>11} {'after':>7}")
    for fam, b in ev["before"]["per_family"].items():
        a = ev["after"]["per_family"][fam]
        ab, aa = auc_b[fam]["auc"], auc_a[fam]["auc"]
        print(f"  {fam:<12} {b['balanced_accuracy']:>14.3f} {a['balanced_accuracy']:>7.3f} "
              f"{'n/a' if ab is None else f'{ab:.3f}':>11} {'n/a' if aa is None else f'{aa:.3f}':>7}")
    print(f"  choices changed: {ev['changed_choices']}")
