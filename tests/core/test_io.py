"""scorer/core/io.py: create-only outputs, the exclusive lock, atomic reports and side-effect-free resume points."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from scorer.core import io as sio
from scorer.core.errors import InputError, OutputError, OutputExistsError, OutputLockedError, brief

PREFIX = b'{"schema":"semif-record-v2"'


# --- RecordsOutput -------------------------------------------------------------------------------------------
def test_create_is_exclusive_and_locks(tmp_path):
    out = tmp_path / "sub" / "o.jsonl"
    with sio.RecordsOutput.create(out) as sink:
        assert out.exists() and sink.created
        with pytest.raises(OutputExistsError, match="refusing to overwrite"):
            sio.RecordsOutput.create(out)
        with pytest.raises(OutputLockedError, match="being written by another semif run"):
            sio.RecordsOutput.resume(out)
        sink.write_line(b"one\n")
    with sio.RecordsOutput.resume(out) as again:  # the lock went with the first writer
        assert not again.created and again.read() == b"one\n"


def test_an_unsuccessful_run_removes_only_the_empty_file_it_created(tmp_path):
    out = tmp_path / "o.jsonl"
    with pytest.raises(RuntimeError), sio.RecordsOutput.create(out):
        raise RuntimeError
    assert not out.exists()
    with pytest.raises(RuntimeError), sio.RecordsOutput.create(out) as sink:
        sink.write_line(b"kept\n")
        raise RuntimeError
    assert out.read_bytes() == b"kept\n"
    empty = tmp_path / "e.jsonl"
    empty.touch()
    with pytest.raises(RuntimeError), sio.RecordsOutput.resume(empty):
        raise RuntimeError
    assert empty.exists()  # not this run's file


def test_a_replaced_file_is_not_removed(tmp_path):
    out = tmp_path / "o.jsonl"
    sink = sio.RecordsOutput.create(out)
    out.unlink()
    out.write_bytes(b"someone else's\n")
    sink.close(ok=False)
    assert out.read_bytes() == b"someone else's\n"


def test_a_file_replaced_while_opening_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    out.write_bytes(b"")
    real_flock = sio.fcntl.flock

    def swap_then_lock(fd, op):
        os.replace(tmp_path / "other", out)  # another process renamed a new file over the path
        return real_flock(fd, op)

    (tmp_path / "other").write_bytes(b"")
    monkeypatch.setattr(sio.fcntl, "flock", swap_then_lock)
    with pytest.raises(OutputLockedError, match="removed or replaced"):
        sio.RecordsOutput.resume(out)


def test_a_file_system_without_locks_is_an_environment_fault(tmp_path, monkeypatch):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(sio.fcntl, "flock", no_locks)
    out = tmp_path / "o.jsonl"
    with pytest.raises(OSError) as exc:
        sio.RecordsOutput.create(out)
    assert exc.value.errno == errno.ENOLCK and exc.value.filename == str(out)
    assert "taking the output's lock" in sio.os_error_text(exc.value)
    assert not out.exists()  # the empty file it had just created is gone again


def test_accept_cuts_a_torn_tail_only_when_writing(tmp_path):
    out = tmp_path / "o.jsonl"
    data = PREFIX + b',"id":"a"}\n' + PREFIX[:10]
    out.write_bytes(data)
    with sio.RecordsOutput.resume(out) as sink:
        point = sio.read_resume(sink.read(), out, PREFIX)
        sink.accept(point)
        assert out.read_bytes() == data and sink.records == 1  # accepted, nothing changed yet
        sink.write_line(b"next\n")
    assert out.read_bytes() == PREFIX + b',"id":"a"}\nnext\n'
    out.write_bytes(data)
    with sio.RecordsOutput.resume(out) as sink:  # a run that ends well with nothing to add cuts it too
        sink.accept(sio.read_resume(sink.read(), out, PREFIX))
    assert out.read_bytes() == PREFIX + b',"id":"a"}\n'
    out.write_bytes(data)
    with pytest.raises(RuntimeError), sio.RecordsOutput.resume(out) as sink:
        sink.accept(sio.read_resume(sink.read(), out, PREFIX))
        raise RuntimeError  # a run that fails before its first record leaves the file as it was
    assert out.read_bytes() == data


def test_a_failed_write_is_cut_back_to_the_last_complete_line(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    with sio.RecordsOutput.create(out) as sink:
        sink.write_line(b"first\n")
        real = os.write

        def half_then_full(fd, data):
            if len(data) > 3:
                return real(fd, bytes(data[:3]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(sio.os, "write", half_then_full)
        with pytest.raises(OSError) as exc:
            sink.write_line(b"second\n")
        monkeypatch.setattr(sio.os, "write", real)
        assert exc.value.filename == str(out)
        assert out.read_bytes() == b"first\n" and sink.records == 1
        assert sink.kept_note(5) == f"1 of 5 records kept in {out} (rerun with --resume to continue)"


def test_parent_that_is_a_file_names_the_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError) as exc:
        sio.RecordsOutput.create(tmp_path / "f" / "a" / "o.jsonl")
    assert exc.value.filename == str(tmp_path / "f")
    assert sio.os_error_text(exc.value).startswith("Not a directory")


def test_a_directory_is_never_an_output(tmp_path):
    for opener in (sio.RecordsOutput.create, sio.RecordsOutput.resume):
        with pytest.raises(OutputError, match="is a directory"):
            opener(tmp_path)
    with pytest.raises(OutputError, match="is a directory"):
        sio.write_atomic(tmp_path, b"x", overwrite=True)


# --- read_resume ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("data", "lines", "torn"), [
    (b"", 0, b""), (PREFIX + b"}\n", 1, b""), (PREFIX + b"}\n" + PREFIX[:5], 1, PREFIX[:5]),
    (PREFIX + b"}\n" + PREFIX + b',"id":', 1, PREFIX + b',"id":'), (b"{", 0, b"{"),
])
def test_read_resume_splits_complete_lines_from_a_torn_tail(data, lines, torn):
    point = sio.read_resume(data, "o.jsonl", PREFIX)
    assert len(point.lines) == lines and point.torn == torn and point.complete_bytes == len(data) - len(torn)


@pytest.mark.parametrize("data", [b"notes", PREFIX + b"}\nnotes", b'{"schema":"other"'])
def test_read_resume_refuses_a_tail_that_is_not_a_record(data):
    with pytest.raises(OutputError, match="not the start of a record"):
        sio.read_resume(data, "o.jsonl", PREFIX)


def test_only_newline_ends_a_resume_line():
    data = PREFIX + ',"x":"a\u2028b\x85c"}\n'.encode()
    assert sio.read_resume(data, "o", PREFIX).lines == [data[:-1]]


# --- write_atomic --------------------------------------------------------------------------------------------
def test_write_atomic_is_create_only_unless_overwrite(tmp_path):
    out = tmp_path / "r.json"
    sio.write_atomic(out, b"one")
    with pytest.raises(OutputExistsError, match="pass --force"):
        sio.write_atomic(out, b"two", hint="pass --force")
    assert out.read_bytes() == b"one"
    sio.write_atomic(out, b"two", overwrite=True)
    assert out.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary file left


def test_write_atomic_never_clobbers_a_file_that_appears_meanwhile(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    real_link = os.link

    def racing_link(src, dst):
        Path(dst).write_bytes(b"the other writer")
        return real_link(src, dst)

    monkeypatch.setattr(sio.os, "link", racing_link)
    with pytest.raises(OutputExistsError):
        sio.write_atomic(out, b"mine")
    assert out.read_bytes() == b"the other writer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_write_atomic_without_hard_links(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(sio.os, "link", no_links)
    out = tmp_path / "r.json"
    sio.write_atomic(out, b"one")
    assert out.read_bytes() == b"one"
    with pytest.raises(OutputExistsError):
        sio.write_atomic(out, b"two")
    assert out.read_bytes() == b"one"


def test_write_atomic_keeps_the_umask_permissions(tmp_path):
    out = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        sio.write_atomic(out, b"x")
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644


def test_a_failed_report_write_leaves_nothing(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sio.os, "fsync", full)
    with pytest.raises(OSError):
        sio.write_atomic(tmp_path / "r.json", b"x")
    assert list(tmp_path.iterdir()) == []


def test_threads_racing_for_one_report_exactly_one_wins(tmp_path):
    out = tmp_path / "r.json"
    results: list[str] = []

    def write(i: int) -> None:
        try:
            sio.write_atomic(out, f"writer {i}".encode())
            results.append("ok")
        except OutputExistsError:
            results.append("refused")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["ok"] + ["refused"] * 7
    assert out.read_bytes().startswith(b"writer ")


# --- messages ------------------------------------------------------------------------------------------------
def test_brief_cuts_long_values_and_names_their_size():
    assert brief("short") == "'short'"
    cut = brief("é" * 1000)
    assert cut.startswith("'éé") and cut.endswith("…(2000 bytes)") and len(cut) < 100


def test_input_error_caps_a_long_problem():
    msg = str(InputError("f.jsonl", 3, "x", "y" * 100_000, "z"))
    assert msg.startswith("f.jsonl:3: field 'x': yyy") and msg.endswith("…(100000 bytes) (expected z)")
    assert len(msg) < 500


def test_os_error_text_names_the_paths():
    assert sio.os_error_text(OSError(errno.ENOSPC, "No space left on device", "/o")) == \
        "No space left on device: /o"
    assert sio.os_error_text(OSError(errno.EXDEV, "Invalid cross-device link", "/a", None, "/b")) == \
        "Invalid cross-device link: /a -> /b"
