#!/usr/bin/env python3
"""How far the wire ``confidence`` can be trusted, from committed records: per model, tool and labelled set, its
reliability, its ECE, the answers at confidence ≥ 0.9 and how often they are right, and how much can be automated at
1/5/10 % error (:mod:`scorer.evaluation.confidence`); beside it the ECE of the peakedness ``(p_max − 1/K)/(1 − 1/K)``
(:mod:`scorer.decision.confidence`) and of ``p_max`` itself (the acting probability of the answer).

SemIf's ``confidence`` is the peakedness mapped by the curve of the weights and the kind of question (choice, score,
yes/no: :mod:`scorer.calibration.confidence_map`), and this report is where those curves are fitted: per weights and
kind, on SemIf's default answers to the selection sets (authored, boundary, single — the sets the defaults were chosen
on). Its rows judge them on rows they were not fitted on: on a selection set, each family's confidence comes from its
kind's curve fitted without that family (cross-fitted); on the held-out sets, from the curves fitted on all the
selection sets (the shipped ones, :data:`scorer.calibration.label_free_defaults.DEFAULTS`). typed-gguf's rows are its
own wire confidence.

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

from scorer.calibration.confidence_map import (  # noqa: E402
    KINDS,
    ConfidenceMap,
    KindCurves,
    cross_fitted,
    cross_fitted_by_kind,
    fit,
    fit_by_kind,
)
from scorer.core.errors import SemifError  # noqa: E402
from scorer.core.io import check_writable  # noqa: E402
from scorer.decision.policy import calibrated_view  # noqa: E402
from scorer.decision.questions import answer_kind  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.evaluation.confidence import ERROR_BUDGETS, HIGH, summary, wire_table  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.records import read_records  # noqa: E402

FORMAT = "semif-confidence-v4"
REPORTS = ("single-request-peer-json-close-qwen2.5-1.5b.json", "single-request-peer-json-close-qwen2.5-0.5b.json")
"""The peer reports read (under ``--results``), those that exist: each model's served default as it is now, on every
labelled set, since each JSON answer's closing quote is read as every token that begins with it (2026-12-07, the JSON
readout's fix). Their earlier reports read the lone quote (``single-request-peer-[heldout-|heldout2-]MODEL.json``,
and qwen2.5-1.5b's ``single-request-peer-json-choice-qwen2.5-1.5b.json``, the first to read its choice questions as
JSON answers)."""
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
    kinds: list[str]
    """The kind of question of each of :attr:`wire`'s rows (:func:`~scorer.decision.questions.answer_kind`)."""


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
                wire = wire_table(labels, recs, str(path))
                kind = {r["id"]: answer_kind(r.get("type"), r["option_ids"]) for r in recs}
                kinds = [kind[lab.id] for lab in wire.labels]
                lanes.append(_Lane(name, peer, lane, set_name, path, wire, table, kinds))
                inputs[f"{name}/{lane['name']}/{set_name}"] = path
    return lanes, inputs


FORMS = ("per kind", "one for every kind")
"""The two forms a weights' curves may take: a curve per kind of question, or one curve fitted on every kind together
(each kind then maps through it). Per weights the report ships the form whose cross-fitted ECE, averaged over the
selection sets, is lower (ties to one curve, the fewer parameters)."""


def _maps(lanes: list[_Lane]) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], np.ndarray]]:
    """Per weights, the curves fitted on SemIf's default answers to the selection sets in the form chosen
    (:data:`FORMS`); and per (weights, set) of those, every row's confidence under its curve fitted without its
    family."""
    pooled: dict[str, list[tuple[str, str, float, bool, str]]] = {}
    tables: dict[tuple[str, str], metrics.Table] = {}
    sha: dict[str, str] = {}
    for ln in lanes:
        if ln.lane["name"] != SEMIF or ln.set_name not in SELECTION:
            continue
        weights = str(ln.peer["model"])
        sha[weights] = str(ln.peer["gguf"]["sha256"])
        t = ln.wire
        tables[(weights, ln.set_name)] = t
        pooled.setdefault(weights, []).extend((ln.set_name, lab.family, float(x), bool(ok), kind)
                                              for lab, x, ok, kind in zip(t.labels, t.conf, t.correct, ln.kinds,
                                                                          strict=True))
    maps: dict[str, dict[str, Any]] = {}
    oof: dict[tuple[str, str], np.ndarray] = {}
    for weights, rows in pooled.items():
        x = [r[2] for r in rows]
        ok = [r[3] for r in rows]
        kinds = [r[4] for r in rows]
        groups = [(r[0], r[1]) for r in rows]
        sets = sorted({r[0] for r in rows})
        one = fit(x, ok)
        fitted = {FORMS[0]: fit_by_kind(x, ok, kinds), FORMS[1]: KindCurves(one, one, one)}
        crossed = {FORMS[0]: cross_fitted_by_kind(x, ok, groups, kinds), FORMS[1]: cross_fitted(x, ok, groups)}
        by_set: dict[str, dict[str, np.ndarray]] = {
            form: {s: np.array([c for r, c in zip(rows, values, strict=True) if r[0] == s]) for s in sets}
            for form, values in crossed.items()}
        eces: dict[str, dict[str, float]] = {}
        for form in FORMS:
            eces[form] = {}
            for s in sets:
                t = copy.copy(tables[(weights, s)])
                t.conf = by_set[form][s]
                eces[form][s] = metrics.ece(t)
        mean = {form: float(np.mean(list(eces[form].values()))) for form in FORMS}
        chosen = FORMS[0] if mean[FORMS[0]] < mean[FORMS[1]] else FORMS[1]
        curves = fitted[chosen]
        maps[weights] = {"gguf_sha256": sha[weights], "rows": len(rows), "accuracy": float(np.mean(ok)),
                         "sets": sets, "form": chosen,
                         "forms": {form: {"cross_fitted_ece": eces[form], "mean": mean[form]} for form in FORMS},
                         "kinds": {k: {"a": round(curves.for_kind(k).a, 6), "b": round(curves.for_kind(k).b, 6),
                                       "rows": kinds.count(k),
                                       "accuracy": float(np.mean([o for o, kk in zip(ok, kinds, strict=True)
                                                                  if kk == k]))} for k in KINDS},
                         "fitted_on": "SemIf's default answers (lane semif:default) to the selection sets, in the form "
                                      "whose cross-fitted ECE averaged over the sets is lower"}
        for s in sets:
            oof[(weights, s)] = by_set[chosen][s]
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
                how = "the peakedness mapped by its kind's curve fitted without the row's family (cross-fitted)"
            else:
                curves = {k: ConfidenceMap(m["a"], m["b"]) for k, m in maps[weights]["kinds"].items()}
                wire.conf = np.array([curves[k](x) for x, k in zip(ln.wire.conf, ln.kinds, strict=True)])
                how = "the peakedness mapped by its kind's curve fitted on the selection sets (the shipped one)"
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
        "confidence": "SemIf: sigma(a + b * peakedness), the curve of the weights and the kind of question (maps; "
                      "scorer.calibration.confidence_map) "
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
        print(f"{weights}: {m['form']} (mean cross-fitted ECE " +
              ", ".join(f"{form} {f['mean']:.3f}" for form, f in m["forms"].items()) + ")")
        for kind, c in m["kinds"].items():
            print(f"{weights} {kind}: confidence = sigma({c['a']} + {c['b']} * peakedness), fitted on {c['rows']} "
                  "answers")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
