"""The HTTP server under ``semif serve`` (and ``semif mcp --http``): :class:`Limits`, what one request and the
connections may take, and uvicorn's protocol bounded by them (:func:`bounded_protocol`: header and body deadlines
and a connection cap uvicorn itself does not enforce), with the uvicorn ``Config`` that runs an app on it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from scorer.core.checks import positive_float, positive_int
from scorer.core.errors import SemifError


@dataclass(frozen=True)
class Limits:
    """What one request may ask of the service."""

    max_body_bytes: int = 4 * 1024 * 1024
    """Largest request body; a larger one answers 413 before it is parsed."""
    max_rows: int = 1024
    """Most rows in one batch request; more answer 413."""
    queue_size: int = 64
    """Requests waiting for the worker thread; one more answers 503 with Retry-After."""
    retry_after_s: int = 1
    """The Retry-After a 503 carries."""
    header_timeout_s: float = 10.0
    """Seconds a connection may take to send a request's line and headers, counted from the connection's
    opening or the first byte of its next request; a slower one answers 408 and is closed (``semif serve``'s
    own server; a slow-loris client holds a connection no longer than this)."""
    body_timeout_s: float = 30.0
    """Seconds a request may take to send its whole body once its headers are in; a slower one answers 408
    and is closed."""
    max_connections: int = 100
    """Open connections the server holds at once; one more answers 503 with Retry-After and is closed at once."""

    def __post_init__(self) -> None:
        """Checked by the rules every option follows (:mod:`scorer.core.checks`; ``semif serve``'s flags too)."""
        for name in ("max_body_bytes", "max_rows", "queue_size", "retry_after_s", "max_connections"):
            positive_int(getattr(self, name), name)
        for name in ("header_timeout_s", "body_timeout_s"):
            positive_float(getattr(self, name), name)



def load_uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise SemifError(f"semif serve needs the serve extra ({exc}); install it with "
                         "`pip install -e '.[serve]'` (scripts/install.sh does)") from None
    return uvicorn


def _raw_response(status: int, message: str, retry_after: int | None = None) -> bytes:
    """A whole HTTP/1.1 response that the connection writes itself (the app has not answered this request):
    the service's error body, then the connection closes."""
    body = orjson.dumps({"error": message, "field": None, "row": None})
    reason = {408: "Request Timeout", 503: "Service Unavailable"}[status]
    head = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"content-length: {len(body)}",
            "connection: close"]
    if retry_after is not None:
        head.append(f"retry-after: {retry_after}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body


def bounded_protocol(limits: Limits, http: str = "auto") -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (``http``: ``auto`` picks httptools when installed, else h11, as uvicorn does)
    with the read deadlines and the connection limit uvicorn 0.54 does not have.

    uvicorn only times out a keep-alive connection that is idle between requests; once a byte of a request
    has arrived, or before the first one, nothing bounds how long its headers or body may take, so a client
    that sends a few bytes and stalls holds its connection (and a slot of the server) for ever. Here:

    * the request line and headers must arrive within ``header_timeout_s`` of the connection opening or of
      the first byte of its next request; else 408, ``connection: close``;
    * the body within ``body_timeout_s`` of the headers; else 408 (when the app has not answered yet; it then
      sees a disconnect) and the connection closes;
    * at most ``max_connections`` open at once; one more answers 503 with ``Retry-After`` at once, nothing of
      it is read, and it is closed a moment later (at most 1 s).
    """
    from importlib import import_module

    where = {"auto": ("auto", "AutoHTTPProtocol"), "h11": ("h11_impl", "H11Protocol"),
             "httptools": ("httptools_impl", "HttpToolsProtocol")}[http]
    base: Any = getattr(import_module(f"uvicorn.protocols.http.{where[0]}"), where[1])
    header_s, body_s, most = limits.header_timeout_s, limits.body_timeout_s, limits.max_connections
    busy = _raw_response(503, f"busy: {most} connections are open; retry after {limits.retry_after_s} s",
                             retry_after=limits.retry_after_s)

    class BoundedHTTPProtocol(base):
        _semif_refused = False
        _semif_timer: asyncio.TimerHandle | None = None
        _semif_waiting = ""  # "headers" or "body": what the armed deadline waits for
        _semif_cycle: Any = None  # the request whose headers were seen last

        def connection_made(self, transport: Any) -> None:
            if len(self.server_state.connections) >= most:  # refused before it counts or anything is read
                self._semif_refused = True
                transport.write(busy)
                if transport.can_write_eof():
                    transport.write_eof()
                # Closed after a moment rather than at once: closing with the client's request unread makes the
                # kernel reset the connection, which can destroy the 503 before the client reads it.
                self.loop.call_later(min(1.0, header_s), transport.close)
                return
            super().connection_made(transport)
            self._semif_arm("headers")

        def connection_lost(self, exc: Exception | None) -> None:
            if self._semif_refused:
                return
            self._semif_disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._semif_refused:
                return
            if self._semif_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._semif_arm("headers")  # the first byte of the next request on a kept-alive connection
            super().data_received(data)
            cycle = self.cycle
            if cycle is not None and cycle is not self._semif_cycle:  # this request's headers are in
                self._semif_cycle = cycle
                if cycle.more_body:
                    self._semif_arm("body")
                else:
                    self._semif_disarm()
            elif self._semif_waiting == "body" and cycle is not None and not cycle.more_body:
                self._semif_disarm()  # the whole body is in

        def _semif_arm(self, waiting: str) -> None:
            self._semif_disarm()
            self._semif_waiting = waiting
            self._semif_timer = self.loop.call_later(header_s if waiting == "headers" else body_s,
                                                     self._semif_expired)

        def _semif_disarm(self) -> None:
            if self._semif_timer is not None:
                self._semif_timer.cancel()
            self._semif_timer, self._semif_waiting = None, ""

        def _semif_expired(self) -> None:
            waiting, self._semif_timer, self._semif_waiting = self._semif_waiting, None, ""
            if self.transport is None or self.transport.is_closing():
                return
            cycle = self.cycle
            if (cycle is None or cycle.response_complete) if waiting == "headers" else not cycle.response_started:
                bound = header_s if waiting == "headers" else body_s
                self.transport.write(_raw_response(408, f"request {waiting} not received within {bound:g} s"))
            self.transport.close()  # the app, if it was reading the body, sees a disconnect

    return BoundedHTTPProtocol


def uvicorn_config(app: Any, limits: Limits, http: str = "auto", **kwargs: Any) -> Any:
    """The uvicorn ``Config`` ``semif serve`` runs ``app`` with: its :func:`bounded_protocol`, quiet logs."""
    uvicorn = load_uvicorn()
    return uvicorn.Config(app, http=bounded_protocol(limits, http), log_level="warning", access_log=False, **kwargs)
