"""The peer benchmark end to end on smollm2-135m (3 rows, lm-eval only): the real pipeline, the real lm-eval.

The first run makes lm-eval's own virtualenv under ``<cache>/peers/lmeval-venv`` (torch 2.13.0 CPU wheel,
lm-eval[hf] 0.4.13, transformers 5.24.0: about 4 minutes on the 2-core machine, once; reused after).
vLLM is left out here (its virtualenv is ~1 GB and its engine takes a minute or more to start on 2 cores);
``benchmarks/peers/run.sh`` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # build.py


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_lmeval_scores_semifs_tokens_and_agrees(tmp_path):
    out = tmp_path / "data" / "results" / "peers-smollm2.json"
    cmd = [sys.executable, "-m", "benchmarks.peers.main", "smollm2-135m", "shape-small", "--rows", "3",
           "--repeats", "1", "--peers", "lm-eval", "--output", str(out), "--work", str(tmp_path / "work")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=2300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rep = json.loads(out.read_text())
    assert (rep["kind"], rep["format"]) == ("peers", "semif-peers-v1")
    assert set(rep["inputs"]) >= {"workload", "prompts", "lmeval_task", "lmeval_docs", "model_folder"}
    tools = rep["tools"]
    lm = tools["lm-eval"]
    assert lm["status"] == "ok", lm.get("failure") or lm.get("reason")
    assert lm["identity"]["identical"] == 3, lm["identity"]
    assert lm["identity"]["moved_into_continuation"] and len(lm["identity"]["moved_into_continuation"]) == 1
    for name in ("semif-direct", "semif-shared"):
        assert tools[name]["status"] == "ok" and tools[name]["identity"]["identical"] == 3
    assert tools["vllm"]["status"] == "skipped" and tools["sglang"]["status"] == "skipped"
    agree = rep["agreement"]
    assert agree["lm-eval"]["differing_choices"] == 0 and agree["lm-eval"]["max_abs_dp"] < 1e-4
    assert agree["semif-shared"]["max_abs_dp"] < 1e-4
    assert {(r["peer"], r["semif"]) for r in rep["ratios"]} == {("lm-eval", "semif-direct"),
                                                               ("lm-eval", "semif-shared")}
    assert rep["load_average"]["before"] is not None and rep["workload"]["rows"] == 3

    import build

    _, reports = build.build(out.parents[1], tmp_path / "site")
    assert [r.family for r in reports] == ["peers"] and reports[0].charts
