"""What the service tests share: the workload's rows, a live ``semif serve`` app on loopback in a thread, a
backend whose scoring waits for the test."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from fakes import FakeBackend

from scorer.serving.http_server import Limits, uvicorn_config

ROOT = Path(__file__).resolve().parent.parent
ROWS_FILE = ROOT / "data" / "workloads" / "shape-small.jsonl"


def workload_rows() -> list[dict[str, Any]]:
    """The shape-small workload's rows (ordered by state, three questions each)."""
    return [orjson.loads(line) for line in ROWS_FILE.read_bytes().splitlines()]


@contextlib.contextmanager
def live(app: Any, limits: Limits | None = None, http: str = "auto") -> Iterator[str]:
    """Serve ``app`` with ``semif serve``'s uvicorn config (its ``http`` protocol) on a free loopback port in a
    thread; yields the URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn_config(app, limits or Limits(), http, lifespan="on"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert t.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        t.join(timeout=30)
        sock.close()


class GatedBackend(FakeBackend):
    """The fake backend, holding its first prefill until ``gate`` is set (``entered`` says it is held), so a test
    can queue requests behind a busy worker."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.gate, self.entered = threading.Event(), threading.Event()

    def prefill(self, ids: list[int]) -> Any:
        if not self.entered.is_set():
            self.entered.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return super().prefill(ids)
