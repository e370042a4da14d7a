"""``semif eval``: decision-quality metrics of a run against labels (and of a second run against it, paired)."""

from __future__ import annotations

from typing import Any

from scorer.evaluation import metrics
from scorer.evaluation.before_after import before_after, print_before_after
from scorer.evaluation.report_files import ci_text, enveloped, labels_info, load_labelled, report_title, run_info
from scorer.formats.records import read_records


def eval_report(run: str, labels: str | None, compare: str | None = None, reps: int = metrics.BOOTSTRAP_REPS,
                seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """The full report of one run (and, with ``compare``, of run B against it on the same rows)."""

    recs_b = read_records(compare) if compare else []  # every input is read (and validated) before any work
    recs, labs, table, unlabelled = load_labelled(run, labels)
    info = run_info(run, recs)
    report: dict[str, Any] = {
        "title": report_title("Decision quality", info, len(labs)),
        "run": info, "labels": labels_info(labels), "groups": len({lb.group for lb in labs}),
        "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
        "conventions": {"missing_or_invalid": f"wrong, p(label) = {metrics.FLOOR_P}, Brier 2, confidence 1",
                        "tie": "wrong (choice null); its probabilities count for NLL, Brier and ECE",
                        "balanced_accuracy": "mean over families of the mean per-class recall",
                        "macro_f1": "mean over families of the mean per-class F1 (classes present as labels)",
                        "ece": f"top-label, {metrics.ECE_BINS} equal-width bins"},
        "unlabelled_records": unlabelled,
        **metrics.evaluate(table, reps, seed),
        "letter_bias": letter_bias(recs, labs),
    }
    if any(isinstance(r.get("calibrated"), dict) for r in recs):
        # records of a calibrated run: the raw readout above, the calibrated one here (same rows)
        report["calibrated"] = before_after(labs, recs, recs, reps, seed)
    if compare:
        table_b, _ = metrics.align(labs, recs_b, compare)
        report["compare"] = {"run_b": run_info(compare, recs_b), "counts_b": table_b.counts(),
                             **metrics.paired(table, table_b, reps, seed)}
    return enveloped("eval", report)


def letter_bias(recs: list[dict[str, Any]], labs: list[metrics.Label]) -> dict[str, dict[str, int]]:
    """How often each answer letter was chosen, next to how often it was the gold letter, over the labelled
    rows that have a record (a position bias shows as a letter chosen far more often than it is gold)."""
    gold = {lb.id: lb.label for lb in labs}
    chosen: dict[str, int] = {}
    golds: dict[str, int] = {}
    for r in recs:
        if r.get("id") not in gold or not isinstance(r.get("letters"), list):
            continue
        ids, letters = r["option_ids"], r["letters"]
        if gold[r["id"]] in ids:
            g = letters[ids.index(gold[r["id"]])]
            golds[g] = golds.get(g, 0) + 1
        if r.get("choice") in ids:
            c = letters[ids.index(r["choice"])]
            chosen[c] = chosen.get(c, 0) + 1
    return {"chosen": dict(sorted(chosen.items())), "gold": dict(sorted(golds.items()))}


def print_eval(rep: dict[str, Any]) -> None:
    run, c = rep["run"], rep["counts"]
    m = run.get("model") or {}
    extra = "".join([f" · T={run['temperature']:.4g}" if run.get("temperature") else "",
                     f" · permute K={run['permute']}" if run.get("permute") else ""])
    print(f"{run['path']}: model {m.get('key')} · {m.get('backend')} · {m.get('dtype')} · mode {run.get('mode')}"
          f"{extra}")
    print(f"rows {c['rows']} in {rep['groups']} groups (scored {c['scored']}, missing {c['missing']}, "
          f"invalid {c['invalid']}, ties {c['ties']}) · chance accuracy {rep['chance_accuracy']:.3f}")
    b = rep["bootstrap"]
    print(f"{'metric':<18} value  [95% CI, group bootstrap, {b['reps']} reps, seed {b['seed']}]")
    names = {"accuracy": "accuracy", "balanced_accuracy": "family bal. acc.", "macro_f1": "macro-F1",
             "nll": "NLL", "brier": "Brier", "ece": "ECE (10 bins)"}
    for k, label in names.items():
        print(f"{label:<18} {ci_text(rep['metrics'][k])}")
    print(f"\n{'family':<10} {'rows':>4} {'acc':>6} {'bal':>6} {'F1':>6} {'NLL':>6} {'Brier':>6} {'ECE':>6} "
          f"{'chance':>6}")
    for f in rep["per_family"]:
        print(f"{f['family']:<10} {f['rows']:>4} {f['accuracy']:>6.3f} {f['balanced_accuracy']:>6.3f} "
              f"{f['macro_f1']:>6.3f} {f['nll']:>6.3f} {f['brier']:>6.3f} {f['ece']:>6.3f} "
              f"{f['chance_accuracy']:>6.3f}")
    print("\nreliability  " + "  ".join(
        f"{r['lo']:.1f}-{r['hi']:.1f}:{r['n']}" + (f"/{r['accuracy']:.2f}" if r["n"] else "")
        for r in rep["reliability"]) + "   (bin:rows/accuracy)")
    print("risk-coverage  " + "  ".join(f"{int(r['coverage'] * 100)}%: acc {r['accuracy']:.3f}"
                                        for r in rep["risk_coverage"]))
    print("ROC AUC per family  " + "  ".join(
        f"{a['family']}: " + ("n/a" if a["auc"] is None else f"{a['auc']:.3f} [{a['ci_lo']:.3f}, {a['ci_hi']:.3f}]")
        for a in rep["auc_per_family"]) + "   (how well p orders the rows, whatever the threshold)")
    lb = rep["letter_bias"]
    print("chosen letter  " + "  ".join(f"{k}: {v} (gold {lb['gold'].get(k, 0)})" for k, v in lb["chosen"].items()))
    t = rep["time"]
    if t["rows_timed"]:
        print(f"time {t['total_s']:.1f} s total, {1000 * t['mean_s']:.0f} ms mean, {1000 * t['median_s']:.0f} ms "
              f"median per decision ({t['rows_timed']} timed rows)")
    if "calibrated" in rep:
        print()
        print_before_after("calibrated blocks of these records (before = raw readout, after = calibrated.choice)",
                           rep["calibrated"])
    if "compare" in rep:
        cp = rep["compare"]
        print(f"\npaired: B = {cp['run_b']['path']} vs A on the same {cp['rows']} rows (delta = B - A)")
        for k, label in names.items():
            d = cp["deltas"][k]
            print(f"  {label:<18} A {d['a']:.3f}  B {d['b']:.3f}  delta {d['delta']:+.3f} "
                  f"[{d['ci_lo']:+.3f}, {d['ci_hi']:+.3f}]")
        tv = cp["mean_total_variation"]
        print(f"  flips {cp['flips']} ({100 * cp['flip_rate']:.1f}%) · A-only correct {cp['a_only_correct']}, "
              f"B-only correct {cp['b_only_correct']} · McNemar exact p {cp['mcnemar_exact_p']:.3g} · "
              f"mean total variation {'n/a' if tv is None else f'{tv:.3f}'}")
