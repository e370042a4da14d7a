"""Start, stop and list engines: ``semif engine start|stop|status`` and the tests' servers.

:func:`start` resolves the model (fetched and verified by sha256 like every backend), prepares the engine (the
``llama-server`` binary, vLLM's virtualenv and its fp32 checkpoint), starts the server in its own process group
on loopback by default with its output in a log file, records it (:mod:`scorer.backends.engine_state`), and waits for it
to answer ``GET /health`` within a bounded time; a server that exits or never gets ready is stopped, its state
removed, and the error quotes the end of its log. :func:`stop` ends the process group (SIGTERM, then SIGKILL).

Threads: ``threads`` (a number, ``auto`` or the engine's choice: :func:`scorer.core.threads.choose_threads`) reaches
llama-server as ``--threads``/``--threads-batch`` and vLLM as ``OMP_NUM_THREADS``
(:func:`~scorer.engines.vllm.thread_environment`); the wait policy as ``OMP_WAIT_POLICY`` in the engine's environment
(:func:`scorer.core.threads.engine_environment`). Both are in the state's ``threading`` (and ``env``), which the
records of a run through the engine carry (``model.engine.threading``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer.backends import engine_state
from scorer.backends.torch_backend import dequantize_gguf
from scorer.core import checks, threads
from scorer.core.errors import EngineError, ValidationError
from scorer.engines import ENGINES, llama_server, venv, vllm
from scorer.models import store

READY_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class EngineSpec:
    """What to start."""

    engine: str
    """``vllm`` or ``llama-server``."""
    model: str = store.DEFAULT_MODEL
    """Registry key, .gguf path (llama-server) or local HF folder (vllm)."""
    host: str = "127.0.0.1"
    """Interface to listen on (loopback unless asked otherwise)."""
    port: int | None = None
    """Port (default: a free one)."""
    threads: int | str | None = None
    """CPU threads of the engine: a number, ``auto`` (the cores free at the start:
    :func:`scorer.core.threads.choose_threads`) or None (the engine's choice)."""
    ctx: int = 4096
    """Tokens one request may hold (prompt + the one token read)."""
    parallel: int = 4
    """llama-server: concurrent slots (requests decoded together)."""
    dtype: str = "float32"
    """vLLM: the dtype it computes in."""
    kv_cache_gib: int = 4
    """vLLM CPU: GiB of KV cache."""
    ready_timeout_s: float = READY_TIMEOUT_S
    """Seconds to wait for ``/health``."""


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_spec(spec: EngineSpec) -> None:
    if spec.engine not in ENGINES:
        raise ValidationError(f"engine {spec.engine!r} (expected one of {', '.join(ENGINES)})")
    if spec.port is not None and not 1 <= spec.port <= 65535:
        raise ValidationError(f"--port {spec.port} (expected 1 to 65535)")
    for name in ("ctx", "parallel", "kv_cache_gib"):
        v = getattr(spec, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValidationError(f"--{name.replace('_', '-')} {v!r} (expected an integer >= 1)")
    try:
        checks.threads(spec.threads)
    except checks.OptionError as exc:
        raise ValidationError(f"--threads {exc.problem}") from None


def _llama_plan(spec: EngineSpec, port: int, n_threads: int | None) -> tuple[list[str], dict[str, str],
                                                                             dict[str, Any]]:
    ref = store.resolve(spec.model)
    gguf, sha = store.gguf_for(ref)
    exe = llama_server.ensure_binary()
    alias = ref.key if ref.entry else Path(gguf).stem
    ident = {"model_key": ref.entry.key if ref.entry else None, "served_model": alias, "gguf_sha256": sha,
             "weights_path": str(gguf), "weights_sha256": sha, "dtype": "gguf", "quantization": None,
             "engine_version": llama_server.version(exe), "binary": str(exe)}
    return (llama_server.command(exe, gguf, alias, spec.host, port, n_threads, spec.ctx, spec.parallel), {},
            ident)


def _vllm_plan(spec: EngineSpec, port: int, n_threads: int | None) -> tuple[list[str], dict[str, str],
                                                                            dict[str, Any]]:
    ref = store.resolve(spec.model)
    env_recipe = vllm.recipe()
    status = venv.ensure(env_recipe)
    if not status.ok:
        raise EngineError(f"vLLM's virtualenv ({' '.join(env_recipe.specs)}) could not be made: {status.error}")
    device = "cuda" if env_recipe is venv.VLLM_CUDA else "cpu"
    if ref.kind in ("store", "gguf"):
        gguf, sha = store.gguf_for(ref)
        folder = dequantize_gguf(gguf, sha)  # built once; its manifest (weights included) is checked here
        ident: dict[str, Any] = {"model_key": ref.entry.key if ref.entry else None, "gguf_sha256": sha,
                                 "weights_path": str(folder), "weights": "fp32 checkpoint dequantized from the GGUF "
                                 "(the torch backend's, manifest verified before the start)"}
    elif ref.kind == "local":
        folder = Path(ref.name)
        ident = {"model_key": None, "gguf_sha256": None, "weights_path": str(folder),
                 "weights_sha256": store.dir_digest(folder)}
        quant = store.checkpoint_quantization(folder)
        if quant is not None:  # vLLM runs it with its own kernels; the records say which scheme they ran
            ident["quantization"] = {**quant, "execution": f"vLLM ({device}) kernels"}
    else:
        raise ValidationError(f"semif engine start vllm --model {spec.model}: hub models are served by vLLM itself "
                              "(`vllm serve ORG/NAME --revision SHA`); pass a registry key or a local folder")
    served = ref.key if ref.entry else folder.name
    ident.setdefault("quantization", None)
    ident.update(served_model=served, dtype=spec.dtype, device=device,
                 engine_version=_vllm_version(Path(status.python)), python=status.python)
    env = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": str(spec.kv_cache_gib), "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1"}
    env.update(vllm.thread_environment(n_threads, device))
    return (vllm.command(Path(status.python), folder, served, spec.host, port, spec.dtype, spec.ctx, device), env,
            ident)


def _vllm_version(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", "import vllm; print(vllm.__version__)"], capture_output=True,
                          text=True, timeout=300)
    return proc.stdout.strip() or "unknown"


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start(spec: EngineSpec, say: bool = True) -> dict[str, Any]:
    """Start an engine and wait until it is ready; its state (see :mod:`scorer.backends.engine_state`)."""
    _check_spec(spec)
    threads.apply_wait_policy()  # this process may load torch (vLLM's fp32 checkpoint is dequantized here)
    port = spec.port or free_port(spec.host)
    path = engine_state.state_path(spec.engine, port)
    old = engine_state.read_state(path)
    if old is not None and isinstance(old.get("pid"), int) and engine_state.alive(old["pid"]):
        raise ValidationError(f"an engine already runs on port {port} ({old.get('engine')} pid {old['pid']}, "
                              f"model {old.get('model_key')}); `semif engine stop --port {port}` first")
    plan = _llama_plan if spec.engine == "llama-server" else _vllm_plan
    choice = threads.choose_threads(spec.threads, "the engine's own choice")
    cmd, env, ident = plan(spec, port, choice.chosen)
    wait_env, wait = threads.engine_environment()
    env = {**wait_env, **env}
    logs = engine_state.log_dir()
    logs.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    log = logs / f"{spec.engine}-{port}-{stamp}.log"
    base = f"http://{spec.host if spec.host not in ('0.0.0.0', '::') else '127.0.0.1'}:{port}"
    if say:
        print(f"[engine] starting {spec.engine} for {spec.model} on {base} (log {log})", file=sys.stderr)
    t0 = time.perf_counter()
    state = {"engine": spec.engine, "base_url": base, "host": spec.host, "port": port, "started_utc": stamp,
             "log": str(log), "env": env, "spec": spec.__dict__,
             "threading": {"threads": choice.block(), "wait_policy": wait}, **ident}
    try:
        _launch(state, cmd, path, base, spec.ready_timeout_s, log)
    except EngineError:
        if spec.engine != "llama-server" or state.get("returncode") != -signal.SIGILL or llama_server.NO_REPACK in cmd:
            raise
        # llama-server built -march=native died of an illegal instruction while repacking the weights at load (seen
        # on an Intel VM listing AMX and AVX512-FP16, where a tile instruction itself runs: which instruction is
        # not known). Without repacking it runs the plain kernels, as the in-process backend always does.
        if say:
            print("[engine] llama-server died of an illegal instruction while loading (weight repacking); starting "
                  f"it again with {llama_server.NO_REPACK}", file=sys.stderr)
        state["repack"] = "disabled: the engine died of SIGILL with weight repacking on this CPU"
        _launch(state, [*cmd, llama_server.NO_REPACK], path, base, spec.ready_timeout_s, log)
    state["ready_s"] = round(time.perf_counter() - t0, 2)
    engine_state.write_state(path, state)
    if say:
        print(f"[engine] {spec.engine} ready on {base} after {state['ready_s']:.0f} s (pid {state['pid']})",
              file=sys.stderr)
    return state


def _launch(state: dict[str, Any], cmd: list[str], path: Path, base: str, timeout_s: float, log: Path) -> None:
    """Run ``cmd`` (its output appended to ``log``), its pid and command written to the state file, and wait until
    it is ready; on failure the process is stopped, the state file removed, its exit status left in
    ``state["returncode"]`` and the error raised."""
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **state["env"]}, start_new_session=True)
    state.pop("returncode", None)  # an earlier attempt's
    state.update(pid=proc.pid, command=cmd)
    engine_state.write_state(path, state)
    try:
        _wait_ready(proc, base, timeout_s, log)
    except BaseException:
        _terminate(proc.pid)
        path.unlink(missing_ok=True)
        state["returncode"] = proc.returncode
        raise


def _wait_ready(proc: subprocess.Popen[bytes], base: str, timeout_s: float, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EngineError(f"the engine exited with status {proc.returncode} before it was ready; the end of its "
                              f"log ({log}):\n{_tail(log)}")
        try:
            if httpx.get(f"{base}/health", timeout=5.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise EngineError(f"the engine was not ready within {timeout_s:.0f} s (stopped); the end of its log ({log}):\n"
                      f"{_tail(log)}")


def _terminate(pid: int, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """SIGTERM the process group, SIGKILL what is left after ``timeout_s``; True when it ended."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not engine_state.alive(pid):
            return True
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    time.sleep(0.5)
    _reap(pid)
    return not engine_state.alive(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # not our child (started by another semif): nothing to reap
        os.waitpid(pid, os.WNOHANG)


def stop(port: int | None = None, engine: str | None = None) -> list[dict[str, Any]]:
    """Stop the engines on ``port`` (or of ``engine``, or all); their states, each with ``stopped``."""
    out = []
    for path, st in engine_state.all_states():
        if port is not None and st.get("port") != port:
            continue
        if engine is not None and st.get("engine") != engine:
            continue
        pid = st.get("pid")
        ended = _terminate(pid) if isinstance(pid, int) and engine_state.alive(pid) else True
        if ended:
            path.unlink(missing_ok=True)
        out.append({**st, "stopped": ended})
    return out


def status() -> list[dict[str, Any]]:
    """Every recorded engine with ``alive`` (its process runs) and ``ready`` (``/health`` answers 200)."""
    import httpx

    out = []
    for _path, st in engine_state.all_states():
        pid = st.get("pid")
        live = isinstance(pid, int) and engine_state.alive(pid)
        ready = False
        if live:
            try:
                ready = httpx.get(f"{st['base_url']}/health", timeout=3.0).status_code == 200
            except httpx.HTTPError:
                ready = False
        out.append({**st, "alive": live, "ready": ready})
    return out
