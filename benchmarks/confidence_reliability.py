#!/usr/bin/env python3
"""How far the wire ``confidence`` can be trusted, from committed records: per model, tool and labelled set, the
reliability of ``(p_max − 1/K)/(1 − 1/K)`` (:mod:`scorer.decision.confidence`), its ECE, the answers at confidence
≥ 0.9 and how often they are right, and how much can be automated at 1/5/10 % error
(:mod:`scorer.evaluation.confidence`); beside it the ECE of ``p_max`` itself (the acting probability of the answer).

No model runs: the records are the single-request peer reports' (``benchmarks/single_request_peer.py``,
``data/results/single-request-peer*-MODEL.json``): every labelled row answered by ``semif serve`` under its default
(lane ``semif:default``, one System One request per state) and by typed-gguf 0.3.0 on the same GGUF (lane
``typed-gguf``), where the report has that lane.

    .venv/bin/python benchmarks/confidence_reliability.py --force  # [--output data/results/confidence-reliability.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.core.errors import SemifError  # noqa: E402
from scorer.core.io import check_writable  # noqa: E402
from scorer.decision.policy import calibrated_view  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.evaluation.confidence import ERROR_BUDGETS, HIGH, summary, wire_table  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.records import read_records  # noqa: E402

FORMAT = "semif-confidence-v2"
REPORTS = ("single-request-peer-qwen2.5-1.5b.json", "single-request-peer-heldout-qwen2.5-1.5b.json",
           "single-request-peer-qwen2.5-0.5b.json", "single-request-peer-heldout-qwen2.5-0.5b.json")
"""The peer reports read (under ``--results``), those that exist."""
LANES = ("semif:default", "typed-gguf")
"""The lanes read from each: SemIf's default and the peer."""


def run(results: Path) -> dict[str, Any]:
    """The report body and its inputs."""
    rows: list[dict[str, Any]] = []
    inputs: dict[str, Path] = {}
    for name in REPORTS:
        report_path = results / name
        if not report_path.is_file():
            continue
        peer = json.loads(report_path.read_text(encoding="utf-8"))
        model = str(peer["model"])
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
                tool = "semif" if lane["name"].startswith("semif") else lane["name"]
                rows.append({"model": f"{model} · {tool}", "weights": model, "tool": tool, "lane": lane["name"],
                             "set": set_name, "report": f"data/results/{name}",
                             "configuration": " ".join(lane.get("flags") or []) or "the tool's defaults",
                             "measured_utc": peer.get("created_utc"),
                             "records": {"path": rel, "rows": len(recs)}, **summary(wire),
                             "ece_p_max": metrics.ece(table)})
                inputs[f"{name}/{lane['name']}/{set_name}"] = path
    if not rows:
        raise SystemExit(f"error: none of {', '.join(REPORTS)} is under {results}")
    return {"rows": rows, "inputs": inputs}


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
        "confidence": "choice: (p_max - 1/K) / (1 - 1/K); score: 1 - E|i - mode| / MAD_uniform "
                      "(scorer.decision.confidence); from the acting probabilities",
        "high_threshold": HIGH, "error_budgets": list(ERROR_BUDGETS), **body})
    write_report(args.output, report, overwrite=args.force)
    for r in report["rows"]:
        h = r["high"]
        auto = ", ".join(f"{a['share']:.0%} at {a['max_error']:.0%}" for a in r["automation"])
        print(f"{r['model']:<24} {r['set']:<9} acc {r['accuracy']:.3f} ECE {r['ece']:.3f} conf>=0.9: "
              f"{h['share']:.0%} of rows, right {h['accuracy'] if h['accuracy'] is not None else float('nan'):.2f}"
              f" · automated: {auto}")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
