"""Two writers, one output: exactly one succeeds, the other is refused at once (before its model loads) and
changes nothing; a ``--resume`` of a run that is still writing is refused. Real processes (the fake backend,
slowed down) for the races; the lock itself in process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.core.io import RecordsOutput
from scorer.formats.records import read_records

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "data" / "eval" / "boundary.jsonl"
_VOLATILE = ("timing", "run", "cache_hit")


def _stable(recs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in _VOLATILE} for r in recs]


def _spawn(out: Path, *extra: str, delay: float = 0.01, ready: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SEMIF_FAKE_DELAY": str(delay)}
    if ready is not None:
        env["SEMIF_FAKE_READY"] = str(ready)
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_semif.py"), "score", "--input", str(ROWS),
                             "--output", str(out), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    import unittest.mock

    with unittest.mock.patch.object(cli, "load_backend", lambda cfg: FakeBackend()):
        assert cli.main(["score", "--input", str(ROWS), "--output", str(out)]) == 0
    return _stable(read_records(out))


def test_two_writers_started_together_exactly_one_wins(tmp_path, reference):
    for round_ in range(3):
        out = tmp_path / f"o{round_}.jsonl"
        procs = [_spawn(out), _spawn(out)]
        results = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        loser = next(err for code, err in results if code == 2)
        assert ("refusing to overwrite" in loser or "being written by another semif run" in loser), loser
        assert "Traceback" not in loser
        assert _stable(read_records(out)) == reference  # one run's records, once each, in order


def test_a_second_writer_and_a_resume_during_a_live_run_are_refused(tmp_path, reference):
    out = tmp_path / "o.jsonl"
    ready = tmp_path / "ready"
    live = _spawn(out, delay=0.4, ready=ready)  # 24 rows: about 10 s
    t0 = time.monotonic()
    while not ready.exists() and time.monotonic() - t0 < 120:
        time.sleep(0.01)
    assert ready.exists() and live.poll() is None
    cases = (((), "refusing to overwrite"), (("--resume",), "being written by another semif run"))
    others = [(_spawn(out, *extra, ready=tmp_path / "never"), words) for extra, words in cases]
    for other, words in others:
        code = other.wait(timeout=300)
        err = other.communicate()[1]
        assert code == 2 and words in err and "Traceback" not in err, err
    assert not (tmp_path / "never").exists()  # both refused before their model loaded
    assert live.poll() is None, "the live run ended before the refused runs were tried (make it slower)"
    assert live.wait(timeout=300) == 0, live.communicate()[1]
    assert _stable(read_records(out)) == reference


def test_resume_while_the_lock_is_held_changes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model loaded"))
    out = tmp_path / "o.jsonl"
    out.write_bytes(b'{"schema":"semif-record-v2","id":"torn')
    with RecordsOutput.resume(out):  # another run holds the output
        assert cli.main(["score", "--input", str(ROWS), "--output", str(out), "--resume"]) == 2
        assert "being written by another semif run" in capsys.readouterr().err
    assert out.read_bytes() == b'{"schema":"semif-record-v2","id":"torn'
