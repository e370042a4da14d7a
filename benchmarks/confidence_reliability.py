#!/usr/bin/env python3
"""How far the wire ``confidence`` can be trusted, from committed records: per model and labelled set, the reliability
of ``(p_max − 1/K)/(1 − 1/K)`` (:mod:`scorer.decision.confidence`), its ECE, the answers at confidence ≥ 0.9 and how
often they are right, and how much can be automated at 1/5/10 % error (:mod:`scorer.evaluation.confidence`).

No model runs: the records are the quality study's (``data/results/quality-study-*.runs/``), each labelled row's
record as ``semif serve`` would answer it with the configuration named (default: the server's default readout,
state-major letters without demonstrations or calibration).

    .venv/bin/python benchmarks/confidence_reliability.py [--output data/results/confidence-reliability.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.evaluation import metrics  # noqa: E402
from scorer.evaluation.confidence import ERROR_BUDGETS, HIGH, summary, wire_table  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.records import read_records  # noqa: E402

FORMAT = "semif-confidence-v1"
RUNS = {
    ("qwen2.5-0.5b", "authored"): "quality-study-qwen2.5-0.5b-grid.runs/authored.state-major.k0.letters.all.jsonl",
    ("qwen2.5-0.5b", "boundary"): "quality-study-qwen2.5-0.5b-grid.runs/boundary.state-major.k0.letters.all.jsonl",
    ("qwen2.5-1.5b", "authored"): "quality-study-qwen2.5-1.5b.runs/authored.state-major.k0.letters.all.jsonl",
    ("qwen2.5-1.5b", "boundary"): "quality-study-qwen2.5-1.5b.runs/boundary.state-major.k0.letters.all.jsonl",
}
"""(model, set) -> the study's records of the default readout (raw, state-major, letters, no demonstrations)."""


def run(results: Path) -> dict[str, Any]:
    """The report body and its inputs."""
    rows: list[dict[str, Any]] = []
    inputs: dict[str, Path] = {}
    for (model, set_name), rel in RUNS.items():
        path = results / rel
        recs = read_records(path)
        table = wire_table(metrics.labels_from_records(recs, str(path)), recs, str(path))
        first = recs[0]
        rows.append({"model": model, "set": set_name, "backend": first["model"]["backend"],
                     "configuration": "default readout: state-major, letters, no demonstrations, raw",
                     "records": {"path": f"data/results/{rel}", "rows": len(recs)}, **summary(table)})
        inputs[f"{model}/{set_name}"] = path
    return {"rows": rows, "inputs": inputs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "data" / "results")
    ap.add_argument("--output", type=Path, default=ROOT / "data" / "results" / "confidence-reliability.json")
    args = ap.parse_args(argv)
    body = run(args.results)
    report = make_report("confidence", FORMAT, body.pop("inputs"), {
        "title": "How far the wire confidence can be trusted (raw default readout, labelled sets)",
        "confidence": "choice: (p_max - 1/K) / (1 - 1/K); score: 1 - E|i - mode| / MAD_uniform "
                      "(scorer.decision.confidence); from the acting probabilities",
        "high_threshold": HIGH, "error_budgets": list(ERROR_BUDGETS), **body})
    write_report(args.output, report)
    for r in report["rows"]:
        h = r["high"]
        auto = ", ".join(f"{a['share']:.0%} at {a['max_error']:.0%}" for a in r["automation"])
        print(f"{r['model']:<13} {r['set']:<9} acc {r['accuracy']:.3f} ECE {r['ece']:.3f} conf>=0.9: "
              f"{h['share']:.0%} of rows, right {h['accuracy'] if h['accuracy'] is not None else float('nan'):.2f}"
              f" · automated: {auto}")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
