"""`semif serve` against a live uvicorn server on loopback, with the fake backend (fast) and smollm2 (slow)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx  # the serve extra (scripts/install.sh installs it): missing means failing, never skipping
import orjson
import pytest
from fakes import FakeBackend
from serve_helpers import live as _live

from scorer import Scorer, cli
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import load_decisions
from scorer.scoring.options import DEFAULT_SLOTS
from scorer.serving.http_server import Limits
from scorer.serving.service import build_app, row_schema

ROOT = Path(__file__).resolve().parents[2]
ROWS_FILE = ROOT / "data" / "workloads" / "shape-small.jsonl"


def _rows() -> list[dict]:
    return [orjson.loads(line) for line in ROWS_FILE.read_bytes().splitlines()]


def _stable(rec: dict) -> dict:
    """A record without timings and the run block (the run's start time and, for one row, its input hash), nor how
    its prefix came out of the radix cache (which the server's earlier requests filled)."""
    return {k: v for k, v in rec.items() if k not in ("timing", "run", "cache", "cache_hit")}


def _cli_records(tmp_path: Path, rows: list[dict], mode: str, monkeypatch, backend=None,
                 slots: str = "letters") -> list[dict]:
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: backend or FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", mode, "--slots", slots]) == 0
    return read_records(out)


@pytest.fixture
def fake_url() -> Iterator[str]:
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, _live(build_app(s)) as url:
        yield url


def test_batch_and_single_equal_semif_score(tmp_path, monkeypatch, fake_url):
    rows = _rows()
    want = _cli_records(tmp_path, rows, "shared", monkeypatch)
    r = httpx.post(f"{fake_url}/v1/decide/batch", json={"rows": rows})
    assert r.status_code == 200, r.text
    got = r.json()["records"]
    validate_records(got)
    assert [_stable(g) for g in got] == [_stable(w) for w in want]
    assert [g["run"]["config_sha256"] for g in got] == [w["run"]["config_sha256"] for w in want]
    for row, w in zip(rows[:5], want[:5], strict=False):
        one = httpx.post(f"{fake_url}/v1/decide", json=row)
        assert one.status_code == 200, one.text
        rec = one.json()
        # one row is its own group: the same numbers as the file run, prefix bookkeeping of a group of one
        for k in ("id", "option_ids", "probabilities", "choice", "margin", "tie", "prompt_sha256", "tokens_sha256",
                  "allowed_token_mass", "model", "extra"):
            assert rec[k] == w[k], k


def _cli_message(tmp_path: Path, row: dict) -> str:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(orjson.dumps(row) + b"\n")
    from scorer.core.errors import InputError

    with pytest.raises(InputError) as e:
        load_decisions(p)
    return str(e.value).removeprefix(f"{p}:1")


def test_bad_bodies_get_4xx_with_the_cli_field_messages(tmp_path, fake_url):
    good = _rows()[0]
    seventeen = {**good, "options": [{"id": f"o{i}", "description": f"option {i}"} for i in range(256)]}
    r = httpx.post(f"{fake_url}/v1/decide", json=seventeen)
    assert r.status_code == 422
    assert r.json() == {"error": "body" + _cli_message(tmp_path, seventeen), "field": "options", "row": None}
    assert "256 options (expected 2 to 255 options)" in r.json()["error"]

    rows = _rows()[:3]
    rows[2] = {**rows[2], "state": ""}
    r = httpx.post(f"{fake_url}/v1/decide/batch", json={"rows": rows})
    assert r.status_code == 422
    assert r.json() == {"error": "rows:3" + _cli_message(tmp_path, rows[2]), "field": "state", "row": 3}

    r = httpx.post(f"{fake_url}/v1/decide", content=b'{"id": ')
    assert r.status_code == 400 and r.json()["error"].startswith("body: invalid JSON")
    r = httpx.post(f"{fake_url}/v1/decide/batch", json=[good])
    assert r.status_code == 422 and r.json()["field"] == "rows"


def test_size_limits_answer_413():
    rows = _rows()
    with Scorer(backend=FakeBackend(), slots="letters") as s, \
            _live(build_app(s, Limits(max_body_bytes=20_000, max_rows=3))) as url:
        r = httpx.post(f"{url}/v1/decide/batch", json={"rows": rows[:4]})
        assert r.status_code == 413 and r.json()["error"] == (
            "body: field 'rows': 4 rows (expected at most 3 rows per request)")
        big = {**rows[0], "state": "x" * 25_000}
        r = httpx.post(f"{url}/v1/decide", json=big)
        assert r.status_code == 413 and "expected at most 20000 bytes per request" in r.json()["error"]

        def chunks():  # no Content-Length: the limit holds while streaming
            for _ in range(50):
                yield b" " * 500

        r = httpx.post(f"{url}/v1/decide", content=chunks())
        assert r.status_code == 413
        assert httpx.post(f"{url}/v1/decide/batch", json={"rows": rows[:3]}).status_code == 200


class _Boom(FakeBackend):
    def fan_out(self, *a, **k):
        raise RuntimeError("secret internals /home/user/model.bin")


def test_an_unexpected_error_is_500_without_a_traceback(capsys):
    with Scorer(backend=_Boom(), slots="letters") as s, _live(build_app(s)) as url:
        r = httpx.post(f"{url}/v1/decide", json=_rows()[0])
    assert r.status_code == 500
    assert r.json()["error"].startswith("internal error") and "secret" not in r.text and "Traceback" not in r.text
    assert "secret internals" in capsys.readouterr().err  # the operator sees it


def test_eight_concurrent_clients_25_requests_each_all_correct(fake_url):
    rows = _rows()
    with Scorer(backend=FakeBackend(), slots="letters") as s:
        want = {r["id"]: _stable(s.decide_row(r).record) for r in rows}

    def client(k: int) -> list[bool]:
        ok = []
        with httpx.Client(base_url=fake_url, timeout=60) as c:
            for j in range(25):
                row = rows[(k * 25 + j) % len(rows)]
                r = c.post("/v1/decide", json=row)
                ok.append(r.status_code == 200 and _stable(r.json()) == want[row["id"]])
        return ok

    with ThreadPoolExecutor(8) as pool:
        results = [ok for oks in pool.map(client, range(8)) for ok in oks]
    assert len(results) == 200 and all(results)


class _Gated(FakeBackend):
    """Blocks every scoring call until ``gate`` is set; ``entered`` says a call is in progress."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.entered = threading.Event(), threading.Event()

    def prefill(self, ids):
        self.entered.set()
        assert self.gate.wait(30)
        return super().prefill(ids)


def test_a_full_queue_answers_503_with_retry_after():
    backend = _Gated()
    row = _rows()[0]
    limits = Limits(queue_size=1, retry_after_s=7)
    with Scorer(backend=backend, slots="letters") as s, \
            _live(build_app(s, limits)) as url, ThreadPoolExecutor(2) as pool:
        first = pool.submit(httpx.post, f"{url}/v1/decide", json=row, timeout=60)
        assert backend.entered.wait(30)  # the worker is busy with the first request
        second = pool.submit(httpx.post, f"{url}/v1/decide", json=row, timeout=60)
        deadline = time.monotonic() + 30
        while httpx.get(f"{url}/healthz").json()["queued"] < 1:  # the second waits in the queue
            assert time.monotonic() < deadline
            time.sleep(0.02)
        # the event loop stays free while the scorer works: metadata and health answer at once
        assert httpx.get(f"{url}/v1/models", timeout=5).status_code == 200
        third = httpx.post(f"{url}/v1/decide", json=row)
        assert third.status_code == 503 and third.headers["retry-after"] == "7"
        assert third.json()["error"].startswith("busy")
        backend.gate.set()
        assert first.result().status_code == 200 and second.result().status_code == 200


def test_the_token_is_required_when_set():
    with Scorer(backend=FakeBackend(), slots="letters") as s, _live(build_app(s, token="s3cret")) as url:
        row = _rows()[0]
        assert httpx.post(f"{url}/v1/decide", json=row).status_code == 401
        bad = httpx.post(f"{url}/v1/decide", json=row, headers={"Authorization": "Bearer wrong"})
        assert bad.status_code == 401 and bad.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{url}/v1/models").status_code == 401
        good = httpx.post(f"{url}/v1/decide", json=row, headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 200
        assert httpx.get(f"{url}/healthz").status_code == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20"])
def test_serving_off_loopback_without_a_token_is_refused_before_the_model_loads(monkeypatch, capsys, host):
    import scorer.backends as backends

    monkeypatch.delenv("SEMIF_SERVE_TOKEN", raising=False)
    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("model loaded"))
    assert cli.main(["serve", "--host", host]) == 2
    assert "bearer token is required" in capsys.readouterr().err


def test_models_schema_and_health(fake_url):
    m = httpx.get(f"{fake_url}/v1/models").json()
    assert m["models"][0]["backend"] == "fake" and m["mode"] == "shared" and m["limits"]["max_options"] == 255
    doc = httpx.get(f"{fake_url}/v1/schema").json()
    import jsonschema

    v = jsonschema.Draft202012Validator(doc["row"])
    for row in _rows():
        v.validate(row)
    assert not v.is_valid({**_rows()[0], "options": [{"id": "a", "description": "x"}]})
    assert doc["openapi"]["openapi"] == "3.1.0" and "/v1/decide/batch" in doc["openapi"]["paths"]
    assert doc["row"] == row_schema()
    assert httpx.get(f"{fake_url}/healthz").json() == {"status": "ok", "queued": 0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _semif_serve(*extra: str) -> Iterator[str]:
    """``semif serve`` on smollm2-135m in a subprocess on a free loopback port; yields the base URL once
    /healthz answers, stops it with SIGINT."""
    import torch

    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The same CPU threads as the in-process reference: fp32 sums in another order differ by ~1e-6.
    cmd = [sys.executable, "-m", "scorer.cli", "serve", "--port", str(port), "--model", "smollm2-135m",
           "--mode", "shared", "--dtype", "float32", "--threads", str(torch.get_num_threads()), *extra]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, proc.stderr.read()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            assert time.monotonic() < deadline, "semif serve did not come up"
            time.sleep(0.5)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _assert_served_equal_score(url: str, tmp_path: Path, monkeypatch, smol_torch) -> None:
    rows = _rows()[:10]
    r = httpx.post(f"{url}/v1/decide/batch", json={"rows": rows}, timeout=600)
    assert r.status_code == 200, r.text
    got = r.json()["records"]
    # a server not told its readout reads the scorer's default; a records run reads letters unless told
    want = _cli_records(tmp_path, rows, "shared", monkeypatch, backend=smol_torch, slots=DEFAULT_SLOTS)
    for g, w in zip(got, want, strict=True):
        assert g["prompt_sha256"] == w["prompt_sha256"] and g["tokens_sha256"] == w["tokens_sha256"]
        assert g["choice"] == w["choice"] and g["run"]["config_sha256"] == w["run"]["config_sha256"]
        assert g["probabilities"] == pytest.approx(w["probabilities"], abs=1e-6)


@pytest.mark.slow
def test_semif_serve_on_smollm2_equals_semif_score(tmp_path, monkeypatch, smol_torch):
    with _semif_serve() as url:
        _assert_served_equal_score(url, tmp_path, monkeypatch, smol_torch)


@pytest.mark.slow
def test_semif_serve_on_ray_serve_replicas_equals_semif_score(tmp_path, monkeypatch, smol_torch):
    with _semif_serve("--ray", "--replicas", "2") as url:
        _assert_served_equal_score(url, tmp_path, monkeypatch, smol_torch)
        one = httpx.post(f"{url}/v1/decide", json={**_rows()[0], "options": []})
        assert one.status_code == 422 and one.json()["field"] == "options"


def test_a_calibrated_service_returns_the_cli_calibrated_records(tmp_path, monkeypatch):
    """`semif serve --calibration FILE`: the records carry the block `semif score --calibration FILE` writes;
    a row the file does not cover answers 422 naming the file; /v1/models names the file."""
    rows = [orjson.loads(line) for line in (ROOT / "data" / "eval" / "boundary.jsonl").read_bytes().splitlines()]
    inp, raw, prior, out = (tmp_path / n for n in ("in.jsonl", "raw.jsonl", "prior.json", "cal.jsonl"))
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend(bias={"A": 1.0}))
    assert cli.main(["score", "--input", str(inp), "--output", str(raw), "--mode", "shared"]) == 0
    assert cli.main(["calibrate", "prior", str(raw), "--output", str(prior)]) == 0
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared",
                     "--calibration", str(prior)]) == 0
    want = read_records(out)
    with Scorer(backend=FakeBackend(bias={"A": 1.0}), mode="shared", calibration=prior) as s, \
            _live(build_app(s)) as url:
        r = httpx.post(f"{url}/v1/decide/batch", json={"rows": rows})
        assert r.status_code == 200, r.text
        got = r.json()["records"]
        assert [_stable(g) for g in got] == [_stable(w) for w in want]
        assert [g["run"]["config_sha256"] for g in got] == [w["run"]["config_sha256"] for w in want]
        assert any(g["calibrated"]["choice"] != g["choice"] for g in got)
        bad = httpx.post(f"{url}/v1/decide", json=_rows()[0])
        assert bad.status_code == 422 and "no calibration for signature" in bad.json()["error"]
        assert str(prior) in bad.json()["error"] and "Traceback" not in bad.text
        cal = httpx.get(f"{url}/v1/models").json()["calibration"]
        assert cal["method"] == "prior" and cal["sha256"] == want[0]["calibrated"]["source"]["sha256"]


def test_serve_refuses_a_bad_calibration_file_before_the_model_loads(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "cal.json"
    bad.write_bytes(b'{"schema": "semif-calibration-v1", "method": "prior", "entries": [')
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("loaded the model before checking the file"))
    assert cli.main(["serve", "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "invalid JSON" in err and "Traceback" not in err


# --- issue #43: the holes a fault campaign found in the service ---------------------------------------------------
def test_a_body_past_the_limit_answers_413_not_a_reset(fake_url):
    """A 5 MB body (the default limit is 4 MiB) is read and thrown away, then answered 413 naming the limit: the
    client, which sends its whole body before it reads, sees the answer instead of a broken pipe; the server serves
    on. With a Content-Length and without one (chunked)."""
    big = {"state": "x" * (5 * 1024 * 1024), "questions": {"refund": {"type": "yesno", "question": "Refund?"}}}
    body = orjson.dumps(big)
    r = httpx.post(f"{fake_url}/v1/ask", content=body, headers={"content-type": "application/json"}, timeout=60)
    assert r.status_code == 413, r.text
    assert r.json()["error"] == (f"body: {len(body)} bytes (expected at most {Limits().max_body_bytes} bytes per "
                                 "request)")

    def chunks():
        for i in range(0, len(body), 65536):
            yield body[i:i + 65536]

    r = httpx.post(f"{fake_url}/v1/ask", content=chunks(), timeout=60)
    assert r.status_code == 413 and "expected at most 4194304 bytes per request" in r.json()["error"]
    assert httpx.post(f"{fake_url}/v1/decide", json=_rows()[0]).status_code == 200


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/ask", b'{"state": "s", "questions": {"x": {"type": "yesno", "question": "a?"}, '
                b'"x": {"type": "yesno", "question": "b?"}}}', "questions.x"),
    ("/v1/decide", b'{"id": "r1", "state": "s", "question": "q", "options": {"a": "A", "b": "B", "a": "C"}}',
     "options.a"),
    ("/v1/decide/batch", b'{"rows": [{"id": "r1", "id": "r2", "state": "s", "question": "q", "options": ["a", "b"]}]}',
     "rows[0].id"),
])
def test_a_key_given_twice_is_refused_naming_its_path(fake_url, path, body, field):
    r = httpx.post(f"{fake_url}{path}", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert "given more than once in its object" in r.json()["error"]
    assert httpx.post(f"{fake_url}/v1/decide", json=_rows()[0]).status_code == 200


@pytest.mark.parametrize(("doc", "field", "char"), [
    ({"id": "r1", "state": "s", "question": "q", "options": ["a\u0001", "b"]}, "options[0].id", "U+0001"),
    ({"id": "r\t1", "state": "s", "question": "q", "options": ["a", "b"]}, "id", "U+0009"),
    ({"id": "r1", "state": "s", "question": "q", "options": {"a": "A", "b\u2028": "B"}}, "options[1].id", "U+2028"),
])
def test_identifiers_with_control_characters_are_refused(fake_url, doc, field, char):
    r = httpx.post(f"{fake_url}/v1/decide", json=doc)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field and f"holds the control character {char}" in r.json()["error"]


def test_a_question_name_with_a_line_break_is_refused(fake_url):
    r = httpx.post(f"{fake_url}/v1/ask", json={"state": "s", "questions": {
        "a\n/../b": {"type": "yesno", "question": "q?"}}})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "questions" and "holds the control character U+000A" in r.json()["error"]
    ok = httpx.post(f"{fake_url}/v1/ask", json={"state": "s", "questions": {"a b/c": {"type": "yesno",
                                                                                   "question": "q?"}}})
    assert ok.status_code == 200 and list(ok.json()["answers"]) == ["a b/c"]


def test_sigterm_stops_semif_serve_without_suggesting_resume():
    """``semif serve`` stopped by SIGTERM says the server stopped; ``--resume`` belongs to records runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_semif.py"), "serve", "--port", str(port)],
                            env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "semif serve did not come up"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "the server stopped" in err and "--resume" not in err, err
    assert "Traceback" not in err, err
