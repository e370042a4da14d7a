"""Trace format v2 (typed, free, constrained): fixtures, consistency checks, summary, export, CLI; v1 still reads."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from scorer import trace
from scorer.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
V2 = FIXTURES / "trace-v2-fake.json"
V2_FREE_VALID = FIXTURES / "trace-v2-fake-free-valid.json"
V1 = [FIXTURES / "trace-fake.json", FIXTURES / "trace-fake-invalid.json",
      *sorted(p for p in (ROOT / "data" / "traces").glob("*.json") if trace.load(p)["format"] == trace.TRACE_FORMAT)]


@pytest.fixture(scope="module")
def doc() -> dict:
    return trace.load(V2)


def _lane(d: dict, lane: str, k: int = 0) -> dict:
    return trace.measured(d, lane)[k]


def _rehash(d: dict) -> dict:
    d["checksums"] = trace.checksums(d)
    return d


# --- fixtures ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [V2, V2_FREE_VALID, *V1], ids=lambda p: p.name)
def test_committed_traces_verify(path: Path):
    d = trace.load(path)
    assert trace.verify(d) == []
    assert trace.schema_errors(d) == []


def test_v2_fixture_shape_for_the_site(doc):
    assert doc["format"] == trace.TRACE_FORMAT_V2
    s = doc["summary"]
    free, con = s["free"], s["constrained"]
    assert free["capped_runs"] == free["runs"] == 3 and free["complete_runs"] == 0
    assert free["verdict"].startswith("capped: stopped at the 100-token limit")
    assert con["complete_runs"] == 3 and con["capped_runs"] == 0 and con["masked_tokens_median"] >= 1
    assert con["verdict"] == "valid: 21 values" and con["agreement"]["missing"] == 0
    assert doc["calibration"]["method"] == "prior" and len(doc["calibration"]["file_sha256"]) == 64
    assert s["labels"]["typed_calibrated_correct"] is not None
    assert all(d["calibrated"] is not None for d in _lane(doc, "typed")["decisions"])
    assert "free" in s["token_account"]["line"] and s["token_account"]["decode_step_in_prefill_tokens"] > 0
    masked = [t for t in _lane(doc, "constrained")["tokens"] if t["masked"]]
    assert masked and all(t["free_argmax"]["id"] == t["top_k"][0]["id"] for t in masked)
    other = trace.load(V2_FREE_VALID)
    assert other["calibration"] is None and other["summary"]["free"]["agreement"]["disagree"] == 2


def test_v2_fixture_matches_the_published_prior_file(doc):
    import hashlib

    cal = doc["calibration"]
    assert cal["file_sha256"] == hashlib.sha256((ROOT / cal["file"]).read_bytes()).hexdigest()


# --- tampering -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("tamper", "needle"), [
    (lambda d: _lane(d, "free").update(capped=False), "capped is False"),
    (lambda d: _lane(d, "free").update(verdict="valid: 21 values"), "verdict"),
    (lambda d: _lane(d, "constrained")["correct"].__setitem__(0, not _lane(d, "constrained")["correct"][0]),
     "correct"),
    (lambda d: next(t for t in _lane(d, "constrained")["tokens"] if t["masked"]).update(masked=False),
     "masked"),
    (lambda d: _lane(d, "constrained").update(masked_tokens=0), "masked_tokens 0"),
    (lambda d: _lane(d, "free")["tokens"][0].update(masked=True), "free run"),
    (lambda d: _lane(d, "constrained").update(grammar_s=None), "grammar_s"),
    (lambda d: _lane(d, "typed")["decisions"][0].update(correct=not _lane(d, "typed")["decisions"][0]["correct"]),
     "correct is"),
    (lambda d: _lane(d, "typed")["decisions"][0].update(label="no" if d["inputs"]["criteria"][0]["label"] == "yes"
                                                        else "yes"), "label"),
    (lambda d: _lane(d, "typed")["decisions"][1]["calibrated"].update(margin=0.0), "calibrated.margin"),
    (lambda d: d.update(calibration=None), "without the trace's calibration"),
    (lambda d: d["calibration"].update(calibrated_decisions=3), "calibrated_decisions"),
    (lambda d: d["prompts"]["constrained"].update(grammar=d["prompts"]["constrained"]["grammar"] + "x ::= \"y\"\n"),
     "grammar_sha256"),
    (lambda d: d["prompts"]["constrained"].update(max_new_tokens=5), "max_new_tokens"),
    (lambda d: d["protocol"].update(constrained_max_new_tokens=40), "constrained"),
    (lambda d: d["summary"]["constrained"].update(correct=21), "summary does not match"),
    (lambda d: d["runs"].remove(_lane(d, "constrained", 2)), "measured constrained runs"),
])
def test_v2_consistency_checks_catch_rehashed_edits(doc, tamper, needle):
    d = copy.deepcopy(doc)
    tamper(d)
    problems = trace.verify(_rehash(d))
    assert any(needle in p for p in problems), problems


def test_v2_schema_refuses_v1_paths_and_missing_fields(doc):
    d = copy.deepcopy(doc)
    _lane(d, "free")["path"] = "generated"
    assert trace.verify(_rehash(d))
    d = copy.deepcopy(doc)
    del d["calibration"]
    assert any("calibration" in p for p in trace.verify(_rehash(d)))


def test_parse_error_wording_is_fixed_in_v2_and_kept_in_v1():
    # Regression: "Unterminated string starting at at char N" in v1's wording.
    assert trace.parse_array('["yes', 2)[3] == "not a JSON value (Unterminated string starting at char 1)"
    assert trace.parse_array('["yes', 2, v1_wording=True)[3] == (
        "not a JSON value (Unterminated string starting at at char 1)")


# --- summary, export, command line -------------------------------------------------------------------------
def test_v2_summary_text_names_every_lane(doc):
    text = trace.summary_text(doc)
    for needle in ("typed ", "free ", "constrained ", "capped 3", "right against labels", "calibrated",
                   "token account", "grammar by llguidance"):
        assert needle in text, needle


def test_v2_chrome_export_has_three_threads(doc):
    out = json.loads(json.dumps(trace.to_chrome(doc)))
    ev = out["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads == {1: "typed", 2: "free", 3: "constrained"}
    runs = [e for e in ev if e["ph"] == "X" and e["name"].startswith(("typed ", "free ", "constrained "))]
    assert len(runs) == len(doc["runs"])
    masked = [e for e in ev if e["ph"] == "X" and e["tid"] == 3 and "masked" in e.get("args", {})]
    assert masked and set(out["otherData"]["summary_wall_ratio"]) == {"free", "constrained"}


def test_cli_handles_v1_and_v2(tmp_path: Path, capsys):
    for path in (V2, V1[0]):
        assert main(["trace", "verify", str(path)]) == 0
        assert "ok (semif-trace-v" in capsys.readouterr().out
        assert main(["trace", "summary", str(path)]) == 0
        assert "TTFT" in capsys.readouterr().out
        out = tmp_path / f"{path.stem}.chrome.json"
        assert main(["trace", "export", "--chrome", str(path), "-o", str(out)]) == 0
        assert json.loads(out.read_text())["traceEvents"]
    d = trace.load(V2)
    _lane(d, "constrained")["tokens"][2]["t"] = 0.0
    bad = tmp_path / "bad.json"
    bad.write_bytes(trace.dumps(_rehash(d)))
    assert main(["trace", "verify", str(bad)]) == 2
    assert "token timestamps decrease" in capsys.readouterr().err
