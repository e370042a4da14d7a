"""Before/after: the metrics of a run's raw readout and of its calibrated view on the same labelled rows, paired
(:mod:`scorer.evaluation.metrics`, the same definitions as ``semif eval``), and their table for people. The
calibrated side is the records seen through :func:`scorer.decision.policy.calibrated_view`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scorer.decision.policy import calibrated_view
from scorer.evaluation import metrics

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
