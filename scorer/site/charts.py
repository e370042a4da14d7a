"""One drawing function per report kind: the charts (and any table of its own) each kind gets, with every
number taken from the report."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import ci_note, finite, fmt_value, metric_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, svg_reliability


def _find_rows(obj: dict[str, Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return v
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            return [{"name": kk, **vv} for kk, vv in v.items()]
    return []


def _first(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return None


def _require_rows(rel: str, obj: dict[str, Any], keys: tuple[str, ...], what: str) -> list[dict[str, Any]]:
    rows = _find_rows(obj, keys)
    if not rows:
        raise BuildError(f"{rel}: a {what} report needs one of {', '.join(keys)} (a list or map of objects)")
    return rows


def _render_shape(rel: str, rep: ReportFile) -> None:
    """Shape benchmark: decisions/s per pass, annotated with its drift against the fresh path."""
    rows = _require_rows(rel, rep.obj, ("passes", "modes", "results", "rows"), "shape benchmark")
    bars = []
    for i, r in enumerate(rows):
        label = _first(r, ("name", "mode", "key"))
        rate = finite(_first(r, ("decisions_per_s", "decisions_s", "rate")))
        if label is None or rate is None:
            raise BuildError(f"{rel}: pass {i} needs a name/mode and a finite decisions_per_s")
        vs = r.get("vs_fresh") if isinstance(r.get("vs_fresh"), dict) else r
        drift = finite(_first(vs, ("max_abs_dp", "drift_max_abs_dp")))
        flips = _first(vs, ("n_flips",))
        notes = []
        if finite(r.get("speedup_vs_fresh")) is not None:
            notes.append(f"{r['speedup_vs_fresh']:.2f}× fresh")
        if drift is not None:
            notes.append(f"max |Δp| {fmt_value(drift)}")
        if isinstance(flips, int):
            notes.append(f"{flips} flip{'' if flips == 1 else 's'}")
        if isinstance(r.get("escalated"), int):
            notes.append(f"{r['escalated']} escalated")
        bars.append((str(label), rate, " · ".join(notes)))
    rep.charts.append(svg_bars(bars, "decisions/s", "Decisions per second by pass (higher is faster); max |Δp| = "
                               "largest probability change against fresh scoring; flips = changed choices"))


def _nested(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first of ``keys`` in ``d`` or, failing that, in one of its object values (``vs_f32.max_abs_dp``)."""
    hit = _first(d, keys)
    if hit is not None:
        return hit
    for v in d.values():
        if isinstance(v, dict):
            hit = _first(v, keys)
            if hit is not None:
                return hit
    return None


def _render_quant(rel: str, rep: ReportFile) -> None:
    """Quant ladder: speed and drift per rung (whichever the report measured). Its format is matched
    loosely: a report without recognisable rungs is shown as tables only."""
    rows = _find_rows(rep.obj, ("rungs", "ladder", "levels", "results", "rows", "quants"))
    speed_bars, drift_bars = [], []
    for r in rows:
        label = _first(r, ("quant", "ftype", "type", "level", "name", "dtype"))
        if label is None:
            continue
        size = finite(_nested(r, ("bytes", "size_bytes", "file_bytes")))
        tail = f" ({size / 1e6:.0f} MB)" if size else ""
        rate = finite(_nested(r, ("decisions_per_s", "decisions_s")))
        drift = finite(_nested(r, ("max_abs_dp", "drift_max_abs_dp")))
        flips = _nested(r, ("n_flips",))
        agree = finite(_nested(r, ("choice_agreement", "agreement", "argmax_agreement")))
        note = f"{flips} flip{'' if flips == 1 else 's'}" if isinstance(flips, int) else (
            f"choices agree {fmt_value(agree)}" if agree is not None else "")
        if rate is not None:
            speed_bars.append((f"{label}{tail}", rate, ""))
        if drift is not None:
            drift_bars.append((f"{label}{tail}", drift, note))
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


def _render_eval(rel: str, rep: ReportFile) -> None:
    """Quality report: per-family balanced accuracy, risk–coverage and the reliability diagram."""
    fams = _find_rows(rep.obj, ("per_family",))
    bars = []
    for f in fams:
        ba = finite(f.get("balanced_accuracy"))
        if ba is not None:
            bars.append((str(f.get("family") or f.get("name")), ba,
                         f"accuracy {fmt_value(finite(f.get('accuracy')))} · {f.get('rows', '?')} rows · "
                         f"chance {fmt_value(finite(f.get('chance_accuracy')))}"))
    if bars:
        rep.charts.append(svg_bars(bars, "balanced accuracy", "Balanced accuracy per family (1 = every class "
                                   "right; chance is 1 / number of options)"))
    rc = [(_coverage_label(finite(r.get("coverage"))), finite(r.get("accuracy")),
           f"{r.get('rows', '?')} rows, confidence ≥ {fmt_value(finite(r.get('min_confidence')))}")
          for r in _find_rows(rep.obj, ("risk_coverage",))]
    rc = [(label, v, note) for label, v, note in rc if v is not None]
    if rc:
        rep.charts.append(svg_bars(rc, "accuracy", "Risk–coverage: accuracy on the most confident share of the "
                                   "rows (a useful score is more accurate where it is more confident)"))
    _reliability_chart(rep, [("top-label", rep.obj.get("reliability"))], "Reliability: accuracy per confidence "
                       "bin (on the diagonal = calibrated)")


def _render_calibrate(rel: str, rep: ReportFile) -> None:
    """Temperature scaling: ECE/NLL before and after, out of fold, and both reliability diagrams."""
    oof = rep.obj.get("out_of_fold") if isinstance(rep.obj.get("out_of_fold"), dict) else {}
    bars = []
    for metric in ("ece", "nll", "brier"):
        for side in ("before", "after"):
            v = (oof.get(side) or {}).get(metric) if isinstance(oof.get(side), dict) else None
            if metric_value(v) is not None:
                bars.append((f"{metric.upper() if metric == 'ece' else metric} {side}", metric_value(v), ci_note(v)))
    if bars:
        fit = rep.obj.get("fit_all_rows")
        t = finite(fit.get("temperature")) if isinstance(fit, dict) else None
        rep.charts.append(svg_bars(bars, "lower is better", "Before vs after temperature scaling, out of fold "
                                   f"(group-disjoint folds){'' if t is None else f'; T on all rows = {fmt_value(t)}'}"))
    _reliability_chart(rep, [("before", oof.get("reliability_before")), ("after", oof.get("reliability_after"))],
                       "Reliability before and after calibration, out of fold")


def _render_order(rel: str, rep: ReportFile) -> None:
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
        cost = rep.obj.get("cost") if isinstance(rep.obj.get("cost"), dict) else {}
        ratio = finite(cost.get("time_ratio"))
        rep.charts.append(svg_bars(bars, "decisions whose choice flips when the options are reversed",
                                   "Flips under option reversal (lower is more robust)"
                                   + ("" if ratio is None else f"; the averaged readout costs {ratio:.2f}× the time")))


def _render_route(rel: str, rep: ReportFile) -> None:
    """Two-path routing: accuracy per policy, with the share escalated and the time against the reference."""
    bars = []
    for r in _find_rows(rep.obj, ("table",)):
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


def _render_peers(rel: str, rep: ReportFile) -> None:
    """Peer benchmark (``kind: peers``): semif against lm-eval / vLLM / SGLang on the same prompts — speed per
    tool, agreement with semif direct, token identity, and every peer that did not run with its reason."""
    tools = rep.obj.get("tools")
    if not isinstance(tools, dict) or not tools or not all(isinstance(t, dict) for t in tools.values()):
        raise BuildError(f"{rel}: a peers report needs 'tools' (an object of tool blocks)")
    agree = rep.obj.get("agreement") if isinstance(rep.obj.get("agreement"), dict) else {}
    speed, whole, rows, missing = [], [], [], []
    for name, t in tools.items():
        a = agree.get(name) if isinstance(agree.get(name), dict) else {}
        ident = t.get("identity") if isinstance(t.get("identity"), dict) else {}
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
            fail = t.get("failure") if isinstance(t.get("failure"), dict) else {}
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


RENDERERS = {"shape": _render_shape, "quant": _render_quant, "eval": _render_eval,
                     "calibrate": _render_calibrate, "order": _render_order, "route": _render_route,
                     "peers": _render_peers}
