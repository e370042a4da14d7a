"""What every evaluation report shares: the ``semif-eval-v2`` envelope, the run and labels blocks, where reports go
and how they are written (never over an existing file unless forced), the table helpers of the printed summaries.

Evaluation reports read records (JSONL) and labels and write plain-JSON reports (format ``semif-eval-v2``: the
report envelope of :mod:`scorer.formats.envelope`, then the body) under ``data/results/`` plus a readable table on
stdout: ``semif eval`` (:mod:`scorer.evaluation.eval_report`), ``semif order``
(:mod:`scorer.evaluation.order_report`), ``semif route`` (:mod:`scorer.evaluation.route_report`) and ``semif
calibrate temperature`` (:mod:`scorer.calibration.temperature_report`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.core.io import FORCE_HINT, check_writable
from scorer.evaluation import metrics
from scorer.formats.envelope import carried_inputs, make_report, write_report
from scorer.formats.records import read_records

REPORT_FORMAT = "semif-eval-v2"
"""v2: the report envelope (v1: ``schema``, ``created_unix`` and a ``machine`` block of its own)."""


RESULTS_DIR = Path("data/results")


def enveloped(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """A ``semif-eval-v2`` report of ``kind``: the envelope (where the report was computed; the records
    carry where they were scored), its inputs being the files ``body`` cites, then ``body``."""
    return make_report(kind, REPORT_FORMAT, carried_inputs(body), body)


def load_labelled(run: str, labels: str | None) -> tuple[list[dict[str, Any]], list[metrics.Label], metrics.Table, int]:

    recs = read_records(run)
    labs = metrics.labels_from_decisions(labels) if labels else metrics.labels_from_records(recs, run)
    table, unlabelled = metrics.align(labs, recs, run)
    return recs, labs, table, unlabelled


def run_info(path: str, recs: list[dict[str, Any]]) -> dict[str, Any]:
    first = recs[0] if recs else {}
    return {"path": path, "sha256": sha256_file(Path(path)), "records": len(recs), "model": first.get("model"),
            "mode": first.get("mode"), "kernel": first.get("kernel"), "prompt_version": first.get("prompt_version"),
            "temperature": first.get("temperature"), "permute": (first.get("permute") or {}).get("k")}


def labels_info(labels: str | None) -> dict[str, Any] | None:
    return None if labels is None else {"path": labels, "sha256": sha256_file(Path(labels))}


def save_report(report: dict[str, Any], out: Path, force: bool) -> None:
    """Write ``report`` to ``out`` (never over an existing file unless ``force``) and say so on stderr."""
    write_report(out, report, force)
    print(f"[semif] wrote {out}", file=sys.stderr)


def check_outputs(report: Path, force: bool, records: Path) -> None:
    """A report plus a records file: refuse either before writing any (the records file is never overwritten)."""
    if report.resolve() == records.resolve():
        raise InputError(str(records), None, None, "is also the report's --output", "two different paths")
    check_writable(report, force, FORCE_HINT)
    check_writable(records, False)


def default_out(prefix: str, run: str) -> Path:
    return RESULTS_DIR / f"{prefix}-{Path(run).stem}.json"


def report_title(what: str, run_info: dict[str, Any], rows: int) -> str:
    """Heading for the site: what, model, backend, mode and the run file."""
    m = run_info.get("model") or {}
    return (f"{what} · {m.get('key')} {m.get('backend')} {run_info.get('mode')} · {Path(run_info['path']).stem} "
            f"({rows} rows)")


def ci_text(m: dict[str, float]) -> str:
    return f"{m['value']:.3f}  [{m['ci_lo']:.3f}, {m['ci_hi']:.3f}]"
