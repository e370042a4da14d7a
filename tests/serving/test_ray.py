"""`semif score --engine ray`: unit logic with the fake backend (fast), Ray Data on smollm2-135m (slow)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend

from scorer import Scorer, __version__, cli
from scorer.core.errors import InputError, ValidationError
from scorer.core.io import RecordsOutput
from scorer.formats.records import dumps_record, read_records
from scorer.formats.rows import load_decisions
from scorer.models import store
from scorer.prompting.prompt import state_text
from scorer.scoring.file_run import resume_point, run_score
from scorer.scoring.options import ScoreConfig
from scorer.serving.ray_data import DIRECT_UNIT_ROWS, _write_in_order, work_units

ROOT = Path(__file__).resolve().parents[2]
ROWS_FILE = ROOT / "data" / "workloads" / "shape-small.jsonl"
PARTS = {"input_sha256": "0" * 64, "semif": __version__}


def _stable(rec: dict) -> dict:
    out = {k: v for k, v in rec.items() if k != "timing"}
    out["run"] = {k: v for k, v in rec["run"].items() if k != "started_unix"}
    return out


def test_units_keep_each_state_whole_and_cover_every_row_once():
    decisions = load_decisions(ROWS_FILE)
    for mode in ("serial", "shared"):
        units = work_units(decisions, mode)
        assert sorted(i for u in units for i in u) == list(range(len(decisions)))
        states = [{state_text(decisions[i].state) for i in u} for u in units]
        assert all(len(s) == 1 for s in states) and len({next(iter(s)) for s in states}) == len(units)
    units = work_units(decisions, "direct")
    assert [i for u in units for i in u] == list(range(len(decisions)))
    assert max(len(u) for u in units) <= DIRECT_UNIT_ROWS


def _unit_rows(decisions, mode, order=None, repeat=()):
    """What the Ray actors would hand back: one row of JSONL records per unit (optionally reordered and with
    units delivered twice, as a retried task may)."""
    units = work_units(decisions, mode)
    with Scorer(backend=FakeBackend(), slots="letters", mode=mode) as s:
        rows = [{"records": b"".join(dumps_record(r) for r in s.score_decisions([decisions[i] for i in u], PARTS,
                                                                                0, u))} for u in units]
    rows += [rows[k] for k in repeat]
    return [rows[k] for k in order] if order else rows


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_units_written_in_input_order_equal_the_local_engine(tmp_path, mode):
    decisions = load_decisions(ROWS_FILE)
    local = tmp_path / "local.jsonl"
    run_score(decisions, FakeBackend(), local, ScoreConfig(mode=mode, run_parts=PARTS))
    rows = _unit_rows(decisions, mode, repeat=(0,))
    n = len(rows)
    rows = [*rows[::-1], rows[0]]  # out of order, and a unit delivered twice
    out = tmp_path / "ray.jsonl"
    with RecordsOutput.create(out) as sink:
        point = resume_point(sink.read(), out, None, decisions)
        assert _write_in_order(iter(rows), decisions, sink, point, 0, None) == len(decisions)
    assert len(rows) == n + 1
    want, got = read_records(local), read_records(out)
    if mode == "serial":  # the LRU sees another sequence of states per actor: only its hit flags may differ
        want = [{**w, "cache_hit": None} for w in want]
        got = [{**g, "cache_hit": None} for g in got]
    assert [_stable(g) for g in got] == [_stable(w) for w in want]


def test_a_resumed_output_of_another_configuration_is_refused_before_writing(tmp_path):
    decisions = load_decisions(ROWS_FILE)
    out = tmp_path / "o.jsonl"
    run_score(decisions[:3], FakeBackend(), tmp_path / "other.jsonl",
              ScoreConfig(mode="shared", run_parts={**PARTS, "semif": "other"}))
    out.write_bytes((tmp_path / "other.jsonl").read_bytes())
    before = out.read_bytes()
    with RecordsOutput.resume(out) as sink:
        point = resume_point(sink.read(), out, None, decisions)
        with pytest.raises(InputError, match=r"run\.config_sha256"):
            _write_in_order(iter(_unit_rows(decisions, "shared")), decisions, sink, point, len(point.lines), None)
    assert out.read_bytes() == before


def test_one_prefix_from_two_units_fails_closed(tmp_path):
    decisions = load_decisions(ROWS_FILE)
    rows = _unit_rows(decisions, "shared")
    first = [orjson.loads(x) for x in rows[0]["records"].splitlines()]
    second = [orjson.loads(x) for x in rows[1]["records"].splitlines()]
    second[0]["prefix_sha256"] = first[0]["prefix_sha256"]
    rows[1] = {"records": b"".join(dumps_record(r) for r in second)}
    out = tmp_path / "o.jsonl"
    with RecordsOutput.create(out) as sink, pytest.raises(ValidationError, match="shared prefix"):
        _write_in_order(iter(rows), decisions, sink, resume_point(sink.read(), out, None, decisions), 0, None)


@pytest.mark.parametrize("flags", [["--permute", "2"], ["--temperature", "2"], ["--exact"]])
def test_unsupported_options_are_refused_before_anything(tmp_path, capsys, monkeypatch, flags):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded"))
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(ROWS_FILE), "--output", str(out), "--engine", "ray", *flags]) == 2
    assert "not supported with --engine ray" in capsys.readouterr().err and not out.exists()


# --- Ray Data on smollm2-135m (slow) ----------------------------------------------------------------------
SLOW_ROWS = 16


SLOW_STATES = 4


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory) -> Path:
    """16 rows over 4 states (so 4 units for 2 actors), interleaved so that input order differs from unit order."""
    base = [orjson.loads(x) for x in ROWS_FILE.read_bytes().splitlines()[: SLOW_ROWS // SLOW_STATES]]
    rows = [{**r, "id": f"{r['id']}-v{v}", "state": {**r["state"], "variant": v}}
            for r in base for v in range(SLOW_STATES)]
    p = tmp_path_factory.mktemp("ray") / "rows.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return p


@pytest.fixture(scope="module")
def local_records(slow_input, tmp_path_factory, smol_torch) -> list[dict]:
    out = tmp_path_factory.mktemp("local") / "local.jsonl"
    parts = {"input_sha256": store.sha256_file(slow_input), "semif": __version__}
    run_score(load_decisions(slow_input), smol_torch, out, ScoreConfig(mode="shared", run_parts=parts))
    return read_records(out)


@pytest.fixture(scope="module")
def ray_cluster():
    import ray  # the ray extra (scripts/install.sh installs it): missing means failing, never skipping

    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    yield ray
    ray.shutdown()


def _assert_equal_to_local(got: list[dict], want: list[dict]) -> None:
    assert [g["id"] for g in got] == [w["id"] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["prompt_sha256"] == w["prompt_sha256"] and g["tokens_sha256"] == w["tokens_sha256"]
        assert g["prefix_sha256"] == w["prefix_sha256"] and g["run"]["index"] == w["run"]["index"]
        assert g["choice"] == w["choice"] and g["run"]["config_sha256"] == w["run"]["config_sha256"]
        # Not the 1e-6 of identical passes (tests/scoring proves those): each actor's radix prefix cache holds what
        # its own rows left, and a prefix extended from a cached one sums in another order than a fresh prefill (up
        # to 2.9e-6 in p on smollm2 fp32, tests/scoring/test_radix_depths.py); and an actor process can take another
        # fp32 kernel path than the driver's for the whole run (every row moved at once: 2.2e-5 in one of four runs
        # on an AMX Xeon, 4.1e-5 in a CI run). 1e-4 still fails on any other prompt, option or readout.
        assert max(abs(a - b) for a, b in zip(g["probabilities"], w["probabilities"], strict=True)) <= 1e-4


def _threads() -> str:
    """The in-process reference's CPU threads: actors run as many (fp32 sums in another order differ ~1e-6)."""
    import torch

    return str(torch.get_num_threads())


def _ray_score(inp: Path, out: Path, *extra: str) -> int:
    return cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared", "--model",
                     "smollm2-135m", "--dtype", "float32", "--threads", _threads(), "--engine", "ray", *extra])


@pytest.mark.slow
def test_two_actors_equal_the_local_run_and_a_killed_actor_is_retried(tmp_path, slow_input, local_records,
                                                                      ray_cluster, monkeypatch):
    import psutil

    from scorer.serving import ray_data as ray_engine

    killed: list[int] = []
    real = ray_engine._write_in_order

    def kill_one_actor_after_the_first_unit(rows, *a, **k):
        def rows_then_kill():
            for n, row in enumerate(rows):
                if n == 0:
                    workers = [p for p in psutil.process_iter(["pid", "cmdline"])
                               if any("MapWorker" in c for c in (p.info["cmdline"] or []))]
                    assert workers, "no Ray Data actor process found"
                    os.kill(workers[0].info["pid"], signal.SIGKILL)
                    killed.append(workers[0].info["pid"])
                yield row
        return real(rows_then_kill(), *a, **k)

    monkeypatch.setattr(ray_engine, "_write_in_order", kill_one_actor_after_the_first_unit)
    out = tmp_path / "ray.jsonl"
    assert _ray_score(slow_input, out, "--actors", "2") == 0
    assert killed
    _assert_equal_to_local(read_records(out), local_records)


@pytest.mark.slow
def test_resume_after_the_driver_is_killed_equals_an_uninterrupted_run(tmp_path, slow_input, local_records):
    out = tmp_path / "ray.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "scorer.cli", "score", "--input", str(slow_input), "--output", str(out),
           "--mode", "shared", "--model", "smollm2-135m", "--dtype", "float32", "--threads", _threads(),
           "--engine", "ray"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 600
    while not (out.exists() and out.read_bytes().count(b"\n") >= 2):
        assert proc.poll() is None, "".join(err)
        assert time.monotonic() < deadline, "no records within the deadline"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143, "".join(err)
    kept = out.read_bytes().count(b"\n")
    assert 2 <= kept < SLOW_ROWS
    r = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert f"resuming: {kept} of {SLOW_ROWS}" in r.stderr
    got = read_records(out)
    _assert_equal_to_local(got, local_records)
    assert [g["run"]["resumed_from"] for g in got] == [0] * kept + [kept] * (SLOW_ROWS - kept)
