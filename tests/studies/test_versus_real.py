"""``semif versus`` on the real test model (smollm2-135m), torch and llama.cpp: the constrained lane is valid
N/N on both backends, the v2 trace verifies, and tampering is refused."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from scorer import trace
from scorer.cli import main
from scorer.studies.versus import VersusConfig, VersusInput, load_input, run_versus

pytestmark = pytest.mark.slow
SHOWCASE = Path(__file__).resolve().parents[2] / "scorer" / "data" / "versus" / "shape-s01.json"


@pytest.fixture(scope="module")
def small() -> VersusInput:
    """The showcase state with its first four criteria (kept short: the whole suite runs on 2 cores)."""
    full = load_input(SHOWCASE)
    return VersusInput(full.id, full.state, full.criteria[:4])


@pytest.mark.parametrize("backend_name", ["torch", pytest.param("llamacpp", marks=pytest.mark.llamacpp)])
def test_constrained_lane_is_valid_and_the_trace_verifies(backend_name, request, small, tmp_path: Path, capsys):
    backend = request.getfixturevalue("smol_torch" if backend_name == "torch" else "smol_llamacpp")
    doc = run_versus(backend, small, VersusConfig(repeats=1, warmup=0, max_new_tokens=12, top_k=3))
    assert trace.verify(doc) == []
    assert doc["format"] == trace.TRACE_FORMAT_V2 and doc["model"]["backend"] == backend_name
    engine = doc["prompts"]["constrained"]["engine"]
    assert engine.startswith("llguidance" if backend_name == "torch" else "llama.cpp grammar sampler")
    con = trace.measured(doc, "constrained")[0]
    n = len(small.criteria)
    assert con["complete"] and len(con["parsed"]) == n and con["verdict"] == f"valid: {n} values"
    assert con["stop_reason"] == "end_of_turn" and not con["capped"]
    assert 0 <= con["grammar_s"] <= con["total_s"]
    for t in con["tokens"]:  # what the model wanted is the top of its own unmasked distribution
        assert (t["free_argmax"] is not None) == t["masked"]
        if t["masked"]:
            assert t["top_k"][0]["id"] == t["free_argmax"]["id"] != t["id"]
        else:
            assert t["top_k"][0]["id"] == t["id"]
    free = trace.measured(doc, "free")[0]
    assert 1 <= free["output_tokens"] <= 12 and free["masked_tokens"] is None
    assert doc["summary"]["labels"]["labelled"] == n
    typed = trace.measured(doc, "typed")[0]
    assert [d["label"] for d in typed["decisions"]] == [c.label for c in small.criteria]

    out = tmp_path / "t.json"
    trace.write(out, doc)
    assert main(["trace", "verify", str(out)]) == 0
    capsys.readouterr()
    # tampering: a number edited by hand breaks the checksums; edited and re-hashed, the consistency checks
    bad = copy.deepcopy(doc)
    trace.measured(bad, "constrained")[0]["total_s"] += 1.0
    (tmp_path / "edited.json").write_bytes(trace.dumps(bad))
    assert main(["trace", "verify", str(tmp_path / "edited.json")]) == 2
    assert "checksums" in capsys.readouterr().err
    bad = copy.deepcopy(doc)
    first = trace.measured(bad, "constrained")[0]["tokens"][0]
    first["masked"] = not first["masked"]
    bad["checksums"] = trace.checksums(bad)
    (tmp_path / "rehashed.json").write_bytes(trace.dumps(bad))
    assert main(["trace", "verify", str(tmp_path / "rehashed.json")]) == 2
    assert "masked" in capsys.readouterr().err
