"""`semif mcp`: the tools (scorer/serving/mcp.py) called directly, then through the official SDK's client against a
live server over stdio and streamable HTTP (the fake backend in its own process: tests/fake_semif.py), and on the
real SmolLM2-135M. MCP's decide answers must equal the Python API's for the same question."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from fakes import FakeBackend

from scorer import Scorer, cli
from scorer.serving.mcp import TOOLS, call_tool, check_http_host, readout

ROOT = Path(__file__).resolve().parents[2]
FAKE_SEMIF = ROOT / "tests" / "fake_semif.py"
STATE = "I was charged twice for my order, please give me my money back."
QUESTION = "Is the customer asking for a refund?"
OPTIONS = {"yes": "the customer asks for money back", "no": "anything else"}
ASK = {"refund": {"type": "yesno", "question": QUESTION}}


def _stable(rec: dict[str, Any]) -> dict[str, Any]:
    # what earlier calls left in the scorer's prefix cache decides cache/cache_hit, not the answer
    return {k: v for k, v in rec.items() if k not in ("timing", "run", "cache", "cache_hit")}


def _api_answer(backend: Any, **kw: Any) -> dict[str, Any]:
    with Scorer(backend=backend, mode="shared") as s:
        return readout(s.decide(STATE, QUESTION, OPTIONS, **kw))


def _tool(name: str) -> Any:
    return next(t for t in TOOLS if t.name == name)


# --- the tools, called directly -------------------------------------------------------------------------------------
def test_decide_answers_equal_the_api_and_fit_the_output_schema():
    want = _api_answer(FakeBackend(), id="t1", ticket="T-1")
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        args = {"state": STATE, "question": QUESTION, "options": OPTIONS, "id": "t1", "extra": {"ticket": "T-1"}}
        jsonschema.Draft202012Validator(_tool("decide").input_schema).validate(args)
        got, text, err = call_tool(s, "decide", args)
        as_rows, _, _ = call_tool(s, "decide", {**args, "options": [{"id": k, "description": v}
                                                                      for k, v in OPTIONS.items()]})
    assert not err and got is not None and as_rows is not None
    jsonschema.Draft202012Validator(_tool("decide").output_schema).validate(got)
    assert {k: v for k, v in got.items() if k != "record"} == {k: v for k, v in want.items() if k != "record"}
    assert _stable(got["record"]) == _stable(want["record"]) == _stable(as_rows["record"])
    assert got["record"]["run"]["config_sha256"] == want["record"]["run"]["config_sha256"]
    assert got["record"]["extra"] == {"ticket": "T-1"} and '"record"' not in text and '"choice"' in text


def test_ask_answers_equal_the_api_and_fit_the_schemas():
    from scorer import Choice, YesNo

    questions = {"refund": {"type": "yesno", "question": QUESTION},
                 "team": {"type": "choice", "question": "Which team?", "options": ["billing", "tech"]}}
    with Scorer(backend=FakeBackend()) as s:
        want = s.ask(STATE, {"refund": YesNo(QUESTION), "team": Choice("Which team?", ["billing", "tech"])}, id="t1")
        args = {"state": STATE, "questions": questions, "id": "t1"}
        jsonschema.Draft202012Validator(_tool("ask").input_schema).validate(args)
        got, text, err = call_tool(s, "ask", args)
        bad = call_tool(s, "ask", {"state": STATE, "questions": {"team": {"type": "choice", "question": "Which?",
                                                                           "options": ["only"]}}})
    assert not err and got is not None
    jsonschema.Draft202012Validator(_tool("ask").output_schema).validate(got)
    assert got["answers"] == want.to_json() and '"records"' not in text
    assert [_stable(r) for r in got["records"]] == [_stable(r) for r in want.records]
    assert bad[2] and bad[0] is None and "questions.team" in bad[1] and "Traceback" not in bad[1]


@pytest.mark.parametrize(("args", "message"), [
    ({"state": STATE, "question": QUESTION, "options": {"a": "one"}},
     "decision: field 'options': 1 options (expected 2 to 255 options)"),
    ({"state": STATE, "options": OPTIONS}, "decision: field 'question': missing"),
    ({"state": "", "question": QUESTION, "options": OPTIONS}, "decision: field 'state'"),
    ({"state": STATE, "question": QUESTION, "options": OPTIONS, "temperature": 2},
     "decision: field 'temperature': not an argument of decide (expected state, question, options, id, extra, "
     "echo)"),
    ({"state": STATE, "question": QUESTION, "options": OPTIONS, "extra": {"state": "x"}},
     "decision: field 'extra.state': a field of the decision itself"),
    ({"state": STATE, "question": QUESTION, "options": OPTIONS, "extra": [1]},
     "decision: field 'extra': a list (expected an object)"),
])
def test_bad_arguments_are_tool_errors_naming_the_field(args, message):
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        got, text, err = call_tool(s, "decide", args)
    assert err and got is None and text.startswith(message) and "Traceback" not in text


class _Boom(FakeBackend):
    def fan_out(self, *a: Any, **k: Any) -> Any:
        raise RuntimeError("secret internals /home/user/model.bin")

    def fan_out_logprobs(self, *a: Any, **k: Any) -> Any:  # a yes/no question's words (the default readout)
        raise RuntimeError("secret internals /home/user/model.bin")


def test_unexpected_failures_and_unknown_tools_are_errors_without_internals(capsys):
    with Scorer(backend=_Boom(), mode="shared") as s:
        _, text, err = call_tool(s, "decide", {"state": STATE, "question": QUESTION, "options": OPTIONS})
        assert err and text.startswith("internal error") and "secret" not in text
        assert "secret internals" in capsys.readouterr().err
        _, text, err = call_tool(s, "vote", {})
        assert err and text == "unknown tool 'vote' (expected one of decide, ask, models)"


def test_models_names_the_model_mode_and_tools():
    with Scorer(backend=FakeBackend(), mode="serial") as s:
        got, _, err = call_tool(s, "models", {})
        bad = call_tool(s, "models", {"verbose": True})
    assert not err and got is not None
    jsonschema.Draft202012Validator(_tool("models").output_schema).validate(got)
    assert got["models"][0]["backend"] == "fake" and got["mode"] == "serial" and got["calibration"] is None
    assert got["tools"] == ["decide", "ask", "models"]
    assert bad[2] and bad[1].startswith("models: field 'verbose': not an argument of models")


def test_http_is_loopback_only_and_refused_before_the_model_loads(monkeypatch, capsys):
    import scorer.backends as backends

    check_http_host("127.0.0.1")
    check_http_host("::1")
    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("model loaded"))
    assert cli.main(["mcp", "--transport", "http", "--host", "0.0.0.0"]) == 2
    assert "is not a loopback address" in capsys.readouterr().err


def test_without_the_sdk_semif_mcp_says_what_to_install(monkeypatch, capsys):
    import scorer.backends as backends

    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the mcp extra were not installed
    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("model loaded"))
    assert cli.main(["mcp"]) == 2
    err = capsys.readouterr().err
    assert "semif mcp needs the mcp extra" in err and "pip install -e '.[mcp]'" in err and "Traceback" not in err


# --- through the SDK's client against a live server -----------------------------------------------------------------
def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


async def _exercise(session: Any) -> dict[str, Any]:
    """list the tools, decide once well and once badly, ask for the models; what each answered."""
    await session.initialize()
    listed = await session.list_tools()
    good = await session.call_tool("decide", {"state": STATE, "question": QUESTION, "options": OPTIONS, "id": "t1"})
    bad = await session.call_tool("decide", {"state": STATE, "question": QUESTION, "options": {"a": "one"}})
    models = await session.call_tool("models", {})
    asked = await session.call_tool("ask", {"state": STATE, "questions": ASK})
    return {"tools": listed.tools, "good": good, "bad": bad, "models": models, "asked": asked}


def _check_live(got: dict[str, Any], backend: Any, approx: float | None = None) -> None:
    tools = {t.name: t for t in got["tools"]}
    assert list(tools) == ["decide", "ask", "models"]
    assert tools["decide"].input_schema == _tool("decide").input_schema
    assert tools["decide"].output_schema == _tool("decide").output_schema
    good, bad = got["good"], got["bad"]
    assert not good.is_error, good.content
    want = _api_answer(backend, id="t1")
    answer = good.structured_content
    if approx is None:
        assert {k: v for k, v in answer.items() if k != "record"} == {k: v for k, v in want.items() if k != "record"}
        assert _stable(answer["record"]) == _stable(want["record"])
    else:
        assert answer["choice"] == want["choice"]
        assert answer["record"]["tokens_sha256"] == want["record"]["tokens_sha256"]
        assert answer["probabilities"] == pytest.approx(want["probabilities"], abs=approx)
    assert answer["record"]["run"]["config_sha256"] == want["record"]["run"]["config_sha256"]
    assert bad.is_error and bad.content[0].text.startswith("decision: field 'options': 1 options")
    assert not got["models"].is_error and got["models"].structured_content["tools"] == ["decide", "ask", "models"]
    asked = got["asked"]
    assert not asked.is_error, asked.content
    with Scorer(backend=backend) as s:
        want_ask = s.ask(STATE, ASK)
    answers = asked.structured_content["answers"]
    assert list(answers) == ["refund"] and answers["refund"]["final_choice"] == want_ask["refund"].final_choice
    assert [r["tokens_sha256"] for r in asked.structured_content["records"]] == [
        r["tokens_sha256"] for r in want_ask.records]


async def _over_stdio(args: list[str]) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=args, env=_env(), cwd=str(ROOT))
    with tempfile.TemporaryFile("w+") as errlog:  # the server's stderr (pytest's capture has no file descriptor)
        try:
            async with stdio_client(params, errlog) as (read, write), ClientSession(read, write) as session:
                return await _exercise(session)
        except BaseException:
            errlog.seek(0)
            print(errlog.read(), file=sys.stderr)  # shown with the failure
            raise


def test_stdio_server_answers_the_sdk_client_as_the_api_does():
    got = asyncio.run(asyncio.wait_for(_over_stdio([str(FAKE_SEMIF), "mcp"]), 120))
    _check_live(got, FakeBackend())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _http_server(args: list[str]) -> Iterator[str]:
    """``args`` (a ``semif mcp --transport http`` command) on a free loopback port; yields the endpoint URL."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, *args, "--transport", "http", "--port", str(port)], env=_env(),
                            cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert time.monotonic() < deadline, "semif mcp did not come up"
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _over_http(url: str) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
        return await _exercise(session)


def test_streamable_http_server_answers_the_sdk_client_as_the_api_does():
    with _http_server([str(FAKE_SEMIF), "mcp"]) as url:
        got = asyncio.run(asyncio.wait_for(_over_http(url), 120))
    _check_live(got, FakeBackend())


@pytest.mark.slow
def test_semif_mcp_on_smollm2_answers_as_the_api_over_both_transports(smol_torch):
    import torch

    # The same CPU threads as the in-process reference: fp32 sums in another order differ by ~1e-6.
    args = ["-m", "scorer.cli", "mcp", "--model", "smollm2-135m", "--dtype", "float32",
            "--threads", str(torch.get_num_threads())]
    _check_live(asyncio.run(asyncio.wait_for(_over_stdio(args), 600)), smol_torch, approx=1e-6)
    with _http_server(args) as url:
        _check_live(asyncio.run(asyncio.wait_for(_over_http(url), 600)), smol_torch, approx=1e-6)


# --- issue #43: messages the SDK would drop get a JSON-RPC error, over both transports -------------------------------
def _deep(levels: int) -> bytes:
    return (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"decide","arguments":{"state":'
            + b"[" * levels + b"1" + b"]" * levels + b',"question":"q","options":["a","b"]}}}')


HOSTILE: list[tuple[bytes, Any, int, str]] = [
    (_deep(1_000), 7, -32602, "nests 1003 levels"),
    (_deep(10_000), 7, -32602, "nests more than 128 levels"),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None, -32600, "is not a string or an integer"),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, -32600, "is not a string or an integer"),
    (b'{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"ask","arguments":{"state":"s","questions":'
     b'{"x":{"type":"yesno","question":"a?"},"x":{"type":"yesno","question":"b?"}}}}}', "d", -32602,
     "params.arguments.questions.x is given more than once"),
    (b'{"jsonrpc":"2.0","id":3,"method":', 3, -32700, "Parse error"),
    (b"[]", None, -32600, "an empty batch"),
]
BATCH = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},' \
        b'{"jsonrpc":"2.0","id":"b","method":"ping"}]'


def _check_error(reply: Any, rid: Any, code: int, fragment: str) -> None:
    assert reply["jsonrpc"] == "2.0" and reply["id"] == rid, reply
    assert reply["error"]["code"] == code and fragment in reply["error"]["message"], reply


def _check_batch(reply: Any) -> None:
    """One error per member with an id, none for the notification."""
    assert [r["id"] for r in reply] == [1, "b"], reply
    assert all(r["error"]["code"] == -32600 and "batches are not accepted" in r["error"]["message"] for r in reply)


def test_stdio_answers_every_message_the_sdk_would_drop_and_keeps_serving():
    """Deep arguments, a batch, ids that are not strings or integers, a repeated key and broken JSON each get a
    JSON-RPC error (with the request's id where it can be read); the next valid call is answered."""
    import select

    proc = subprocess.Popen([sys.executable, str(FAKE_SEMIF), "mcp"], env=_env(), cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def call(line: bytes) -> Any:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, f"no reply to {line[:80]!r}"
        return orjson.loads(proc.stdout.readline())

    try:
        init = call(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert init["id"] == 0 and "result" in init
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for line, rid, code, fragment in HOSTILE:
            _check_error(call(line), rid, code, fragment)
        _check_batch(call(BATCH))
        good = call(orjson.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "decide", "arguments": {"state": STATE, "question": QUESTION, "options": OPTIONS}}}))
        assert good["id"] == 9 and not good["result"]["isError"], good
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_streamable_http_answers_every_message_the_sdk_would_drop_with_400_and_keeps_serving():
    import httpx

    head = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with _http_server([str(FAKE_SEMIF), "mcp"]) as url:
        for line, rid, code, fragment in HOSTILE:
            r = httpx.post(url, content=line, headers=head, timeout=60)
            assert r.status_code == 400, (line[:80], r.status_code, r.text[:300])
            _check_error(r.json(), rid, code, fragment)
        r = httpx.post(url, content=BATCH, headers=head, timeout=60)
        assert r.status_code == 400
        _check_batch(r.json())
        r = httpx.post(url, content=b"x" * (5 * 1024 * 1024), headers=head, timeout=60)
        assert r.status_code == 413 and "at most 4194304" in r.json()["error"]["message"]
        got = asyncio.run(asyncio.wait_for(_over_http(url), 120))
    _check_live(got, FakeBackend())
