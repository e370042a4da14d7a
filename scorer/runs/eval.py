"""Evaluation runs: ``semif eval``, ``calibrate`` (temperature), ``order`` and ``route``.

Everything here reads records (JSONL) and labels and writes plain-JSON reports (format ``semif-eval-v2``:
the report envelope of :mod:`scorer.envelope`, then the body) under ``data/results/`` plus a readable table
on stdout. Only :func:`route_live` touches a backend, through :func:`scorer.runs.score.prepare` and
:func:`scorer.runs.score.score_items`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from scorer import metrics
from scorer.envelope import carried_inputs, make_report, write_report
from scorer.errors import InputError
from scorer.io import FORCE_HINT, check_writable, write_atomic
from scorer.schema import Decision
from scorer.store import sha256_file

REPORT_FORMAT = "semif-eval-v2"
"""v2: the report envelope (v1: ``schema``, ``created_unix`` and a ``machine`` block of its own)."""
RESULTS_DIR = Path("data/results")
DEFAULT_THRESHOLDS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


# --- shared helpers -----------------------------------------------------------------------------------------------
def enveloped(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """A ``semif-eval-v2`` report of ``kind``: the envelope (where the report was computed; the records
    carry where they were scored), its inputs being the files ``body`` cites, then ``body``."""
    return make_report(kind, REPORT_FORMAT, carried_inputs(body), body)


def _load(run: str, labels: str | None) -> tuple[list[dict[str, Any]], list[metrics.Label], metrics.Table, int]:
    from scorer.records import read_records

    recs = read_records(run)
    labs = metrics.labels_from_decisions(labels) if labels else metrics.labels_from_records(recs, run)
    table, unlabelled = metrics.align(labs, recs, run)
    return recs, labs, table, unlabelled


def run_info(path: str, recs: list[dict[str, Any]]) -> dict[str, Any]:
    first = recs[0] if recs else {}
    return {"path": path, "sha256": sha256_file(Path(path)), "records": len(recs), "model": first.get("model"),
            "mode": first.get("mode"), "kernel": first.get("kernel"), "prompt_version": first.get("prompt_version"),
            "temperature": first.get("temperature"), "permute": (first.get("permute") or {}).get("k")}


def _labels_info(labels: str | None) -> dict[str, Any] | None:
    return None if labels is None else {"path": labels, "sha256": sha256_file(Path(labels))}


def save_report(report: dict[str, Any], out: Path, force: bool) -> None:
    """Write ``report`` to ``out`` (never over an existing file unless ``force``) and say so on stderr."""
    write_report(out, report, force)
    print(f"[semif] wrote {out}", file=sys.stderr)


def check_outputs(report: Path, force: bool, records: Path) -> None:
    """A report plus a records file: refuse either before writing any (the records file is never overwritten)."""
    if report.resolve() == records.resolve():
        raise InputError(str(records), None, None, "is also the report's --output", "two different paths")
    check_writable(report, force, FORCE_HINT)
    check_writable(records, False)


def default_out(prefix: str, run: str) -> Path:
    return RESULTS_DIR / f"{prefix}-{Path(run).stem}.json"


def _title(what: str, run_info: dict[str, Any], rows: int) -> str:
    """Heading for the site: what, model, backend, mode and the run file."""
    m = run_info.get("model") or {}
    return (f"{what} · {m.get('key')} {m.get('backend')} {run_info.get('mode')} · {Path(run_info['path']).stem} "
            f"({rows} rows)")


def _ci(m: dict[str, float]) -> str:
    return f"{m['value']:.3f}  [{m['ci_lo']:.3f}, {m['ci_hi']:.3f}]"


# --- semif eval ---------------------------------------------------------------------------------------------------
def eval_report(run: str, labels: str | None, compare: str | None = None, reps: int = metrics.BOOTSTRAP_REPS,
                seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """The full report of one run (and, with ``compare``, of run B against it on the same rows)."""
    from scorer.records import read_records

    recs_b = read_records(compare) if compare else []  # every input is read (and validated) before any work
    recs, labs, table, unlabelled = _load(run, labels)
    info = run_info(run, recs)
    report: dict[str, Any] = {
        "title": _title("Decision quality", info, len(labs)),
        "run": info, "labels": _labels_info(labels), "groups": len({lb.group for lb in labs}),
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
        from scorer.calibration.evaluate import before_after

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
        print(f"{label:<18} {_ci(rep['metrics'][k])}")
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
        from scorer.calibration.evaluate import print_before_after

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


# --- semif calibrate ----------------------------------------------------------------------------------------------
def calibrate_report(run: str, labels: str | None, folds: int, reps: int = metrics.BOOTSTRAP_REPS,
                     seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    from scorer.calibration import temperature

    recs, _, table, _ = _load(run, labels)
    if any(r.get("temperature") not in (None, 1.0) for r in recs):
        raise InputError(run, None, "temperature", "the records are already temperature-scaled",
                         "raw records (fit on what the model produced)")
    fit = temperature.fit_table(table)
    oof = temperature.out_of_fold(table, folds, reps, seed)
    info = run_info(run, recs)
    return enveloped("calibrate", {
        "title": _title("Calibration", info, table.n), "run": info, "labels": _labels_info(labels),
        "counts": table.counts(),
        "method": "temperature scaling, softmax(option_logits / T); T minimises mean NLL (golden-section "
                  f"search over log T in [{temperature.T_MIN}, {temperature.T_MAX}])",
        "fit_all_rows": {"temperature": fit.temperature, "nll_before": fit.nll_before, "nll_after": fit.nll_after,
                         "rows": fit.rows, "at_bound": fit.at_bound, "iterations": fit.iterations,
                         "note": "in-sample: this is the T to apply; judge it by the out-of-fold numbers"},
        "out_of_fold": oof,
        "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
    })


def print_calibrate(rep: dict[str, Any]) -> None:
    f, o = rep["fit_all_rows"], rep["out_of_fold"]
    print(f"{rep['run']['path']}: T = {f['temperature']:.4f} (fitted on all {f['rows']} rows; NLL "
          f"{f['nll_before']:.4f} -> {f['nll_after']:.4f} in-sample{'; at the search bound' if f['at_bound'] else ''})")
    temps = ", ".join(f"{x['temperature']:.3f}" for x in o["per_fold"])
    print(f"out of fold ({o['folds']} group-disjoint folds; fold T: {temps}):")
    for k in ("ece", "nll", "brier", "accuracy"):
        print(f"  {k:<9} before {_ci(o['before'][k])}   after {_ci(o['after'][k])}")
    print(f"  argmax unchanged: {o['argmax_unchanged']}")


def apply_file(run: str, out: Path, temperature: float) -> int:
    """Write ``run``'s records with ``temperature`` applied (choices unchanged). Returns the count."""
    from scorer.calibration.temperature import apply_temperature
    from scorer.records import dumps_record, read_records

    check_writable(out)
    recs = [apply_temperature(r, temperature) for r in read_records(run)]
    write_atomic(out, b"".join(dumps_record(r) for r in recs))
    return len(recs)


# --- semif order --------------------------------------------------------------------------------------------------
def order_report(labels: str | None, base: str, reversed_: str, permuted: str | None, permuted_reversed: str | None,
                 reps: int = metrics.BOOTSTRAP_REPS, seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """Flips under option reversal and accuracy, with and without the order-averaged readout, and its cost."""
    from scorer.records import read_records

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

    title = _title("Order robustness (options reversed)", run_info(base, recs_a), len(labs))
    rep: dict[str, Any] = {"title": title, "labels": _labels_info(labels),
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
        print(f"{label:<16} {_ci(s['accuracy_original']):>24} {_ci(s['accuracy_reversed']):>24} "
              f"{s['flips']:>4} ({100 * s['flip_rate']:4.1f}%) {'n/a' if tv is None else f'{tv:.3f}':>8} "
              f"{sum(s['time_s']) / 2:>8.1f}")
    if "cost" in rep and rep["cost"]["time_ratio"]:
        print(f"cost of the order-averaged readout: {rep['cost']['time_ratio']:.2f}x the time of one plain pass")


# --- semif route --------------------------------------------------------------------------------------------------
def escalates(fast: dict[str, Any] | None, threshold: float) -> bool:
    """The margin policy: escalate a decision whose fast-path margin is below ``threshold`` (or that the
    fast path did not produce)."""
    return fast is None or float(fast["margin"]) < threshold


def route_records(fast: list[dict[str, Any]], reference: list[dict[str, Any]],
                  threshold: float) -> list[dict[str, Any]]:
    """The records a two-path policy returns: the fast record, or for escalated rows the reference one.

    Rows are those of the fast run in its order, then any only the reference has. An escalated
    record's timing is the fast time plus the reference time (the policy paid for both).
    """
    ref = {r["id"]: r for r in reference}
    fst = {r["id"]: r for r in fast}
    ids = [r["id"] for r in fast] + [r["id"] for r in reference if r["id"] not in fst]
    out = []
    for rid in ids:
        f = fst.get(rid)
        if f is not None and not escalates(f, threshold):
            rec = dict(f)
            rec["escalated"] = False
            rec["route"] = {"policy": "margin", "threshold": threshold, "path": "fast", "fast_margin": f["margin"]}
        elif rid in ref:
            r = ref[rid]
            rec = dict(r)
            f_s = float(f["timing"]["total_s"]) if f else 0.0
            rec["timing"] = {**r["timing"], "total_s": round(f_s + float(r["timing"]["total_s"]), 6),
                             "fast_total_s": round(f_s, 6), "reference_total_s": float(r["timing"]["total_s"])}
            rec["escalated"] = True
            rec["route"] = {"policy": "margin", "threshold": threshold, "path": "reference",
                            "fast_margin": None if f is None else f["margin"],
                            "fast_choice": None if f is None else f["choice"]}
        else:
            continue  # neither path has this row: eval counts it as missing
        out.append(rec)
    return out


def route_report(fast: str, reference: str, labels: str | None, thresholds: tuple[float, ...],
                 reps: int = metrics.BOOTSTRAP_REPS, seed: int = metrics.BOOTSTRAP_SEED) -> dict[str, Any]:
    """Accuracy, share escalated and time of the margin policy at each threshold, next to each path alone."""
    from scorer.records import read_records

    rf, rr = read_records(fast), read_records(reference)
    labs = metrics.labels_from_decisions(labels) if labels else metrics.labels_from_records(rr, reference)
    wanted = {lb.id for lb in labs}

    def row(name: str, recs: list[dict[str, Any]], threshold: float | None) -> dict[str, Any]:
        t, _ = metrics.align(labs, recs, name)
        boot = metrics.bootstrap(t, reps, seed)
        esc = sum(1 for r in recs if r["id"] in wanted and r.get("escalated"))
        return {"policy": name, "threshold": threshold, "accuracy": boot["accuracy"],
                "balanced_accuracy": boot["balanced_accuracy"], "nll": boot["nll"]["value"],
                "ece": boot["ece"]["value"], "escalated": esc, "escalated_share": esc / t.n,
                "time_s": float(t.seconds.sum()), "counts": t.counts()}

    rows = [row("fast only", rf, None), row("reference only", rr, None)]
    ref_time = rows[1]["time_s"]
    for th in thresholds:
        rows.append(row(f"margin<{th:g}", route_records(rf, rr, th), th))
    for r in rows:
        r["time_vs_reference"] = r["time_s"] / ref_time if ref_time else None
    fi, ri = run_info(fast, rf), run_info(reference, rr)
    fm, rm = fi.get("model") or {}, ri.get("model") or {}
    title = (f"Two-path routing · fast {fm.get('key')} {fm.get('backend')} → reference {rm.get('key')} "
             f"{rm.get('backend')} · {Path(reference).stem} ({len(labs)} rows)")
    return enveloped("route", {
            "title": title, "fast": fi, "reference": ri, "labels": _labels_info(labels),
            "rows": len(labs), "policy": "escalate a decision to the reference path when its fast-path margin "
                                         "(top minus second probability) is below the threshold",
            "time_accounting": "fast time for every row + reference time for escalated rows (timing.total_s)",
            "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
            "table": rows})


def print_route(rep: dict[str, Any]) -> None:
    fm, rm = rep["fast"].get("model") or {}, rep["reference"].get("model") or {}
    print(f"two-path routing on {rep['rows']} rows · fast: {fm.get('key')} {fm.get('backend')} "
          f"{rep['fast'].get('mode')} · reference: {rm.get('key')} {rm.get('backend')} {rep['reference'].get('mode')}")
    print(f"{'policy':<16} {'accuracy [95% CI]':>24} {'bal.acc':>8} {'escalated':>10} {'time s':>8} {'vs ref':>7}")
    for r in rep["table"]:
        print(f"{r['policy']:<16} {_ci(r['accuracy']):>24} {r['balanced_accuracy']['value']:>8.3f} "
              f"{100 * r['escalated_share']:>9.1f}% {r['time_s']:>8.1f} {r['time_vs_reference']:>6.2f}x")


def route_live(decisions: list[Decision], fast: Any, reference: Any, threshold: float, run: dict[str, Any],
               fast_mode: str = "direct", max_batch_tokens: int = 4096, layout: str = "state-major",
               demos: Any = None) -> list[dict[str, Any]]:
    """The margin policy as it runs in production: score every row on the fast backend, then only the
    escalated rows on the reference backend (fresh passes). Returns the routed records in input order.
    Both paths render ``layout`` (a resolved one) with ``demos``' demonstrations (:mod:`scorer.demos`)."""
    from scorer.runs.score import prepare, score_items

    fast_items = prepare(fast, decisions, with_prefix=fast_mode != "direct", layout=layout, demos=demos)
    fast_recs = list(score_items(fast, fast_items, fast_mode, run, 0, max_batch_tokens))
    escalated = [d for d, r in zip(decisions, fast_recs, strict=True) if escalates(r, threshold)]
    ref_recs = list(score_items(reference, prepare(reference, escalated, with_prefix=False, layout=layout,
                                                   demos=demos), "direct", run)) if escalated else []
    out = route_records(fast_recs, ref_recs, threshold)
    for i, rec in enumerate(out):
        rec["run"] = {**rec["run"], "index": i}
    return out

