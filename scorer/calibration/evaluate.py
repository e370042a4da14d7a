"""Before/after metrics of a calibration on labelled rows, and the out-of-fold check of a bias fit.

All numbers come from :mod:`scorer.evaluation.metrics` (the same definitions as ``semif eval``): the calibrated
side is the records seen through :func:`scorer.decision.policy.calibrated_view`. A labelled bias fit
is judged out of fold only: rows are dealt into group-disjoint folds
(:func:`scorer.calibration.temperature.group_folds`), each fold is calibrated by a fit on the other folds,
and the before/after tables compare the raw records with those held-out calibrated records. A label-free
prior needs no folds (it never sees a label), so its before/after tables are computed on all rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scorer.calibration.core import Calibration, Skipped
from scorer.calibration.temperature import DEFAULT_FOLDS, group_folds
from scorer.core.errors import InputError
from scorer.evaluation import metrics


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


