"""Charts of a calibration report (``kind: calibration``, written by ``semif calibrate report``): how well the
raw scores rank each family (ROC AUC) next to how often the choices are right, balanced accuracy before and
after each calibration method, and reliability diagrams before and after the best methods.

Every number drawn is read from the report; the captions say in plain words what a newcomer is looking at.
"""

from __future__ import annotations

from typing import Any

from scorer.site.files import object_at
from scorer.site.formatting import ci_note, finite, fmt_value, metric_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, svg_reliability, with_caption

_LABELS = {"none": "label-free", "none (folds only)": "label-free, other folds", "out of fold": "labels, out of fold"}
"""A method's ``labels`` field in words (what it needed to be fitted)."""


def _metric(rel: str, where: str, block: dict[str, Any], key: str) -> float:
    value = metric_value(block.get(key))
    if value is None:
        raise BuildError(f"{rel}: {where}.{key}: {block.get(key)!r} (expected a finite number or "
                         "{\"value\": number, \"ci_lo\": …, \"ci_hi\": …})")
    return value


def _method(rel: str, methods: list[dict[str, Any]], best: Any, where: str) -> dict[str, Any]:
    """The entry of ``methods`` that a ``best_…`` block names."""
    name = best.get("method") if isinstance(best, dict) else None
    hit = next((m for m in methods if m["method"] == name), None)
    if hit is None:
        raise BuildError(f"{rel}: {where}.method: {name!r} (expected the name of one of methods[].method)")
    return hit


def draw_calibration(rel: str, rep: ReportFile) -> None:
    """Adds the report's charts; a report without ``raw`` and ``methods`` (and the best label-free method they
    name) stops the build, naming the file and the field."""
    obj = rep.obj
    raw, methods = obj.get("raw"), obj.get("methods")
    if not isinstance(raw, dict):
        raise BuildError(f"{rel}: a calibration report needs 'raw' (the raw readout's metrics, an object)")
    if not isinstance(methods, list) or not methods or \
            not all(isinstance(m, dict) and isinstance(m.get("method"), str) for m in methods):
        raise BuildError(f"{rel}: a calibration report needs 'methods' (a non-empty list of objects with a 'method')")
    best = _method(rel, methods, obj.get("best_label_free"), "best_label_free")
    fitted = _method(rel, methods, obj["best_with_labels_or_folds"], "best_with_labels_or_folds") \
        if "best_with_labels_or_folds" in obj else None
    _headline_chart(rel, rep, raw, best, fitted)
    _auc_chart(rel, rep, raw, best)
    _methods_chart(rel, rep, raw, methods)
    _reliability(rep, raw, best, "the best label-free method")
    if fitted is not None:
        _reliability(rep, raw, fitted, "the best method fitted with labels (out of fold)")


def _headline_chart(rel: str, rep: ReportFile, raw: dict[str, Any], best: dict[str, Any],
                    fitted: dict[str, Any] | None) -> None:
    """The report in three bars (the index page shows this one): balanced accuracy raw, after the best
    label-free method, after the best method fitted with labels."""
    rows = [("raw", "raw", raw), ("best label-free", "best_label_free", best)]
    if fitted is not None:
        rows.append(("best with labels", "best_with_labels_or_folds", fitted))
    bars = [(label, _metric(rel, where, block, "balanced_accuracy"), ci_note(block.get("balanced_accuracy")))
            for label, where, block in rows]
    caption = (f"How often the choices are right (balanced accuracy), before calibration and after the best "
               f"label-free method ({best['method']})"
               + ("" if fitted is None else f" and the best method fitted with labels, scored on rows it was not "
                                            f"fitted on ({fitted['method']})") + ".")
    rep.charts.append(with_caption(svg_bars(bars, "balanced accuracy (1 = every case right)",
                                            "Balanced accuracy before and after calibration"), caption))


def _auc_chart(rel: str, rep: ReportFile, raw: dict[str, Any], best: dict[str, Any]) -> None:
    """ROC AUC of the raw scores per family, each bar noting the family's balanced accuracy raw and calibrated."""
    auc = raw.get("auc_per_family")
    if not isinstance(auc, dict):
        raise BuildError(f"{rel}: raw.auc_per_family: expected an object (ROC AUC by family)")
    raw_ba = object_at(raw, "per_family")
    best_ba = object_at(best, "per_family")
    bars, missing = [], []
    for fam, value in auc.items():
        v = finite(value)
        if v is None:
            missing.append(fam)  # a family with one class only has no AUC
            continue
        bars.append((str(fam), v, f"balanced accuracy: raw {fmt_value(finite(raw_ba.get(fam)))} → calibrated "
                                  f"{fmt_value(finite(best_ba.get(fam)))}"))
    if not bars:
        return
    mean = finite(raw.get("mean_auc"))
    caption = (f"How well the raw scores order each family's cases (ROC AUC: 0.5 is chance, 1 is perfect"
               f"{'' if mean is None else f'; mean {fmt_value(mean)}'}) and how often the choices are right, raw and "
               f"after the best label-free method ({best['method']}): a model can rank well yet decide badly.")
    if missing:
        caption += f" No AUC for {', '.join(missing)} (one class only)."
    rep.charts.append(with_caption(svg_bars(bars, "ROC AUC of the raw scores (0.5 = chance, 1 = perfect order)",
                                            "ROC AUC per decision family, raw scores"), caption))


def _methods_chart(rel: str, rep: ReportFile, raw: dict[str, Any], methods: list[dict[str, Any]]) -> None:
    """Balanced accuracy after each method on the plain option order, against the raw readout's."""
    before = _metric(rel, "raw", raw, "balanced_accuracy")
    bars = []
    for i, m in enumerate(methods):
        if m.get("orderings") != ["plain"]:
            continue
        ba = _metric(rel, f"methods[{i}]", m, "balanced_accuracy")
        changed = m.get("changed_choices")
        note = " · ".join(x for x in (_LABELS.get(str(m.get("labels")), str(m.get("labels"))),
                                      ci_note(m.get("balanced_accuracy")),
                                      f"{changed} changed" if isinstance(changed, int) else "") if x)
        bars.append((m["method"].removesuffix(" · plain"), ba, note))
    if not bars:
        return
    others = len(methods) - len(bars)
    caption = ("How often the choices are right after each calibration method (balanced accuracy: each option's "
               "share of right answers, averaged), options in their plain order; the dashed line is the raw readout. "
               "Methods that use labels are scored on rows they were not fitted on."
               + (f" The {others} methods on other option orders are in the methods table below." if others else ""))
    rep.charts.append(with_caption(svg_bars(bars, "balanced accuracy after calibration (1 = every case right)",
                                            "Balanced accuracy per calibration method, plain option order",
                                            label_w=300, ref=("raw", before)), caption))


def _reliability(rep: ReportFile, raw: dict[str, Any], method: dict[str, Any], which: str) -> None:
    """Reliability diagram of the raw readout and of one method, when both carry their bins."""
    series: list[tuple[str, list[dict[str, Any]]]] = []
    for name, bins in (("raw", raw.get("reliability")), ("calibrated", method.get("reliability"))):
        if not isinstance(bins, list) or not bins or not all(isinstance(b, dict) for b in bins):
            return
        series.append((name, bins))
    caption = (f"Decisions grouped by the model's confidence, raw and after {which} ({method['method']}): each "
               "point is how often a group's choice was right (its size: how many decisions); on the dashed "
               "diagonal, confidence means what it says.")
    rep.charts.append(with_caption(svg_reliability(series, f"Reliability, raw and after {which}"), caption))
