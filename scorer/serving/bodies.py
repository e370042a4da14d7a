"""Request bodies and JSON responses of ``semif serve``: a body read no further than the limit (an oversized one
drained and answered 413, so the client sees the answer rather than a reset connection), decompressed when its
``Content-Encoding`` says gzip or zstd (the TypeSafe SDK compresses bodies of 1 KiB and more with zstd where it
can), and decoded strictly (a key given twice in one object is refused: :func:`scorer.core.jsonl.loads_input`)."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson

from scorer.core.errors import InputError
from scorer.core.jsonl import loads_input
from scorer.serving.http_server import Limits

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

DRAIN_FACTOR = 16
"""An oversized body is read and thrown away up to this many times ``max_body_bytes`` before the 413 (beyond that,
the connection closes under the client: reading more would let one request tie up the server)."""
ENCODINGS = ("identity", "gzip", "zstd")
"""The ``Content-Encoding`` values a body may come in."""


class Refused(Exception):
    """A request refused before scoring, with its status and message."""

    def __init__(self, status: int, exc: InputError) -> None:
        super().__init__(str(exc))
        self.status, self.exc = status, exc


def json_response(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``doc`` as an ``application/json`` response (numpy numbers as JSON numbers)."""
    from starlette.responses import Response

    return Response(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY), status, headers,
                    media_type="application/json")


async def read_body(request: Request, limits: Limits) -> bytes:
    """The request's body, decompressed, at most ``max_body_bytes`` (before and after decompression); else
    :class:`Refused` 413 once the body has been drained, 415 for an encoding not in :data:`ENCODINGS`."""
    declared = request.headers.get("content-length")
    expected = f"at most {limits.max_body_bytes} bytes per request"
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        await drain(request.stream(), limits)
        raise Refused(413, InputError("body", None, None, f"{int(declared)} bytes", expected))
    chunks: list[bytes] = []
    size = 0
    body = request.stream()
    async for chunk in body:
        size += len(chunk)
        if size > limits.max_body_bytes:
            await drain(body, limits)
            raise Refused(413, InputError("body", None, None, f"more than {limits.max_body_bytes} bytes", expected))
        chunks.append(chunk)
    return _decoded(b"".join(chunks), request.headers.get("content-encoding", "identity").strip().lower(), limits)


def _decoded(data: bytes, encoding: str, limits: Limits) -> bytes:
    """``data`` decompressed as ``encoding`` says, refusing a result over ``max_body_bytes``."""
    if encoding in ("", "identity"):
        return data
    over = InputError("body", None, None, f"more than {limits.max_body_bytes} bytes once decompressed",
                      f"at most {limits.max_body_bytes} bytes per request")
    if encoding == "gzip":
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(data, limits.max_body_bytes + 1)
        except zlib.error as exc:
            raise Refused(400, InputError("body", None, None, f"not gzip ({exc})", "a gzip body")) from None
        if len(out) > limits.max_body_bytes or d.unconsumed_tail:
            raise Refused(413, over)
        return out
    if encoding == "zstd":
        try:
            import zstandard
        except ImportError:
            raise Refused(415, InputError("body", None, None, "Content-Encoding zstd (zstandard is not installed)",
                                          "identity or gzip")) from None
        try:
            with zstandard.ZstdDecompressor().stream_reader(data) as reader:
                out = reader.read(limits.max_body_bytes + 1)
        except zstandard.ZstdError as exc:
            raise Refused(400, InputError("body", None, None, f"not zstd ({exc})", "a zstd body")) from None
        if len(out) > limits.max_body_bytes:
            raise Refused(413, over)
        return out
    raise Refused(415, InputError("body", None, None, f"Content-Encoding {encoding!r}", " or ".join(ENCODINGS)))


async def read_json(request: Request, limits: Limits) -> Any:
    """The request body as JSON (:func:`read_body`, then :func:`scorer.core.jsonl.loads_input`): 400 for a body
    that is not JSON, 422 for a key given twice (naming its path)."""
    data = await read_body(request, limits)
    try:
        return loads_input(data, "body", None, "one JSON value")
    except InputError as exc:
        raise Refused(400 if exc.field is None else 422, exc) from None


async def drain(body: AsyncIterator[bytes], limits: Limits) -> None:
    """Read the rest of a request's ``body`` stream without keeping it (at most ``DRAIN_FACTOR × max_body_bytes``;
    the body deadline of :func:`scorer.serving.http_server.bounded_protocol` bounds a slow sender)."""
    budget = DRAIN_FACTOR * limits.max_body_bytes
    async for chunk in body:
        budget -= len(chunk)
        if budget < 0:
            return
