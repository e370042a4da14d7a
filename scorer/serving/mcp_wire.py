"""The JSON-RPC gate in front of ``semif mcp``'s transports: every message the MCP SDK would drop without a word
gets the error response JSON-RPC 2.0 asks for, so a client never waits for an answer that will not come.

The SDK (``mcp`` 2.3.0) turns a line it cannot validate into an exception that its session only logs, and a request
whose ``id`` is not a string or an integer into a notification, which has no answer. So before a message reaches
it, :func:`check_message` judges the raw bytes:

* not JSON → ``-32700`` (parse error), with the request's ``id`` when it can still be read;
* an array (a JSON-RPC batch, which MCP does not take since its 2025-06-18 revision) → a batch response: one
  ``-32600`` error per member that has an ``id``; an empty array → one ``-32600`` error;
* an ``id`` that is null, a float, a boolean, an object or an array (MCP: a string or an integer) → ``-32600``,
  ``id`` null (the one it sent cannot be echoed);
* nesting deeper than :data:`MAX_MESSAGE_DEPTH` (past what the SDK's parser takes) or a key given twice in one
  object (a parser would keep the last one and silently lose the others) → ``-32602`` (invalid params) naming the
  JSON path, with the request's ``id``.

Anything else passes unchanged. :func:`gated_stdio` runs the SDK's stdio transport on streams that go through the
gate; the streamable HTTP transport answers the same refusals with HTTP 400 (:func:`gate_http`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson

from scorer.core.jsonl import repeated_key
from scorer.formats.rows import json_depth

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
MAX_MESSAGE_DEPTH = 128
"""Deepest nesting of a message's arrays/objects passed on (the SDK's parser refuses from about 200 levels on;
arguments are held to :data:`scorer.formats.rows.MAX_DEPTH` by the tools themselves)."""
Reply = dict[str, Any] | list[dict[str, Any]]


def error(rid: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response."""
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _valid_id(rid: Any) -> bool:
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))


def _string_end(data: bytes, i: int) -> int:
    """The index just past the JSON string that opens at ``data[i]`` (``len(data)`` when it never closes)."""
    i += 1
    while i < len(data):
        c = data[i]
        if c == 0x5C:  # backslash: skip the escaped character
            i += 2
            continue
        if c == 0x22:
            return i + 1
        i += 1
    return len(data)


def top_level_id(data: bytes) -> Any:
    """The value of the top-level object's ``id`` member of a document too deep (or too broken) to decode whole,
    read by a scan that only tracks strings and nesting; None when there is none or it is not a plain value."""
    depth, i, n = 0, 0, len(data)
    while i < n:
        c = data[i]
        if c == 0x22:
            end = _string_end(data, i)
            j = end
            while j < n and data[j] in b" \t\r\n":
                j += 1
            if depth == 1 and j < n and data[j] == 0x3A and data[i:end] == b'"id"':  # the key "id", then ':'
                k = j + 1
                while k < n and data[k] in b" \t\r\n":
                    k += 1
                stop = _string_end(data, k) if k < n and data[k] == 0x22 else k
                while stop < n and data[stop] not in b",}] \t\r\n":
                    stop += 1
                try:
                    return orjson.loads(data[k:stop])
                except orjson.JSONDecodeError:
                    return None
            i = end
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
        i += 1
    return None


def _member(value: Any) -> dict[str, Any] | None:
    """A batch member's error response (None for a notification, which gets none)."""
    if isinstance(value, dict) and "id" not in value:
        return None
    rid = value.get("id") if isinstance(value, dict) else None
    return error(rid if _valid_id(rid) else None, INVALID_REQUEST,
                 "Invalid Request: JSON-RPC batches are not accepted (MCP takes one message per line since its "
                 "2025-06-18 revision); send each request on its own")


def check_message(data: bytes) -> Reply | None:
    """The error response(s) for one raw message the SDK would drop, or None to pass it on (module docstring).
    A refused batch made only of notifications gets an empty list (nothing to send)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        rid = top_level_id(data)
        rid = rid if _valid_id(rid) else None
        if "depth limit" in str(exc) or "recursion" in str(exc):
            return error(rid, INVALID_PARAMS, f"Invalid params: the message nests more than {MAX_MESSAGE_DEPTH} "
                                              "levels of arrays/objects")
        return error(rid, PARSE_ERROR, f"Parse error: not JSON ({exc})")
    if isinstance(doc, list):
        if not doc:
            return error(None, INVALID_REQUEST, "Invalid Request: an empty batch")
        return [r for r in map(_member, doc) if r is not None]
    if not isinstance(doc, dict):
        return error(None, INVALID_REQUEST, f"Invalid Request: a JSON {type(doc).__name__}, not a request object")
    if "id" in doc and not _valid_id(doc["id"]):
        return error(None, INVALID_REQUEST, f"Invalid Request: the id {orjson.dumps(doc['id']).decode()[:80]} is "
                                            "not a string or an integer (MCP requests carry one of those)")
    rid = doc.get("id")
    depth = json_depth(doc)
    if depth > MAX_MESSAGE_DEPTH:
        return error(rid, INVALID_PARAMS, f"Invalid params: the message nests {depth} levels of arrays/objects "
                                          f"(at most {MAX_MESSAGE_DEPTH})")
    path = repeated_key(data)
    if path is not None:
        return error(rid, INVALID_PARAMS, f"Invalid params: the key {path} is given more than once in its object "
                                          "(each key once per object)")
    return None


def reply_bytes(reply: Reply) -> bytes:
    return orjson.dumps(reply)


class _GatedLines:
    """The client's lines as the SDK's stdio reader iterates them, minus those :func:`check_message` refuses,
    which are answered on ``out`` instead."""

    def __init__(self, lines: Any, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._lines, self._send = lines, send

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            reply = check_message(line.encode("utf-8", "replace"))
            if reply is None:
                yield line
            elif reply:
                await self._send(reply_bytes(reply))


class _SerialWriter:
    """The wire's stdout shared by the SDK's writer and the gate: one whole line at a time."""

    def __init__(self, out: Any) -> None:
        import anyio

        self._out, self._lock = out, anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._out.write(text)
            await self._out.flush()

    async def flush(self) -> None:
        return None

    async def send(self, line: bytes) -> None:
        await self.write(line.decode() + "\n")


@asynccontextmanager
async def gated_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server`` on this process's stdin/stdout, read through the gate. While it serves, fd 1 points
    at stderr (a library that prints cannot corrupt the protocol) and fd 0 at the null device, as the SDK's own
    claim does; both are restored on exit."""
    import io

    import anyio
    from mcp.server.stdio import stdio_server

    wire_in, wire_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    os.dup2(2, 1)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_in, "rb", closefd=False), encoding="utf-8",
                                                 errors="replace"))
        stdout = _SerialWriter(anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False),
                                                                encoding="utf-8")))
        async with stdio_server(_GatedLines(stdin, stdout.send), stdout) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        os.close(wire_out)
        os.close(wire_in)


def gate_http(app: Any, path: str, max_body_bytes: int) -> Any:
    """``app`` (the SDK's streamable HTTP app) behind the gate: a POST to ``path`` whose body :func:`check_message`
    refuses answers HTTP 400 with the JSON-RPC error response(s), one over ``max_body_bytes`` HTTP 413 (once it is
    read: the client gets the answer, not a reset); every other request goes through unchanged."""

    async def gated(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != path:
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await app(scope, receive, send)
                return
            size += len(message.get("body", b""))
            if size <= max_body_bytes:
                chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if size > max_body_bytes:
            await _answer(send, 413, error(None, INVALID_REQUEST, f"Invalid Request: a body of {size} bytes (at "
                                                                   f"most {max_body_bytes})"))
            return
        reply = check_message(body)
        if reply is None:
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return dict(await receive())

            await app(scope, replay, send)
            return
        await _answer(send, 400 if reply else 202, reply)

    return gated


async def _answer(send: Any, status: int, reply: Reply) -> None:
    payload = reply_bytes(reply) if reply else b""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
