"""The confidence report (``kind: confidence``, benchmarks/confidence_reliability.py): per labelled set and weights, a
reliability diagram of the wire ``confidence`` with one series per tool, and in words how often a confidence of 0.9 or
more occurs, how often such answers are right, and how much can be automated at each error budget."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_percent
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_reliability, with_caption

_pct = fmt_percent


def _rows(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    rows = obj.get("rows")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise BuildError(f"{rel}: a confidence report needs 'rows' (a non-empty list of objects)")
    for i, r in enumerate(rows):
        if not isinstance(r.get("reliability"), list) or not isinstance(r.get("automation"), list) \
                or not isinstance(r.get("high"), dict):
            raise BuildError(f"{rel}: rows[{i}] needs 'reliability', 'automation' (lists) and 'high' (an object)")
    return rows


def draw_confidence(rel: str, rep: ReportFile) -> None:
    """One reliability diagram per set and weights (a series per tool: SemIf and the peer beside it; rows without
    ``weights`` and ``tool`` are one series per model), captioned with the high-confidence answers and the automation
    table in words."""
    rows = _rows(rel, rep.obj)
    for set_name, weights in dict.fromkeys((str(r.get("set")), str(r.get("weights") or "")) for r in rows):
        mine = [r for r in rows if str(r.get("set")) == set_name and str(r.get("weights") or "") == weights]
        series = [(str(r.get("tool") or r.get("model")), r["reliability"]) for r in mine]
        words = []
        for r in mine:
            h = r["high"]
            auto = ", ".join(f"{_pct(a.get('share'))} at {_pct(a.get('max_error'))} error" for a in r["automation"])
            right = "none occur" if not h.get("rows") else f"{_pct(h.get('accuracy'))} of them right"
            ece = finite(r.get("ece"))
            peak = finite(r.get("ece_peakedness"))
            err = "" if ece is None else f", calibration error {ece:.2f}" + (
                f" (the bare peakedness {peak:.2f})" if peak is not None and abs(peak - ece) > 1e-9 else "")
            words.append(f"{r.get('model')}: accuracy {_pct(r.get('accuracy'))}{err}, confidence ≥ "
                         f"{finite(h.get('threshold')) or 0.9:g} on {_pct(h.get('share'))} of the decisions ({right});"
                         f" acted on, most confident first: {auto}")
        where = f"{set_name}, {weights}" if weights else set_name
        caption = (f"{where}: decisions grouped by their confidence, per {'tool' if weights else 'model'}; each point "
                   "is how often a group was right (its size: how many decisions); on the diagonal, confidence means "
                   "what it says. " + " · ".join(words) + ".")
        rep.charts.append(with_caption(svg_reliability(series, f"Reliability of the confidence, {where}"), caption))
