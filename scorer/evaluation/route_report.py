"""``semif route``: the two-path margin policy judged on two finished runs (a fast one and a reference one): accuracy,
share escalated and time at each threshold, next to each path alone. The policy itself is
:func:`scorer.decision.policy.escalates`; live routing is :func:`scorer.scoring.routing.route_live`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scorer.decision.policy import escalates
from scorer.evaluation import metrics
from scorer.evaluation.report_files import ci_text, enveloped, labels_info, run_info
from scorer.formats.records import read_records

DEFAULT_THRESHOLDS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


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
        if f is not None and not escalates(f, threshold, readout="raw"):
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
            "title": title, "fast": fi, "reference": ri, "labels": labels_info(labels),
            "rows": len(labs), "policy": "escalate a decision to the reference path when its fast-path raw margin "
                                         "(top minus second probability) is below the threshold, or it is a tie "
                                         "(scorer.decision.policy.escalates, readout raw)",
            "time_accounting": "fast time for every row + reference time for escalated rows (timing.total_s)",
            "bootstrap": {"reps": reps, "seed": seed, "level": metrics.CI_LEVEL, "unit": "group"},
            "table": rows})


def print_route(rep: dict[str, Any]) -> None:
    fm, rm = rep["fast"].get("model") or {}, rep["reference"].get("model") or {}
    print(f"two-path routing on {rep['rows']} rows · fast: {fm.get('key')} {fm.get('backend')} "
          f"{rep['fast'].get('mode')} · reference: {rm.get('key')} {rm.get('backend')} {rep['reference'].get('mode')}")
    print(f"{'policy':<16} {'accuracy [95% CI]':>24} {'bal.acc':>8} {'escalated':>10} {'time s':>8} {'vs ref':>7}")
    for r in rep["table"]:
        print(f"{r['policy']:<16} {ci_text(r['accuracy']):>24} {r['balanced_accuracy']['value']:>8.3f} "
              f"{100 * r['escalated_share']:>9.1f}% {r['time_s']:>8.1f} {r['time_vs_reference']:>6.2f}x")
