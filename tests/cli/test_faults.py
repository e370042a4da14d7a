"""Regression tests for the data-loss and crash paths of issue #15 (items 1, 3, 4, 8, 9, 10, 11), each at the
command line with the fake backend: every case ends in a one-line message and exit 2 (bad input, refused
output) or 1 (environment fault), never a traceback, and leaves existing files exactly as they were."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.formats.records import read_records
from scorer.formats.rows import load_decisions

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "data" / "workloads" / "shape-small.jsonl"
_VOLATILE = ("timing", "run", "cache_hit")


@pytest.fixture(autouse=True)
def _fake(monkeypatch):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())


def _no_load(monkeypatch):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model loaded before validation"))


def _stable(recs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in _VOLATILE} for r in recs]


def _score(out: Path, *extra: str, rows: Path = ROWS) -> int:
    return cli.main(["score", "--input", str(rows), "--output", str(out), *extra])


def _one_line_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("semif: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _row(i: int, **over) -> dict:
    row = {"id": f"r{i}", "state": "a state", "question": "yes or no?",
           "options": [{"id": "yes", "description": "yes"}, {"id": "no", "description": "no"}]}
    row.update(over)
    return row


def _write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


# --- item 1: a refused resume changes nothing -------------------------------------------------------------
def test_refused_resume_with_a_torn_tail_leaves_the_file_byte_identical(tmp_path, capsys):
    full = tmp_path / "full.jsonl"
    assert _score(full, "--mode", "direct") == 0
    data = full.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 40  # mid-record: a killed run's torn tail
    part = tmp_path / "part.jsonl"
    part.write_bytes(data[:cut])
    assert _score(part, "--mode", "serial", "--resume") == 2
    assert "run.config_sha256" in _one_line_error(capsys.readouterr().err)
    assert part.read_bytes() == data[:cut]


@pytest.mark.parametrize("content", [b"my notes\nthe last line has no newline", b"hello",
                                     b'{"a": 1}\n{"b": 2', b"\n\nplain"])
def test_resume_into_a_file_that_is_not_records_is_refused_untouched(tmp_path, capsys, content):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    assert _score(notes, "--resume") == 2
    _one_line_error(capsys.readouterr().err)
    assert notes.read_bytes() == content


def test_resume_accepts_an_empty_file(tmp_path):
    out = tmp_path / "o.jsonl"
    out.touch()  # what a run killed (SIGKILL) before its first record leaves behind
    assert _score(out, "--resume") == 0
    assert len(read_records(out)) == len(load_decisions(ROWS))


# --- item 3: every writer refuses before it writes ---------------------------------------------------------
def _records_file(tmp_path: Path) -> Path:
    run = tmp_path / "run.jsonl"
    assert _score(run, rows=ROOT / "data" / "eval" / "authored.jsonl") == 0
    return run


def test_calibrate_apply_onto_an_existing_file_writes_no_report(tmp_path, capsys):
    run = _records_file(tmp_path)
    applied = tmp_path / "applied.jsonl"
    applied.write_text("precious\n")
    report = tmp_path / "cal.json"
    assert cli.main(["calibrate", str(run), "--output", str(report), "--reps", "5", "--folds", "2",
                     "--apply", str(applied)]) == 2
    assert "refusing to overwrite" in _one_line_error(capsys.readouterr().err)
    assert not report.exists() and applied.read_text() == "precious\n"


def test_route_onto_an_existing_routed_output_writes_no_report(tmp_path, capsys):
    run = _records_file(tmp_path)
    routed = tmp_path / "routed.jsonl"
    routed.write_text("precious\n")
    report = tmp_path / "route.json"
    assert cli.main(["route", "--fast", str(run), "--reference", str(run), "--labels",
                     str(ROOT / "data" / "eval" / "authored.jsonl"), "--output", str(report), "--reps", "5",
                     "--apply", "0.1", "--routed-output", str(routed)]) == 2
    assert "refusing to overwrite" in _one_line_error(capsys.readouterr().err)
    assert not report.exists() and routed.read_text() == "precious\n"


def test_quant_refuses_an_existing_records_file_before_any_work(tmp_path, monkeypatch):
    from scorer.core.errors import OutputExistsError
    from scorer.models import store
    from scorer.studies import quant

    monkeypatch.setattr(store, "resolve", lambda *a, **k: pytest.fail("work started before the output check"))
    rdir = tmp_path / "records"
    rdir.mkdir()
    (rdir / "rung-Q8_0.jsonl").write_text("precious\n")
    cfg = quant.QuantConfig(model="smollm2-135m", input=ROWS, output=tmp_path / "q.json", rungs=("Q8_0",),
                            records_dir=rdir)
    with pytest.raises(OutputExistsError, match=r"rung-Q8_0\.jsonl exists"):
        quant.run_quant(cfg)
    assert (rdir / "rung-Q8_0.jsonl").read_text() == "precious\n"


def test_quant_records_are_written_create_only(tmp_path):
    from scorer.core.errors import OutputExistsError
    from scorer.studies import quant

    rdir = tmp_path / "records"
    cfg = quant.QuantConfig(model="m", input=ROWS, output=tmp_path / "q.json", records_dir=rdir)
    quant._write_records(cfg, "rung-F32", [{"id": "a"}])
    with pytest.raises(OutputExistsError):
        quant._write_records(cfg, "rung-F32", [{"id": "b"}])
    assert (rdir / "rung-F32.jsonl").read_bytes() == b'{"id":"a"}\n'
    forced = quant.QuantConfig(model="m", input=ROWS, output=tmp_path / "q.json", records_dir=rdir, overwrite=True)
    quant._write_records(forced, "rung-F32", [{"id": "b"}])
    assert (rdir / "rung-F32.jsonl").read_bytes() == b'{"id":"b"}\n'


# --- item 4: build.py --out through a symbolic link ---------------------------------------------------------
def test_build_follows_an_out_symlink_and_refuses_a_dangling_one(tmp_path, capsys):
    sys.path.insert(0, str(ROOT))
    import build

    real = tmp_path / "real-site"
    link = tmp_path / "site"
    link.symlink_to(real, target_is_directory=True)
    with pytest.raises(build.BuildError, match="does not exist"):
        build.write_site({"index.html": b"x"}, link)
    real.mkdir()
    build.write_site({"index.html": b"one", "stale.html": b"s", build.SITE_MARKER: b"m"}, link)
    build.write_site({"index.html": b"two", build.SITE_MARKER: b"m"}, link)
    assert link.is_symlink() and (real / "index.html").read_bytes() == b"two"
    assert not (real / "stale.html").exists()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    link.unlink()
    link.symlink_to(precious, target_is_directory=True)
    with pytest.raises(build.BuildError, match="not a previous site build"):
        build.write_site({"index.html": b"x"}, link)
    assert (precious / "notes.txt").read_text() == "keep me"


# --- item 8: deep JSON in a row ---------------------------------------------------------------------------
@pytest.mark.parametrize(("field", "value"), [("state", {"a": [[[[0]]]]}), ("meta", [1])])
def test_nesting_within_the_limit_is_accepted(tmp_path, field, value):
    from scorer.formats.rows import MAX_DEPTH

    deep: object = value
    for _ in range(MAX_DEPTH - 5 - (field == "state")):
        deep = [deep]
    rows = _write_rows(tmp_path / "rows.jsonl", [_row(1, **{field: deep})])
    assert _score(tmp_path / "o.jsonl", rows=rows) == 0


@pytest.mark.parametrize(("field", "depth"), [("state", 1000), ("state", 65), ("meta", 300), ("label", 65)])
def test_deep_json_is_an_input_error_before_the_model_loads(tmp_path, capsys, monkeypatch, field, depth):
    _no_load(monkeypatch)
    text = "[" * depth + "1" + "]" * depth
    line = orjson.dumps(_row(2, **{field: 0})).decode().replace(f'"{field}":0', f'"{field}":{text}')
    rows = tmp_path / "rows.jsonl"
    rows.write_text(orjson.dumps(_row(1)).decode() + "\n" + line + "\n")
    out = tmp_path / "o.jsonl"
    assert _score(out, rows=rows) == 2
    msg = _one_line_error(capsys.readouterr().err)
    assert f"{rows}:2: field '{field}': JSON nested {depth} levels deep" in msg
    assert not out.exists()


# --- item 9: environment faults and argument ranges -------------------------------------------------------
@pytest.mark.parametrize("args", [["--threads", "-1"], ["--threads", "0"], ["--max-batch-tokens", "0"],
                                  ["--max-batch-tokens", "-1"], ["--llama-threads", "x"]])
def test_thread_and_batch_counts_below_one_are_usage_errors(tmp_path, capsys, monkeypatch, args):
    _no_load(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        _score(tmp_path / "o.jsonl", *args)
    assert exc.value.code == 2
    assert "is not an integer >= 1" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_disk_full_mid_run_exits_1_and_leaves_a_resumable_prefix(tmp_path, capsys, monkeypatch):
    from scorer.core import io as sio

    full = tmp_path / "full.jsonl"
    assert _score(full, "--mode", "shared") == 0
    real_write = os.write
    calls = {"n": 0}
    out = tmp_path / "o.jsonl"

    def full_disk(fd: int, data) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") != str(out):
            return real_write(fd, data)
        calls["n"] += 1
        if calls["n"] == 12:  # half a record goes out, then the disk is full
            return real_write(fd, bytes(data[: len(data) // 2]))
        if calls["n"] > 12:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(sio.os, "write", full_disk)
    assert _score(out, "--mode", "shared") == 1
    msg = _one_line_error(capsys.readouterr().err)
    assert f"No space left on device: {out}; 11 of 42 records kept in {out}" in msg
    assert len(read_records(out)) == 11 and out.read_bytes().endswith(b"\n")  # cut back: no torn tail
    monkeypatch.setattr(sio.os, "write", real_write)
    assert _score(out, "--mode", "shared", "--resume") == 0
    assert _stable(read_records(out)) == _stable(read_records(full))


def test_dev_full_is_an_environment_fault(capsys):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    assert _score(Path("/dev/full"), "--resume") == 1
    msg = _one_line_error(capsys.readouterr().err)
    assert "No space left on device" in msg and "/dev/full" in msg


def test_parent_path_is_a_file(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" / "o.jsonl"
    assert _score(out) == 1
    msg = _one_line_error(capsys.readouterr().err)
    assert "Not a directory" in msg and str(tmp_path / "afile") in msg


@pytest.mark.parametrize("resume", [[], ["--resume"]])
def test_output_is_a_directory(tmp_path, capsys, resume):
    out = tmp_path / "adir"
    out.mkdir()
    assert _score(out, *resume) == 2
    assert f"{out} is a directory" in _one_line_error(capsys.readouterr().err)
    assert out.is_dir() and not any(out.iterdir())


def test_read_only_output_folder(tmp_path, capsys, monkeypatch):
    """A folder the user may not write to: one line, exit 1. As root the permission bits do not apply,
    so the refusal is simulated where the kernel would give it (the open of the new file)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.geteuid() == 0:
        from scorer.core import io as sio

        real_open = os.open

        def denied(path, flags, *a):
            if Path(path).parent == ro:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_open(path, flags, *a)

        monkeypatch.setattr(sio.os, "open", denied)
    try:
        assert _score(ro / "o.jsonl") == 1
        msg = _one_line_error(capsys.readouterr().err)
        assert "Permission denied" in msg and str(ro / "o.jsonl") in msg
        assert not (ro / "o.jsonl").exists()
    finally:
        ro.chmod(0o755)


def test_a_directory_in_place_of_the_cached_gguf_is_refused(tmp_path, capsys, monkeypatch):
    """A refused model file is exit 2 (the CLI's contract), with one line that says what to do."""
    from scorer import backends
    from scorer.models import store

    monkeypatch.setattr(cli, "load_backend", backends.load_backend)  # the real loader, up to the cache
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "cache"))
    entry = store.get_entry("smollm2-135m")
    store.gguf_path(entry).mkdir(parents=True)
    out = tmp_path / "o.jsonl"
    assert _score(out, "--model", "smollm2-135m") == 2
    msg = _one_line_error(capsys.readouterr().err)
    assert "is not a regular file" in msg and entry.filename in msg and "semif models fetch" in msg
    assert not out.exists()


# --- item 10: JSONL lines, UTF-8 and long values ----------------------------------------------------------
@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_line_separators_inside_strings_are_valid_json(tmp_path, char):
    """``str.splitlines`` splits on these; JSON allows them raw in strings (other separators it splits on
    are control characters, which JSON itself requires escaped)."""
    rows = tmp_path / "rows.jsonl"
    state = f"before{char}after"
    line = orjson.dumps(_row(1, state=state, note=f"x{char}y"))
    assert char.encode() in line  # written raw, not escaped
    rows.write_bytes(line + b"\n" + orjson.dumps(_row(2)) + b"\n")
    got = load_decisions(rows)
    assert [d.id for d in got] == ["r1", "r2"]
    assert got[0].state == state and got[0].extra["note"] == f"x{char}y"


def test_invalid_utf8_is_reported_by_line_and_byte(tmp_path, capsys, monkeypatch):
    _no_load(monkeypatch)
    rows = tmp_path / "rows.jsonl"
    bad = orjson.dumps(_row(3, question="caf\u00e9?"))
    bad = bad.replace("é".encode(), b"\xe9")  # latin-1 byte: not UTF-8
    rows.write_bytes(orjson.dumps(_row(1)) + b"\n" + orjson.dumps(_row(2)) + b"\n" + bad + b"\n")
    assert _score(tmp_path / "o.jsonl", rows=rows) == 2
    msg = _one_line_error(capsys.readouterr().err)
    col = bad.index(b"\xe9") + 1
    assert f"{rows}:3: not UTF-8 (invalid continuation byte at byte {col} of the line" in msg


@pytest.mark.parametrize("field", ["id", "question", "options"])
def test_a_huge_bad_value_is_not_echoed_in_full(tmp_path, capsys, monkeypatch, field):
    _no_load(monkeypatch)
    huge = {"id": [0] * 300_000, "question": ["q" * 2_000_000], "options": "o" * 2_000_000}[field]
    rows = _write_rows(tmp_path / "rows.jsonl", [_row(1, **{field: huge})])
    assert _score(tmp_path / "o.jsonl", rows=rows) == 2
    err = capsys.readouterr().err
    msg = _one_line_error(err)
    assert len(err) < 600 and f"{rows}:1: field '{field}'" in msg
    if field != "options":
        assert "…(" in msg and "bytes)" in msg


def test_unknown_option_keys_are_cut_too(tmp_path, capsys, monkeypatch):
    _no_load(monkeypatch)
    opts = [{"id": "a", "description": "a", "k" * 100_000: 1}, {"id": "b", "description": "b"}]
    rows = _write_rows(tmp_path / "rows.jsonl", [_row(1, options=opts)])
    assert _score(tmp_path / "o.jsonl", rows=rows) == 2
    err = capsys.readouterr().err
    assert len(err) < 600 and "field 'options[0]': unknown keys" in _one_line_error(err)


# --- item 11: signals --------------------------------------------------------------------------------------
def test_sigint_before_the_first_shared_group_leaves_no_file(tmp_path, capsys, monkeypatch):
    class StopAtPrefill(FakeBackend):
        def prefill(self, ids):
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_backend", lambda cfg: StopAtPrefill())
    out = tmp_path / "o.jsonl"
    assert _score(out, "--mode", "shared") == 130
    msg = _one_line_error(capsys.readouterr().err)
    assert "interrupted" in msg and "no record was written" in msg
    assert not out.exists()
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert _score(out, "--mode", "shared") == 0  # a plain rerun is not blocked


def test_sigint_keeps_a_resumed_file_that_existed(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    out.touch()

    class Stop(FakeBackend):
        def score_fresh(self, ids, want=None):
            raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_backend", lambda cfg: Stop())
    assert _score(out, "--resume") == 130
    assert out.exists() and out.read_bytes() == b""  # not this run's file to remove


def _fake_semif(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_semif.py"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    import time

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended before writing {n} records: {proc.communicate()}")
        time.sleep(0.01)
    pytest.fail(f"no {n} records after {timeout} s")


def test_sigterm_is_handled_like_sigint_exit_143(tmp_path):
    import signal

    full = tmp_path / "full.jsonl"
    assert _score(full) == 0
    out = tmp_path / "o.jsonl"
    proc = _fake_semif("score", "--input", str(ROWS), "--output", str(out), env={"SEMIF_FAKE_DELAY": "0.05"})
    _wait_for_lines(out, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    msg = _one_line_error(err)
    kept = len(read_records(out))
    assert f"terminated (SIGTERM); {kept} of 42 records kept in {out} (rerun with --resume" in msg
    assert out.read_bytes().endswith(b"\n")
    assert _score(out, "--resume") == 0
    assert _stable(read_records(out)) == _stable(read_records(full))


def test_no_traceback_end_to_end(tmp_path):
    """The real entry point, in its own process: bad input, a refused output and a usage error."""
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"id": "x", "state": ' + b"[" * 2000 + b"]" * 2000 + b"}\n")
    exists = tmp_path / "exists.jsonl"
    exists.write_text("x")
    for args, code in ([["--input", str(rows), "--output", str(tmp_path / "a.jsonl")], 2],
                       [["--input", str(ROWS), "--output", str(exists)], 2],
                       [["--input", str(ROWS), "--output", str(exists), "--resume"], 2],
                       [["--input", str(ROWS), "--output", str(tmp_path / "b.jsonl"), "--threads", "0"], 2]):
        p = subprocess.run([sys.executable, "-m", "scorer.cli", "score", *args], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert p.returncode == code, p.stderr
        assert "Traceback" not in p.stderr, p.stderr
        assert "error: " in p.stderr.strip().splitlines()[-1], p.stderr  # argparse prints its usage first
    assert exists.read_text() == "x"
