"""Scoring on a busy machine: the same work quiet and beside a controlled CPU-bound background job, per configuration,
SemIf beside the PyPI peer typed-gguf on the same GGUF and questions, in one run (issue #42).

Configurations (lanes), each its own process, started here, measured, and stopped before the next one starts (so no
idle lane sits beside a measured one):

* ``semif <backend> <mode>`` for each ``--backends`` entry (torch, llamacpp) and ``--modes`` entry: ``direct`` and
  ``shared`` score the rows in process (a worker: this script with ``--worker``, the model loaded once, then
  :meth:`scorer.api.Scorer.decide_many` per run); ``serve`` is ``semif serve`` asked over ``POST /v1/systemone``;
  each for every ``--policies`` entry (``SEMIF_WAIT_POLICY``: ``passive``, SemIf's default; ``library``: the
  runtimes' own defaults, as before #42) and every ``--threads`` entry (``default``: the library's choice; ``auto``;
  a number);
* ``typed-gguf`` (``--peer``): typed-gguf 0.3.0 in its own virtualenv (:data:`scorer.engines.venv.TYPED_GGUF`),
  ``typed-gguf serve`` on the GGUF SemIf's llama.cpp backend runs, with ``TYPED_GGUF_RUNTIME_DIR`` pointed at
  llama-cpp-python's bundled libraries, asked the same questions over ``POST /v1/systemone``; its threads and wait
  policy are its own (its default: ``os.cpu_count()`` threads; the environment as given to this script).

The work of one run: every row of ``--rows`` (default ``data/workloads/shape-small.jsonl``, 2 states × 21 yes/no
questions), each state made new for the run (a nonce line in front, the same for every lane of that round), so no
run reuses a cached prefix of an earlier one. In process: all rows in one ``decide_many``; the servers: one System One
request per state with its questions (noul for yes/no options, else choice), one after another.

Conditions: ``quiet``, then for each ``--loads`` entry a background job of ``--job-cores`` processes, each a CPU-bound
loop (``spin``: a pure Python loop; ``matmul``: single-threaded numpy matrix products) started before the run (and
given ``--job-warmup`` seconds), stopped right after it, and bounded in time by itself (``--job-max-s``) should this
script die. Each lane: one untimed warm-up run, then ``--repeats`` rounds of every condition (their order reversed
every other round). A quiet run records the cores other work kept busy just before it (``/proc/stat``, 0.3 s); one
above ``--max-busy`` makes the cell ``quiet: false`` (not to be quoted). Every run records its wall time, the CPU
seconds of the lane's processes and of the background job (the job's share of its cores says whether SemIf's
threads took them), and the load average.

Results per lane and load: ``slowdown`` = median loaded wall / median quiet wall; compared with the peer's slowdown
under the same load, with 1.5 (the issue's ceiling), and — for lanes that differ only in the wait policy — the quiet
time of ``passive`` over ``library`` (what the policy costs on a quiet machine).

    PYTHONPATH=. .venv/bin/python benchmarks/busy.py --model qwen2.5-0.5b --loads spin,matmul --repeats 3 \\
        --output data/results/busy-qwen2.5-0.5b.json

Writes one report (the common envelope, kind ``busy``); progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.decision_latency import llama_cpp_lib_dir  # noqa: E402
from benchmarks.decision_latency import server_process as dl_server_process  # noqa: E402
from scorer.core import threads as threading_policy  # noqa: E402
from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average  # noqa: E402
from scorer.formats.envelope import file_input, make_report, write_report  # noqa: E402

KIND = "busy"
FORMAT = "semif-busy-v1"
ROWS = ROOT / "data" / "workloads" / "shape-small.jsonl"
BACKENDS = ("torch", "llamacpp")
MODES = ("direct", "shared", "serve")
POLICIES = ("passive", "library")
LOADS = ("spin", "matmul")
CEILING = 1.5
"""The issue's ceiling on the slowdown under one background job."""
READY_TIMEOUT_S = 900.0
REQUEST_TIMEOUT_S = 3600.0
_TAG = "@@busy "
"""The prefix of the worker's protocol lines on its stdout (anything else a library prints there is ignored)."""


def say(msg: str) -> None:
    print(f"[busy] {msg}", file=sys.stderr, flush=True)


# --- the workload ------------------------------------------------------------------------------------------------
def load_rows(path: Path, limit: int | None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit is not None:
        rows = rows[:limit]
    if not rows:
        raise SystemExit(f"{path}: no rows")
    return rows


def fresh_state(state: Any, nonce: str) -> Any:
    """``state`` made new for one run: a nonce in front (a JSON object gets a first key ``run``; text a first line),
    so nothing scored in an earlier run is a prefix of it."""
    if isinstance(state, dict):
        return {"run": nonce, **state}
    return f"[run {nonce}]\n{state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)}"


def fresh_rows(rows: Sequence[dict[str, Any]], nonce: str) -> list[dict[str, Any]]:
    return [{**r, "state": fresh_state(r["state"], nonce)} for r in rows]


def state_text(state: Any) -> str:
    """The state as the System One wire sends it: text as is, JSON as its text (the same characters to every
    server)."""
    return state if isinstance(state, str) else json.dumps(state, ensure_ascii=False)


def _is_yes_no(options: Sequence[dict[str, Any]]) -> bool:
    return sorted(str(o.get("id")).lower() for o in options) == ["no", "yes"]


def systemone_requests(rows: Sequence[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """One ``POST /v1/systemone`` body per state, in first-seen order, with that state's rows as questions named
    ``q01``…: a yes/no row is a ``noul`` question, any other a ``choice`` among its option ids (with their
    descriptions)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    states: dict[str, Any] = {}
    for r in rows:
        key = json.dumps(r["state"], sort_keys=True, ensure_ascii=False)
        groups.setdefault(key, []).append(r)
        states[key] = r["state"]
    out = []
    for key, mine in groups.items():
        questions: dict[str, Any] = {}
        width = max(2, len(str(len(mine))))
        for i, r in enumerate(mine):
            name = f"q{i + 1:0{width}d}"
            if _is_yes_no(r["options"]):
                questions[name] = {"type": "noul", "instructions": r["question"]}
            else:
                questions[name] = {"type": "choice", "instructions": r["question"],
                                   "criteria": {str(o["id"]): o.get("description") for o in r["options"]}}
        out.append({"model": model, "state": state_text(states[key]), "questions": questions})
    return out


def systemone_problems(doc: Any, body: dict[str, Any]) -> list[str]:
    """What is wrong with a System One answer to ``body`` (empty: an answer of the asked type for every question)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("answers"), dict):
        return ["no 'answers' object"]
    answers = doc["answers"]
    out = []
    for name, q in body["questions"].items():
        a = answers.get(name)
        if not isinstance(a, dict) or a.get("type") != q["type"]:
            out.append(f"{name}: no {q['type']} answer")
    extra = [k for k in answers if k not in body["questions"]]
    if extra:
        out.append(f"answers to unasked questions {extra[:5]}")
    return out


# --- statistics --------------------------------------------------------------------------------------------------
def median(xs: Sequence[float]) -> float | None:
    return round(statistics.median(xs), 4) if xs else None


def slowdown(quiet: Sequence[float], loaded: Sequence[float]) -> float | None:
    """Median loaded wall time over median quiet wall time (None without both)."""
    q, b = median(quiet), median(loaded)
    return round(b / q, 3) if q and b is not None else None


def spread(xs: Sequence[float]) -> float | None:
    """Largest over smallest of a condition's runs (1.0: identical): the noise a slowdown is read against."""
    return round(max(xs) / min(xs), 3) if len(xs) >= 2 and min(xs) > 0 else None


def conditions_in_round(loads: Sequence[str], rnd: int) -> list[str]:
    """The conditions of round ``rnd``: quiet then every load, reversed every other round (so neither always runs
    first)."""
    order = ["quiet", *loads]
    return order if rnd % 2 == 0 else order[::-1]


# --- processes -----------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group_cpu_s(pgids: Sequence[int], proc: Path = Path("/proc")) -> float | None:
    """CPU seconds (user + system) of every live process in the process groups ``pgids`` (None where ``/proc`` is
    not there): the lane's server with its children, or the background job."""
    if not proc.is_dir():
        return None
    want = set(pgids)
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        if len(fields) > 12 and int(fields[2]) in want:
            total += (int(fields[11]) + int(fields[12])) / tick
    return round(total, 3)


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


_SPIN = "import sys, time\nend = time.time() + float(sys.argv[1])\nwhile time.time() < end:\n    pass\n"
_MATMUL = ("import sys, time\nimport numpy as np\nend = time.time() + float(sys.argv[1])\n"
           "a = np.random.default_rng(0).random((256, 256))\nwhile time.time() < end:\n    a @ a\n")
JOBS = {"spin": _SPIN, "matmul": _MATMUL}
"""The background jobs: one process each, one core's worth of CPU-bound work, ending by itself after its bound."""


@dataclass
class BackgroundJob:
    """A CPU-bound job of ``cores`` processes of ``kind`` (:data:`JOBS`), each ending by itself after ``max_s``
    seconds; :meth:`stop` kills them (their process groups) at once."""

    kind: str
    cores: int = 1
    max_s: float = 900.0
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> None:
        if self.kind not in JOBS:
            raise ValueError(f"unknown background job {self.kind!r} (expected one of {', '.join(JOBS)})")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        for _ in range(self.cores):
            self.procs.append(subprocess.Popen([sys.executable, "-c", JOBS[self.kind], str(self.max_s)],
                                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL, env=env, start_new_session=True))

    def pgids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def running(self) -> int:
        return sum(1 for p in self.procs if p.poll() is None)

    def stop(self) -> None:
        for p in self.procs:
            _kill_group(p.pid)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)
        self.procs.clear()


@contextlib.contextmanager
def background(kind: str | None, cores: int, max_s: float, warmup_s: float) -> Iterator[BackgroundJob | None]:
    """The background job of a condition (None: quiet), running for the block, always stopped after it."""
    if kind is None:
        yield None
        return
    job = BackgroundJob(kind, cores, max_s)
    try:
        job.start()
        time.sleep(warmup_s)
        yield job
    finally:
        job.stop()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --- lanes ---------------------------------------------------------------------------------------------------------
@dataclass
class Lane:
    """One configuration: what it is, and (once started) how to run it."""

    name: str
    tool: str
    """``semif`` or ``typed-gguf``."""
    backend: str
    mode: str
    """``direct``, ``shared`` (in process) or ``serve`` (over HTTP)."""
    policy: str | None
    """SemIf's ``SEMIF_WAIT_POLICY`` (None for the peer)."""
    threads: str
    """``default``, ``auto`` or a number (the peer: its own)."""
    info: dict[str, Any] = field(default_factory=dict)
    run: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
    pgids: list[int] = field(default_factory=list)


def lanes_for(args: argparse.Namespace) -> list[Lane]:
    out = []
    for backend in args.backends:
        for mode in args.modes:
            for policy in args.policies:
                for t in args.threads:
                    name = f"semif {backend} {mode} · {policy}" + ("" if t == "default" else f" · threads {t}")
                    out.append(Lane(name, "semif", backend, mode, policy, t))
    if args.peer == "typed-gguf":
        out.append(Lane("typed-gguf serve", "typed-gguf", "llamacpp", "serve", None, "its own"))
    return out


def _semif_env(policy: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), threading_policy.SEMIF_ENV: policy}
    env.pop(threading_policy.WAIT_ENV, None)  # refused in main() when set; never inherited by a lane
    return env


def _threads_flag(t: str) -> list[str]:
    return [] if t == "default" else ["--threads", t]


@contextlib.contextmanager
def worker_lane(lane: Lane, args: argparse.Namespace, work: Path) -> Iterator[Lane]:
    """An in-process lane: this script as a worker (the model loaded once), one ``decide_many`` per run."""
    cfg = {"model": args.model, "backend": lane.backend, "mode": lane.mode,
           "threads": None if lane.threads == "default" else
           (lane.threads if lane.threads == "auto" else int(lane.threads))}
    log = work / f"{lane.name.replace(' ', '_').replace('·', '')}.log"
    t0 = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(cfg)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                env=_semif_env(lane.policy or "passive"), cwd=ROOT, start_new_session=True, text=True,
                                bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None

    def receive() -> dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(_TAG):
                msg: dict[str, Any] = json.loads(line[len(_TAG):])
                if "error" in msg:
                    raise RuntimeError(f"worker: {msg['error']}")
                return msg
        raise RuntimeError(f"the worker exited ({proc.wait()}); the end of its log ({log}):\n{_tail(log)}")

    try:
        ready = receive()
        lane.info = {"command": f"Scorer(model={args.model!r}, backend={lane.backend!r}, mode={lane.mode!r}, "
                                f"threads={cfg['threads']!r}).decide_many(rows)",
                     "ready_s": round(time.perf_counter() - t0, 2), "threading": ready.get("threading"),
                     "threads_running": ready.get("threads"),
                     "environment": {threading_policy.SEMIF_ENV: lane.policy}}
        lane.pgids = [proc.pid]

        def run(rows: list[dict[str, Any]]) -> dict[str, Any]:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"rows": rows}) + "\n")
            proc.stdin.flush()
            msg = receive()
            return {"wall_s": msg["wall_s"], "decisions": msg["decisions"], "problems": msg.get("problems", [])}

        lane.run = run
        yield lane
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait(timeout=30)


@contextlib.contextmanager
def server_process(cmd: list[str], env: dict[str, str], health: str, log: Path) -> Iterator[tuple[int, float]]:
    """:func:`benchmarks.decision_latency.server_process` (its own process group, output into ``log``, stopped when
    the block ends), yielding the server's pid (its process group, which the load accounting reads) and its ready
    seconds."""
    with dl_server_process(cmd, env, health, log, READY_TIMEOUT_S) as (proc, ready):
        yield proc.pid, ready


def _systemone_run(base: str, model: str) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    import httpx

    client = httpx.Client(timeout=REQUEST_TIMEOUT_S)

    def run(rows: list[dict[str, Any]]) -> dict[str, Any]:
        wall, problems, answered = 0.0, [], 0
        for body in systemone_requests(rows, model):
            raw = json.dumps(body).encode()
            t0 = time.perf_counter()
            r = client.post(base + "/v1/systemone", content=raw, headers={"content-type": "application/json"})
            wall += time.perf_counter() - t0
            if r.status_code != 200:
                problems.append(f"HTTP {r.status_code}: {r.text[:200]}")
                continue
            bad = systemone_problems(r.json(), body)
            problems += bad
            answered += len(body["questions"]) if not bad else 0
        return {"wall_s": round(wall, 4), "decisions": answered, "problems": problems}

    return run


def _served_threading(base: str) -> dict[str, Any]:
    """The served model's threads and wait policy, from ``GET /v1/models`` (the records' ``model`` block)."""
    import httpx

    try:
        doc = httpx.get(base + "/v1/models", timeout=30).json()
        model = (doc.get("models") or [{}])[0] if isinstance(doc, dict) else {}
        return {"threading": model.get("threading"), "threads_running": model.get("threads")}
    except (httpx.HTTPError, ValueError, AttributeError, IndexError):
        return {"threading": None, "threads_running": None}


@contextlib.contextmanager
def serve_lane(lane: Lane, args: argparse.Namespace, work: Path) -> Iterator[Lane]:
    """``semif serve`` (this source tree), asked over ``POST /v1/systemone``."""
    port = free_port()
    cmd = [sys.executable, "-m", "scorer.cli", "serve", "--model", args.model, "--backend", lane.backend,
           "--host", "127.0.0.1", "--port", str(port), *_threads_flag(lane.threads)]
    base = f"http://127.0.0.1:{port}"
    log = work / f"serve-{lane.backend}-{lane.policy}-{lane.threads}.log"
    with server_process(cmd, _semif_env(lane.policy or "passive"), base + "/healthz", log) as (pid, ready):
        lane.info = {"command": shlex.join(["semif", *cmd[3:]]), "ready_s": ready, "endpoint": "POST /v1/systemone",
                     **_served_threading(base), "environment": {threading_policy.SEMIF_ENV: lane.policy}}
        lane.pgids = [pid]
        lane.run = _systemone_run(base, args.model)
        yield lane


@contextlib.contextmanager
def typed_gguf_lane(lane: Lane, args: argparse.Namespace, work: Path, gguf: Path) -> Iterator[Lane]:
    """typed-gguf 0.3.0 (its own virtualenv) serving the same GGUF, asked over ``POST /v1/systemone``."""
    from scorer.engines import venv

    status = venv.ensure(venv.TYPED_GGUF)
    if not status.ok:
        raise RuntimeError(f"typed-gguf's virtualenv ({' '.join(venv.TYPED_GGUF.specs)}): {status.error}")
    exe = Path(status.python).parent / "typed-gguf"
    lib = llama_cpp_lib_dir()
    home = work / "typed-gguf-home"
    home.mkdir(parents=True, exist_ok=True)
    reg = {"schema": "typed_gguf.registry/v1", "current": args.model,
           "aliases": {args.model: {"alias": args.model, "path": str(gguf)}}}
    (home / "registry.json").write_text(json.dumps(reg, indent=1) + "\n", encoding="utf-8")
    env = {**os.environ, "TYPED_GGUF_HOME": str(home), "TYPED_GGUF_RUNTIME_DIR": str(lib),
           "TYPED_GGUF_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    port = free_port()
    cmd = [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--keep-alive", "24h"]
    base = f"http://127.0.0.1:{port}"
    try:
        with server_process(cmd, env, base + "/health", work / "typed-gguf.log") as (pid, ready):
            version = next((ln.split("==", 1)[1] for ln in status.freeze if ln.lower().startswith("typed-gguf==")),
                           None)
            lane.info = {"command": shlex.join(["typed-gguf", *cmd[1:]]), "ready_s": ready, "version": version,
                         "endpoint": "POST /v1/systemone", "runtime_dir": str(lib),
                         "threads": f"its own: os.cpu_count() = {os.cpu_count()}",
                         "environment": {threading_policy.WAIT_ENV: env.get(threading_policy.WAIT_ENV),
                                         threading_policy.SPIN_ENV: env.get(threading_policy.SPIN_ENV)},
                         "venv": {"python": status.python, "specs": status.specs, "freeze": status.freeze},
                         "home": str(home)}
            lane.pgids = [pid]
            lane.run = _systemone_run(base, args.model)
            yield lane
    finally:  # its warm host is a process of its own (kept alive for --keep-alive): end it
        subprocess.run([str(exe), "keep", "stop", "--json"], env=env, capture_output=True, timeout=120)


def home_pgids(home: str, proc: Path = Path("/proc")) -> list[int]:
    """Process groups of the processes whose environment names ``TYPED_GGUF_HOME=home``: typed-gguf's server and its
    warm host (``typed-gguf keep``, which leaves the server's group), whose CPU time counts as the lane's."""
    want = f"TYPED_GGUF_HOME={home}".encode()
    out = []
    for d in proc.iterdir() if proc.is_dir() else ():
        if not d.name.isdigit():
            continue
        try:
            if want in (d / "environ").read_bytes().split(b"\0"):
                out.append(int((d / "stat").read_text().rsplit(")", 1)[1].split()[2]))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(set(out))


# --- measuring -----------------------------------------------------------------------------------------------------
def measure_lane(lane: Lane, rows: list[dict[str, Any]], args: argparse.Namespace,
                 nonces: Callable[[int, str], str]) -> list[dict[str, Any]]:
    """The warm-up run, then every round of every condition: the run rows."""
    assert lane.run is not None
    warm = lane.run(fresh_rows(rows, nonces(-1, "warm-up")))
    say(f"{lane.name}: warm-up {warm['wall_s']:.2f} s" + (f", problems {warm['problems'][:2]}"
                                                           if warm["problems"] else ""))
    out = []
    for rnd in range(args.repeats):
        for cond in conditions_in_round(args.loads, rnd):
            load = None if cond == "quiet" else cond
            busy = threading_policy.busy_cores(threading_policy.affinity() or {0}) if load is None else None
            before = load_average()
            with background(load, args.job_cores, args.job_max_s, args.job_warmup) as job:
                pg = lane.pgids + (home_pgids(lane.info["home"]) if lane.tool == "typed-gguf" else [])
                cpu0, job0, t0 = group_cpu_s(pg), group_cpu_s(job.pgids()) if job else None, time.perf_counter()
                r = lane.run(fresh_rows(rows, nonces(rnd, cond)))
                span = time.perf_counter() - t0
                cpu1, job1 = group_cpu_s(pg), group_cpu_s(job.pgids()) if job else None
                job_alive = job.running() if job else None
            lane_cpu = round(cpu1 - cpu0, 3) if cpu0 is not None and cpu1 is not None else None
            job_cpu = round(job1 - job0, 3) if job0 is not None and job1 is not None else None
            row = {"lane": lane.name, "round": rnd, "condition": cond, **r, "lane_cpu_s": lane_cpu,
                   "background_cpu_s": job_cpu,
                   "background_share": round(job_cpu / (span * args.job_cores), 3) if job_cpu is not None and span
                   else None, "background_running": job_alive,
                   "busy_cores_before": busy, "load_average_before": before}
            out.append(row)
            say(f"{lane.name} round {rnd + 1}/{args.repeats} {cond}: {r['wall_s']:.2f} s"
                + (f" (lane CPU {lane_cpu:.1f} s)" if lane_cpu is not None else "")
                + (f", background got {row['background_share']:.0%} of its core(s)" if row["background_share"]
                   is not None else "") + (f", busy before {busy}" if busy is not None else "")
                + (f", problems {r['problems'][:2]}" if r["problems"] else ""))
    return out


def summarize(lanes: Sequence[Lane], runs: Sequence[dict[str, Any]], loads: Sequence[str],
              max_busy: float) -> list[dict[str, Any]]:
    """Per lane and load: median quiet and loaded wall time, the slowdown, the spread of each condition's runs, the
    CPU the lane used, the share of its cores the background job got, and whether the quiet runs were quiet."""
    out = []
    for lane in lanes:
        mine = [r for r in runs if r["lane"] == lane.name]
        quiet = [r for r in mine if r["condition"] == "quiet"]
        q_wall = [r["wall_s"] for r in quiet]
        busy = [r["busy_cores_before"] for r in quiet if r.get("busy_cores_before") is not None]
        for load in loads:
            loaded = [r for r in mine if r["condition"] == load]
            b_wall = [r["wall_s"] for r in loaded]
            shares = [r["background_share"] for r in loaded if r.get("background_share") is not None]
            cpu_q = [r["lane_cpu_s"] for r in quiet if r.get("lane_cpu_s") is not None]
            cpu_b = [r["lane_cpu_s"] for r in loaded if r.get("lane_cpu_s") is not None]
            out.append({"lane": lane.name, "tool": lane.tool, "backend": lane.backend, "mode": lane.mode,
                        "policy": lane.policy, "threads": lane.threads, "load": load,
                        "quiet_s": median(q_wall), "loaded_s": median(b_wall), "slowdown": slowdown(q_wall, b_wall),
                        "quiet_spread": spread(q_wall), "loaded_spread": spread(b_wall),
                        "quiet_cpu_s": median(cpu_q), "loaded_cpu_s": median(cpu_b),
                        "background_share": median(shares),
                        "runs": {"quiet": len(q_wall), "loaded": len(b_wall)},
                        "valid": all(not r["problems"] for r in [*quiet, *loaded]),
                        "quiet_busy_max": max(busy) if busy else None,
                        "quiet": bool(busy) and len(busy) == len(quiet) and max(busy) <= max_busy})
    return out


def comparisons(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per SemIf result: the peer's slowdown under the same load, whether SemIf slowed no more than the peer and no
    more than :data:`CEILING`; and, where the same lane ran with ``library``, the quiet time of ``passive`` over it
    (what passive waiting costs on a quiet machine) and the loaded slowdown it had."""
    peer = {r["load"]: r for r in results if r["tool"] == "typed-gguf"}
    by_key = {(r["backend"], r["mode"], r["threads"], r["load"], r["policy"]): r
              for r in results if r["tool"] == "semif"}
    out = []
    for r in results:
        if r["tool"] != "semif":
            continue
        p = peer.get(r["load"])
        lib = by_key.get((r["backend"], r["mode"], r["threads"], r["load"], "library")) \
            if r["policy"] != "library" else None
        s = r["slowdown"]
        ps = p["slowdown"] if p else None
        q_cost = round(r["quiet_s"] / lib["quiet_s"], 3) if lib and r["quiet_s"] and lib["quiet_s"] else None
        out.append({"lane": r["lane"], "load": r["load"], "slowdown": s, "peer_slowdown": ps,
                    "within_peer": None if s is None or ps is None else s <= ps,
                    "within_ceiling": None if s is None else s <= CEILING,
                    "quiet_vs_library": q_cost,
                    "library_slowdown": lib["slowdown"] if lib else None,
                    "quiet": bool(r["quiet"]) and (p is None or bool(p["quiet"]))
                    and (lib is None or bool(lib["quiet"]))})
    return out


# --- the worker ----------------------------------------------------------------------------------------------------
def _send(msg: dict[str, Any]) -> None:
    sys.stdout.write(_TAG + json.dumps(msg) + "\n")
    sys.stdout.flush()


def worker(cfg_text: str) -> int:
    """The in-process lane: load the model once, then score every ``{"rows": [...]}`` line read from stdin."""
    cfg = json.loads(cfg_text)
    try:
        from scorer import Scorer

        scorer = Scorer(model=cfg["model"], backend=cfg["backend"], mode=cfg["mode"], threads=cfg["threads"])
        info = scorer.model_info()
    except Exception as exc:  # reported to the parent, which names the lane
        _send({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    _send({"ready": True, "threading": info.get("threading"), "threads": info.get("threads")})
    for line in sys.stdin:
        if not line.strip():
            continue
        rows = json.loads(line)["rows"]
        t0 = time.perf_counter()
        try:
            recs = scorer.decide_many(rows)
        except Exception as exc:
            _send({"wall_s": round(time.perf_counter() - t0, 4), "decisions": 0,
                   "problems": [f"{type(exc).__name__}: {str(exc)[:300]}"]})
            continue
        _send({"wall_s": round(time.perf_counter() - t0, 4), "decisions": len(recs), "problems": []})
    scorer.close()
    return 0


# --- the run -------------------------------------------------------------------------------------------------------
def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b", help="model store key (default qwen2.5-0.5b)")
    ap.add_argument("--rows", type=Path, default=ROWS, help="decision rows (default data/workloads/shape-small.jsonl)")
    ap.add_argument("--limit", type=int, help="only the first N rows")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="SemIf's backends (torch, llamacpp)")
    ap.add_argument("--modes", default=",".join(MODES), help="direct, shared (in process), serve (semif serve)")
    ap.add_argument("--policies", default=",".join(POLICIES),
                    help="SEMIF_WAIT_POLICY per SemIf lane: passive (SemIf's default), library (the runtimes' own)")
    ap.add_argument("--threads", default="default", help="SemIf's --threads per lane: default, auto or N (a list)")
    ap.add_argument("--peer", default="typed-gguf", choices=("typed-gguf", "none"), help="the peer lane")
    ap.add_argument("--loads", default="spin", help=f"background jobs, one condition each ({', '.join(JOBS)})")
    ap.add_argument("--job-cores", type=int, default=1, help="processes of each background job (default 1)")
    ap.add_argument("--job-warmup", type=float, default=1.0, help="seconds a job runs before the measured run")
    ap.add_argument("--job-max-s", type=float, default=900.0, help="a background job ends by itself after this")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of every condition per lane (default 3)")
    ap.add_argument("--max-busy", type=float, default=0.3,
                    help="a quiet run that started with more cores busy than this is not quiet (not to be quoted)")
    ap.add_argument("--seed", default="busy", help="seeds the runs' nonces")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="overwrite an existing report")
    args = ap.parse_args(argv)
    for name, allowed in (("backends", BACKENDS), ("modes", MODES), ("policies", POLICIES), ("loads", tuple(JOBS))):
        vals = _csv(getattr(args, name))
        bad = [v for v in vals if v not in allowed]
        if bad or (not vals and name != "backends"):
            ap.error(f"--{name}: {bad or 'empty'} (expected some of {', '.join(allowed)})")
        setattr(args, name, vals)
    args.threads = _csv(args.threads)
    for t in args.threads:
        if t not in ("default", "auto") and not (t.isdigit() and int(t) >= 1):
            ap.error(f"--threads: {t!r} (expected default, auto or a number >= 1)")
    if args.repeats < 1 or args.job_cores < 1:
        ap.error("--repeats and --job-cores: at least 1")
    return args


def notes(args: argparse.Namespace) -> list[str]:
    return [
        "slowdown: median wall time of the loaded runs over that of the quiet runs of the same lane; the lanes ran "
        "one after another, each alone on the machine beside only its own background job",
        f"background job: {args.job_cores} process(es) per load, each one core of CPU-bound work "
        f"({', '.join(args.loads)}; spin = a pure Python loop, matmul = single-threaded numpy 256x256 products), "
        f"started {args.job_warmup:g} s before the run, killed right after it, ending by itself after "
        f"{args.job_max_s:g} s in any case; background_share = the CPU it got over the run / (wall × its processes): "
        "near 1 means SemIf left it its core",
        "every run scores fresh states (a per-run nonce in front of each state), so nothing is reused from an earlier "
        "run; in process: one Scorer.decide_many over all rows; servers: one POST /v1/systemone per state (yes/no rows "
        "as noul questions), one after another, timed by the client",
        "policy: SEMIF_WAIT_POLICY of the SemIf lane (passive: OMP_WAIT_POLICY=PASSIVE, SemIf's default; library: "
        "nothing set, the OpenMP runtimes' defaults: libgomp spins ~300,000 times before it sleeps); typed-gguf runs "
        "with the environment this script was given and its own thread count",
        f"quiet: every quiet run of the cell started with at most {args.max_busy:g} cores busy with other work "
        "(/proc/stat over 0.3 s); a cell that is not quiet must not be quoted",
        "within_peer: SemIf's slowdown is at most typed-gguf's under the same load; within_ceiling: at most "
        f"{CEILING:g}; quiet_vs_library: the quiet wall time of the lane over the same lane's with the library "
        "policy (1.0: the policy costs nothing on a quiet machine; compare with quiet_spread, the noise)",
    ]


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) >= 3 and sys.argv[1] == "--worker":
        return worker(sys.argv[2])
    args = parse_args(argv)
    if args.output.exists() and not args.force:
        raise SystemExit(str(refuse_overwrite(args.output)))
    if os.environ.get(threading_policy.WAIT_ENV):
        raise SystemExit(f"{threading_policy.WAIT_ENV} is set in this environment; the wait policy is what this "
                         f"benchmark varies (--policies): unset it")
    from scorer.models import store

    rows = load_rows(args.rows, args.limit)
    gguf, gguf_sha = store.gguf_for(store.resolve(args.model))
    lanes = lanes_for(args)
    runs: list[dict[str, Any]] = []
    lanes_out: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    t_start = time.time()

    def nonces(rnd: int, cond: str) -> str:
        from scorer.core.hashing import sha256_text

        return sha256_text(f"{args.seed}:{rnd}:{cond}")[:12]

    # SIGTERM (a kill, a CI timeout) unwinds like Ctrl-C, so every background job, worker and server is stopped by
    # its context manager instead of being left spinning beside the next benchmark
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with tempfile.TemporaryDirectory(prefix="semif-busy-") as tmp:
        work = Path(tmp)
        for lane in lanes:
            say(f"starting {lane.name}")
            try:
                if lane.tool == "typed-gguf":
                    ctx = typed_gguf_lane(lane, args, work, Path(gguf))
                elif lane.mode == "serve":
                    ctx = serve_lane(lane, args, work)
                else:
                    ctx = worker_lane(lane, args, work)
                with ctx:
                    lanes_out.append({"lane": lane.name, "tool": lane.tool, "backend": lane.backend,
                                      "mode": lane.mode, "policy": lane.policy, "threads": lane.threads,
                                      **lane.info})
                    runs += measure_lane(lane, rows, args, nonces)
            except Exception as exc:  # a lane that cannot run is reported; the others still run
                failed.append({"lane": lane.name, "error": str(exc)[-3000:]})
                say(f"{lane.name} failed: {str(exc)[-600:]}")
    done = [ln for ln in lanes if any(r["lane"] == ln.name for r in runs)]
    results = summarize(done, runs, args.loads, args.max_busy)
    comps = comparisons(results)
    body = {
        "title": f"Scoring on a busy machine: {args.model}, quiet and beside {args.job_cores} CPU-bound background "
                 f"job(s) ({', '.join(args.loads)}), SemIf beside typed-gguf",
        "command": shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(["busy.py", *argv]),
        "settings": {"model": args.model, "rows": len(rows), "backends": args.backends, "modes": args.modes,
                     "policies": args.policies, "threads": args.threads, "peer": args.peer, "loads": args.loads,
                     "job_cores": args.job_cores, "job_warmup_s": args.job_warmup, "job_max_s": args.job_max_s,
                     "repeats": args.repeats, "max_busy": args.max_busy, "seed": args.seed,
                     "usable_cores": threading_policy.usable_cores(), "wall_s": round(time.time() - t_start, 1)},
        "workload": {"path": str(args.rows), "sha256": file_input(args.rows)["sha256"], "rows": len(rows),
                     "states": len({json.dumps(r["state"], sort_keys=True) for r in rows})},
        "lanes": lanes_out,
        "failed_lanes": failed,
        "quiet": bool(results) and all(r["quiet"] for r in results),
        "results": results,
        "comparisons": comps,
        "runs": runs,
        "notes": notes(args),
    }
    versions = {"typed-gguf": next((ln.get("version") for ln in lanes_out if ln["tool"] == "typed-gguf"), None)}
    report = make_report(KIND, FORMAT, {"rows": file_input(args.rows), "gguf": {"path": str(gguf), "sha256": gguf_sha}},
                         body, versions=versions)
    write_report(args.output, report, overwrite=args.force)
    say(f"wrote {args.output} ({len(runs)} timed runs, quiet: {body['quiet']})")
    for r in results:
        say(f"{r['lane']} under {r['load']}: {r['quiet_s']} s → {r['loaded_s']} s = {r['slowdown']}x"
            + ("" if r["quiet"] else " (not quiet)"))
    for c in comps:
        say(f"{c['lane']} under {c['load']}: slowdown {c['slowdown']} vs peer {c['peer_slowdown']}; "
            f"quiet vs library {c['quiet_vs_library']}")
    return 0 if not failed and all(r["valid"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
