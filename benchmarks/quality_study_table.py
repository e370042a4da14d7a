"""The quality study's numbers (benchmarks/quality_study.py), from its runs' records alone: every decision
calibrated out of fold, metrics with group-bootstrap intervals, the paired comparison with today's default, the
cost of each configuration, the winner and the Markdown table.

* **Out of fold.** Fold ``f``'s held-out rows take their records from the run that served fold ``f``
  (:mod:`benchmarks.quality_study_plan`); ``prior`` and ``bias`` are fitted on that run's records of the rows
  outside fold ``f`` only (:func:`scorer.calibration.prior.fit_prior`, :func:`scorer.calibration.bias.fit_bias`) and
  applied to the held-out ones (:func:`scorer.calibration.evaluate.apply_held_out`: a held-out record the fit does
  not cover keeps its raw numbers, and is counted as ``uncovered``, as is one whose entry had too few rows).
* **Metrics.** :mod:`scorer.evaluation.metrics`, as ``semif eval`` computes them: the headline is balanced accuracy
(within each
  family, averaged over families), with the 95 % interval of a seeded group bootstrap; the paired difference with
  the baseline (state-major, k 0, letters, no calibration) on the same rows has its own paired interval, and a
  configuration whose interval does not lie above 0 is published as not helping.
* **Ceiling.** How far a calibration alone could take each configuration's records, to say why a target is out of
  reach (:func:`ceiling`): the label-free prior fitted on the very rows it scores (what ``--batch-calibrate`` does;
  no labels, but no held-out rows either), at the default row minimum and with every signature whatever its size;
  and the best option offsets chosen *in sample* with the evaluated rows' labels, per family
  (:func:`scorer.calibration.methods_report.family_offset_bound`, an optimistic bound of every family-level offset
  fit) and at the prior's own levels (a question with enough rows on its own, the others by family: what a
  per-question fit such as shape-full's 21 criteria could reach).
  None of them is an out-of-fold number; they are upper marks for what recalibrating these scores can do.
* **The prior's fallback.** The out-of-fold prior again under each fallback (none, family, pooled;
  :func:`prior_fallbacks`): what a pool is worth for questions the training folds never saw.
* **Cost.** From the runs' records and clocks: decisions scored, scoring seconds (the public API call, prompts
  rendered included), prompt tokens, tokens reused from the radix prefix cache, prefix tokens prefilled and suffix
  tokens computed (``cache`` block, ``suffix_tokens``; a direct-mode record computes all its tokens).

Pure: records in, numbers out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks.quality_study_plan import Config, Plan, StudySet
from scorer.calibration import bias, prior
from scorer.calibration.core import Calibration
from scorer.calibration.evaluate import apply_held_out
from scorer.calibration.methods_report import OFFSET_GRID, best_offsets, family_offset_bound
from scorer.calibration.methods_report import table as probs_table
from scorer.decision.policy import calibrated_view
from scorer.evaluation import metrics

METRIC = "balanced_accuracy"
SHOWN = ("balanced_accuracy", "accuracy", "macro_f1", "nll", "brier", "ece")
BASELINE = ("state-major", 0, "letters", "none")
"""Today's default: what every configuration is compared with."""
PRIOR = {"estimator": "mean", "min_rows": prior.DEFAULT_MIN_ROWS, "fallback": "pooled", "labels": "none"}
"""``semif calibrate prior --estimator mean --fallback pooled`` (a signature with too few rows is covered by its
family, its option set, then per option id)."""
BIAS = {"min_rows": bias.DEFAULT_MIN_ROWS, "l2": bias.DEFAULT_L2, "temperature": False, "balanced": False,
        "levels": list(bias.LEVELS), "labels": "the training folds' labels"}
"""``semif calibrate bias`` with its defaults."""

Records = dict[int, dict[str, Any]]
"""A run's records by row index in its set."""


def fitter(kind: str, gold: dict[str, str], fallback: str | None = None,
           ) -> Callable[[list[dict[str, Any]]], Calibration]:
    """The fit of a calibration kind on records (their own signatures); ``fallback`` replaces the prior's
    (:data:`PRIOR`) for :func:`prior_fallbacks`."""
    if kind == "prior":
        fb = PRIOR["fallback"] if fallback is None else fallback
        return lambda recs: prior.fit_prior(recs, [r["signature"] for r in recs], PRIOR["estimator"],
                                            PRIOR["min_rows"], fb)
    if kind == "bias":
        return lambda recs: bias.fit_bias(recs, [r["signature"] for r in recs], gold, BIAS["min_rows"],
                                          BIAS["temperature"], BIAS["l2"], BIAS["balanced"], BIAS["levels"])
    raise ValueError(f"no fit for calibration {kind!r}")


def fold_records(p: Plan, c: Config, records: Callable[[Any], Records]) -> Callable[[int], Records]:
    """``by_fold(f)``: the records of the run of configuration ``c`` that served fold ``f`` (its one run when the
    configuration is scored once for every fold)."""
    fold_run = {r.fold: r for r in p.runs_of(c)}
    return lambda f: records(fold_run.get(f, fold_run.get(None)))


def held_out(s: StudySet, by_fold: Callable[[int], Records], calibration: str, fallback: str | None = None,
             ) -> tuple[list[dict[str, Any]], int]:
    """Every row's out-of-fold record as a consumer of ``calibration`` sees it (row order), and how many held-out
    records the training folds' fit left raw (no entry covered them, or only one fitted on too few rows).
    ``by_fold(f)``: the records of the run that served fold ``f``; ``fallback``: see :func:`fitter`."""
    gold = {lb.id: lb.label for lb in s.labels}
    out: dict[int, dict[str, Any]] = {}
    uncovered = 0
    for f in range(s.folds):
        recs = by_fold(f)
        held = s.rows_in(f)
        if calibration == "none":
            out.update({i: recs[i] for i in held})
            continue
        cal = fitter(calibration, gold, fallback)([recs[i] for i in s.rows_outside(f)])
        for i in held:
            rec, _ = apply_held_out(cal, recs[i], recs[i]["signature"])
            uncovered += not rec["calibrated"]["applied"]  # no entry, or one fitted on too few rows: raw numbers
            out[i] = calibrated_view(rec)
    return [out[i] for i in range(len(s.decisions))], uncovered


CEILINGS = {
    "batch_prior": "the label-free prior fitted on the scored rows themselves (--batch-calibrate, default row minimum, "
                   "pooled fallback)",
    "batch_prior_every": "the same with every signature calibrated whatever its size (--calibration-min-rows 1)",
    "offset_bound": "the best per-family option offsets chosen in sample with the evaluated rows' labels (optimistic)",
    "offset_bound_levels": "the best option offsets chosen in sample per question where it has the prior's row "
                           "minimum, else per family and option set, as the prior's own levels (optimistic)"}
"""The ceiling's measures (module docstring), each a mean per-family balanced accuracy."""


def _batch_prior(s: StudySet, recs: list[dict[str, Any]], min_rows: int) -> float:
    cal = prior.fit_prior(recs, [r["signature"] for r in recs], PRIOR["estimator"], min_rows, PRIOR["fallback"])
    view = [calibrated_view(apply_held_out(cal, r, r["signature"])[0]) for r in recs]
    return metrics.family_balanced_accuracy(metrics.align(s.labels, view, "batch prior")[0])


def _level_offset_bound(s: StudySet, recs: list[dict[str, Any]]) -> float:
    """:data:`CEILINGS` ``offset_bound_levels``: rows grouped as the prior pools them (a question with at least
    ``PRIOR["min_rows"]`` rows is its own group, the others go by family and option set); each group of at most 3
    options takes the grid's offsets that maximise its own balanced accuracy; the set's metric on the result."""
    sizes = Counter(r["signature"] for r in recs)
    groups: dict[Any, list[int]] = {}
    for i, (lb, r) in enumerate(zip(s.labels, recs, strict=True)):
        own = sizes[r["signature"]] >= PRIOR["min_rows"]
        groups.setdefault(("question", r["signature"]) if own else ("family", lb.family, lb.option_ids), []).append(i)
    lp = [np.log(np.maximum(np.asarray(r["probabilities"], dtype=float), 1e-300)) for r in recs]
    for idx in groups.values():
        if len(lp[idx[0]]) > 3:
            continue  # the grid over more than two free offsets is too large to search: the raw readout stands
        y = np.array([s.labels[i].option_ids.index(s.labels[i].label) for i in idx])
        off, _, _ = best_offsets(np.stack([lp[i] for i in idx]), y, OFFSET_GRID)
        for i in idx:
            lp[i] = lp[i] - off
    exp = [np.exp(v - v.max()) for v in lp]
    probs = {lb.id: e / e.sum() for lb, e in zip(s.labels, exp, strict=True)}
    return metrics.family_balanced_accuracy(probs_table(s.labels, probs))


def ceiling(sets: list[StudySet], p: Plan, records: Callable[[Any], Records]) -> list[dict[str, Any]]:
    """Per configuration: its raw records (a row's from the run that served its fold) judged by each measure of
    :data:`CEILINGS`, beside the raw readout's own balanced accuracy."""
    by_name = {s.name: s for s in sets}
    out = []
    for c in p.configs:
        s = by_name[c.set]
        by_fold = fold_records(p, c, records)
        recs = [by_fold(s.fold_of_row[i])[i] for i in range(len(s.decisions))]
        raw = metrics.family_balanced_accuracy(metrics.align(s.labels, recs, "raw")[0])
        bound = family_offset_bound(s.labels, {r["id"]: np.asarray(r["probabilities"], dtype=float) for r in recs})
        out.append({"set": c.set, "layout": c.layout, "k": c.k, "readout": c.readout, "raw": raw,
                    "batch_prior": _batch_prior(s, recs, PRIOR["min_rows"]),
                    "batch_prior_every": _batch_prior(s, recs, 1),
                    "offset_bound": bound["mean_per_family_balanced_accuracy"],
                    "offset_bound_levels": _level_offset_bound(s, recs),
                    "offset_bound_per_family": {f: v["bound"] for f, v in bound["per_family"].items()}})
    return out


def ceiling_summary(rows: list[dict[str, Any]], ceil: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per set: the best out-of-fold cell of the table and, for each measure of :data:`CEILINGS`, its best
    configuration, so a reader sees how far each kind of recalibration could go at most."""
    out = []
    for set_name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == set_name]
        best = max(mine, key=lambda r: r[METRIC]["value"])
        entry: dict[str, Any] = {"set": set_name, "out_of_fold": {
            "value": best[METRIC]["value"], "name": config_name(best["layout"], best["k"], best["readout"],
                                                                 best["calibration"])}}
        cs = [c for c in ceil if c["set"] == set_name]
        for measure in CEILINGS:
            top = max(cs, key=lambda c, m=measure: c[m])
            entry[measure] = {"value": top[measure], "name": f"{top['layout']} · k={top['k']} · {top['readout']}"}
        out.append(entry)
    return out


def prior_fallbacks(sets: list[StudySet], p: Plan, records: Callable[[Any], Records]) -> list[dict[str, Any]]:
    """Per configuration, the out-of-fold prior under every fallback of :data:`scorer.calibration.prior.FALLBACKS`
    (the table's ``prior`` uses :data:`PRIOR`'s): its balanced accuracy and how many held-out rows each fit left raw.
    What the command line's default fallback is chosen on."""
    by_name = {s.name: s for s in sets}
    out = []
    for c in p.configs:
        s = by_name[c.set]
        by_fold = fold_records(p, c, records)
        entry: dict[str, Any] = {"set": c.set, "layout": c.layout, "k": c.k, "readout": c.readout}
        for fb in prior.FALLBACKS:
            recs, uncovered = held_out(s, by_fold, "prior", fb)
            entry[fb] = {METRIC: metrics.family_balanced_accuracy(metrics.align(s.labels, recs, fb)[0]),
                         "uncovered": uncovered}
        out.append(entry)
    return out


def fallback_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per set: against ``none``, in how many configurations each other fallback is higher, equal and lower, and the
    mean difference."""
    out = []
    for set_name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == set_name]
        entry: dict[str, Any] = {"set": set_name, "configurations": len(mine)}
        for fb in prior.FALLBACKS[1:]:
            d = [r[fb][METRIC] - r["none"][METRIC] for r in mine]
            entry[fb] = {"higher": sum(x > 1e-12 for x in d), "equal": sum(abs(x) <= 1e-12 for x in d),
                         "lower": sum(x < -1e-12 for x in d), "mean_difference": sum(d) / len(d)}
        out.append(entry)
    return out


def run_cost(records: Sequence[dict[str, Any]], scoring_s: float) -> dict[str, Any]:
    """What one run cost, from its records (module docstring) and its clock."""
    cache = [r.get("cache") or {} for r in records]
    reused = sum(int(c.get("reused_tokens", 0)) for c in cache)
    prefilled = sum(int(c["prefilled_tokens"]) if c else int(r["input_tokens"]) for c, r in zip(cache, records,
                                                                                                 strict=True))
    suffix = sum(int(r.get("suffix_tokens") or 0) for r in records)
    return {"decisions": len(records), "scoring_s": scoring_s,
            "input_tokens": sum(int(r["input_tokens"]) for r in records), "reused_tokens": reused,
            "prefilled_tokens": prefilled, "suffix_tokens": suffix,
            "records_total_s": sum(float(r["timing"]["total_s"]) for r in records)}


def config_cost(costs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The runs of one configuration summed, with the per-decision figures the table shows."""
    tot = {k: sum(c[k] for c in costs) for k in ("decisions", "scoring_s", "input_tokens", "reused_tokens",
                                                  "prefilled_tokens", "suffix_tokens", "records_total_s")}
    n = max(tot["decisions"], 1)
    computed = tot["prefilled_tokens"] + tot["suffix_tokens"]
    return {"runs": len(costs), **tot, "computed_tokens": computed, "seconds_per_decision": tot["scoring_s"] / n,
            "computed_tokens_per_decision": computed / n,
            "reused_share": tot["reused_tokens"] / tot["input_tokens"] if tot["input_tokens"] else 0.0}


def _verdict(delta: dict[str, float]) -> str:
    if delta["ci_lo"] > 0:
        return "helps"
    if delta["ci_hi"] < 0:
        return "hurts"
    return "no clear difference"


def table(sets: list[StudySet], p: Plan, calibrations: list[str], records: Callable[[Any], Records],
          costs: Callable[[Any], dict[str, Any]], reps: int, seed: int) -> list[dict[str, Any]]:
    """One row per (configuration, calibration): metrics out of fold with intervals, the paired comparison with the
    baseline (when it is in the grid), uncovered rows and the configuration's cost. ``records(run)`` and
    ``costs(run)`` give each run's records and :func:`run_cost`."""
    by_name = {s.name: s for s in sets}
    rows: list[dict[str, Any]] = []
    tables: dict[tuple[str, str, int, str, str], metrics.Table] = {}
    for c in p.configs:
        s = by_name[c.set]
        runs = p.runs_of(c)
        by_fold = fold_records(p, c, records)
        cost = config_cost([costs(r) for r in runs])
        for cal in calibrations:
            recs, uncovered = held_out(s, by_fold, cal)
            t, _ = metrics.align(s.labels, recs, f"{c.key}.{cal}")
            tables[(c.set, c.layout, c.k, c.readout, cal)] = t
            boot = metrics.bootstrap(t, reps, seed)
            rows.append({"set": c.set, "layout": c.layout, "k": c.k, "readout": c.readout, "calibration": cal,
                         "rows": t.n, **{m: boot[m] for m in SHOWN}, "counts": t.counts(), "uncovered": uncovered,
                         "cost": cost})
    for row in rows:
        base = tables.get((row["set"], *BASELINE))
        if base is None:
            row["vs_baseline"] = None
            continue
        d = metrics.paired(base, tables[(row["set"], row["layout"], row["k"], row["readout"], row["calibration"])],
                           reps, seed)["deltas"][METRIC]
        brow = next(r for r in rows if (r["set"], r["layout"], r["k"], r["readout"], r["calibration"])
                    == (row["set"], *BASELINE))
        ratio = (row["cost"]["seconds_per_decision"] / brow["cost"]["seconds_per_decision"]
                 if brow["cost"]["seconds_per_decision"] > 0 else None)
        row["vs_baseline"] = {"balanced_accuracy_delta": d["delta"], "ci_lo": d["ci_lo"], "ci_hi": d["ci_hi"],
                              "verdict": "baseline" if row is brow else _verdict(d), "time_ratio": ratio}
    return rows


def demo_costs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What demonstrations cost: for each set, layout and readout, every k's seconds and computed tokens per decision
    over k = 0's (issue #22: k = 8 should stay within 1.15x k = 0's time, the demonstrations' prefill paid once per
    distinct prefix)."""
    first: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for r in rows:  # the cost does not depend on the calibration: one row per configuration
        first.setdefault((r["set"], r["layout"], r["readout"], r["k"]), r["cost"])
    out = []
    for (s, layout, readout, k), cost in first.items():
        base = first.get((s, layout, readout, 0))
        if k == 0 or base is None:
            continue
        out.append({"set": s, "layout": layout, "readout": readout, "k": k,
                    "time_ratio": cost["seconds_per_decision"] / base["seconds_per_decision"]
                    if base["seconds_per_decision"] > 0 else None,
                    "computed_tokens_ratio": cost["computed_tokens_per_decision"] / base["computed_tokens_per_decision"]
                    if base["computed_tokens_per_decision"] > 0 else None,
                    "reused_share": cost["reused_share"]})
    return out


def config_name(layout: str, k: int, readout: str, calibration: str) -> str:
    return f"{layout} · k={k} · {readout} · calibration {calibration}"


def winner(rows: list[dict[str, Any]], sets: list[str]) -> dict[str, Any] | None:
    """The configuration with the highest balanced accuracy averaged over the sets, among those measured on every
    set (ties: fewer computed tokens per decision, then the grid's order)."""
    grouped: dict[tuple[str, int, str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        grouped.setdefault((r["layout"], r["k"], r["readout"], r["calibration"]), {})[r["set"]] = r
    full = {key: per for key, per in grouped.items() if set(per) == set(sets)}
    if not full:
        return None

    def score(key: tuple[str, int, str, str]) -> tuple[float, float]:
        per = full[key]
        mean = sum(per[s][METRIC]["value"] for s in sets) / len(sets)
        cost = sum(per[s]["cost"]["computed_tokens_per_decision"] for s in sets) / len(sets)
        return mean, -cost

    best = max(full, key=score)  # max keeps the first of equals: the grid's order
    layout, k, readout, cal = best
    return {"layout": layout, "k": k, "readout": readout, "calibration": cal,
            "name": config_name(layout, k, readout, cal), "metric": METRIC,
            "metric_words": "balanced accuracy (within each family, averaged over families), out of fold, averaged "
                            "over the sets",
            "value": score(best)[0], "per_set": {s: full[best][s][METRIC] for s in sets}}


def _ci(m: dict[str, float]) -> str:
    return f"{m['value']:.3f} [{m['ci_lo']:.3f}, {m['ci_hi']:.3f}]"


def markdown(report: dict[str, Any]) -> str:
    """The Markdown table of a study report: one line per set and configuration, then the skipped ones."""
    out = ["| set | layout | k | readout | calibration | balanced accuracy [95 % CI] | vs default [95 % CI] | "
           "verdict | accuracy | s / decision | computed tokens / decision | reused |",
           "|---|---|---:|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in report["table"]:
        vs = r.get("vs_baseline")
        delta = (f"{vs['balanced_accuracy_delta']:+.3f} [{vs['ci_lo']:+.3f}, {vs['ci_hi']:+.3f}]"
                 if vs and vs["verdict"] != "baseline" else "—")
        verdict = vs["verdict"] if vs else "no baseline in the grid"
        c = r["cost"]
        out.append(f"| {r['set']} | {r['layout']} | {r['k']} | {r['readout']} | {r['calibration']} | "
                   f"{_ci(r['balanced_accuracy'])} | {delta} | {verdict} | {r['accuracy']['value']:.3f} | "
                   f"{c['seconds_per_decision']:.3f} | {c['computed_tokens_per_decision']:.0f} | "
                   f"{c['reused_share']:.0%} |")
    for s in report.get("skipped", []):
        out.append(f"| {s['set']} | {s['layout']} | {s['k']} | {s['readout']} | — | skipped: {s['reason']} "
                   "| | | | | | |")
    costs = report.get("demo_costs") or []
    if costs:
        out += ["", "| set | layout | readout | k | time ÷ k = 0 | computed tokens ÷ k = 0 | reused |",
                "|---|---|---|---:|---:|---:|---:|"]
        for c in costs:
            t, tok = c["time_ratio"], c["computed_tokens_ratio"]
            out.append(f"| {c['set']} | {c['layout']} | {c['readout']} | {c['k']} | "
                       f"{'—' if t is None else f'{t:.2f}×'} | {'—' if tok is None else f'{tok:.2f}×'} | "
                       f"{c['reused_share']:.0%} |")
    summary = (report.get("ceiling") or {}).get("summary") or []
    if summary:
        out += ["", "| set | best out of fold | in-batch prior | in-batch prior, every signature | "
                    "in-sample family offsets (optimistic) | in-sample offsets per question or family (optimistic) |",
                "|---|---:|---:|---:|---:|---:|"]
        for e in summary:
            cells = [f"{e[m]['value']:.3f} ({e[m]['name']})" for m in ("out_of_fold", *CEILINGS)]
            out.append(f"| {e['set']} | " + " | ".join(cells) + " |")
    fallbacks = (report.get("prior_fallbacks") or {}).get("summary") or []
    if fallbacks:
        out += ["", "| set | prior's fallback against none | higher | equal | lower | mean difference |",
                "|---|---|---:|---:|---:|---:|"]
        for e in fallbacks:
            for fb in (k for k in e if k not in ("set", "configurations")):
                v = e[fb]
                out.append(f"| {e['set']} | {fb} | {v['higher']} | {v['equal']} | {v['lower']} | "
                           f"{v['mean_difference']:+.3f} |")
    w = report.get("winner")
    if w:
        out.append("")
        out.append(f"Winner ({w['metric_words']}): **{w['name']}**, {w['value']:.3f}.")
    return "\n".join(out) + "\n"
