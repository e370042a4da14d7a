"""The quality study report (``kind: quality-study``, benchmarks/quality_study.py): for each decision set, how often
each way of asking the model gets the decision right (out of fold), against today's default, and what it costs; in
words a newcomer can follow."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import ci_note, finite, fmt_value, metric_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, with_caption

_NEEDS = ("set", "layout", "k", "readout", "calibration", "balanced_accuracy", "cost")
_VERDICT = {"helps": "helps", "hurts": "hurts", "no clear difference": "no clear difference",
            "baseline": "today's default"}


def _table(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    rows = obj.get("table")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise BuildError(f"{rel}: a quality-study report needs 'table' (a non-empty list of objects)")
    for i, r in enumerate(rows):
        missing = [k for k in _NEEDS if k not in r]
        if missing or not isinstance(r["cost"], dict):
            raise BuildError(f"{rel}: a quality-study report needs table[{i}].{(missing or ['cost'])[0]}")
    return rows


SEQUENCE_TOKENS_COUNTED_FROM = "2026-12-03T11:50:00Z"
"""Quality-study reports made before this left out, for the sequence readouts, the tokens of each group prefix
whose prefill a row paid (counted as reused; fixed by :meth:`scorer.scoring.radix_cache.Lookup.after`). Their seconds
are
right; their token counts for those readouts are not shown as if they were."""
UNDERCOUNTED = "undercounted in this report"


def _tokens_counted(obj: dict[str, Any], readout: Any) -> bool:
    return not str(readout).startswith("sequence") or str(obj.get("created_utc", "")) >= SEQUENCE_TOKENS_COUNTED_FROM


_READOUT_WORDS = {"letters": "letters read", "ids": "option ids read", "sequence": "each option scored whole (sum)",
                  "sequence-mean": "each option scored whole (mean per token)",
                  "json-mean": "JSON answer, each quoted id scored (mean per token)",
                  "json-sum": "JSON answer, each quoted id scored whole (sum)",
                  "json-close-mean": "JSON answer, each quoted id scored, any closing after the quote (mean per token)",
                  "json-close-sum": "JSON answer, each quoted id scored whole, any closing after the quote (sum)"}


def _how(r: dict[str, Any]) -> str:
    k = r.get("k")
    demos = "no examples" if k == 0 else f"{fmt_value(k)} solved examples"
    cal = {"none": "raw", "prior": "label-free prior", "bias": "fitted bias"}.get(str(r.get("calibration")),
                                                                                  str(r.get("calibration")))
    readout = _READOUT_WORDS.get(str(r.get("readout")), str(r.get("readout")))
    return f"{r.get('layout')}, {demos}, {readout}, {cal}"


def draw_quality_study(rel: str, rep: ReportFile) -> None:
    """Per set: a bar per configuration (balanced accuracy out of fold, today's default as the dashed line); then
    the whole table with the paired comparison, the cost, and the configurations that were skipped and why."""
    rows = _table(rel, rep.obj)
    for set_name in dict.fromkeys(str(r["set"]) for r in rows):
        mine = [r for r in rows if str(r["set"]) == set_name]
        bars = [(_how(r), metric_value(r["balanced_accuracy"]) or 0.0, ci_note(r["balanced_accuracy"])) for r in mine]
        base = next((r for r in mine if (r.get("vs_baseline") or {}).get("verdict") == "baseline"), None)
        ref = ("today's default", metric_value(base["balanced_accuracy"]) or 0.0) if base else None
        chart = svg_bars(bars, "balanced accuracy, out of fold", f"{set_name}: decisions right, by way of asking",
                         label_w=300, ref=ref)
        rep.charts.append(with_caption(chart, (
            f"{set_name}: each bar is one way of asking the model — the prompt layout, how many solved examples come "
            "before the question, what is read out (the option letters, the option ids as one token each, or each "
            "option's whole text scored as the model's continuation, its token log-probabilities summed or averaged) "
            "and how the answer is calibrated. "
            "Longer is more often right (balanced accuracy: every answer class counts the same, 0.5 is a coin flip "
            "for yes/no), measured only on rows the examples and the calibration never saw.")))
    table = []
    for r in rows:
        vs = r.get("vs_baseline") or {}
        cost = r["cost"]
        delta = finite(vs.get("balanced_accuracy_delta"))
        table.append([fmt_value(r["set"]), fmt_value(r["layout"]), fmt_value(r["k"]), fmt_value(r["readout"]),
                      fmt_value(r["calibration"]), fmt_value(metric_value(r["balanced_accuracy"])),
                      ci_note(r["balanced_accuracy"]),
                      "—" if delta is None or vs.get("verdict") == "baseline" else f"{delta:+.3f}",
                      _VERDICT.get(str(vs.get("verdict")), "no default in this study"),
                      fmt_value(finite(cost.get("seconds_per_decision"))),
                      *((fmt_value(finite(cost.get("computed_tokens_per_decision"))),
                         fmt_value(finite(cost.get("reused_share"))))
                        if _tokens_counted(rep.obj, r["readout"]) else (UNDERCOUNTED, UNDERCOUNTED))])
    rep.tables.insert(0, {"caption": "every way of asking, on every set (out of fold)",
                          "columns": ["set", "layout", "examples (k)", "read out", "calibration", "balanced accuracy",
                                      "95 % interval", "vs today's default", "verdict", "seconds / decision",
                                      "tokens computed / decision", "share of tokens reused"],
                          "rows": table,
                          "note": "verdict: helps or hurts only when the paired 95 % interval of the difference with "
                                  "today's default (state-major, no examples, letters, raw) excludes 0; a "
                                  "configuration that does not help is shown as such. Cost: the scoring call's seconds "
                                  "and the tokens the model computed, per decision; reused tokens came from the prefix "
                                  "cache. 'undercounted in this report': a report made before 2026-12-03 left the "
                                  "prefill of each shared prefix out of the whole-option readouts' token counts "
                                  "(their seconds include it)."})
    skipped = rep.obj.get("skipped")
    if isinstance(skipped, list) and skipped:
        rep.tables.insert(1, {"caption": "ways of asking that were not run, and why",
                              "columns": ["set", "layout", "examples (k)", "read out", "reason"],
                              "rows": [[fmt_value(s.get(k)) for k in ("set", "layout", "k", "readout", "reason")]
                                       for s in skipped if isinstance(s, dict)], "note": ""})
    costs = rep.obj.get("demo_costs")
    if isinstance(costs, list) and costs:  # after the skipped ones, before the report's every-field tables
        rows_c = [[fmt_value(c.get(k)) for k in ("set", "layout", "readout", "k")]
                  + [fmt_value(finite(c.get("time_ratio")))]
                  + ([fmt_value(finite(c.get(k))) for k in ("computed_tokens_ratio", "reused_share")]
                     if _tokens_counted(rep.obj, c.get("readout")) else [UNDERCOUNTED, UNDERCOUNTED])
                  for c in costs if isinstance(c, dict)]
        rep.tables.insert(2 if isinstance(skipped, list) and skipped else 1, {
            "caption": "what solved examples cost (against the same way of asking without them)",
            "columns": ["set", "layout", "read out", "examples (k)", "time × k = 0", "tokens computed × k = 0",
                        "share of tokens reused"],
            "rows": rows_c,
            "note": "the examples sit in the part of the prompt the cache reuses, so the tokens they add are "
                    "computed once per distinct prefix, not once per decision (tokens computed × k = 0 near 1); the "
                    "time can still grow, because every later token of every decision attends to them"})
    ceiling = rep.obj.get("ceiling")
    summary = ceiling.get("summary") if isinstance(ceiling, dict) else None
    if isinstance(summary, list) and summary:
        def cell(e: dict[str, Any], key: str) -> str:
            v = e.get(key)
            v = v if isinstance(v, dict) else {}
            return f"{fmt_value(finite(v.get('value')))} ({fmt_value(v.get('name'))})"

        rep.tables.append({
            "caption": "how far recalibrating the model's scores could go at most",
            "columns": ["set", "best out of fold (the table above)", "prior fitted on the scored rows themselves",
                        "the same, every question however few its rows",
                        "best offsets per family, chosen with the answers known",
                        "the same per question where it has enough rows"],
            "rows": [[fmt_value(e.get("set")), *(cell(e, k) for k in ("out_of_fold", "batch_prior",
                                                                       "batch_prior_every", "offset_bound",
                                                                       "offset_bound_levels"))]
                     for e in summary if isinstance(e, dict)],
            "note": "each column's best way of asking in brackets. The last four are not fair scores, they are upper "
                    "marks: the prior fitted on the very rows it then judges (no answers used, but nothing held out), "
                    "and the option offsets picked with the right answers in view. When even these stay "
                    "below a target, no calibration reaches it: the model ranks the options wrongly, and only a "
                    "better prompt or a better model moves that."})
    fallbacks = rep.obj.get("prior_fallbacks")
    fb_summary = fallbacks.get("summary") if isinstance(fallbacks, dict) else None
    if isinstance(fb_summary, list) and fb_summary:
        rows_f = []
        for e in fb_summary:
            if not isinstance(e, dict):
                continue
            for fb in ("family", "pooled"):
                v = e.get(fb)
                v = v if isinstance(v, dict) else {}
                counts = (fmt_value(v.get(k)) for k in ("higher", "equal", "lower"))
                rows_f.append([fmt_value(e.get("set")), fb, *counts, fmt_value(finite(v.get("mean_difference")))])
        rep.tables.append({
            "caption": "the label-free prior for questions it has not seen: borrow from similar questions or not",
            "columns": ["set", "borrow from", "ways of asking where it is right more often", "the same", "less often",
                        "mean change in balanced accuracy"],
            "rows": rows_f,
            "note": "out of fold, the prior is fitted on the other folds' rows; a held-out question it has never seen "
                    "either stays raw ('none'), or takes the prior of its family's questions with the same options "
                    "('family'), then of any question with those options or per option ('pooled')"})
    w = rep.obj.get("winner")
    if isinstance(w, dict) and w.get("name"):
        rep.note = (f"The best way of asking on these sets: {w['name']} (balanced accuracy "
                    f"{fmt_value(finite(w.get('value')))}, averaged over the sets, out of fold).")
