"""One drawing function per report kind: the charts (and any table of its own) each kind gets, with every
number taken from the report."""

from __future__ import annotations

from typing import Any

from scorer.site.files import object_at
from scorer.site.formatting import ci_note, finite, fmt_value, metric_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, svg_reliability


def _objects(obj: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """``obj[key]`` when it is a list of objects, else an empty list (a kind's optional section is absent)."""
    v = obj.get(key)
    return v if isinstance(v, list) and all(isinstance(x, dict) for x in v) else []


def draw_bench(rel: str, rep: ReportFile) -> None:
    """Shape benchmark (``kind: bench``): decisions/s per pass, annotated with its drift against the fresh path."""
    passes = rep.obj.get("passes")
    if not isinstance(passes, dict) or not passes or not all(isinstance(p, dict) for p in passes.values()):
        raise BuildError(f"{rel}: a bench report needs 'passes' (an object of passes by name, each an object)")
    bars = []
    for name, r in passes.items():
        rate = finite(r.get("decisions_per_s"))
        if rate is None:
            raise BuildError(f"{rel}: passes.{name}.decisions_per_s: {r.get('decisions_per_s')!r} "
                             "(expected a finite number)")
        vs = object_at(r, "vs_fresh")
        drift = finite(vs.get("max_abs_dp"))
        flips = vs.get("n_flips")
        notes = []
        if finite(r.get("speedup_vs_fresh")) is not None:
            notes.append(f"{r['speedup_vs_fresh']:.2f}× fresh")
        if drift is not None:
            notes.append(f"max |Δp| {fmt_value(drift)}")
        if isinstance(flips, int):
            notes.append(f"{flips} flip{'' if flips == 1 else 's'}")
        if isinstance(r.get("escalated"), int):
            notes.append(f"{r['escalated']} escalated")
        bars.append((str(name), rate, " · ".join(notes)))
    rep.charts.append(svg_bars(bars, "decisions/s", "Decisions per second by pass (higher is faster); max |Δp| = "
                               "largest probability change against fresh scoring; flips = changed choices"))


def draw_quant(rel: str, rep: ReportFile) -> None:
    """Quantization ladder (``kind: quant``): speed and drift against the reference weights per rung."""
    rungs = rep.obj.get("rungs")
    if not isinstance(rungs, list) or not rungs or not all(isinstance(r, dict) for r in rungs):
        raise BuildError(f"{rel}: a quant report needs 'rungs' (a non-empty list of objects)")
    speed_bars, drift_bars = [], []
    for i, r in enumerate(rungs):
        if not isinstance(r.get("name"), str) or not r["name"]:
            raise BuildError(f"{rel}: rungs[{i}].name: {r.get('name')!r} (expected the rung's name, e.g. 'Q8_0')")
        size = finite(r.get("bytes"))
        label = f"{r['name']} ({size / 1e6:.0f} MB)" if size else r["name"]
        rate = finite(r.get("decisions_per_s"))
        drift = finite(r.get("max_abs_dp"))
        flips = r.get("changed_choices")
        note = f"{flips} flip{'' if flips == 1 else 's'}" if isinstance(flips, int) else ""
        if rate is not None:
            speed_bars.append((label, rate, ""))
        if drift is not None:
            drift_bars.append((label, drift, note))
    if speed_bars:
        rep.charts.append(svg_bars(speed_bars, "decisions/s", "Speed per quantization level (higher is faster)"))
    if drift_bars:
        rep.charts.append(svg_bars(drift_bars, "max |Δp| vs reference", "Drift per quantization level against "
                                   "the reference weights (lower is closer); flips = changed choices"))


def _reliability_chart(rep: ReportFile, series: list[tuple[str, Any]], title: str) -> None:
    """Reliability diagram(s) from 10-bin tables (lists of {lo, hi, n, confidence, accuracy})."""
    usable = [(name, bins) for name, bins in series if isinstance(bins, list) and bins
              and all(isinstance(b, dict) for b in bins)]
    if usable:
        rep.charts.append(svg_reliability(usable, title))


def _coverage_label(c: float | None) -> str:
    if c is None:
        return "?"
    return "all rows" if c >= 1 else f"{c:.0%} most confident"


def draw_eval(rel: str, rep: ReportFile) -> None:
    """Quality report: per-family balanced accuracy, risk–coverage and the reliability diagram."""
    bars = []
    for f in _objects(rep.obj, "per_family"):
        ba = finite(f.get("balanced_accuracy"))
        if ba is not None:
            bars.append((str(f.get("family")), ba,
                         f"accuracy {fmt_value(finite(f.get('accuracy')))} · {f.get('rows', '?')} rows · "
                         f"chance {fmt_value(finite(f.get('chance_accuracy')))}"))
    if bars:
        rep.charts.append(svg_bars(bars, "balanced accuracy", "Balanced accuracy per family (1 = every class "
                                   "right; chance is 1 / number of options)"))
    rc = []
    for r in _objects(rep.obj, "risk_coverage"):
        acc = finite(r.get("accuracy"))
        if acc is not None:
            rc.append((_coverage_label(finite(r.get("coverage"))), acc,
                       f"{r.get('rows', '?')} rows, confidence ≥ {fmt_value(finite(r.get('min_confidence')))}"))
    if rc:
        rep.charts.append(svg_bars(rc, "accuracy", "Risk–coverage: accuracy on the most confident share of the "
                                   "rows (a useful score is more accurate where it is more confident)"))
    _reliability_chart(rep, [("top-label", rep.obj.get("reliability"))], "Reliability: accuracy per confidence "
                       "bin (on the diagonal = calibrated)")


def draw_calibrate(rel: str, rep: ReportFile) -> None:
    """Temperature scaling: ECE/NLL before and after, out of fold, and both reliability diagrams."""
    oof = object_at(rep.obj, "out_of_fold")
    bars = []
    for metric in ("ece", "nll", "brier"):
        for side in ("before", "after"):
            v = object_at(oof, side).get(metric)
            value = metric_value(v)
            if value is not None:
                bars.append((f"{metric.upper() if metric == 'ece' else metric} {side}", value, ci_note(v)))
    if bars:
        fit = rep.obj.get("fit_all_rows")
        t = finite(fit.get("temperature")) if isinstance(fit, dict) else None
        rep.charts.append(svg_bars(bars, "lower is better", "Before vs after temperature scaling, out of fold "
                                   f"(group-disjoint folds){'' if t is None else f'; T on all rows = {fmt_value(t)}'}"))
    _reliability_chart(rep, [("before", oof.get("reliability_before")), ("after", oof.get("reliability_after"))],
                       "Reliability before and after calibration, out of fold")


def draw_order(rel: str, rep: ReportFile) -> None:
    """Order robustness: flips under option reversal and accuracy, plain vs the order-averaged readout."""
    bars = []
    for side in ("plain", "permuted"):
        d = rep.obj.get(side)
        if not isinstance(d, dict) or not isinstance(d.get("flips"), int):
            continue
        rows = finite(rep.obj.get("rows")) or 0
        share = f" ({d['flips'] / rows:.0%})" if rows else ""
        bars.append((f"{side} readout", float(d["flips"]),
                     f"flips{share} · accuracy {fmt_value(metric_value(d.get('accuracy_original')))} original / "
                     f"{fmt_value(metric_value(d.get('accuracy_reversed')))} reversed"))
    if bars:
        cost = object_at(rep.obj, "cost")
        ratio = finite(cost.get("time_ratio"))
        rep.charts.append(svg_bars(bars, "decisions whose choice flips when the options are reversed",
                                   "Flips under option reversal (lower is more robust)"
                                   + ("" if ratio is None else f"; the averaged readout costs {ratio:.2f}× the time")))


def draw_route(rel: str, rep: ReportFile) -> None:
    """Two-path routing: accuracy per policy, with the share escalated and the time against the reference."""
    bars = []
    for r in _objects(rep.obj, "table"):
        acc = metric_value(r.get("accuracy"))
        if acc is None:
            continue
        share, tv = finite(r.get("escalated_share")), finite(r.get("time_vs_reference"))
        note = " · ".join(x for x in (ci_note(r.get("accuracy")),
                                      "" if share is None else f"{share:.0%} escalated",
                                      "" if tv is None else f"{tv:.2f}× ref. time") if x)
        bars.append((str(r.get("policy")), acc, note))
    if bars:
        rep.charts.append(svg_bars(bars, "accuracy", "Accuracy per routing policy: fast path alone, escalating "
                                   "decisions whose margin is below a threshold, reference path alone"))


def draw_peers(rel: str, rep: ReportFile) -> None:
    """Peer benchmark (``kind: peers``): semif against lm-eval / vLLM / SGLang on the same prompts — speed per
    tool, agreement with semif direct, token identity, and every peer that did not run with its reason."""
    tools = rep.obj.get("tools")
    if not isinstance(tools, dict) or not tools or not all(isinstance(t, dict) for t in tools.values()):
        raise BuildError(f"{rel}: a peers report needs 'tools' (an object of tool blocks)")
    agree = object_at(rep.obj, "agreement")
    speed, whole, rows, missing = [], [], [], []
    for name, t in tools.items():
        a = object_at(agree, name)
        ident = object_at(t, "identity")
        same = f"{ident['identical']}/{ident['rows']}" if "identical" in ident and "rows" in ident else None
        rate = finite(t.get("decisions_per_s"))
        if t.get("status") == "ok" and rate is not None:
            dp = finite(a.get("max_abs_dp"))
            speed.append((str(name), rate, "" if dp is None else f"max |Δp| {fmt_value(dp)} · "
                          f"{fmt_value(a.get('differing_choices'))} choices differ"))
        proc, load = finite(t.get("process_s")), finite(t.get("load_s"))
        if t.get("status") == "ok" and proc is not None:
            whole.append((str(name), proc, "" if load is None else f"of which loading the model {fmt_value(load)} s"))
        rss = finite(t.get("peak_rss_bytes"))
        rows.append([str(name), fmt_value(t.get("status")), fmt_value(finite(t.get("load_s"))),
                     fmt_value(finite(t.get("score_s"))), fmt_value(finite(t.get("process_s"))), fmt_value(rate),
                     fmt_value(same), fmt_value(finite(a.get("max_abs_dp"))), fmt_value(a.get("differing_choices")),
                     "—" if rss is None else f"{rss / 2**30:.2f}"])
        if t.get("status") != "ok":
            fail = object_at(t, "failure")
            missing.append([str(name), fmt_value(t.get("status")), fmt_value(fail.get("stage")),
                            fmt_value(t.get("reason") or fail.get("error"))])
    ref = agree.get("reference", "the reference")
    if speed:
        rep.charts.append(svg_bars(speed, "decisions/s while scoring (higher is faster)",
                                   f"Scoring speed per tool on the same prompts and weights; max |Δp| and differing "
                                   f"choices against {ref}"))
    if whole:
        rep.charts.append(svg_bars(whole, "seconds, whole process (lower is faster)",
                                   "Whole process per tool: interpreter start, imports, model load and scoring"))
    rep.tables.append({"caption": "tools (medians over the repeats)",
                       "columns": ["tool", "status", "load s", "score s", "process s", "decisions/s",
                                   "identical tokens", f"max |Δp| vs {agree.get('reference', 'reference')}",
                                   "differing choices", "peak RSS GiB"], "rows": rows,
                       "note": "process s: the whole process, interpreter start and imports included"})
    ratio_rows = [[fmt_value(r.get("peer")), fmt_value(r.get("semif")), fmt_value(finite(r.get("score"))),
                   fmt_value(finite(r.get("process"))), fmt_value(finite(r.get("load")))]
                  for r in rep.obj.get("ratios") or [] if isinstance(r, dict)]
    if ratio_rows:
        rep.tables.append({"caption": "peer time ÷ semif time (> 1: semif is that many times faster)",
                           "columns": ["peer", "semif", "scoring", "whole process", "load"], "rows": ratio_rows,
                           "note": ""})
    if missing:
        rep.tables.append({"caption": "tools that did not run here, and why", "columns": ["tool", "status", "stage",
                                                                                       "reason (the error's text)"],
                           "rows": missing, "note": ""})
