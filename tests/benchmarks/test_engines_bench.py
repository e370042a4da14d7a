"""benchmarks/engines.py's own logic, on fakes: what --skip accepts, and that engines it started are stopped when a
later one cannot start (they held 2 x ~8 GiB when the third vLLM engine of the 0.5B model ran out of memory)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import engines
from scorer.core.errors import EngineError
from scorer.engines import launcher


def test_skip_names_a_set_and_a_configuration_but_never_the_reference() -> None:
    sets, configs = ["boundary", "authored"], ["torch-fp32", "vllm-fp32", "vllm-bf16"]
    assert engines._skips(["authored=vllm-bf16"], sets, configs) == {("authored", "vllm-bf16")}
    for bad in ("authored=torch-fp32", "shape-small=vllm-bf16", "authored=vllm-w8a8", "authored"):
        with pytest.raises(SystemExit, match="--skip"):
            engines._skips([bad], sets, configs)


def test_engines_already_started_are_stopped_when_a_later_one_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    stopped: list[int] = []

    def start(spec: Any) -> dict[str, Any]:
        if spec.dtype == "bfloat16":
            raise EngineError("the engine exited with status 1 before it was ready")
        started.append(spec.engine)
        return {"port": 40000 + len(started), "base_url": "http://127.0.0.1"}

    monkeypatch.setattr(launcher, "start", start)
    monkeypatch.setattr(launcher, "stop", lambda port=None: stopped.append(port))
    with pytest.raises(EngineError):
        engines._start_engines("qwen2.5-0.5b", ["torch-fp32", "llama-server", "vllm-fp32", "vllm-bf16"], 2)
    assert started == ["llama-server", "vllm"] and sorted(stopped) == [40001, 40002]
    stopped.clear()
    up = engines._start_engines("qwen2.5-0.5b", ["torch-fp32", "llama-server"], 2)
    assert list(up) == ["llama-server"] and stopped == []  # torch runs in the scoring process: no engine
