"""``--backend openai`` against real engines started by ``semif engine start`` on loopback (SmolLM2-135M):
llama.cpp's server (the same GGUF as the in-process llama.cpp backend) and vLLM's CPU build (the torch backend's
fp32 checkpoint of that GGUF).

What is held, per engine, for direct and shared mode: the same choices, prompt and token hashes as the
in-process backend on the same weights, probabilities within the tolerance measured here:

* vLLM vs torch fp32: max |dp| 8.7e-6, allowed-token mass 1.9e-5 (12 example rows, this machine): the tests
  allow :data:`VLLM_TOLERANCE`.
* llama.cpp server vs in-process llama.cpp (direct): the same llama.cpp sources, flash attention off and f16 KV
  on both sides: max |dp| 2.9e-8, mass 1.0e-4 (the server's float32 softmax over the vocabulary): the tests
  allow :data:`LLAMA_TOLERANCE`. Shared mode batches several slots' suffixes into one llama.cpp decode, which is
  not bit-identical to a fresh pass (0.034 on shape-small, 0.063 on the example rows, measured; in-process shared
  mode drifts as much, tests/backends/test_llamacpp_real.py allows 0.08): :data:`LLAMA_SHARED_TOLERANCE`.

Plus: an engine killed mid-run (exit 1, one clear line, the records so far kept; ``--resume`` against the
restarted engine completes with the uninterrupted run's records), a served-model name it does not serve refused
before scoring, live routing (a decision below the threshold escalated to the accurate engine, one above not,
both readouts in the record). The first run builds ``llama-server`` and vLLM's virtualenv into the user cache
(minutes, once).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scorer.engines.launcher import EngineSpec, start, stop

pytestmark = [pytest.mark.slow, pytest.mark.engines]

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "data" / "examples" / "decisions.jsonl"
VLLM_TOLERANCE = 1e-4
LLAMA_TOLERANCE = 1e-3
LLAMA_SHARED_TOLERANCE = 0.08
MASS_TOLERANCE = 5e-4
MODEL = "smollm2-135m"


def _semif(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scorer.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def llama_server() -> Any:
    st = start(EngineSpec(engine="llama-server", model=MODEL, ctx=2048, parallel=4, threads=2))
    yield st
    stop(port=st["port"])


@pytest.fixture(scope="module")
def vllm_server() -> Any:
    st = start(EngineSpec(engine="vllm", model=MODEL, ctx=2048, kv_cache_gib=2, threads=2))
    yield st
    stop(port=st["port"])


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory: Any) -> dict[str, Path]:
    """The in-process references: torch fp32 and llama.cpp, direct mode."""
    d = tmp_path_factory.mktemp("local")
    out = {}
    for backend in ("torch", "llamacpp"):
        out[backend] = d / f"{backend}.jsonl"
        p = _semif("score", "--input", str(ROWS), "--output", str(out[backend]), "--model", MODEL,
                   "--backend", backend, "--threads", "2")
        assert p.returncode == 0, p.stderr
    return out


def _compare(a: list[dict[str, Any]], b: list[dict[str, Any]], tol: float) -> float:
    assert [r["id"] for r in a] == [r["id"] for r in b]
    worst = 0.0
    for ra, rb in zip(a, b, strict=True):
        assert ra["prompt_sha256"] == rb["prompt_sha256"] and ra["tokens_sha256"] == rb["tokens_sha256"]
        assert ra["input_tokens"] == rb["input_tokens"]
        dp = max(abs(x - y) for x, y in zip(ra["probabilities"], rb["probabilities"], strict=True))
        worst = max(worst, dp)
        if ra["margin"] > 2 * tol:  # a near-tie may flip within the tolerance; anything clearer may not
            assert ra["choice"] == rb["choice"], (ra["id"], ra["probabilities"], rb["probabilities"])
        assert abs(ra["allowed_token_mass"] - rb["allowed_token_mass"]) <= max(tol, MASS_TOLERANCE)
    assert worst <= tol
    return worst


@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_vllm_equals_torch_fp32(vllm_server: Any, local_runs: dict[str, Path], tmp_path: Path, mode: str) -> None:
    out = tmp_path / "vllm.jsonl"
    p = _semif("score", "--input", str(ROWS), "--output", str(out), "--model", MODEL, "--backend", "openai",
               "--base-url", vllm_server["base_url"], "--mode", mode)
    assert p.returncode == 0, p.stderr
    recs = _records(out)
    _compare(_records(local_runs["torch"]), recs, VLLM_TOLERANCE)
    eng = recs[0]["model"]["engine"]
    assert eng["kind"] == "vllm" and eng["version"] == "0.32.0" and eng["served_model"] == MODEL
    assert eng["weights"]["gguf_sha256"] == recs[0]["model"]["gguf_sha256"]
    assert "logprob_token_ids" in recs[0]["score_kind"]


@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_llama_server_equals_in_process_llama_cpp(llama_server: Any, local_runs: dict[str, Path], tmp_path: Path,
                                                  mode: str) -> None:
    out = tmp_path / "llama.jsonl"
    p = _semif("score", "--input", str(ROWS), "--output", str(out), "--model", MODEL, "--backend", "openai",
               "--base-url", llama_server["base_url"], "--mode", mode)
    assert p.returncode == 0, p.stderr
    recs = _records(out)
    _compare(_records(local_runs["llamacpp"]), recs, LLAMA_TOLERANCE if mode == "direct" else LLAMA_SHARED_TOLERANCE)
    eng = recs[0]["model"]["engine"]
    assert eng["kind"] == "llamacpp"
    assert recs[0]["model"]["gguf_sha256"] == recs[0]["model"]["engine"]["weights"]["gguf_sha256"]


def test_a_model_the_engine_does_not_serve_is_refused_before_scoring(llama_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    p = _semif("score", "--input", str(ROWS), "--output", str(out), "--model", MODEL, "--backend", "openai",
               "--base-url", llama_server["base_url"], "--served-model", "qwen2.5-1.5b")
    assert p.returncode == 1
    assert "does not serve 'qwen2.5-1.5b'" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists() or out.read_text() == ""


def test_an_engine_killed_mid_run_exits_1_and_resume_completes(llama_server: Any, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    base = ROWS.read_text().splitlines()
    rows.write_text("".join(json.dumps({**json.loads(ln), "id": f"{json.loads(ln)['id']}-{k}"}) + "\n"
                            for k in range(3) for ln in base))
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    common = ["--input", str(rows), "--model", MODEL, "--backend", "openai", "--base-url", llama_server["base_url"],
              "--retries", "1", "--concurrency", "1"]
    assert _semif("score", "--output", str(ref), *common).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "scorer.cli", "score", "--output", str(out), *common],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 3):
        time.sleep(0.05)
    stop(port=llama_server["port"])
    _, err = proc.communicate(timeout=300)
    kept = len(out.read_text().splitlines())
    assert proc.returncode == 1, err
    assert "did not answer" in err and "--resume" in err and "Traceback" not in err
    assert 3 <= kept < len(base) * 3
    start(EngineSpec(**{**llama_server["spec"], "port": llama_server["port"]}))
    p = _semif("score", "--output", str(out), *common, "--resume")
    assert p.returncode == 0, p.stderr
    a, b = _records(ref), _records(out)
    assert [r["id"] for r in a] == [r["id"] for r in b]
    for ra, rb in zip(a, b, strict=True):
        assert ra["probabilities"] == rb["probabilities"] and ra["choice"] == rb["choice"]
        assert ra["tokens_sha256"] == rb["tokens_sha256"] and ra["run"]["config_sha256"] == rb["run"]["config_sha256"]


def test_live_routing_escalates_below_the_threshold_only(llama_server: Any, local_runs: dict[str, Path],
                                                         tmp_path: Path) -> None:
    margins = sorted(r["margin"] for r in _records(local_runs["llamacpp"]))
    threshold = (margins[len(margins) // 2 - 1] + margins[len(margins) // 2]) / 2  # half below, half above
    out = tmp_path / "routed.jsonl"
    p = _semif("score", "--input", str(ROWS), "--output", str(out),
               "--fast", f"backend=openai,base_url={llama_server['base_url']},model={MODEL},mode=shared",
               "--accurate", f"backend=torch,model={MODEL},threads=2", "--escalate-below", f"{threshold:.6f}")
    assert p.returncode == 0, p.stderr
    recs = _records(out)
    torch_by_id = {r["id"]: r for r in _records(local_runs["torch"])}
    esc = [r for r in recs if r["escalated"]]
    kept = [r for r in recs if not r["escalated"]]
    assert esc and kept
    for r in esc:
        assert r["route"]["decided_by"] == "accurate" and r["model"]["backend"] == "torch"
        assert r["route"]["fast_margin"] < threshold or r["route"]["fast_tie"]
        assert r["route"]["fast"]["model"]["backend"] == "openai"
        assert r["probabilities"] == pytest.approx(torch_by_id[r["id"]]["probabilities"], abs=1e-6)
    for r in kept:
        assert r["route"]["decided_by"] == "fast" and r["model"]["backend"] == "openai"
        assert r["route"]["fast_margin"] >= threshold


@pytest.mark.parametrize("engine", ["vllm", "llama-server"])
def test_versus_over_an_engine_gives_a_trace_that_verifies(engine: str, request: Any, smol_torch: Any) -> None:
    """All three lanes over --backend openai: the constrained lane's grammar runs locally (llguidance over the
    reference tokenizer) and the engine picks among the allowed ids; on vLLM (the torch backend's fp32 weights)
    every lane's tokens equal the torch backend's own run."""
    from scorer import trace
    from scorer.backends import BackendConfig, load_backend
    from scorer.studies.versus import VersusConfig, VersusInput, load_input, run_versus

    server = request.getfixturevalue("vllm_server" if engine == "vllm" else "llama_server")
    full = load_input(ROOT / "scorer" / "data" / "versus" / "shape-s01.json")
    small = VersusInput(full.id, full.state, full.criteria[:4])
    cfg = VersusConfig(repeats=1, warmup=0, max_new_tokens=12, top_k=3)
    with load_backend(BackendConfig(model=MODEL, backend="openai", base_url=server["base_url"])) as remote:
        doc = run_versus(remote, small, cfg)
    assert trace.verify(doc) == []
    assert doc["model"]["backend"] == "openai"
    con = trace.measured(doc, "constrained")[0]
    assert con["complete"] and len(con["parsed"]) == len(small.criteria)
    assert doc["prompts"]["constrained"]["engine"].startswith("llguidance")
    if engine == "vllm":
        ref = run_versus(smol_torch, small, cfg)
        for lane in ("free", "constrained"):
            assert [t["id"] for t in trace.measured(doc, lane)[0]["tokens"]] == \
                [t["id"] for t in trace.measured(ref, lane)[0]["tokens"]], lane
        assert [d["choice"] for d in trace.measured(doc, "typed")[0]["decisions"]] == \
            [d["choice"] for d in trace.measured(ref, "typed")[0]["decisions"]]
