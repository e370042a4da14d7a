"""The report envelope: every committed report carries it, every writer's format is the one listed for its kind,
and the migration of old reports keeps their numbers and is idempotent."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from scorer.calibration.core import CALIBRATION_FORMAT, load_calibration
from scorer.core.errors import OutputExistsError
from scorer.core.machine import load_average, load_span
from scorer.decision import policy as abstain
from scorer.evaluation import compare
from scorer.evaluation import report_files as ev
from scorer.formats.envelope import (
    ENVELOPE_KEYS,
    KINDS,
    carried_inputs,
    envelope_problems,
    make_report,
    report_bytes,
    write_report,
)
from scorer.scoring import drift, presets
from scorer.studies import bench, quant, quant_schemes

ROOT = Path(__file__).resolve().parents[2]
REPORT_DIRS = (ROOT / "data" / "results", ROOT / "benchmarks" / "results")


def _script(path: Path) -> Any:
    """A script (not a package module) loaded by its path."""
    spec = importlib.util.spec_from_file_location(f"_script_{path.parent.name}_{path.stem}".replace("-", "_"), path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


def _migration() -> Any:
    return _script(ROOT / "scripts" / "migrate_reports.py")


def _committed_reports() -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for folder in REPORT_DIRS:
        for p in sorted(folder.rglob("*.json")):
            doc = json.loads(p.read_bytes())
            if isinstance(doc, dict) and str(doc.get("format", "")).startswith("semif-trace"):
                continue  # traces have their own format and checks (scorer.trace)
            out.append((p, doc))
    return out


def test_every_committed_report_carries_the_envelope() -> None:
    found = _committed_reports()
    assert len(found) >= 60  # the walk really saw the committed reports
    bad = {str(p.relative_to(ROOT)): envelope_problems(doc) for p, doc in found if envelope_problems(doc)}
    assert not bad
    kinds = {doc["kind"] for _, doc in found}
    assert {"bench", "quant", "compare", "drift", "eval", "calibrate", "calibration", "order", "route", "prior",
            "bias", "peers", "cache-verify", "ray-scale", "serve-load", "grammar-mask-probe"} <= kinds


def test_the_migration_has_nothing_left_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert _migration().main(["--check", *map(str, REPORT_DIRS)]) == 0
    assert "needs migrating" not in capsys.readouterr().out


def test_writers_write_the_format_listed_for_their_kind() -> None:
    written = {"bench": bench.BENCH_FORMAT, "drift": drift.DRIFT_FORMAT, "quant": quant.REPORT_FORMAT,
               "quant-schemes": quant_schemes.REPORT_FORMAT,
               "compare": compare.REPORT_FORMAT, "prior": CALIBRATION_FORMAT, "bias": CALIBRATION_FORMAT,
               **dict.fromkeys(("eval", "calibrate", "calibration", "order", "route", "route-threshold"),
                               ev.REPORT_FORMAT), "abstain-thresholds": abstain.THRESHOLDS_FORMAT,
               "preset": presets.PRESET_FORMAT}
    assert {k: KINDS[k] for k in written} == written
    scripts = {"peers": "peers/main.py", "cache-verify": "cache_verify.py", "ray-scale": "ray_scale.py",
               "serve-load": "serve_load.py", "grammar-mask-probe": "grammar-mask-probe.py", "engines": "engines.py",
               "serve-batching": "serve_batching.py", "quality-study": "quality_study.py",
               "agent-example": "agent_example.py", "requant-grid": "requant_grid.py",
               "confidence": "confidence_reliability.py", "single-request-study": "single_request_study.py",
               "decision-latency": "decision_latency.py", "single-request-peer": "single_request_peer.py",
               "llamacpp-batch-probe": "llamacpp_batch_probe.py", "label-free-selection": "label_free_selection.py",
               "busy": "busy.py"}
    assert {k: _script(ROOT / "benchmarks" / f).FORMAT for k, f in scripts.items()} == {k: KINDS[k] for k in scripts}
    assert set(KINDS) == set(written) | set(scripts)  # every kind has its writer checked here


def test_make_report_leads_with_the_envelope_and_cites_the_body_inputs(tmp_path: Path) -> None:
    body = {"run": {"path": "r.jsonl", "sha256": "a" * 64, "records": 3},
            "sides": [{"original": {"path": "o.jsonl", "sha256": "b" * 64}}],
            "exact_policy": {"drift_report": "d.json", "drift_report_sha256": "c" * 64},
            "labels": None, "x": 1.5}
    rep = make_report("eval", KINDS["eval"], carried_inputs(body), body, created=0)
    assert list(rep)[:len(ENVELOPE_KEYS)] == list(ENVELOPE_KEYS) and not envelope_problems(rep)
    assert rep["created_utc"] == "1970-01-01T00:00:00Z"
    assert rep["inputs"] == {"run": {"path": "r.jsonl", "sha256": "a" * 64},
                             "sides[0].original": {"path": "o.jsonl", "sha256": "b" * 64},
                             "exact_policy.drift_report": {"path": "d.json", "sha256": "c" * 64}}
    assert {k: rep[k] for k in body} == body
    with pytest.raises(ValueError, match="envelope"):
        make_report("eval", KINDS["eval"], {}, {"machine": {}})
    out = tmp_path / "r.json"
    write_report(out, rep)
    assert out.read_bytes() == report_bytes(rep) and orjson.loads(out.read_bytes()) == rep
    with pytest.raises(OutputExistsError, match="refusing to overwrite"):
        write_report(out, rep)


def test_envelope_problems_name_what_is_wrong() -> None:
    good = make_report("drift", KINDS["drift"], {}, {"a": 1})
    assert envelope_problems({**good, "kind": "mystery"})[0].startswith("kind 'mystery'")
    assert "format" in envelope_problems({**good, "format": "semif-drift-v1"})[0]
    assert "start with" in envelope_problems({"a": 1, **good})[0]
    assert "no sha256" in envelope_problems({**good, "inputs": {"x": {"path": "p", "sha256": None}}})[0]


def test_one_load_average_shape() -> None:
    now = load_average()
    assert now is None or (len(now) == 3 and all(isinstance(x, float) for x in now))
    span = load_span(now)
    assert list(span) == ["before", "after"] and span["before"] == now


def test_migrating_a_v1_drift_report_keeps_every_number_and_stays_readable(tmp_path: Path) -> None:
    old = {"schema": "semif-drift-v1", "created_unix": 1796001015.458, "identity": {"mode": "shared"},
           "model": {"key": "m"}, "machine": {"cpu": "c", "cores": 2}, "versions": {"semif": "0.1.0"},
           "input": {"path": "w.jsonl", "sha256": "e" * 64, "slice": [0, 12], "rows": 12, "ids": ["a"]},
           "summary": {"rows": 12, "max_abs_dp": 2.5e-6}, "bound": {"bound": 2e-5},
           "timing": {"fresh_wall_s": 1.25, "fast_wall_s": 0.5, "load_average": [0.5, 0.75, 1.0], "note": "n"}}
    raw = orjson.dumps(old)
    path = tmp_path / "drift-old.json"
    path.write_bytes(raw)
    assert drift.load_report(path)[0]["summary"]["max_abs_dp"] == 2.5e-6  # a v1 report is still an input
    mig = _migration()
    assert mig.main([str(path)]) == 0
    new = orjson.loads(path.read_bytes())
    assert not envelope_problems(new) and new["created_utc"] == "2026-11-30T01:10:15Z"
    assert new["migrated_from"] == {"sha256": hashlib.sha256(raw).hexdigest(), "format": "semif-drift-v1"}
    assert new["machine"] == old["machine"] and new["versions"] == old["versions"]
    assert new["inputs"] == {"input": {"path": "w.jsonl", "sha256": "e" * 64}}
    assert new["timing"]["load_average"] == {"before": None, "after": [0.5, 0.75, 1.0]}
    assert {k: new[k] for k in ("identity", "model", "input", "summary", "bound")} == \
        {k: old[k] for k in ("identity", "model", "input", "summary", "bound")}
    assert drift.load_report(path)[0]["summary"] == old["summary"]
    once = path.read_bytes()
    assert mig.main([str(path)]) == 0 and path.read_bytes() == once  # idempotent


def test_migrated_and_v1_calibration_files_both_load() -> None:
    for name in ("prior-q15-torch-boundary.json", "bias-q15-torch-authored.json",
                 "prior-content-free-q15-torch-boundary.json"):
        doc = json.loads((ROOT / "data" / "results" / name).read_bytes())
        cal = load_calibration(ROOT / "data" / "results" / name)
        assert cal.method == doc["kind"] and cal.entries and not set(cal.meta) & set(ENVELOPE_KEYS)
    v1 = load_calibration(ROOT / "tests" / "fixtures" / "prior-fake.json")  # the layout before the envelope
    assert v1.method == "prior" and v1.entries
