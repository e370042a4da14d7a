"""The thread count and the wait policy (scorer.core.threads): ``auto``'s arithmetic on fakes, the policy's decision
on fake environments, and — in a fresh interpreter — that the backends' loaders set it before torch or llama.cpp
load."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scorer.core import checks, threads
from scorer.core.checks import OptionError

ROOT = Path(__file__).resolve().parents[2]


# --- auto: free cores --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("usable", "busy", "free"), [
    (2, 0.0, 2), (2, 0.2, 2), (2, 0.74, 2), (2, 0.75, 1), (2, 1.0, 1), (2, 1.3, 1), (2, 1.8, 1), (2, 2.0, 1),
    (2, 7.8, 1), (1, 0.0, 1), (1, 1.0, 1), (8, 3.1, 5), (8, 2.8, 5), (8, 2.7, 6), (16, 0.05, 16),
])
def test_free_cores(usable, busy, free):
    assert threads.free_cores(usable, busy) == free


@pytest.mark.parametrize("usable", [1, 2, 3, 4, 7, 8, 16, 64])
@pytest.mark.parametrize("busy", [0.0, 0.1, 0.5, 0.75, 1.0, 1.49, 2.5, 3.99, 8.0, 100.0])
def test_auto_never_more_than_the_cores_and_at_least_one(usable, busy):
    n = threads.free_cores(usable, busy)
    assert 1 <= n <= usable
    c = threads.choose_threads("auto", usable=usable, busy=lambda cpus: busy)
    assert c.chosen == n and c.asked == "auto" and c.usable == usable and c.measured_by == "proc-stat"
    assert 1 <= c.block()["chosen"] <= usable


def test_auto_falls_back_to_the_load_average_then_to_all_cores():
    c = threads.choose_threads("auto", usable=4, busy=lambda cpus: None, loadavg=lambda: (2.4, 1.0, 0.5))
    assert (c.chosen, c.measured_by, c.busy) == (2, "loadavg", 2.4) and "load average" in c.why

    def none() -> tuple[float, float, float]:
        raise OSError("no load average here")

    c = threads.choose_threads("auto", usable=4, busy=lambda cpus: None, loadavg=none)
    assert c.chosen == 4 and c.measured_by is None and "no load reading" in c.why


def test_asked_and_default_choices():
    c = threads.choose_threads(3, usable=2)
    assert c.chosen == 3 and "more than the 2 usable cores" in c.why
    assert threads.choose_threads(2, usable=2).why == "asked for 2"
    c = threads.choose_threads(None, "torch's own choice")
    assert c.chosen is None and c.block(running=2) == {"asked": None, "chosen": 2,
                                                        "why": "not asked: torch's own choice"}


def _stat(ticks: dict[int, tuple[int, int]]) -> str:
    """A /proc/stat text whose cpuN lines have ``busy`` user ticks and ``idle`` idle ticks."""
    lines = ["cpu  1 2 3 4 5 6 7 8 0 0"]
    lines += [f"cpu{n} {b} 0 0 {i} 0 0 0 0 0 0" for n, (b, i) in sorted(ticks.items())]
    return "\n".join([*lines, "intr 1 2 3", "ctxt 42"]) + "\n"


def test_busy_cores_from_proc_stat_only_over_the_usable_cpus_less_this_process():
    texts = iter([_stat({0: (100, 100), 1: (100, 100), 2: (0, 0)}),
                  _stat({0: (200, 100), 1: (130, 170), 2: (999, 0)})])  # cpu0 all busy, cpu1 30 %; cpu2 not ours
    own = iter([5.0, 5.0])  # this process used nothing meanwhile
    got = threads.busy_cores({0, 1}, 0.0, read_stat=lambda: next(texts), own_cpu_s=lambda: next(own),
                             sleep=lambda s: None)
    assert got == pytest.approx(1.3)
    texts = iter([_stat({0: (100, 100), 1: (100, 100)}), _stat({0: (200, 100), 1: (200, 100)})])
    own = iter([0.0, 1.0])  # both busy over 100 ticks = 1 s (CLK_TCK 100): of which this process took 1 s = 1 core
    got = threads.busy_cores({0, 1}, 0.0, read_stat=lambda: next(texts), own_cpu_s=lambda: next(own),
                             sleep=lambda s: None)
    import os

    assert os.sysconf("SC_CLK_TCK") != 100 or got == pytest.approx(1.0)


def test_busy_cores_unreadable_or_still_is_none():
    def broken() -> str:
        raise OSError("no /proc")

    assert threads.busy_cores({0}, 0.0, read_stat=broken, sleep=lambda s: None) is None
    same = _stat({0: (1, 1)})
    assert threads.busy_cores({0}, 0.0, read_stat=lambda: same, sleep=lambda s: None) is None


def test_busy_cores_of_this_machine_is_a_number_of_cores():
    cpus = threads.affinity() or {0}
    got = threads.busy_cores(cpus, 0.05)
    assert got is None or 0.0 <= got <= len(cpus) + 0.5


def test_usable_cores_affinity_and_quota():
    assert threads.usable_cores({0, 1, 2, 3}, quota=None) in (4, threads.usable_cores({0, 1, 2, 3}))
    assert threads.usable_cores({0, 1, 2, 3}, quota=1.5) == 2
    assert threads.usable_cores({0, 1, 2, 3}, quota=0.2) == 1
    assert threads.usable_cores({0, 1}, quota=8.0) == 2
    assert 1 <= threads.usable_cores() <= (len(threads.affinity() or []) or 10**6)


def test_cpu_quota_reads_cgroup_v2():
    files = {"/proc/self/cgroup": "0::/user.slice/job\n", "/sys/fs/cgroup/user.slice/job/cpu.max": "150000 100000\n"}

    def read(path: str) -> str:
        if path in files:
            return files[path]
        raise OSError(path)

    assert threads.cpu_quota(read) == 1.5
    files["/sys/fs/cgroup/user.slice/job/cpu.max"] = "max 100000\n"
    assert threads.cpu_quota(read) is None
    assert threads.cpu_quota(lambda p: (_ for _ in ()).throw(OSError(p))) is None


def test_threads_rule():
    assert checks.threads(None) is None and checks.threads("auto") == "auto" and checks.threads(3) == 3
    for bad in (0, -1, "x", 1.5, True, "AUTO"):
        with pytest.raises(OptionError, match="is not an integer >= 1 or 'auto'"):
            checks.threads(bad, "threads")


# --- the wait policy ---------------------------------------------------------------------------------------------
def test_policy_default_is_passive_and_set():
    env: dict[str, str] = {}
    p = threads.decide_wait_policy(env, (), {})
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert (p.value, p.source, p.in_effect, p.note) == ("PASSIVE", "semif", True, None)


def test_policy_user_environment_wins():
    env = {"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "1000"}
    p = threads.decide_wait_policy(env, (), env)
    assert env["OMP_WAIT_POLICY"] == "active" and (p.value, p.source, p.in_effect) == ("active", "environment", True)
    assert p.block()["GOMP_SPINCOUNT"] == "1000"
    # set at the process's start: in effect even though a runtime was loaded since
    p = threads.decide_wait_policy(env, ("libgomp.so.1",), {"OMP_WAIT_POLICY": "active"})
    assert p.in_effect is True
    # set in the process after a runtime loaded: cannot be told
    p = threads.decide_wait_policy(env, ("libgomp.so.1",), {})
    assert p.in_effect is None and "cannot be told" in (p.note or "")


def test_policy_semif_switch():
    env = {"SEMIF_WAIT_POLICY": "library"}
    p = threads.decide_wait_policy(env, (), {})
    assert "OMP_WAIT_POLICY" not in env and (p.value, p.source) == (None, "library")
    env = {"SEMIF_WAIT_POLICY": "Active"}
    assert threads.decide_wait_policy(env, (), {}).value == "ACTIVE" and env["OMP_WAIT_POLICY"] == "ACTIVE"
    with pytest.raises(OptionError, match="SEMIF_WAIT_POLICY: 'sometimes' is not one of passive, active, library"):
        threads.decide_wait_policy({"SEMIF_WAIT_POLICY": "sometimes"}, (), {})


def test_policy_too_late_is_recorded_not_claimed():
    env: dict[str, str] = {}
    p = threads.decide_wait_policy(env, ("libgomp-a34b3233.so.1",), {})
    assert p.in_effect is False and p.block()["runtimes_loaded_before"] == ["libgomp-a34b3233.so.1"]
    assert "was loaded before SemIf could set OMP_WAIT_POLICY" in p.block()["note"]


def test_openmp_runtimes_from_maps():
    maps = textwrap.dedent("""\
        7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0
        7f0000002000-7f0000003000 r-xp 00000000 08:01 2 /venv/torch/lib/libgomp-a34b3233.so.1
        7f0000004000-7f0000005000 r-xp 00000000 08:01 3 /venv/numpy.libs/libopenblas.so
        7f0000006000-7f0000007000 rw-p 00000000 00:00 0
        7f0000008000-7f0000009000 r-xp 00000000 08:01 4 /opt/intel/libiomp5.so
    """)
    assert threads.openmp_runtimes(maps) == ("libgomp-a34b3233.so.1", "libgomp.so.1.0.0", "libiomp5.so")
    assert threads.openmp_runtimes("") == ()


def test_initial_environment_parses_proc_environ():
    assert threads.initial_environment(b"A=1\0OMP_WAIT_POLICY=PASSIVE\0B=x=y\0") == {
        "A": "1", "OMP_WAIT_POLICY": "PASSIVE", "B": "x=y"}


def test_engine_environment():
    env, block = threads.engine_environment({})
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"} and block["source"] == "semif" and block["in_effect"] is True
    env, block = threads.engine_environment({"OMP_WAIT_POLICY": "ACTIVE"})
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"} and block["source"] == "environment"
    env, block = threads.engine_environment({"SEMIF_WAIT_POLICY": "library"})
    assert env == {} and block["source"] == "library" and block["OMP_WAIT_POLICY"] is None


# --- in a fresh interpreter: the loaders set the policy before the libraries load ---------------------------------
_PROBE = """
import importlib.abc, importlib.machinery, json, os, sys
seen = {}
class Stop(Exception):
    pass
class Catch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in ("torch", "llama_cpp"):
            maps = open("/proc/self/maps").read()
            seen[name] = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"), "gomp_loaded": "libgomp" in maps}
            raise Stop(name)
        return None
sys.meta_path.insert(0, Catch())
from scorer.backends import BackendConfig, registry
from scorer.core import threads
try:
    registry.REGISTRY[sys.argv[1]].load(BackendConfig(model="smollm2-135m", backend=sys.argv[1], threads="auto"))
except Stop:
    pass
print(json.dumps({"seen": seen, "policy": threads.applied_wait_policy().block()}))
"""


@pytest.mark.parametrize("backend", ["torch", "llamacpp"])
@pytest.mark.parametrize(("env", "want", "source"), [({}, "PASSIVE", "semif"),
                                                      ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE", "environment")])
def test_the_loader_sets_the_policy_before_the_library_is_imported(backend, env, want, source, tmp_path):
    """A fake import of torch / llama_cpp (a finder that stops there) sees OMP_WAIT_POLICY already set."""
    import os

    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "SEMIF_WAIT_POLICY",
                                                               "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", _PROBE, backend], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env={**base, "PYTHONPATH": str(ROOT), **env})
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    lib = "torch" if backend == "torch" else "llama_cpp"
    assert doc["seen"][lib] == {"OMP_WAIT_POLICY": want, "gomp_loaded": False}
    assert doc["policy"]["source"] == source and doc["policy"]["in_effect"] is True
    assert doc["policy"]["OMP_WAIT_POLICY"] == want
