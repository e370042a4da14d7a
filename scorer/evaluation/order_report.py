"""``semif order``: flips under option reversal, with and without the order-averaged readout, and its cost."""

from __future__ import annotations

from typing import Any

from scorer.evaluation import metrics
from scorer.evaluation.report_files import ci_text, enveloped, labels_info, report_title, run_info
from scorer.formats.records import read_records


def order_report(labels: str | None, base: str, reversed_: str, permuted: str | None, permuted_reversed: str | None,
                 reps: int = metrics.BOOTSTRAP_REPS, seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """Flips under option reversal and accuracy, with and without the order-averaged readout, and its cost."""

    runs = {p: read_records(p) for p in (base, reversed_, permuted, permuted_reversed) if p}  # all before any work
    recs_a = runs[base]
    labs = metrics.labels_from_decisions(labels) if labels else metrics.labels_from_records(recs_a, base)

    def side(a: str, b: str) -> dict[str, Any]:
        ra, rb = runs[a], runs[b]
        ta, _ = metrics.align(labs, ra, a)
        tb, _ = metrics.align(labs, rb, b)
        p = metrics.paired(ta, tb, reps, seed)
        boot_a, boot_b = metrics.bootstrap(ta, reps, seed), metrics.bootstrap(tb, reps, seed)
        return {"original": run_info(a, ra), "reversed": run_info(b, rb),
                "accuracy_original": boot_a["accuracy"], "accuracy_reversed": boot_b["accuracy"],
                "balanced_accuracy_original": boot_a["balanced_accuracy"],
                "balanced_accuracy_reversed": boot_b["balanced_accuracy"],
                "flips": p["flips"], "flip_rate": p["flip_rate"], "flipped_ids": p["flipped_ids"],
                "mean_total_variation": p["mean_total_variation"], "counts": [ta.counts(), tb.counts()],
                "time_s": [float(ta.seconds.sum()), float(tb.seconds.sum())]}

    title = report_title("Order robustness (options reversed)", run_info(base, recs_a), len(labs))
    rep: dict[str, Any] = {"title": title, "labels": labels_info(labels),
                           "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
                           "rows": len(labs), "plain": side(base, reversed_)}
    if permuted and permuted_reversed:
        rep["permuted"] = side(permuted, permuted_reversed)
        plain_t, perm_t = sum(rep["plain"]["time_s"]) / 2, sum(rep["permuted"]["time_s"]) / 2
        rep["cost"] = {"plain_time_s": plain_t, "permuted_time_s": perm_t,
                       "time_ratio": perm_t / plain_t if plain_t else None,
                       "k": (rep["permuted"]["original"].get("permute"))}
    return enveloped("order", rep)


def print_order(rep: dict[str, Any]) -> None:
    print(f"order robustness on {rep['rows']} rows (reversed option order, ids kept)")
    print(f"{'readout':<16} {'acc original':>24} {'acc reversed':>24} {'flips':>11} {'mean TV':>8} {'time s':>8}")
    for name in ("plain", "permuted"):
        if name not in rep:
            continue
        s = rep[name]
        label = name if name == "plain" else f"permute K={rep['cost']['k']}"
        tv = s["mean_total_variation"]
        print(f"{label:<16} {ci_text(s['accuracy_original']):>24} {ci_text(s['accuracy_reversed']):>24} "
              f"{s['flips']:>4} ({100 * s['flip_rate']:4.1f}%) {'n/a' if tv is None else f'{tv:.3f}':>8} "
              f"{sum(s['time_s']) / 2:>8.1f}")
    if "cost" in rep and rep["cost"]["time_ratio"]:
        print(f"cost of the order-averaged readout: {rep['cost']['time_ratio']:.2f}x the time of one plain pass")
