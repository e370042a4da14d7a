"""How many CPU threads SemIf's kernels run, and how those threads wait: one policy for every backend and engine it
starts (torch's intra-op threads, llama.cpp's threads and batch threads, the ``llama-server`` and vLLM engines the
launcher runs), recorded in every record's ``model`` block and in every report's ``machine`` block.

**How threads wait.** torch and llama.cpp run their threads on an OpenMP runtime (libgomp here: torch's bundled copy
and the system's for llama.cpp and ``llama-server``). Between parallel regions and at every barrier an OpenMP
thread that has nothing to do *spins* for a while before it sleeps (libgomp, ``OMP_WAIT_POLICY`` unset: about
300,000 spins, a few milliseconds; ``ACTIVE``: minutes). On a quiet machine that costs a core nobody wanted; beside
another CPU-bound job it takes the core that job (or the thread the barrier waits for) needed, and scoring slowed
2.5–5x on 2-core machines (issue #42). SemIf therefore sets ``OMP_WAIT_POLICY=PASSIVE`` (a waiting thread sleeps
at once) unless told otherwise:

* ``OMP_WAIT_POLICY`` in the environment (any value): the user's choice, kept and recorded (``source``
  ``environment``);
* ``SEMIF_WAIT_POLICY``: ``passive`` (the default), ``active`` (spin: ``OMP_WAIT_POLICY=ACTIVE``) or ``library``
  (SemIf sets nothing: the runtimes' own defaults, as before #42);
* ``GOMP_SPINCOUNT`` (libgomp's spin count, which overrides the policy's) is never set here, only recorded.

An OpenMP runtime reads the variable once, when its shared library loads (``import torch``, ``import llama_cpp``):
:func:`apply_wait_policy` must run before that, and the backends' loaders and the engine launcher call it first. A
runtime that was already loaded when SemIf set the variable (a caller imported torch first) keeps the default it
read: the record then says ``in_effect: false`` rather than claim a policy that is not running. Engines started as
subprocesses get the variable in their environment (:func:`engine_environment`): there it is always in effect.

**How many threads.** ``threads`` is an integer (that many), None (the library's own choice: torch's
``get_num_threads()``, llama.cpp's usable cores) or ``auto``: the cores free now (:func:`choose_threads`) — the
usable cores (this process's CPU affinity, capped by a cgroup CPU quota) less the cores other work keeps busy,
measured by a short sample of ``/proc/stat`` over the usable CPUs (this process's own CPU time subtracted); a core
counts as taken when the others use at least :data:`TAKEN_FRACTION` of it. Never fewer than 1, never more than the
usable cores. Where ``/proc/stat`` cannot be read the 1-minute load average stands in (system-wide: in a container
it counts the host's work too, so it only ever lowers the count). The choice is made once, when a backend loads,
and recorded with what was asked and why. A different thread count sums fp32 products in another order, so records
of ``auto`` runs can differ in the last bits from run to run (the drift identity names the threads chosen).

Standard library only; nothing here imports torch or llama.cpp.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from scorer.core.checks import OptionError

WAIT_ENV = "OMP_WAIT_POLICY"
"""The OpenMP variable every runtime reads (libgomp, LLVM's libomp, Intel's libiomp5)."""
SPIN_ENV = "GOMP_SPINCOUNT"
"""libgomp's spin count (overrides the spin the policy implies); recorded, never set."""
SEMIF_ENV = "SEMIF_WAIT_POLICY"
"""SemIf's own switch: ``passive`` (default), ``active`` or ``library`` (set nothing)."""
SEMIF_POLICIES = {"passive": "PASSIVE", "active": "ACTIVE", "library": None}
"""``SEMIF_WAIT_POLICY`` values and the ``OMP_WAIT_POLICY`` each sets (None: none)."""
DEFAULT_POLICY = "passive"
AUTO = "auto"
"""``threads="auto"``: the cores free now."""
TAKEN_FRACTION = 0.75
"""A core counts as taken by other work when the others use at least this much of it over the sample."""
SAMPLE_S = 0.3
"""Seconds of ``/proc/stat`` sampled for ``threads=auto``."""
_OPENMP_LIBS = ("libgomp", "libiomp5", "libiomp", "libomp.", "libomp-")
"""File-name starts of the OpenMP runtimes (``/proc/self/maps``)."""
_OPENMP_MODULES = ("torch", "llama_cpp")
"""Modules that load an OpenMP runtime when imported (the fallback where ``/proc/self/maps`` cannot be read)."""


# --- the wait policy ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WaitPolicy:
    """How this process's OpenMP threads wait, as decided by :func:`decide_wait_policy`."""

    value: str | None
    """``OMP_WAIT_POLICY`` (``PASSIVE``, ``ACTIVE``, what the user set) or None (unset: the runtime's default)."""
    source: str
    """``semif`` (set here: :data:`SEMIF_ENV` or its default), ``environment`` (the user's ``OMP_WAIT_POLICY``) or
    ``library`` (``SEMIF_WAIT_POLICY=library``: nothing set)."""
    in_effect: bool | None
    """Whether the runtimes of this process run with ``value``: False when one was loaded before it could be set,
    None when that cannot be told (a value set in this process after a runtime loaded, not at its start)."""
    loaded_before: tuple[str, ...]
    """OpenMP runtimes already loaded when the policy was applied (file names)."""
    spin_count: str | None
    """``GOMP_SPINCOUNT`` as set in the environment (None: not set)."""
    note: str | None = None
    """Why it is not (or may not be) in effect."""

    def block(self) -> dict[str, Any]:
        """The record's and report's ``wait_policy`` entry."""
        out: dict[str, Any] = {WAIT_ENV: self.value, "source": self.source, "in_effect": self.in_effect,
                               "runtimes_loaded_before": list(self.loaded_before), SPIN_ENV: self.spin_count}
        if self.note:
            out["note"] = self.note
        return out


def openmp_runtimes(maps_text: str | None = None) -> tuple[str, ...] | None:
    """The OpenMP runtime libraries mapped into this process (file names, sorted), from ``/proc/self/maps`` (or
    ``maps_text``); None where that cannot be read."""
    if maps_text is None:
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                maps_text = f.read()
        except OSError:
            return None
    names = set()
    for line in maps_text.splitlines():
        path = line.split(maxsplit=5)[5] if len(line.split(maxsplit=5)) == 6 else ""
        name = os.path.basename(path.strip())
        if name.startswith(_OPENMP_LIBS) and ".so" in name:
            names.add(name)
    return tuple(sorted(names))


def _runtimes_now() -> tuple[str, ...]:
    found = openmp_runtimes()
    if found is not None:
        return found
    return tuple(f"{m} (imported)" for m in _OPENMP_MODULES if m in sys.modules)  # not Linux: the modules say it


def initial_environment(raw: bytes | None = None) -> dict[str, str] | None:
    """The environment this process was started with (``/proc/self/environ``, or ``raw``); None where unreadable."""
    if raw is None:
        try:
            with open("/proc/self/environ", "rb") as f:
                raw = f.read()
        except OSError:
            return None
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def decide_wait_policy(environ: MutableMapping[str, str], loaded: tuple[str, ...],
                       initial: Mapping[str, str] | None) -> WaitPolicy:
    """The policy for a process whose environment is ``environ`` (set in it here, when SemIf sets one), with the
    OpenMP runtimes ``loaded`` already, started with the environment ``initial`` (None: unknown).

    A ``SEMIF_WAIT_POLICY`` that is not one of :data:`SEMIF_POLICIES` is an
    :class:`~scorer.core.checks.OptionError` naming it."""
    spin = environ.get(SPIN_ENV)
    late = (f"an OpenMP runtime ({', '.join(loaded)}) was loaded before SemIf could set {WAIT_ENV}: its threads "
            "wait as that runtime's default does (set the variable before Python starts, or let SemIf load the "
            "backend before anything imports torch or llama_cpp)")
    user = environ.get(WAIT_ENV)
    if user:
        if not loaded or (initial is not None and initial.get(WAIT_ENV) == user):
            return WaitPolicy(user, "environment", True, loaded, spin)
        return WaitPolicy(user, "environment", None, loaded, spin,
                          f"{WAIT_ENV}={user} was not in this process's starting environment and an OpenMP runtime "
                          f"({', '.join(loaded)}) was already loaded: whether it read the value cannot be told")
    word = (environ.get(SEMIF_ENV) or DEFAULT_POLICY).strip().lower()
    if word not in SEMIF_POLICIES:
        raise OptionError(SEMIF_ENV, f"{environ.get(SEMIF_ENV)!r} is not one of {', '.join(SEMIF_POLICIES)}")
    value = SEMIF_POLICIES[word]
    if value is None:
        return WaitPolicy(None, "library", True, loaded, spin)
    environ[WAIT_ENV] = value
    return WaitPolicy(value, "semif", not loaded, loaded, spin, late if loaded else None)


_APPLIED: WaitPolicy | None = None


def apply_wait_policy() -> WaitPolicy:
    """Set this process's wait policy (once; later calls return the first decision): call before torch or llama.cpp
    load. A bad ``SEMIF_WAIT_POLICY`` is an :class:`~scorer.core.checks.OptionError` naming it."""
    global _APPLIED
    if _APPLIED is None:
        _APPLIED = decide_wait_policy(os.environ, _runtimes_now(), initial_environment())
    return _APPLIED


def applied_wait_policy() -> WaitPolicy | None:
    """The policy :func:`apply_wait_policy` set in this process, or None when nothing applied one yet."""
    return _APPLIED


def engine_environment(environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """The variables an engine subprocess is started with for the wait policy, and its record: the user's
    ``OMP_WAIT_POLICY`` if this process was started with one (or it was set before SemIf's), else what
    ``SEMIF_WAIT_POLICY`` says (default ``PASSIVE``; ``library``: nothing). Set at the engine's start, it is always
    in effect there."""
    env = dict(os.environ if environ is None else environ)
    policy = _APPLIED if environ is None else None
    if policy is not None and policy.source == "semif":
        env.pop(WAIT_ENV, None)  # the value SemIf put into this process's environment is not the user's
    decided = decide_wait_policy(env, (), None)
    out = {WAIT_ENV: decided.value} if decided.value is not None else {}
    return out, {**decided.block(), "in_effect": True, "runtimes_loaded_before": []}


def process_block() -> dict[str, Any]:
    """The ``threading`` entry of a report's ``machine`` block: the usable cores, the CPU quota, and the wait policy
    of this process (what :func:`apply_wait_policy` decided, or, where nothing applied one, what the environment
    says and which OpenMP runtimes are loaded)."""
    applied = _APPLIED
    if applied is not None:
        policy = applied.block()
    else:
        policy = {WAIT_ENV: os.environ.get(WAIT_ENV), "source": "not applied (this process loaded no backend)",
                  "runtimes_loaded": list(_runtimes_now()), SPIN_ENV: os.environ.get(SPIN_ENV)}
    return {"usable_cores": usable_cores(), "cpu_quota": cpu_quota(), "wait_policy": policy}


# --- the thread count ---------------------------------------------------------------------------------------------
def affinity() -> set[int] | None:
    """The CPUs this process may run on (None where the platform cannot say)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def cpu_quota(read: Callable[[str], str] | None = None) -> float | None:
    """The cgroup v2 CPU quota of this process in cores (``cpu.max``: quota / period), None when there is none."""
    def _read(path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()

    read = read or _read
    paths = ["/sys/fs/cgroup/cpu.max"]
    try:
        for line in read("/proc/self/cgroup").splitlines():
            if line.startswith("0::"):
                rel = line[3:].strip().strip("/")
                if rel:
                    paths.insert(0, f"/sys/fs/cgroup/{rel}/cpu.max")
    except OSError:
        pass
    for path in paths:
        try:
            words = read(path).split()
        except OSError:
            continue
        if len(words) == 2 and words[0] != "max":
            try:
                quota, period = float(words[0]), float(words[1])
            except ValueError:
                return None
            return round(quota / period, 3) if quota > 0 and period > 0 else None
        return None
    return None


def usable_cores(cpus: set[int] | None = None, quota: float | None = None) -> int:
    """The cores this process may use: its CPU affinity (else ``os.cpu_count()``), capped by a cgroup CPU quota
    (rounded up); at least 1."""
    cpus = affinity() if cpus is None else cpus
    n = len(cpus) if cpus else (os.cpu_count() or 1)
    q = cpu_quota() if quota is None else quota
    if q is not None:
        n = min(n, max(1, math.ceil(q - 1e-9)))
    return max(1, n)


def _stat_ticks(text: str, cpus: set[int]) -> tuple[float, float]:
    """(busy, total) ticks of ``cpus`` in a ``/proc/stat`` text (busy = all but idle and iowait)."""
    busy = total = 0.0
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        if not head.startswith("cpu") or head == "cpu":
            continue
        try:
            cpu = int(head[3:])
        except ValueError:
            continue
        if cpu not in cpus:
            continue
        vals = [float(x) for x in rest.split()[:8]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
        busy += sum(vals) - idle
        total += sum(vals)
    return busy, total


def busy_cores(cpus: set[int], sample_s: float = SAMPLE_S, read_stat: Callable[[], str] | None = None,
               own_cpu_s: Callable[[], float] | None = None, sleep: Callable[[float], None] = time.sleep,
               ) -> float | None:
    """How many of ``cpus`` other work keeps busy, in cores: the busy share of their ``/proc/stat`` ticks over
    ``sample_s`` seconds, less this process's own CPU time over the same span. None where ``/proc/stat`` cannot be
    read or did not advance."""
    def _read() -> str:
        with open("/proc/stat", encoding="utf-8") as f:
            return f.read()

    read_stat = read_stat or _read

    def _own() -> float:
        t = os.times()
        return t.user + t.system

    own_cpu_s = own_cpu_s or _own
    try:
        b0, t0 = _stat_ticks(read_stat(), cpus)
        own0 = own_cpu_s()
        sleep(sample_s)
        b1, t1 = _stat_ticks(read_stat(), cpus)
        own1 = own_cpu_s()
    except (OSError, ValueError, IndexError):
        return None
    if t1 <= t0 or not cpus:
        return None
    span_cores = len(cpus)
    busy = (b1 - b0) / (t1 - t0) * span_cores  # cores busy over the span, everyone's work
    seconds = (t1 - t0) / span_cores / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
    own = (own1 - own0) / seconds if seconds > 0 else 0.0
    return round(max(0.0, busy - own), 3)


def taken_cores(busy: float) -> int:
    """Whole cores taken by ``busy`` cores of other work: one counts from :data:`TAKEN_FRACTION` of it."""
    return max(0, math.floor(busy + (1.0 - TAKEN_FRACTION) + 1e-9))


def free_cores(usable: int, busy: float) -> int:
    """The threads ``auto`` runs: ``usable`` cores less those taken by ``busy`` cores of other work, at least 1 and
    at most ``usable``."""
    usable = max(1, int(usable))
    return max(1, min(usable, usable - taken_cores(busy)))


@dataclass(frozen=True)
class ThreadChoice:
    """How many threads a kernel runs and why."""

    asked: int | str | None
    """What was asked: an integer, ``auto`` or None (the library's choice)."""
    chosen: int | None
    """What SemIf passes to the library (None: the library's own choice)."""
    why: str
    """In words."""
    usable: int | None = None
    """The usable cores (``auto``)."""
    busy: float | None = None
    """Cores other work kept busy over the sample (``auto``)."""
    measured_by: str | None = None
    """``proc-stat`` (a sample of ``/proc/stat``), ``loadavg`` (the 1-minute load average) or None."""

    def block(self, running: int | None = None) -> dict[str, Any]:
        """The ``threads`` entry: asked, chosen, why (and what the library runs when it chose, ``running``)."""
        out: dict[str, Any] = {"asked": self.asked, "chosen": self.chosen if self.chosen is not None else running,
                               "why": self.why}
        if self.asked == AUTO:
            out.update(usable_cores=self.usable, busy_cores=self.busy, measured_by=self.measured_by)
        return out


def choose_threads(asked: int | str | None, default: str = "the library's own choice",
                   usable: int | None = None, busy: Callable[[set[int]], float | None] | None = None,
                   loadavg: Callable[[], tuple[float, float, float]] | None = None) -> ThreadChoice:
    """The threads for ``asked`` (an integer, ``auto`` or None; ``default`` says what None means for the caller).
    ``usable``, ``busy`` and ``loadavg`` replace the machine's (tests)."""
    if asked is None:
        return ThreadChoice(None, None, f"not asked: {default}")
    if asked != AUTO:
        n = int(asked)
        cores = usable_cores() if usable is None else usable
        over = f" (more than the {cores} usable cores: threads share cores)" if n > cores else ""
        return ThreadChoice(n, n, f"asked for {n}{over}")
    cpus = affinity() or set(range(os.cpu_count() or 1))
    cores = usable_cores(cpus) if usable is None else max(1, usable)
    measured = (busy or busy_cores)(cpus)
    how = "proc-stat"
    if measured is None:
        try:
            load = (loadavg or os.getloadavg)()[0]
            measured, how = round(float(load), 2), "loadavg"
        except (AttributeError, OSError):
            return ThreadChoice(AUTO, cores, f"auto: {cores} usable cores, no load reading: all of them", cores,
                                None, None)
    n = free_cores(cores, measured)
    src = ("/proc/stat over the usable CPUs, this process's own time subtracted" if how == "proc-stat"
           else "1-minute load average")
    return ThreadChoice(AUTO, n, f"auto: {cores} usable cores, {measured:g} busy with other work ({src}), "
                                 f"{taken_cores(measured)} taken: {n} thread{'s' if n != 1 else ''}",
                        cores, measured, how)


def threading_block(choice: ThreadChoice, running: int | None, policy: WaitPolicy | None = None) -> dict[str, Any]:
    """A record's ``model.threading`` block: the thread choice (with what the library runs, ``running``) and the
    wait policy of this process."""
    policy = policy or apply_wait_policy()
    return {"threads": choice.block(running), "wait_policy": policy.block()}
