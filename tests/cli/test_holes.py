"""Regression tests for issue #21 items 6, 7, 9, 11 and 12 (item 10, the service's timeouts, is in
test_serve_timeouts.py), each of which failed on the code before its fix: an unusable ``build.py --out``,
the kept-records count of a resume interrupted during its model load, the exit status of a directory in
place of a GGUF, the API's option checks (one rule with the command line's) and non-JSON values in rows
given to the API (one rule with the JSONL input's)."""

from __future__ import annotations

import datetime
import errno
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend

from scorer import Scorer, cli
from scorer.core.checks import OptionError
from scorer.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "data" / "workloads" / "shape-small.jsonl"


def _rows() -> list[dict]:
    return [orjson.loads(line) for line in ROWS.read_bytes().splitlines()]


@pytest.fixture(autouse=True)
def _fake_cli(monkeypatch):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())


def _one_line(err: str, prefix: str = "semif: error:") -> str:
    assert "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.startswith(prefix)]
    assert len(lines) == 1, err
    return lines[0]


# --- item 6: an unusable build.py --out ---------------------------------------------------------------------------
@pytest.fixture
def site_data(tmp_path: Path) -> Path:
    from site_helpers import make_data_dir

    return make_data_dir(tmp_path / "in")


def _build(data: Path, out: Path) -> int:
    from site_helpers import build

    return build.main(["--data", str(data), "--out", str(out)])


def test_build_out_under_a_file_is_one_line_and_exit_1(site_data, tmp_path, capsys):
    """A file where a folder of --out should be is an environment fault (docs: exit codes), not a traceback."""
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    for out in (afile / "sub", afile / "sub" / "deeper"):
        assert _build(site_data, out) == 1
        msg = _one_line(capsys.readouterr().err, "build.py: error:")
        assert msg == f"build.py: error: Not a directory (a file is in the way of the output's folder): {afile}"
    assert afile.read_text() == "keep me"


def test_build_out_that_is_a_file_is_refused_exit_2(site_data, tmp_path, capsys):
    out = tmp_path / "site.html"
    out.write_text("keep me")
    assert _build(site_data, out) == 2
    msg = _one_line(capsys.readouterr().err, "build.py: error:")
    assert f"{out}: output path exists and is not a directory" in msg
    assert out.read_text() == "keep me"


def test_build_out_not_writable_is_exit_1_and_keeps_the_previous_build(site_data, tmp_path, capsys, monkeypatch):
    """A previous build in a folder this process may not write: refused before anything of it is removed. As
    root the permission bits do not apply, so the kernel's answer is simulated where the build asks for it."""
    out = tmp_path / "site"
    assert _build(site_data, out) == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    out.chmod(0o555)
    if os.geteuid() == 0:
        import scorer.site.output as site_output

        real = os.access
        monkeypatch.setattr(site_output.os, "access", lambda p, mode: False if Path(p) == out else real(p, mode))
    try:
        assert _build(site_data, out) == 1
        msg = _one_line(capsys.readouterr().err, "build.py: error:")
        assert msg == f"build.py: error: Permission denied (the output directory): {out}"
        assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    finally:
        out.chmod(0o755)


def test_build_out_in_a_folder_it_cannot_create_is_exit_1(site_data, tmp_path, capsys, monkeypatch):
    """mkdir refused (a read-only parent): the errno text and the path, exit 1."""
    out = tmp_path / "ro" / "site"
    real_mkdir = Path.mkdir

    def denied(self, *a, **k):
        if self == out:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_mkdir(self, *a, **k)

    monkeypatch.setattr(Path, "mkdir", denied)
    assert _build(site_data, out) == 1
    assert _one_line(capsys.readouterr().err, "build.py: error:") == f"build.py: error: Permission denied: {out}"


def test_build_keeps_the_output_folder_itself_when_it_rebuilds(site_data, tmp_path):
    """The previous build's contents are replaced, not its folder (which may sit in a folder this process
    cannot write)."""
    out = tmp_path / "site"
    assert _build(site_data, out) == 0
    (out / "stale.html").write_text("old")
    inode = out.stat().st_ino
    assert _build(site_data, out) == 0
    assert out.stat().st_ino == inode and not (out / "stale.html").exists() and (out / "index.html").is_file()


def test_an_output_under_a_file_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """The siblings: commands that check their outputs first (scorer.core.io.check_writable) also find a file in
    the way of an output's folder then, not after minutes of work (here: before semif versus loads a model)."""
    import scorer.backends as backends
    from scorer.core.io import check_writable

    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(NotADirectoryError) as e:
        check_writable(afile / "sub" / "report.json")
    assert e.value.filename == str(afile)
    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("the model loaded before the check"))
    assert cli.main(["versus", "--output", str(afile / "t.json")]) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"semif: error: Not a directory (a file is in the way of the output's folder): {afile}")


# --- item 7: SIGTERM during the model load of a --resume run ------------------------------------------------------
def test_sigterm_during_the_load_of_a_resume_counts_the_records_in_the_file(tmp_path):
    out = tmp_path / "o.jsonl"
    full = tmp_path / "full.jsonl"
    assert cli.main(["score", "--input", str(ROWS), "--output", str(full)]) == 0
    lines = full.read_bytes().splitlines(keepends=True)
    assert len(lines) == 42
    out.write_bytes(b"".join(lines[:21]) + lines[21][:40])  # 21 records and a torn line
    before = out.read_bytes()
    loading = tmp_path / "loading"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_semif.py"), "score", "--input", str(ROWS),
                             "--output", str(out), "--resume"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "SEMIF_FAKE_LOAD_S": "60",
                                            "SEMIF_FAKE_LOADING": str(loading)})
    deadline = time.monotonic() + 60
    while not loading.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its model load"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert _one_line(err) == (f"semif: error: terminated (SIGTERM); 21 of 42 records kept in {out} "
                              "(rerun with --resume to continue)")
    assert out.read_bytes() == before  # nothing was cut or written: the configuration was never checked


# --- item 9: a directory in place of the GGUF ---------------------------------------------------------------------
def _exit_table() -> dict[str, str]:
    text = (ROOT / "docs" / "guarantees-and-testing.md").read_text()
    table = text[text.index("## Exit codes and messages"):]
    rows = re.findall(r"^\| (\d+(?: / \d+)?) \| (.*) \|$", table[: table.index("\n\n")], flags=re.M)
    return dict(rows)


def test_a_directory_in_place_of_the_gguf_is_exit_2_as_the_docs_say(tmp_path, capsys, monkeypatch):
    """A refused model file is bad input the user fixes in their files (remove it, fetch again): exit 2, in the
    code and in the docs' table (docs/guarantees-and-testing.md; the README's once listed it under 1)."""
    from scorer import backends
    from scorer.models import store

    table = _exit_table()
    assert "a directory in place of the cached GGUF" in table["2"]
    assert "GGUF" not in table["1"]
    monkeypatch.setattr(cli, "load_backend", backends.load_backend)
    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path / "cache"))
    store.gguf_path(store.get_entry("smollm2-135m")).mkdir(parents=True)
    named = tmp_path / "model.gguf"
    named.mkdir()
    for model in ("smollm2-135m", str(named)):
        out = tmp_path / "o.jsonl"
        assert cli.main(["score", "--input", str(ROWS), "--output", str(out), "--model", model]) == 2
        assert "is not a regular file" in _one_line(capsys.readouterr().err)
        assert not out.exists()


# --- item 11: the API checks its options by the command line's rules ----------------------------------------------
@pytest.mark.parametrize(("kwargs", "flags", "problem"), [
    ({"threads": 0}, ["--threads", "0"], "0 is not an integer >= 1 or 'auto'"),
    ({"threads": -2}, ["--threads", "-2"], "-2 is not an integer >= 1 or 'auto'"),
    ({"threads": "x"}, ["--llama-threads", "x"], "'x' is not an integer >= 1 or 'auto'"),
    ({"max_batch_tokens": 0}, ["--max-batch-tokens", "0"], "0 is not an integer >= 1"),
    ({"mode": "fast"}, ["--mode", "fast"], "'fast' is not one of direct, serial, shared"),
    ({"backend": "tpu"}, ["--backend", "tpu"], "'tpu' is not one of torch, llamacpp, openai"),
    ({"device": "gpu"}, ["--device", "gpu"], "'gpu' is not one of cpu, cuda, mps"),
    ({"dtype": "float8"}, ["--dtype", "float8"], "'float8' is not one of float32, bfloat16, float16"),
    ({"llama_gpu_layers": "-1"}, ["--llama-gpu-layers", "-1"], "'-1' is not a number of layers >= 0 or 'auto'"),
])
def test_the_api_refuses_what_the_cli_refuses_in_the_same_words(tmp_path, capsys, monkeypatch, kwargs, flags, problem):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model loaded"))
    (name, _), = kwargs.items()
    with pytest.raises(OptionError) as e:
        Scorer(model="smollm2-135m", **kwargs)
    assert str(e.value) == f"{name}: {problem}" and e.value.exit_code == 2
    with pytest.raises(SystemExit) as exit_:
        cli.main(["score", "--input", str(ROWS), "--output", str(tmp_path / "o.jsonl"), *flags])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {'/'.join(_flag_names(flags[0]))}: {problem}" in err.splitlines()[-1], err
    assert not (tmp_path / "o.jsonl").exists()


def _flag_names(flag: str) -> list[str]:
    return ["--threads", "--llama-threads"] if flag in ("--threads", "--llama-threads") else [flag]


def test_the_api_accepts_what_the_cli_accepts(monkeypatch):
    import scorer.backends as backends

    seen = []
    monkeypatch.setattr(backends, "load_backend", lambda cfg: seen.append(cfg) or FakeBackend())
    with Scorer(model="m", backend="llamacpp", mode="serial", threads=2, llama_gpu_layers=8, device="cpu",
                dtype="float32", gguf=Path("x.gguf"), max_batch_tokens=1) as s:
        assert s.mode == "serial" and s.max_batch_tokens == 1
    assert seen[0].llama_gpu_layers == "8" and seen[0].gguf == "x.gguf" and seen[0].threads == 2  # as the CLI's
    with Scorer(model="m", backend="torch", threads="auto") as s:
        pass
    assert seen[1].threads == "auto"
    from scorer.cli.arguments import threads_arg

    assert threads_arg("auto") == "auto" and threads_arg("3") == 3


@pytest.mark.parametrize("bad", [None, 3, object()])
def test_a_backend_that_is_neither_a_name_nor_a_backend_is_refused(bad):
    with pytest.raises(OptionError, match=r"^backend: .* is not one of torch, llamacpp, openai"):
        Scorer(backend=bad)


def test_backend_configs_and_score_configs_are_checked_where_they_are_made():
    """One rule below both faces: any config of these options is checked by it (the Ray engine's and the
    service's too, which build them from plain dicts)."""
    from scorer.backends import BackendConfig
    from scorer.scoring.options import ScoreConfig

    for kwargs, message in (({"threads": 0}, "threads: 0 is not"), ({"model": ""}, "model: '' is not"),
                            ({"llama_gpu_layers": True}, "llama_gpu_layers: True is not")):
        with pytest.raises(OptionError, match=message):
            BackendConfig(**kwargs)
    for kwargs, message in (({"mode": "x"}, "mode: 'x' is not one of"), ({"max_batch_tokens": 0}, "max_batch_tokens"),
                            ({"permute": 0}, "permute: 0"), ({"temperature": math.inf}, "temperature: inf")):
        with pytest.raises(OptionError, match=message):
            ScoreConfig(**kwargs)


# --- item 12: values a JSON line could not hold --------------------------------------------------------------------
_NOT_JSON = [
    ("nan", math.nan, "score", "not JSON: the float nan (JSON has no NaN or Infinity)"),
    ("inf", {"a": [1, -math.inf]}, "meta.a[1]", "not JSON: the float -inf (JSON has no NaN or Infinity)"),
    ("datetime", datetime.datetime(2026, 12, 1, 12, 0), "when", "not JSON: a datetime datetime.datetime(2026, 12"),
    ("date", [datetime.date(2026, 12, 1)], "when[0]", "not JSON: a date datetime.date(2026, 12, 1)"),
    ("set", {1, 2}, "tags", "not JSON: a set {1, 2}"),
    ("tuple", (1, 2), "pair", "not JSON: a tuple (1, 2)"),
    ("bytes", b"ab", "raw", "not JSON: a bytes b'ab'"),
    ("int key", {"m": {1: "x"}}, "meta.m", "not JSON: the key 1 is a int, not a string"),
    ("big int", 1 << 64, "n", f"not JSON: the integer {1 << 64} is outside 64 bits"),
]


@pytest.mark.parametrize(("kind", "value", "field", "problem"), _NOT_JSON, ids=[c[0] for c in _NOT_JSON])
def test_decide_refuses_extras_a_json_line_could_not_hold(kind, value, field, problem):
    top = field.split(".")[0].split("[")[0]
    fake = FakeBackend()
    with Scorer(backend=fake, slots="letters") as s:  # compared with semif score's records (letters)
        with pytest.raises(InputError) as e:
            s.decide("a state", "q?", {"a": "x", "b": "y"}, **{top: value})
        assert str(e.value).startswith(f"decision: field '{field}': {problem}")
        assert "(expected plain JSON (str, finite number, bool, null, list, object with str keys)" in str(e.value)
        assert e.value.field == field and e.value.exit_code == 2
        rows = _rows()[:3]
        rows[1] = {**rows[1], top: value}
        with pytest.raises(InputError) as e:
            s.decide_many(rows)
        assert str(e.value).startswith(f"rows:2: field '{field}': {problem}") and e.value.line == 2
        with pytest.raises(InputError) as e:  # a JSON state is held to the same rule (it is rendered as JSON)
            s.decide({"facts": {top: value}}, "q?", {"a": "x", "b": "y"})
        assert str(e.value).startswith(f"decision: field 'state.facts.{field}': {problem}")
    assert fake.calls == FakeBackend().calls  # nothing was scored


def test_a_non_string_top_level_key_is_refused():
    with Scorer(backend=FakeBackend()) as s, pytest.raises(InputError) as e:
        s.decide_many([{**_rows()[0], 7: "x"}])
    assert str(e.value).startswith("rows:1: not JSON: the key 7 is a int, not a string")


def test_plain_json_extras_still_equal_the_jsonl_records(tmp_path):
    """What a JSON line can hold passes, and the records equal the file's (floats, big 64-bit ints, nesting)."""
    extra = {"score": 0.25, "n": (1 << 64) - 1, "m": -(1 << 63), "meta": {"a": [1, None, True, "x"]}, "e": {}}
    rows = [{**r, **extra} for r in _rows()[:4]]
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared"]) == 0
    from scorer.formats.records import read_records

    want = read_records(out)
    with Scorer(backend=FakeBackend(), mode="shared", slots="letters") as s:  # semif score's readout
        got = s.decide_many(rows)
    assert [g.record["extra"] for g in got] == [w["extra"] for w in want]
    assert all(w["extra"].items() >= extra.items() for w in want)
    assert [g.record["run"]["config_sha256"] for g in got] == [w["run"]["config_sha256"] for w in want]


# --- issue #43: the command line's holes --------------------------------------------------------------------------
def test_engine_stop_and_status_take_the_engine_as_start_does(tmp_path, monkeypatch, capsys):
    """``semif engine stop llama-server`` (the form ``start`` takes) stops that kind only; ``--engine`` still works;
    the two disagreeing is a one-line error."""
    from scorer.backends import engine_state

    monkeypatch.setenv("SEMIF_CACHE", str(tmp_path))
    sleepers = {kind: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
                for kind in ("llama-server", "vllm")}
    try:
        for kind, proc in sleepers.items():
            engine_state.write_state(engine_state.state_path(kind, 9000 + proc.pid % 1000), {
                "engine": kind, "pid": proc.pid, "port": 9000 + proc.pid % 1000, "base_url": "http://127.0.0.1:1",
                "log": "x.log"})
        assert cli.main(["engine", "status", "vllm", "--json"]) == 0
        listed = [orjson.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert [st["engine"] for st in listed] == ["vllm"]
        assert cli.main(["engine", "stop", "llama-server", "--engine", "vllm"]) == 2
        assert "llama-server and --engine vllm" in _one_line(capsys.readouterr().err)
        assert cli.main(["engine", "stop", "llama-server"]) == 0
        assert "llama-server" in capsys.readouterr().out
        sleepers["llama-server"].wait(timeout=30)
        assert sleepers["vllm"].poll() is None  # the other kind is left running
        assert cli.main(["engine", "stop", "--engine", "vllm"]) == 0
        sleepers["vllm"].wait(timeout=30)
    finally:
        for proc in sleepers.values():
            if proc.poll() is None:
                proc.kill()


def test_a_key_given_twice_in_a_rows_file_or_a_json_state_is_refused(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"id": "r1", "state": "s", "question": "q", "options": ["a", "b"], "question": "p"}\n')
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "o.jsonl")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{rows}:1: field 'question'" in line and "given more than once" in line
    assert cli.main(["ask", "--json-state", "--state", '{"a": 1, "b": {"c": 2, "c": 3}}', "--yesno", "r=Refund?"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "--state: field 'b.c'" in line and "given more than once" in line


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--yesno", "a\tb=Refund?"], "U+0009"),
    (["--choice", "team=Which team?:billing|tech\u0001"], "U+0001"),
])
def test_semif_ask_refuses_control_characters_in_names_and_ids(capsys, argv, fragment):
    assert cli.main(["ask", "--state", "my card was charged twice", *argv]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"holds the control character {fragment}" in line
