"""`semif serve` against slow clients (issue #21 item 10), on loopback with the fake backend, each test a few
seconds: a client that stalls in its headers or its body is answered 408 and closed within the bound while the
server answers others; connections beyond the limit are answered 503 at once."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from fakes import FakeBackend
from serve_helpers import live

from scorer import Scorer, cli
from scorer.core.checks import OptionError
from scorer.serving.http_server import Limits
from scorer.serving.service import build_app

BOUND = 1.0
"""The header and body timeouts the tests serve with (seconds)."""
SLACK = 1.5
"""How much later than the bound a close may come on a busy 2-core machine."""
ROW = (b'{"id":"r1","state":"a state","question":"yes or no?","options":[{"id":"yes","description":"yes"},'
       b'{"id":"no","description":"no"}]}')


@contextlib.contextmanager
def _live(limits: Limits, http: str = "auto") -> Iterator[tuple[int, str]]:
    """``semif serve``'s server (its uvicorn config and protocol) on a free loopback port in a thread."""
    with Scorer(backend=FakeBackend()) as scorer, live(build_app(scorer, limits), limits, http) as url:
        yield int(url.rsplit(":", 1)[1]), url


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=BOUND + SLACK + 3)
    return s


def _until_closed(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a socket timeout fails the test)."""
    chunks = []
    try:
        while chunk := s.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def _others_are_answered(url: str, until: float) -> int:
    """Ask /healthz on fresh connections until ``until``; every answer must be a quick 200. Returns how many."""
    n = 0
    while time.monotonic() < until:
        t0 = time.monotonic()
        r = httpx.get(f"{url}/healthz", timeout=5)
        assert r.status_code == 200 and time.monotonic() - t0 < 0.5
        n += 1
        time.sleep(0.05)
    return n


def _limits(**over) -> Limits:
    return Limits(**{"header_timeout_s": BOUND, "body_timeout_s": BOUND, **over})


HEAD_60 = b"POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app"
assert len(HEAD_60) == 60


@pytest.mark.parametrize(("sent", "http"), [(HEAD_60, "auto"), (b"", "auto"), (b"G", "auto"), (HEAD_60, "h11")],
                         ids=["60-bytes-of-headers", "nothing", "one-byte", "60-bytes-h11"])
def test_a_client_that_stalls_in_its_headers_is_closed_within_the_bound(sent, http):
    """``auto`` is httptools here (installed with uvicorn's extras); h11 is what uvicorn runs without it."""
    with _live(_limits(), http) as (port, url):
        s = _connect(port)
        t0 = time.monotonic()
        s.sendall(sent)
        assert _others_are_answered(url, t0 + BOUND * 0.8) >= 2  # the server answers others meanwhile
        data = _until_closed(s)
        took = time.monotonic() - t0
        s.close()
    assert BOUND * 0.9 <= took <= BOUND + SLACK, took
    assert data.startswith(b"HTTP/1.1 408 Request Timeout\r\n") and b"connection: close" in data
    assert data.endswith(b'{"error":"request headers not received within 1 s","field":null,"row":null}')


def test_a_kept_alive_connection_that_stalls_in_its_next_request_is_closed():
    """uvicorn's keep-alive timer stops at the next request's first byte; the header deadline takes over."""
    with _live(_limits()) as (port, _url):
        s = _connect(port)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        time.sleep(0.3)
        t0 = time.monotonic()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        data = _until_closed(s)
        took = time.monotonic() - t0
        s.close()
    assert BOUND * 0.9 <= took <= BOUND + SLACK, took
    assert data.startswith(b"HTTP/1.1 408")


@pytest.mark.parametrize(("trickle", "http"), [(False, "auto"), (True, "auto"), (False, "h11")],
                         ids=["stalled", "one-byte-every-0.2-s", "stalled-h11"])
def test_a_slow_body_is_answered_408_and_closed_within_the_bound(capfd, trickle, http):
    """The bound is on the whole body, so a client that keeps sending a byte now and then is closed too; the app,
    which was reading the body, sees a disconnect and logs no traceback."""
    with _live(_limits(), http) as (port, url):
        s = _connect(port)
        t0 = time.monotonic()
        s.sendall(b"POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(ROW) + ROW[:20])
        if trickle:
            with contextlib.suppress(OSError):
                for b in ROW[20:28]:
                    time.sleep(0.2)
                    s.sendall(bytes([b]))
        else:
            assert _others_are_answered(url, t0 + BOUND * 0.8) >= 2
        data = _until_closed(s)
        took = time.monotonic() - t0
        s.close()
        assert httpx.post(f"{url}/v1/decide", content=ROW).status_code == 200  # and serves on
    assert BOUND * 0.9 <= took <= BOUND + SLACK, took
    assert data.startswith(b"HTTP/1.1 408") and b"request body not received within 1 s" in data
    assert "Traceback" not in capfd.readouterr().err


def test_connections_beyond_the_limit_are_answered_503_at_once():
    limits = _limits(max_connections=3, header_timeout_s=2.0, retry_after_s=3)
    with _live(limits) as (port, url):
        held = [_connect(port) for _ in range(3)]
        time.sleep(0.2)  # the server has accepted them
        t0 = time.monotonic()
        extra = _connect(port)
        data = _until_closed(extra)
        assert time.monotonic() - t0 < 1.0 + SLACK
        extra.close()
        assert data.startswith(b"HTTP/1.1 503 Service Unavailable\r\n") and b"retry-after: 3\r\n" in data
        assert b"busy: 3 connections are open" in data
        for s in held:  # the held ones time out in their headers, which frees their places
            assert _until_closed(s).startswith(b"HTTP/1.1 408")
            s.close()
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200


def test_a_normal_request_is_not_affected():
    with _live(_limits()) as (_port, url), httpx.Client(base_url=url, timeout=10) as c:
        for _ in range(3):  # one kept-alive connection, several requests, each well inside the bounds
            r = c.post("/v1/decide", content=ROW)
            assert r.status_code == 200 and r.json()["id"] == "r1"
            time.sleep(BOUND * 0.6)
        assert c.get("/v1/models").json()["limits"]["header_timeout_s"] == BOUND


@pytest.mark.parametrize(("flags", "message"), [
    (["--header-timeout", "0"], "argument --header-timeout: 0 is not a finite number > 0"),
    (["--body-timeout", "inf"], "argument --body-timeout: inf is not a finite number > 0"),
    (["--max-connections", "0"], "argument --max-connections: 0 is not an integer >= 1"),
])
def test_the_bounds_are_checked_options(capsys, monkeypatch, flags, message):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model loaded"))
    with pytest.raises(SystemExit) as e:
        cli.main(["serve", *flags])
    assert e.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(OptionError, match="header_timeout_s: 0 is not a finite number > 0"):
        Limits(header_timeout_s=0)
