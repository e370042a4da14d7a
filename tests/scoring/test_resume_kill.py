"""Kill and resume: a run stopped anywhere (SIGKILL at random points, a torn last line) and resumed ends with
exactly the records of an uninterrupted run; a resume with another configuration is refused and leaves the
file byte-identical.

Most cases use the fake backend (deterministic logits, so records compare exactly apart from timing); the
last test does it once with the real smollm2-135m.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import orjson
import pytest
from fakes import FakeBackend
from hypothesis import given, settings
from hypothesis import strategies as st

from scorer import cli
from scorer.formats.records import dumps_record, read_records
from scorer.scoring.file_run import RECORD_LINE_PREFIX

ROOT = Path(__file__).resolve().parents[2]
MODES = ("direct", "serial", "shared")
_VOLATILE = ("timing", "run", "cache_hit", "cache")  # cache: what the process's earlier rows left cached
_SETTINGS = {"deadline": None, "database": None}
CUT_EXAMPLES = 40
"""Generated cut points per mode for the torn-file properties (each a resume run of the fake backend)."""


def _stable(recs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in _VOLATILE} for r in recs]


def _main(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with mock.patch.object(cli, "load_backend", lambda cfg: FakeBackend()), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, err.getvalue()


def _score(out: Path, mode: str, *extra: str, rows: Path | None = None) -> tuple[int, str]:
    return _main("score", "--input", str(rows or ROWS), "--output", str(out), "--mode", mode,
                 "--max-batch-tokens", "300", *extra)


def _rows() -> bytes:
    """20 rows: 4 short states x 5 criteria, 2-4 options (so shared mode has several groups)."""
    out = []
    for s in range(4):
        state = {"ticket": f"T-{s}", "note": f"customer {s} writes\u2028about order {100 + s}", "items": [s, s + 1]}
        for c in range(5):
            opts = [{"id": o, "description": f"the answer is {o}"} for o in ("yes", "no", "unsure", "n/a")[:2 + c % 3]]
            out.append(orjson.dumps({"id": f"s{s}-c{c}", "state": state, "question": f"Is criterion {c} met?",
                                     "options": opts, "label": "yes"}) + b"\n")
    return b"".join(out)


ROWS = Path("rows.jsonl")
"""The input of every run here; written to a temporary folder by :func:`full_runs`."""


@pytest.fixture(scope="module")
def full_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One uninterrupted run per mode: the reference every resumed run must equal."""
    global ROWS
    tmp = tmp_path_factory.mktemp("full")
    ROWS = tmp / "rows.jsonl"
    ROWS.write_bytes(_rows())
    runs = {}
    for mode in MODES:
        runs[mode] = tmp / f"{mode}.jsonl"
        assert _score(runs[mode], mode)[0] == 0
    return runs


def test_record_lines_start_with_the_prefix_resume_checks(full_runs):
    """A torn tail is recognised by this prefix: every record line must start with it."""
    for path in full_runs.values():
        for line in path.read_bytes().splitlines():
            assert line.startswith(RECORD_LINE_PREFIX)
    assert dumps_record({"schema": "semif-record-v2", "id": "x"}).startswith(RECORD_LINE_PREFIX)


# --- torn files, cut anywhere (in process) -------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_resume_from_any_cut_point_equals_the_uninterrupted_run(full_runs, mode):
    data = full_runs[mode].read_bytes()
    want = _stable(read_records(full_runs[mode]))

    @settings(max_examples=CUT_EXAMPLES, **_SETTINGS)
    @given(cut=st.integers(0, len(data)))
    def check(cut: int) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            part = Path(tmp) / "part.jsonl"
            part.write_bytes(data[:cut])
            code, err = _score(part, mode, "--resume")
            assert code == 0, err
            got = read_records(part)
            assert _stable(got) == want
            assert got[-1]["run"]["resumed_from"] == data[:cut].count(b"\n") or cut == len(data)

    check()


CHANGED = {"mode": [], "max-batch-tokens": ["--max-batch-tokens", "64"], "permute": ["--permute", "2"],
           "temperature": ["--temperature", "2"], "input": []}


@pytest.mark.parametrize("change", sorted(CHANGED))
def test_a_refused_resume_leaves_the_file_byte_identical(full_runs, tmp_path, change):
    data = full_runs["shared"].read_bytes()
    first = data.index(b"\n") + 1
    rows = ROWS
    if change == "input":
        rows = tmp_path / "rows.jsonl"
        last = orjson.loads(ROWS.read_bytes().splitlines()[-1])
        rows.write_bytes(ROWS.read_bytes() + orjson.dumps({**last, "id": "one-more"}) + b"\n")  # another input
    mode = "direct" if change == "mode" else "shared"

    @settings(max_examples=CUT_EXAMPLES // 3, **_SETTINGS)
    @given(cut=st.integers(first, len(data)))
    def check(cut: int) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            part = Path(tmp) / "part.jsonl"
            part.write_bytes(data[:cut])
            code, err = _score(part, mode, *CHANGED[change], "--resume", rows=rows)
            assert code == 2, err
            assert "run.config_sha256" in err and "nothing was changed" in err and "Traceback" not in err
            assert part.read_bytes() == data[:cut]

    check()


# --- SIGKILL at random points (real processes) ---------------------------------------------------------------
def _spawn(out: Path, mode: str, *extra: str, delay: float = 0.03, ready: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SEMIF_FAKE_DELAY": str(delay)}
    if ready is not None:
        env["SEMIF_FAKE_READY"] = str(ready)
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_semif.py"), "score", "--input", str(ROWS),
                             "--output", str(out), "--mode", mode, "--max-batch-tokens", "300", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _kill_after(proc: subprocess.Popen, out: Path, lines: int, extra_s: float, ready: Path) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        have = out.read_bytes().count(b"\n") if out.exists() else 0
        if proc.poll() is not None:
            return
        if ready.exists() and have >= lines:
            time.sleep(extra_s)
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            return
        time.sleep(0.005)
    proc.kill()
    pytest.fail("the run never reached its kill point")


@pytest.mark.parametrize("mode", MODES)
def test_sigkill_at_random_points_then_resume_equals_uninterrupted(full_runs, tmp_path, mode):
    rng = random.Random(f"kill-{mode}")
    want = _stable(read_records(full_runs[mode]))
    full_lines = full_runs[mode].read_bytes().splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    kept: list[int] = []
    for attempt in range(3):  # kill, resume and kill again, resume and kill a third time
        ready = tmp_path / f"ready-{attempt}"
        proc = _spawn(out, mode, *(["--resume"] if attempt else []), ready=ready,
                      delay=0.1 if mode == "shared" else 0.03)
        target = (kept[-1] if kept else 0) + rng.randint(0, 7)
        _kill_after(proc, out, target, rng.uniform(0, 0.03), ready)
        data = out.read_bytes() if out.exists() else b""
        n = data.count(b"\n")
        kept.append(n)
        if rng.random() < 0.5 and n < len(full_lines):  # as if the kill landed inside a write
            torn = full_lines[n][: rng.randint(1, len(full_lines[n]) - 1)]
            out.write_bytes(data[: data.rfind(b"\n") + 1] + torn)
    code, err = _score(out, mode, "--resume")
    assert code == 0, err
    got = read_records(out)
    assert _stable(got) == want, kept
    assert all(a <= b for a, b in itertools.pairwise(kept)), kept  # nothing kept was ever lost
    assert any(0 < k < len(want) for k in kept), kept  # at least one kill landed mid-run


def test_a_run_killed_before_its_first_record_can_be_resumed(full_runs, tmp_path):
    out = tmp_path / "out.jsonl"
    ready = tmp_path / "ready"
    proc = _spawn(out, "shared", delay=5.0, ready=ready)  # the first group takes 5 s: kill before it
    t0 = time.monotonic()
    while not ready.exists() and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert out.exists() and out.read_bytes() == b""  # SIGKILL leaves the empty, unlocked file
    code, err = _score(out, "shared")
    assert code == 2 and "pass --resume" in err  # a plain rerun is refused, and says how to go on
    assert _score(out, "shared", "--resume")[0] == 0
    assert _stable(read_records(out)) == _stable(read_records(full_runs["shared"]))


# --- the real model --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_real_model_sigkill_then_resume_is_bit_identical(full_runs, tmp_path):
    """smollm2-135m (torch, fp32, one thread): a run killed mid-way and resumed gives the same choices,
    probabilities and logits, bit for bit, as an uninterrupted run."""
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b"".join(ROWS.read_bytes().splitlines(keepends=True)[:16]))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    common = [sys.executable, "-m", "scorer.cli", "score", "--model", "smollm2-135m", "--threads", "1",
              "--input", str(rows)]
    base = [*common, "--mode", "serial"]
    full = tmp_path / "full.jsonl"
    done = subprocess.run([*base, "--output", str(full)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    part = tmp_path / "part.jsonl"
    proc = subprocess.Popen([*base, "--output", str(part)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 600 and proc.poll() is None:
        if part.exists() and part.read_bytes().count(b"\n") >= 4:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.communicate(timeout=60)
    kept = part.read_bytes().count(b"\n")
    assert 4 <= kept < 16, f"the kill came too late ({kept} records)"
    with part.open("ab") as f:  # and a torn line, as if killed inside a write
        f.write(full.read_bytes().splitlines(keepends=True)[kept][:50])
    before = part.read_bytes()
    changed = subprocess.run([*common, "--mode", "direct", "--output", str(part), "--resume"], capture_output=True,
                             text=True, env=env, timeout=600)
    assert changed.returncode == 2 and "run.config_sha256" in changed.stderr, changed.stderr
    assert part.read_bytes() == before
    resumed = subprocess.run([*base, "--output", str(part), "--resume"], capture_output=True, text=True, env=env,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    a, b = read_records(full), read_records(part)
    assert [r["id"] for r in a] == [r["id"] for r in b]
    for x, y in zip(a, b, strict=True):
        assert (x["choice"], x["probabilities"], x["option_logits"]) == (y["choice"], y["probabilities"],
                                                                          y["option_logits"])
    assert b[-1]["run"]["resumed_from"] == kept and orjson.loads(part.read_bytes().splitlines()[0]) == \
        orjson.loads(before.splitlines()[0])
