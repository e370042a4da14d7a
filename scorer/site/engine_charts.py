"""The engines report (``kind: engines``, benchmarks/engines.py): throughput against decision quality, per model
and decision set, with every engine and every routed pair as a point, and the whole table in words."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_scatter, with_caption


def _rows(rel: str, obj: dict[str, Any], key: str) -> list[dict[str, Any]]:
    v = obj.get(key)
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise BuildError(f"{rel}: an engines report needs '{key}' (a list of objects)")
    return v


def machine_words(obj: dict[str, Any]) -> str:
    """Which CPU the speeds are from, in words: engines' kernels dispatch on its instruction sets (vLLM's int8 and
    native bf16 need AVX-512 VNNI/BF16), so two reports from CPUs with the same name can differ several-fold."""
    mach: dict[str, Any] = obj["machine"] if isinstance(obj.get("machine"), dict) else {}
    cpu = f"{mach.get('cpu') or 'an unnamed CPU'}, {mach.get('cores', '?')} cores"
    feats = mach.get("cpu_features")
    if not isinstance(feats, list):
        return f"measured on {cpu}; its instruction sets were not recorded (reports made before 2026-12-02)"
    have = set(map(str, feats))
    if "avx512f" in have:
        extra = [n for f, n in (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16")) if f in have]
        isa = "AVX-512" + (f" ({', '.join(extra)})" if extra else " (no VNNI, no BF16)")
    elif "avx2" in have:
        isa = "AVX2, no AVX-512"
    else:  # an Arm CPU lists NEON/SVE, an old x86 neither AVX2 nor AVX-512
        isa = ", ".join(sorted(have)) if have else "none of the vector extensions the kernels use"
    return f"measured on {cpu} with {isa}"


def _skipped_words(obj: dict[str, Any]) -> str:
    skipped = obj.get("skipped")
    if not isinstance(skipped, list) or not skipped:
        return ""
    cells = ", ".join(f"{x.get('config')} on {x.get('set')}" for x in skipped if isinstance(x, dict))
    return f"; not run (benchmarks/engines.py --skip): {cells}"


def draw_engines(rel: str, rep: ReportFile) -> None:
    """One scatter per (model, set): decisions/s while scoring against balanced accuracy of the raw readout, engines
    and routed pairs (routing is judged on raw readouts, so both kinds of dot measure the same thing); then the
    table of every configuration (raw and calibrated) and of every routed pair."""
    table = _rows(rel, rep.obj, "table")
    routes = _rows(rel, rep.obj, "routes") if "routes" in rep.obj else []
    if not table:
        raise BuildError(f"{rel}: an engines report needs at least one row in 'table'")
    keys = list(dict.fromkeys((str(r.get("model")), str(r.get("set"))) for r in table))
    for model, set_name in keys:
        pts = []
        for r in table:
            if (str(r.get("model")), str(r.get("set"))) != (model, set_name):
                continue
            rate, acc = finite(r.get("decisions_per_s_scoring")), finite(r.get("balanced_accuracy_raw"))
            if rate is not None and acc is not None:
                pts.append((f"{r.get('config')}", rate, acc, 0))
        for r in routes:
            if (str(r.get("model")), str(r.get("set"))) != (model, set_name):
                continue
            rate = finite(r.get("decisions_per_s"))
            acc = finite((r.get("out_of_fold") or {}).get("balanced_accuracy"))
            if rate is not None and acc is not None:
                share = finite(r.get("escalated_share")) or 0.0
                pts.append((f"route {r.get('fast')} → {r.get('accurate')} ({share:.0%} escalated)", rate, acc, 1))
        if pts:
            chart = svg_scatter(pts, "decisions/s while scoring", "balanced accuracy (raw)",
                                f"{model} on {set_name}: throughput against balanced accuracy")
            rep.charts.append(with_caption(chart, (
                f"{model}, {set_name}: each dot is one engine (dark) or one routed pair (light) scoring the same "
                "decisions; right is faster, up is more often right (balanced accuracy of the model's own readout, "
                "no calibration, so engines and routes compare like for like; routed pairs: out of fold at the "
                "threshold chosen on the other folds; the table below adds the calibrated accuracy).")))
    rows = [[fmt_value(r.get("model")), fmt_value(r.get("set")), fmt_value(r.get("config")), fmt_value(r.get("rows")),
             fmt_value(finite(r.get("decisions_per_s_scoring"))),
             fmt_value(finite(r.get("decisions_per_s_whole_process"))),
             fmt_value(finite(r.get("balanced_accuracy_raw"))),
             fmt_value(finite(r.get("balanced_accuracy_calibrated"))),
             fmt_value((r.get("vs_reference") or {}).get("decisions_changed")),
             fmt_value(finite((r.get("vs_reference") or {}).get("max_abs_dp"))),
             f"{fmt_value((r.get('vs_reference') or {}).get('tokens_identical'))}/{fmt_value(r.get('rows'))}"]
            for r in table]
    rep.tables.insert(0, {"caption": "every engine on every set (medians over the repeats)",
                          "columns": ["model", "set", "engine", "rows", "decisions/s scoring",
                                      "decisions/s whole process", "balanced acc. raw", "balanced acc. calibrated",
                                      "changed vs torch fp32", "max |Δp| vs torch fp32", "identical tokens"],
                          "rows": rows,
                          "note": "scoring: rows ÷ (last record − start of scoring), the model already loaded; whole "
                                  "process: rows ÷ the semif score command's wall time (imports, load or engine "
                                  "handshake included); " + machine_words(rep.obj) + _skipped_words(rep.obj)})
    if routes:
        rrows = [[fmt_value(r.get("model")), fmt_value(r.get("set")), fmt_value(r.get("fast")),
                  fmt_value(r.get("accurate")), fmt_value(finite(r.get("threshold"))),
                  fmt_value(finite(r.get("escalated_share"))), fmt_value(finite(r.get("decisions_per_s"))),
                  fmt_value(finite((r.get("out_of_fold") or {}).get("balanced_accuracy"))),
                  fmt_value(finite((r.get("fast_only") or {}).get("balanced_accuracy"))),
                  fmt_value(finite((r.get("accurate_only") or {}).get("balanced_accuracy")))] for r in routes]
        rep.tables.insert(1, {"caption": "routed pairs: the fast engine decides, low margins go to the accurate one",
                              "columns": ["model", "set", "fast", "accurate", "threshold", "share escalated",
                                          "decisions/s", "balanced acc. (out of fold)", "fast alone", "accurate alone"],
                              "rows": rrows,
                              "note": "raw readouts; the threshold is chosen on the other folds (group-disjoint) and "
                                      "judged on the held-out one; time = the fast run + the accurate run's share for "
                                      "the escalated decisions"})
