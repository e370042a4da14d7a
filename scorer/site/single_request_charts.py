"""The single-request report (``kind: single-request-peer``, benchmarks/single_request_peer.py): per labelled set, each
lane's balanced accuracy (SemIf's configurations beside the peer typed-gguf on the same GGUF, every state one
request), then every lane, set and question type in a table, and each SemIf lane paired with the peer; the
single-request study (``kind: single-request-study``, benchmarks/single_request_study.py): per set, each
label-free method's balanced accuracy; and the label-free default's selection (``kind: label-free-selection``,
benchmarks/label_free_selection.py): per set, the raw readout against the rule's picks out of fold and in sample."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_percent, fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, with_caption


def _lanes(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    lanes = obj.get("lanes")
    if not isinstance(lanes, list) or not lanes or not all(isinstance(x, dict) for x in lanes):
        raise BuildError(f"{rel}: a single-request-peer report needs 'lanes' (a non-empty list of objects)")
    for i, lane in enumerate(lanes):
        if not isinstance(lane.get("name"), str) or not isinstance(lane.get("sets"), dict):
            raise BuildError(f"{rel}: lanes[{i}] needs 'name' (a string) and 'sets' (an object)")
        for s, r in lane["sets"].items():
            if not isinstance(r, dict) or finite(r.get("balanced_accuracy")) is None:
                raise BuildError(f"{rel}: lanes[{i}].sets.{s}.balanced_accuracy: expected a finite number")
    return lanes


def _pct(v: Any) -> str:
    return fmt_percent(v, 1)


def _signed(v: Any) -> str:
    """A difference of balanced accuracy in points, its sign always written."""
    x = finite(v)
    return "—" if x is None else f"{100 * x:+.1f} pts"


def draw_single_request_peer(rel: str, rep: ReportFile) -> None:
    """One bar chart per set (a bar per lane: its balanced accuracy), then the table per lane, set and type, and the
    paired comparison with the peer where the report carries one."""
    lanes = _lanes(rel, rep.obj)
    sets = list(dict.fromkeys(s for lane in lanes for s in lane["sets"]))
    for s in sets:
        bars = []
        for lane in lanes:
            r = lane["sets"].get(s)
            if r is None:
                continue
            kinds = ", ".join(f"{t} {v.get('correct')}/{v.get('rows')}" for t, v in (r.get("by_type") or {}).items())
            bars.append((lane["name"], float(r["balanced_accuracy"]),
                         f"accuracy {_pct(r.get('accuracy'))}; {kinds}"))
        peer = next((lane["sets"][s]["balanced_accuracy"] for lane in lanes
                     if lane.get("tool") == "typed-gguf" and s in lane["sets"]), None)
        best = max(((lane["name"], lane["sets"][s]["balanced_accuracy"]) for lane in lanes
                    if lane.get("tool") == "semif" and s in lane["sets"]), key=lambda x: x[1], default=None)
        words = "" if best is None else f"the best SemIf lane ({best[0]}) {_pct(best[1])}"
        if peer is not None:
            words += f"{', ' if words else ''}typed-gguf {_pct(peer)}"
        chart = svg_bars(bars, "balanced accuracy (per family, averaged)", f"One request per state: {s}",
                         label_w=260)
        rep.charts.append(with_caption(chart, (
            f"{s}: every state asked in one System One request, no labels and nothing fitted on other rows; each bar "
            f"is a lane's balanced accuracy on the same GGUF{': ' + words if words else ''}.")))
    table = []
    for lane in lanes:
        for s, r in lane["sets"].items():
            high = r.get("high") if isinstance(r.get("high"), dict) else {}
            table.append([fmt_value(lane["name"]), fmt_value(s), "all", fmt_value(r.get("rows")),
                          _pct(r.get("balanced_accuracy")), _pct(r.get("accuracy")), fmt_value(finite(r.get("ece"))),
                          _pct(high.get("share")), _pct(high.get("accuracy")), fmt_value(finite(r.get("wall_s")))])
            for t, v in (r.get("by_type") or {}).items():
                table.append([fmt_value(lane["name"]), fmt_value(s), fmt_value(t), fmt_value(v.get("rows")),
                              _pct(v.get("balanced_accuracy")), _pct(v.get("accuracy")), "", "", "", ""])
    rep.tables.insert(0, {"caption": "every lane, set and question type (one request per state)",
                          "columns": ["lane", "set", "type", "rows", "balanced accuracy", "accuracy", "ECE",
                                      "share at confidence ≥ 0.9", "right at ≥ 0.9", "wall s"],
                          "rows": table,
                          "note": "confidence: (p_max − 1/K)/(1 − 1/K) of each answer's probabilities, as the open "
                                  "System One servers compute it"})
    paired = rep.obj.get("beside_peer")
    if isinstance(paired, list) and paired:
        rows = [[fmt_value(p.get(k)) for k in ("lane", "set", "type", "rows")]
                + [_pct(p.get("semif")), _pct(p.get("peer")), _signed(p.get("delta")),
                   f"{_signed(p.get('ci_lo'))} to {_signed(p.get('ci_hi'))}",
                   f"{fmt_value(p.get('semif_only_right'))} / {fmt_value(p.get('peer_only_right'))}",
                   fmt_value(finite(p.get("mcnemar_exact_p"))), fmt_value(p.get("verdict"))]
                for p in paired if isinstance(p, dict)]
        rep.tables.insert(1, {"caption": "SemIf beside typed-gguf on the same rows (paired)",
                              "columns": ["lane", "set", "type", "rows", "SemIf", "typed-gguf", "difference",
                                          "95 % interval", "right only by SemIf / only by typed-gguf",
                                          "McNemar p", "verdict"],
                              "rows": rows,
                              "note": "balanced accuracy, SemIf minus typed-gguf; the interval draws states with "
                                      "replacement, both lanes on each draw; ahead or behind only when it excludes 0"})


def _study_sets(rel: str, obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    sets = obj.get("sets")
    if not isinstance(sets, dict) or not sets:
        raise BuildError(f"{rel}: a single-request-study report needs 'sets' (a non-empty object)")
    for s, block in sets.items():
        methods = block.get("methods") if isinstance(block, dict) else None
        if not isinstance(methods, dict) or not methods:
            raise BuildError(f"{rel}: sets.{s}.methods: expected a non-empty object")
        for m, r in methods.items():
            if not isinstance(r, dict) or finite(r.get("balanced_accuracy")) is None:
                raise BuildError(f"{rel}: sets.{s}.methods.{m}.balanced_accuracy: expected a finite number")
    return sets


def draw_single_request_study(rel: str, rep: ReportFile) -> None:
    """One bar chart per set (a bar per label-free method: its balanced accuracy, every row answered alone), then the
    table per set, method and question type."""
    sets = _study_sets(rel, rep.obj)
    norm = rep.obj.get("sequence_norm")
    slots = fmt_value(rep.obj.get("slots") or "letters") + (f" ({fmt_value(norm)})" if norm else "")
    table = []
    for s, block in sets.items():
        methods = block["methods"]
        got = block.get("batch_calibrated")
        batch: dict[str, Any] = got if isinstance(got, dict) else {}
        bars = [(m, float(r["balanced_accuracy"]), f"accuracy {_pct(r.get('accuracy'))}") for m, r in methods.items()]
        best = max(methods.items(), key=lambda kv: float(kv[1]["balanced_accuracy"]))
        chart = svg_bars(bars, "balanced accuracy (per family, averaged)", f"Label-free corrections: {s}",
                         label_w=220)
        rep.charts.append(with_caption(chart, (
            f"{s}, read through {slots}: each row answered alone, corrected by each label-free method from prompts "
            f"about the same question only (no labels, no batch); best: {best[0]} {_pct(best[1]['balanced_accuracy'])}"
            + (f"; batch-calibrated on the whole set (the reference): {_pct(batch['none'].get('balanced_accuracy'))}"
               if isinstance(batch.get("none"), dict) else "") + ".")))
        named = {**methods, **{f"batch-calibrated, fallback {f} (reference: the whole set)": r
                               for f, r in batch.items() if isinstance(r, dict)}}
        for m, r in named.items():
            high = r.get("high") if isinstance(r.get("high"), dict) else {}
            table.append([fmt_value(s), fmt_value(m), "all", _pct(r.get("balanced_accuracy")), _pct(r.get("accuracy")),
                          fmt_value(finite(r.get("ece"))), _pct(high.get("share")), _pct(high.get("accuracy"))])
            for t, v in (r.get("by_type") or {}).items():
                table.append([fmt_value(s), fmt_value(m), fmt_value(t), _pct(v.get("balanced_accuracy")),
                              _pct(v.get("accuracy")), "", "", ""])
    rep.tables.insert(0, {"caption": f"every set, method and question type (read through {slots})",
                          "columns": ["set", "method", "type", "balanced accuracy", "accuracy", "ECE",
                                      "share at confidence ≥ 0.9", "right at ≥ 0.9"],
                          "rows": table,
                          "note": "methods: scorer.calibration.label_free; confidence: (p_max − 1/K)/(1 − 1/K)"})


def _selection_sets(rel: str, obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    sets = obj.get("sets")
    if not isinstance(sets, dict) or not sets:
        raise BuildError(f"{rel}: a label-free-selection report needs 'sets' (a non-empty object)")
    for s, block in sets.items():
        for part in ("none", "picked", "cross_fitted"):
            r = block.get(part) if isinstance(block, dict) else None
            if not isinstance(r, dict) or finite(r.get("balanced_accuracy")) is None:
                raise BuildError(f"{rel}: sets.{s}.{part}.balanced_accuracy: expected a finite number")
    return sets


def draw_label_free_selection(rel: str, rep: ReportFile) -> None:
    """One bar chart per set (the raw readout, the rule's methods judged out of fold, and judged on every family), the
    picks per kind, and the votes per family."""
    sets = _selection_sets(rel, rep.obj)
    got = rep.obj.get("picked")
    picked: dict[str, Any] = got if isinstance(got, dict) else {}
    words = ", ".join(f"{fmt_value(k)} {fmt_value(m)}" for k, m in picked.items())
    names = {"none": "raw readout", "cross_fitted": "picked without the family (out of fold)",
             "picked": "picked on every family (in sample)"}
    table = []
    for s, block in sets.items():
        bars = [(names[p], float(block[p]["balanced_accuracy"]),
                 ", ".join(f"{t} {_pct(v.get('balanced_accuracy'))}" for t, v in
                           (block[p].get("by_type") or {}).items())) for p in names]
        chart = svg_bars(bars, "balanced accuracy (per family, averaged)", f"Label-free default per kind: {s}",
                         label_w=300)
        rep.charts.append(with_caption(chart, (
            f"{s}: every row answered alone; the rule picks per kind of question ({words}); out of fold, each family "
            "is corrected by the methods picked from the other families alone.")))
        for p, name in names.items():
            for t, v in (block[p].get("by_type") or {}).items():
                table.append([fmt_value(s), name, fmt_value(t), _pct(v.get("balanced_accuracy"))])
    rep.tables.insert(0, {"caption": "every set and question type: raw, out of fold, in sample",
                          "columns": ["set", "readout", "type", "balanced accuracy"], "rows": table,
                          "note": fmt_value(rep.obj.get("rule"))})
    votes = rep.obj.get("votes")
    if isinstance(votes, list):
        rows = [[fmt_value(v.get("set")), fmt_value(v.get("family")), fmt_value(v.get("kind")),
                 fmt_value(v.get("rows")), fmt_value(v.get("held_out_pick")),
                 ", ".join(f"{fmt_value(m)} {_pct(x)}" for m, x in (v.get("balanced_accuracy") or {}).items())]
                for v in votes if isinstance(v, dict)]
        rep.tables.insert(1, {"caption": "the votes: each family's balanced accuracy per method",
                              "columns": ["set", "family", "kind", "rows", "picked without it", "per method"],
                              "rows": rows, "note": "a family's vote: its balanced accuracy on that kind's questions"})
