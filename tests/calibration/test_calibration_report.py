"""`semif calibrate report` on the committed boundary records (v1, qwen2.5-1.5b): the published numbers,
the skew and routing sections, create-only output."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from scorer import cli
from scorer.calibration.methods_report import report
from scorer.formats.envelope import envelope_problems

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "data" / "results" / "runs"
BOUNDARY = ROOT / "data" / "eval" / "boundary.jsonl"


@pytest.fixture(scope="module")
def rep() -> dict:
    return report(str(RUNS / "q15-torch-boundary.jsonl"), str(BOUNDARY),
                  permuted=str(RUNS / "q15-torch-permute2-boundary.jsonl"),
                  permuted_reversed=str(RUNS / "q15-torch-permute2-reverse-boundary.jsonl"),
                  do_skew=True, route_fast=str(RUNS / "q05-torch-boundary.jsonl"), reps=20, skew_draws=5)


def _method(rep: dict, name: str) -> dict:
    return next(m for m in rep["methods"] if m["method"] == name)


def test_published_numbers(rep):
    assert rep["raw"]["balanced_accuracy"]["value"] == pytest.approx(0.5417, abs=1e-4)
    m = _method(rep, "prior mean · per signature, min rows 8 · plain")
    assert m["balanced_accuracy"]["value"] == pytest.approx(0.875) and m["changed_choices"] == 10
    assert m["labels"] == "none"
    assert rep["raw"]["auc_per_family"]["boundary"] > 0.9
    assert rep["bound"]["per_family"]["boundary"]["bound"] >= m["balanced_accuracy"]["value"]
    assert rep["bound"]["accuracy"] >= m["accuracy"]["value"]
    assert rep["best_label_free"]["balanced_accuracy"]["value"] >= 0.875
    names = {m["method"] for m in rep["methods"]}
    assert {"raw · fwd-permute-2 readout", "raw · 2 orderings", "raw · 4 orderings"} <= names
    assert any(m["labels"] == "out of fold" for m in rep["methods"])


def test_skew_section(rep):
    ratios = rep["skew"]["ratios"]
    assert set(ratios) == {"0.5", "0.75", "0.9", "single"}
    assert ratios["single"]["in-run prior"] == 0.0  # one row divided by itself: a tie, never a choice
    assert ratios["single"]["in-run prior, min rows 8"] == ratios["single"]["raw"]
    assert ratios["0.9"]["true majority share"] == pytest.approx(11 / 12)  # 12 rows: 6/6, 9/3, 11/1
    assert "warning fired, stored prior (share of draws)" not in ratios["single"]
    assert len(rep["skew"]["signatures"]) == 1


def test_routing_section(rep):
    t = rep["routing"]["table"]
    assert {r["margins"] for r in t} == {"raw", "calibrated"}
    only_ref = [r for r in t if r["policy"] == "reference only"]
    assert all(r["escalated_share"] == 1.0 and r["time_vs_reference"] == pytest.approx(1.0) for r in only_ref)
    shares = [r["escalated_share"] for r in t if r["policy"].startswith("lowest") and r["margins"] == "raw"]
    assert shares == sorted(shares) and shares[0] == pytest.approx(0.125, abs=0.05)


def test_report_cli_is_create_only(tmp_path, capsys):
    out = tmp_path / "r.json"
    args = ["calibrate", "report", "--run", str(RUNS / "q15-torch-boundary.jsonl"), "--labels", str(BOUNDARY),
            "--label-free", "--reps", "10", "--output", str(out)]
    assert cli.main(args) == 0
    doc = orjson.loads(out.read_bytes())
    assert (doc["kind"], doc["format"]) == ("calibration", "semif-eval-v2") and not envelope_problems(doc)
    assert doc["run"]["sha256"] == doc["inputs"]["run"]["sha256"]
    assert "best label-free" in capsys.readouterr().out
    assert cli.main(args) == 2
    assert cli.main([*args[:-2], "--escalate", "2", "--output", str(tmp_path / "x.json")]) == 2
