"""The trace format: schema, checksums, consistency checks, summary, Chrome export, CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from scorer import trace
from scorer.cli import main
from scorer.core.errors import InputError, OutputExistsError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VALID = FIXTURES / "trace-fake.json"
INVALID = FIXTURES / "trace-fake-invalid.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return trace.load(VALID)


def _gen(d: dict, k: int = 0) -> dict:
    return trace.measured(d, "generated")[k]


def _typed(d: dict, k: int = 0) -> dict:
    return trace.measured(d, "typed")[k]


def _rehash(d: dict) -> dict:
    d["checksums"] = trace.checksums(d)
    return d


# --- the committed fixtures (the site builds against them) --------------------------------------------
def test_fixtures_verify():
    assert trace.verify(trace.load(VALID)) == []
    bad = trace.load(INVALID)
    assert trace.verify(bad) == []  # a failed generation is a valid trace of a failure
    assert not _gen(bad)["complete"] and _gen(bad)["error"] == "20 values for 21 criteria"


def test_fixture_shape_for_the_site(doc):
    assert doc["format"] == trace.TRACE_FORMAT
    assert len(doc["inputs"]["criteria"]) == 21
    assert doc["summary"]["agreement"]["disagree"] == 2
    assert _typed(doc)["tokens"]["passes"] == 2  # decisions become available at two different times
    plain = [d for d in _typed(doc)["decisions"] if not d["escalated"]]
    assert len({d["t_available"] for d in plain}) == 2
    assert _typed(doc)["escalated"] == 2 and doc["protocol"]["exact"]["enabled"]  # the site shows escalations
    assert sum(1 for t in _gen(doc)["tokens"] if t["yes_no"] is not None) == 21


# --- checksums and tampering -------------------------------------------------------------------------
def test_canonical_json_is_key_order_independent():
    assert trace.sha256_json({"b": 1, "a": [1.5, "é"]}) == trace.sha256_json({"a": [1.5, "é"], "b": 1})
    assert trace.canonical({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


def test_edited_number_breaks_the_checksums(doc):
    d = copy.deepcopy(doc)
    _typed(d)["decisions"][0]["probabilities"] = [0.5, 0.5]
    problems = trace.verify(d)
    assert any("runs_sha256" in p for p in problems) and any("content_sha256" in p for p in problems)


def test_edited_summary_breaks_content_checksum(doc):
    d = copy.deepcopy(doc)
    d["summary"]["wall_ratio"] = 5.0
    assert any("content_sha256" in p for p in trace.verify(d))
    # and re-hashing does not launder it: the summary is recomputed from the runs
    assert any("summary does not match" in p for p in trace.verify(_rehash(d)))


@pytest.mark.parametrize(("tamper", "where"), [
    (lambda d: d.pop("runs"), "(root)"),
    (lambda d: d.update(format="semif-trace-v0"), "format"),
    (lambda d: _typed(d)["decisions"][0].update(probabilities=[1.5, -0.5]), "runs/2/decisions/0/probabilities"),
    (lambda d: _gen(d)["tokens"][0].update(t=-1.0), "runs/3/tokens/0/t"),
    (lambda d: _gen(d).update(stop_reason="sampled"), "runs/3/stop_reason"),
    (lambda d: d["checksums"].update(runs_sha256="abc"), "checksums/runs_sha256"),
    (lambda d: d.update(surprise=1), "(root)"),
])
def test_schema_rejects_a_tampered_trace(doc, tamper, where):
    d = copy.deepcopy(doc)
    tamper(d)
    problems = trace.schema_errors(d)
    assert problems and any(p.startswith(f"at {where}") for p in problems), problems
    assert trace.verify(d) == problems


@pytest.mark.parametrize(("tamper", "needle"), [
    (lambda d: _gen(d)["tokens"][5].update(t=_gen(d)["tokens"][4]["t"] - 0.01), "token timestamps decrease"),
    (lambda d: _gen(d).update(ttft_s=_gen(d)["total_s"] + 1.0), "ttft_s"),
    (lambda d: _gen(d).update(output_tokens=_gen(d)["output_tokens"] + 1), "output_tokens"),
    (lambda d: _gen(d).update(valid=False, complete=False), "disagree with the text"),
    (lambda d: _gen(d).update(text=_gen(d)["text"][:-1]), "concatenation"),
    (lambda d: _gen(d)["agreement"].__setitem__(0, not _gen(d)["agreement"][0]), "agreement"),
    (lambda d: _typed(d)["events"].reverse(), "events are"),
    (lambda d: _typed(d)["tokens"].update(processed=1), "tokens.processed"),
    (lambda d: _typed(d)["decisions"][0].update(choice="maybe"), "choice"),
    (lambda d: _typed(d)["decisions"].pop(), "decisions are for"),
    (lambda d: [x.update(escalated=False) for x in _typed(d)["decisions"]], "escalated 2 but 0"),
    (lambda d: d["protocol"].update(exact={"enabled": False}), "exact policy is off"),
    (lambda d: d["protocol"].update(repeats=4), "protocol says 4"),
    (lambda d: d["prompts"]["generated"].update(text="other"), "prompts.generated.prompt_sha256"),
    (lambda d: d["inputs"]["criteria"][0].update(question="changed"), "inputs.sha256"),
])
def test_consistency_checks_catch_rehashed_edits(doc, tamper, needle):
    d = copy.deepcopy(doc)
    tamper(d)
    problems = trace.verify(_rehash(d))
    assert any(needle in p for p in problems), problems


# --- parse_array -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "want"), [
    ('["yes","no"]', (True, True, ["yes", "no"], None)),
    (' \n["yes", "no"]\n', (True, True, ["yes", "no"], None)),
    ('["yes"]', (True, False, ["yes"], "1 values for 2 criteria")),
    ('["yes","no","no"]', (True, False, ["yes", "no", "no"], "3 values for 2 criteria")),
    ('["yes",true]', (False, False, None, 'value 2 is true (expected "yes" or "no")')),
    ('["yes","maybe"]', (False, False, None, 'value 2 is "maybe" (expected "yes" or "no")')),
    ("", (False, False, None, "empty output")),
    ('["yes","no"] done', (False, False, None, "not a JSON value (Extra data at char 13)")),
    ('```json\n["yes","no"]\n```', (False, False, None, "not a JSON value (Expecting value at char 0)")),
])
def test_parse_array_is_strict(text, want):
    assert trace.parse_array(text, 2) == want


# --- files -------------------------------------------------------------------------------------------
def test_write_refuses_to_overwrite(tmp_path: Path, doc):
    out = tmp_path / "t.json"
    trace.write(out, doc)
    with pytest.raises(OutputExistsError):
        trace.write(out, doc)
    trace.write(out, doc, force=True)
    assert trace.load(out) == doc


def test_load_errors(tmp_path: Path):
    p = tmp_path / "x.json"
    p.write_text('{"format": "other"}')
    with pytest.raises(InputError, match="format"):
        trace.load(p)
    p.write_text("[1")
    with pytest.raises(InputError, match="invalid JSON"):
        trace.load(p)


# --- Chrome export -----------------------------------------------------------------------------------
def test_chrome_export_has_the_expected_events(doc):
    out = json.loads(json.dumps(trace.to_chrome(doc)))  # plain JSON all the way down
    ev = out["traceEvents"]
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"typed", "generated"}
    runs = [e for e in ev if e["ph"] == "X" and e["name"].startswith(("typed ", "generated "))]
    assert len(runs) == len(doc["runs"])
    assert sum(1 for e in ev if e["ph"] == "i") == 21 * sum(1 for r in doc["runs"] if r["path"] == "typed")
    gen = _gen(doc)
    run_ev = next(e for e in runs if e["name"] == "generated repeat 0")
    assert run_ev["ts"] == pytest.approx(gen["start_s"] * 1e6) and run_ev["dur"] == pytest.approx(gen["total_s"] * 1e6)
    # every slice of a run nests inside it (Perfetto needs proper nesting on one thread)
    for e in ev:
        if e["ph"] == "X" and e["tid"] == 2 and run_ev["ts"] <= e["ts"] < run_ev["ts"] + run_ev["dur"]:
            assert e["ts"] + e["dur"] <= run_ev["ts"] + run_ev["dur"] + 1e-3
    tok_slices = [e for e in ev if e["ph"] == "X" and e["tid"] == 2 and "id" in e.get("args", {})
                  and run_ev["ts"] <= e["ts"] < run_ev["ts"] + run_ev["dur"]]
    assert len(tok_slices) == gen["output_tokens"] - 1
    assert all(e["dur"] >= 0 for e in ev if e["ph"] == "X")


# --- command line ------------------------------------------------------------------------------------
def test_cli_verify_summary_export(tmp_path: Path, capsys):
    assert main(["trace", "verify", str(VALID)]) == 0
    assert "ok" in capsys.readouterr().out
    assert main(["trace", "summary", str(VALID)]) == 0
    text = capsys.readouterr().out
    assert "wall ratio" in text and "agreement" in text and "TTFT" in text
    out = tmp_path / "chrome.json"
    assert main(["trace", "export", "--chrome", str(VALID), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["traceEvents"]
    assert main(["trace", "export", "--chrome", str(VALID), "-o", str(out)]) == 2  # never overwrites silently
    assert main(["trace", "export", "--chrome", str(VALID)]) == 0
    assert json.loads(capsys.readouterr().out)["displayTimeUnit"] == "ms"


def test_cli_verify_fails_on_tampering(tmp_path: Path, capsys):
    d = trace.load(VALID)
    _gen(d)["tokens"][3]["t"] = 0.0
    p = tmp_path / "bad.json"
    p.write_bytes(trace.dumps(_rehash(d)))
    assert main(["trace", "verify", str(p)]) == 2
    assert "token timestamps decrease" in capsys.readouterr().err
