#!/usr/bin/env python3
"""How far the wire ``confidence`` can be trusted, from committed records: per model, tool and labelled set, its
reliability, its ECE, the answers at confidence ≥ 0.9 and how often they are right, and how much can be automated at
1/5/10 % error (:mod:`scorer.evaluation.confidence`); beside it the ECE of the peakedness ``(p_max − 1/K)/(1 − 1/K)``
(:mod:`scorer.decision.confidence`) and of ``p_max`` itself (the acting probability of the answer).

SemIf's ``confidence`` is the peakedness mapped by the weights' measured curve
(:mod:`scorer.calibration.confidence_map`), and this report is where that curve is fitted: per weights, on SemIf's
default answers to the selection sets (authored, boundary, single — the sets the defaults were chosen on), every kind of
question together. Its rows judge it on rows it was not fitted on: on a selection set, each family's confidence comes
from the curve fitted without that family (cross-fitted); on the held-out sets, from the curve fitted on all the
selection sets (the shipped one, :data:`scorer.calibration.label_free_defaults.DEFAULTS`). typed-gguf's rows are its own
wire confidence.

No model runs: the records are the single-request peer reports' (``benchmarks/single_request_peer.py``,
``data/results/single-request-peer*-MODEL.json``): every labelled row answered by ``semif serve`` under its default
(lane ``semif:default``, one System One request per state) and by typed-gguf 0.3.0 on the same GGUF (lane
``typed-gguf``), where the report has that lane.

    .venv/bin/python benchmarks/confidence_reliability.py --force  # [--output data/results/confidence-reliability.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.calibration.confidence_map import ConfidenceMap, cross_fitted, fit  # noqa: E402
from scorer.core.errors import SemifError  # noqa: E402
from scorer.core.io import check_writable  # noqa: E402
from scorer.decision.policy import calibrated_view  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.evaluation.confidence import ERROR_BUDGETS, HIGH, summary, wire_table  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.records import read_records  # noqa: E402

FORMAT = "semif-confidence-v3"
REPORTS = ("single-request-peer-json-choice-qwen2.5-1.5b.json",
           *(f"single-request-peer-{which}qwen2.5-0.5b.json" for which in ("", "heldout-", "heldout2-")))
"""The peer reports read (under ``--results``), those that exist: each model's served default as it is now. For
qwen2.5-1.5b, whose ``auto`` reads choice questions as JSON answers since 2026-12-07, the report of that default on
every labelled set (its earlier reports, ``single-request-peer-[heldout-|heldout2-]qwen2.5-1.5b.json``, answered
choice questions by letters)."""
LANES = ("semif:default", "typed-gguf")
"""The lanes read from each: SemIf's default and the peer."""
SEMIF = "semif:default"
SELECTION = ("authored", "boundary", "single")
"""The sets the defaults were chosen on: the confidence curve is fitted on them (the held-out sets never)."""


@dataclass
class _Lane:
    """One lane's answers to one set, aligned with the labels."""

    report: str
    peer: dict[str, Any]
    lane: dict[str, Any]
    set_name: str
    path: Path
    wire: metrics.Table
    """The labelled rows, ``conf`` the peakedness of the acting readout (the wire confidence before a curve)."""
    p_max: metrics.Table


def _read(results: Path) -> tuple[list[_Lane], dict[str, Path]]:
    lanes: list[_Lane] = []
    inputs: dict[str, Path] = {}
    for name in REPORTS:
        report_path = results / name
        if not report_path.is_file():
            continue
        peer = json.loads(report_path.read_text(encoding="utf-8"))
        for lane in peer["lanes"]:
            if lane["name"] not in LANES:
                continue
            for set_name, entry in lane["sets"].items():
                rel = str(entry["records"])
                path = ROOT / rel if not Path(rel).is_absolute() else Path(rel)
                recs = read_records(path)
                labels = metrics.labels_from_records(recs, str(path))
                # as aligned, a table's ``conf`` is the answer's own probability (p_max); wire_table replaces it
                table, _ = metrics.align(labels, [calibrated_view(r) for r in recs], str(path))
                lanes.append(_Lane(name, peer, lane, set_name, path, wire_table(labels, recs, str(path)), table))
                inputs[f"{name}/{lane['name']}/{set_name}"] = path
    return lanes, inputs


def _maps(lanes: list[_Lane]) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], np.ndarray]]:
    """Per weights, the curve fitted on SemIf's default answers to the selection sets; and per (weights, set) of
    those, every row's confidence under the curve fitted without its family."""
    pooled: dict[str, list[tuple[str, str, float, bool]]] = {}
    sha: dict[str, str] = {}
    for ln in lanes:
        if ln.lane["name"] != SEMIF or ln.set_name not in SELECTION:
            continue
        weights = str(ln.peer["model"])
        sha[weights] = str(ln.peer["gguf"]["sha256"])
        t = ln.wire
        pooled.setdefault(weights, []).extend((ln.set_name, lab.family, float(x), bool(ok))
                                              for lab, x, ok in zip(t.labels, t.conf, t.correct, strict=True))
    maps: dict[str, dict[str, Any]] = {}
    oof: dict[tuple[str, str], np.ndarray] = {}
    for weights, rows in pooled.items():
        x = [r[2] for r in rows]
        ok = [r[3] for r in rows]
        m = fit(x, ok)
        maps[weights] = {"gguf_sha256": sha[weights], "a": round(m.a, 6), "b": round(m.b, 6), "rows": len(rows),
                         "accuracy": float(np.mean(ok)), "sets": sorted({r[0] for r in rows}),
                         "fitted_on": "SemIf's default answers (lane semif:default) to the selection sets, "
                                      "every kind of question together"}
        crossed = cross_fitted(x, ok, [(r[0], r[1]) for r in rows])
        for set_name in maps[weights]["sets"]:
            oof[(weights, set_name)] = np.array([c for r, c in zip(rows, crossed, strict=True) if r[0] == set_name])
    return maps, oof


def run(results: Path) -> dict[str, Any]:
    """The report body and its inputs."""
    lanes, inputs = _read(results)
    if not lanes:
        raise SystemExit(f"error: none of {', '.join(REPORTS)} is under {results}")
    maps, oof = _maps(lanes)
    rows: list[dict[str, Any]] = []
    for ln in lanes:
        weights = str(ln.peer["model"])
        tool = "semif" if ln.lane["name"].startswith("semif") else ln.lane["name"]
        wire = ln.wire
        how = "the tool's own wire confidence"
        if ln.lane["name"] == SEMIF and weights in maps:
            wire = copy.copy(ln.wire)
            if ln.set_name in SELECTION:
                wire.conf = oof[(weights, ln.set_name)]
                how = "the peakedness mapped by the curve fitted without the row's family (cross-fitted)"
            else:
                curve = ConfidenceMap(maps[weights]["a"], maps[weights]["b"])
                wire.conf = np.array([curve(x) for x in ln.wire.conf])
                how = "the peakedness mapped by the curve fitted on the selection sets (the shipped one)"
        rows.append({"model": f"{weights} · {tool}", "weights": weights, "tool": tool, "lane": ln.lane["name"],
                     "set": ln.set_name, "report": f"data/results/{ln.report}",
                     "configuration": " ".join(ln.lane.get("flags") or []) or "the tool's defaults",
                     "measured_utc": ln.peer.get("created_utc"), "confidence_from": how,
                     "records": {"path": str(ln.lane["sets"][ln.set_name]["records"]), "rows": wire.n},
                     **summary(wire), "ece_peakedness": metrics.ece(ln.wire), "ece_p_max": metrics.ece(ln.p_max)})
    return {"rows": rows, "maps": maps, "inputs": inputs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "data" / "results")
    ap.add_argument("--output", type=Path, default=ROOT / "data" / "results" / "confidence-reliability.json")
    ap.add_argument("--force", action="store_true", help="overwrite an existing report")
    args = ap.parse_args(argv)
    try:
        check_writable(args.output, overwrite=args.force)
    except SemifError as exc:
        ap.error(str(exc))
    body = run(args.results)
    report = make_report("confidence", FORMAT, body.pop("inputs"), {
        "title": "How far the wire confidence can be trusted (the defaults, one request per state, beside typed-gguf)",
        "confidence": "SemIf: sigma(a + b * peakedness), the weights' curve (maps; scorer.calibration.confidence_map) "
                      "of the peakedness - choice: (p_max - 1/K) / (1 - 1/K); score: 1 - E|i - mode| / MAD_uniform "
                      "(scorer.decision.confidence) - of the acting probabilities",
        "high_threshold": HIGH, "error_budgets": list(ERROR_BUDGETS), **body})
    write_report(args.output, report, overwrite=args.force)
    for r in report["rows"]:
        h = r["high"]
        auto = ", ".join(f"{a['share']:.0%} at {a['max_error']:.0%}" for a in r["automation"])
        print(f"{r['model']:<24} {r['set']:<9} acc {r['accuracy']:.3f} ECE {r['ece']:.3f} "
              f"(peakedness {r['ece_peakedness']:.3f}) conf>=0.9: "
              f"{h['share']:.0%} of rows, right {h['accuracy'] if h['accuracy'] is not None else float('nan'):.2f}"
              f" · automated: {auto}")
    for weights, m in report["maps"].items():
        print(f"{weights}: confidence = sigma({m['a']} + {m['b']} * peakedness), fitted on {m['rows']} answers")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
