"""Echo asked for per call and per request (scorer/formats/echo.py): the API's ``echo=`` on every scoring method, the
service's
``?echo=`` query parameter (with and without cross-request batching), the MCP tools' ``echo`` argument, the client's
``echo=``, and ``semif serve|mcp --echo``; each gives the records the API gives for the same row and echo, and a bad
value is refused naming the field. Fake backend only."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson
import pytest
from fakes import FakeBackend
from serve_helpers import GatedBackend, live, workload_rows

from scorer import Scorer, YesNo, cli
from scorer.core.checks import OptionError
from scorer.core.errors import InputError
from scorer.formats.echo import state_sha256
from scorer.formats.records import read_records, validate_records
from scorer.serving.client import AsyncClient, ServiceError
from scorer.serving.mcp import TOOLS, call_tool
from scorer.serving.service import build_app

STATE = "Ticket 7: I was charged twice this month and I want the second payment back."
QUESTION = "Is the customer asking for a refund?"
OPTIONS = {"yes": "the customer asks for money back", "no": "anything else"}
ASK = {"refund": {"type": "yesno", "question": QUESTION},
       "team": {"type": "choice", "question": "Which team?", "options": ["billing", "tech"]}}


def _stable(rec: dict[str, Any]) -> dict[str, Any]:
    """The record without timings, its run's start and how its prefix came out of the cache (earlier calls decide
    those); with the run it names."""
    out = {k: v for k, v in rec.items() if k not in ("timing", "run", "cache", "cache_hit", "batch")}
    out["config_sha256"] = rec["run"]["config_sha256"]
    return out


def _scorer_records(echo: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a scorer made with ``echo`` gives for each row alone (the reference every entry is held to)."""
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo=echo) as s:
        return [s.decide_row(r, "body").record for r in rows]


# --- the API -------------------------------------------------------------------------------------------------------
def test_a_calls_echo_equals_a_scorer_made_with_it_and_overrides_the_scorers():
    rows = workload_rows()[:3]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as plain, \
            Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo="full") as full:
        for echo in (True, "digest", "full"):
            want = _scorer_records(echo, rows)
            assert [_stable(plain.decide_row(r, "body", echo=echo).record) for r in rows] == list(map(_stable, want))
            assert [_stable(d.record) for d in plain.decide_many(rows, echo=echo)] == [
                _stable(d.record) for d in Scorer(backend=FakeBackend(), slots="letters", echo=echo).decide_many(rows)]
        off = full.decide(STATE, QUESTION, OPTIONS, echo=False).record
        assert "echo" not in off and _stable(off) == _stable(plain.decide(STATE, QUESTION, OPTIONS).record)
        inherited = full.decide(STATE, QUESTION, OPTIONS).record  # None: the scorer's own
        assert inherited["echo"]["level"] == "full" and inherited["echo"]["state"] == STATE
        asked = plain.ask(STATE, {"refund": YesNo(QUESTION)}, echo=True)["refund"].record
        assert asked["echo"] == {"level": "digest", "question": QUESTION, "state_sha256": state_sha256(STATE),
                                 "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]}
        with pytest.raises(OptionError, match="echo: 'yes' is not one of"):
            plain.decide(STATE, QUESTION, OPTIONS, echo="yes")
        with pytest.raises(InputError) as exc:  # ask_rows cannot carry an extra field named echo: it is the option
            plain.ask_rows(STATE, {"refund": YesNo(QUESTION)}, echo="x")
        assert exc.value.field == "echo"


def test_a_calls_echo_equals_semif_score_echo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    rows = workload_rows()[:3]
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared", "--echo", "full"]) == 0
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s:
        got = [d.record for d in s.decide_many(rows, echo="full")]
    assert list(map(_stable, got)) == list(map(_stable, read_records(out)))


# --- the service ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("window_ms", [0.0, 5.0])
def test_the_services_echo_query_equals_the_api(window_ms: float):
    rows = workload_rows()[:2]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, \
            live(build_app(s, batch_window_ms=window_ms)) as url:
        for query, echo in (("true", True), ("digest", "digest"), ("full", "full")):
            r = httpx.post(f"{url}/v1/decide", params={"echo": query}, json=rows[0])
            assert r.status_code == 200, r.text
            assert _stable(r.json()) == _stable(_scorer_records(echo, rows[:1])[0])
            r = httpx.post(f"{url}/v1/decide/batch", params={"echo": query}, json={"rows": rows})
            with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo=echo) as ref:
                want = [d.record for d in ref.decide_many(rows)]
                want_ask = ref.ask(STATE, ASK, id="t7").records
            assert r.status_code == 200 and list(map(_stable, r.json()["records"])) == list(map(_stable, want))
            r = httpx.post(f"{url}/v1/ask", params={"echo": query}, json={"state": STATE, "questions": ASK, "id": "t7"})
            assert r.status_code == 200 and list(map(_stable, r.json()["records"])) == list(map(_stable, want_ask))
            validate_records(r.json()["records"])
        r = httpx.post(f"{url}/v1/decide", json=rows[0])
        assert r.status_code == 200 and "echo" not in r.json()


def test_a_request_turns_the_servers_echo_off_or_up():
    row = workload_rows()[0]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo="digest") as s, live(build_app(s)) as url:
        assert httpx.get(f"{url}/v1/models").json()["echo"] == "digest"
        default = httpx.post(f"{url}/v1/decide", json=row).json()
        off = httpx.post(f"{url}/v1/decide", params={"echo": "false"}, json=row).json()
        full = httpx.post(f"{url}/v1/decide", params={"echo": "full"}, json=row).json()
        spec = httpx.get(f"{url}/v1/schema").json()["openapi"]["paths"]
    assert default["echo"]["level"] == "digest" and "state" not in default["echo"]
    assert "echo" not in off and _stable(off) == _stable(_scorer_records(None, [row])[0])
    assert full["echo"]["state"] == row["state"]
    for path in ("/v1/decide", "/v1/decide/batch", "/v1/ask"):
        assert spec[path]["post"]["parameters"][0]["name"] == "echo"


@pytest.mark.parametrize(("params", "problem"), [
    ({"echo": "yes"}, "query: field 'echo': 'yes' is not an echo level"),
    ({"echo": "True"}, "query: field 'echo': 'True' is not an echo level"),
    ({"echo": ""}, "query: field 'echo': '' is not an echo level"),
    ([("echo", "full"), ("echo", "digest")], "query: field 'echo': given 2 times"),
])
def test_a_bad_echo_query_is_422_naming_the_field_and_nothing_is_scored(params: Any, problem: str):
    backend = FakeBackend()
    with Scorer(backend=backend, slots="letters", mode="shared") as s, live(build_app(s, batch_window_ms=5)) as url:
        for path, body in (("/v1/decide", workload_rows()[0]), ("/v1/decide/batch", {"rows": workload_rows()[:2]}),
                           ("/v1/ask", {"state": STATE, "questions": ASK})):
            r = httpx.post(f"{url}{path}", params=params, json=body)
            assert r.status_code == 422 and r.json()["field"] == "echo", r.text
            assert r.json()["error"].startswith(problem) and "Traceback" not in r.text
    assert backend.calls["prefill"] == backend.calls["fresh"] == 0


def test_batched_requests_each_get_their_own_echo_and_run():
    rows = workload_rows()[1:4]  # three questions about one state: one packed pass when batched
    levels = ["full", None, "digest"]
    backend = GatedBackend()
    with Scorer(backend=backend, slots="letters", mode="shared") as s, live(build_app(s, batch_window_ms=1)) as url, \
            ThreadPoolExecutor(4) as pool:
        head = pool.submit(httpx.post, f"{url}/v1/decide", json=workload_rows()[0], timeout=60)
        assert backend.entered.wait(30)  # the worker is held: the three below queue up and are scored together
        sent = [pool.submit(httpx.post, f"{url}/v1/decide", json=r, timeout=60,
                            params={} if lv is None else {"echo": lv}) for r, lv in zip(rows, levels, strict=True)]
        while httpx.get(f"{url}/healthz").json()["queued"] < len(rows):
            time.sleep(0.02)
        backend.gate.set()
        got = [f.result().json() for f in sent]
        assert head.result().status_code == 200
    validate_records(got)
    assert [g["batch"]["requests"] for g in got] == [3, 3, 3]
    group = ("prefix_tokens", "suffix_tokens", "prefix_sha256")  # its group's bookkeeping, not its answer
    for g, row, lv in zip(got, rows, levels, strict=True):
        alone = _scorer_records(lv, [row])[0]  # as alone: its echo, its run's hash
        assert {k: v for k, v in _stable(g).items() if k not in group} == {
            k: v for k, v in _stable(alone).items() if k not in group}


# --- MCP -----------------------------------------------------------------------------------------------------------
def test_the_mcp_tools_echo_argument_equals_the_api():
    tools = {t.name: t for t in TOOLS}
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo="digest") as s:
        for echo in (True, "digest", "full", False, None):
            args = {"state": STATE, "question": QUESTION, "options": OPTIONS, "echo": echo}
            jsonschema.Draft202012Validator(tools["decide"].input_schema).validate(args)
            got, _, err = call_tool(s, "decide", args)
            assert not err and got is not None
            with Scorer(backend=FakeBackend(), slots="letters", mode="shared", echo="digest") as ref:
                want = ref.decide(STATE, QUESTION, OPTIONS, echo=echo)
                want_ask = ref.ask(STATE, ASK, echo=echo)
            assert _stable(got["record"]) == _stable(want.record)
            jsonschema.Draft202012Validator(tools["decide"].output_schema).validate(got)
            asked, _, err = call_tool(s, "ask", {"state": STATE, "questions": ASK, "echo": echo})
            assert not err and asked is not None
            assert list(map(_stable, asked["records"])) == list(map(_stable, want_ask.records))
        models, _, _ = call_tool(s, "models", {})
    assert models is not None and models["echo"] == "digest"


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("decide", {"state": STATE, "question": QUESTION, "options": OPTIONS, "echo": "yes"},
     "decision: field 'echo': 'yes' is not an echo level"),
    ("decide", {"state": STATE, "question": QUESTION, "options": OPTIONS, "echo": 1},
     "decision: field 'echo': 1 is not an echo level"),
    ("decide", {"state": STATE, "question": QUESTION, "options": OPTIONS, "extra": {"echo": "full"}},
     "decision: field 'extra.echo': a field of the decision itself, or its echo"),
    ("ask", {"state": STATE, "questions": ASK, "echo": "loud"}, "ask: field 'echo': 'loud' is not an echo level"),
    ("ask", {"state": STATE, "questions": ASK, "extra": {"echo": True}}, "ask: field 'extra.echo'"),
])
def test_a_bad_echo_argument_is_a_tool_error_naming_the_field(tool: str, args: dict[str, Any], message: str):
    backend = FakeBackend()
    with Scorer(backend=backend, slots="letters", mode="shared") as s:
        got, text, err = call_tool(s, tool, args)
    assert err and got is None and text.startswith(message) and "Traceback" not in text, text
    assert backend.calls["prefill"] == backend.calls["fresh"] == 0


# --- the client and the command lines -------------------------------------------------------------------------------
def test_the_clients_echo_and_ask_equal_the_api():
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, live(build_app(s)) as url:
        async def go() -> tuple[Any, ...]:
            async with AsyncClient(url) as c:
                one = await c.decide(STATE, QUESTION, OPTIONS, id="t7", echo="full")
                many = await c.decide_many(workload_rows()[:2], echo=True)
                asked = await c.ask(STATE, {"refund": YesNo(QUESTION), "team": ASK["team"]}, id="t7", echo=False,
                                    ticket=7)
                try:
                    await c.decide(STATE, QUESTION, OPTIONS, echo="loud")
                except ServiceError as exc:
                    return one, many, asked, exc
                raise AssertionError("a bad echo was accepted")

        one, many, asked, bad = asyncio.run(go())
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as ref:
        assert _stable(one.record) == _stable(ref.decide(STATE, QUESTION, OPTIONS, id="t7", echo="full").record)
        assert [_stable(d.record) for d in many] == [_stable(d.record) for d in ref.decide_many(workload_rows()[:2],
                                                                                               echo=True)]
        want = ref.ask(STATE, {"refund": YesNo(QUESTION), "team": ASK["team"]}, id="t7", ticket=7)
    assert asked.to_json() == want.to_json() and list(map(_stable, asked.records)) == list(map(_stable, want.records))
    assert bad.status == 422 and bad.field == "echo"


def test_semif_serve_and_mcp_pass_echo_to_their_scorer(monkeypatch: pytest.MonkeyPatch):
    import scorer.serving.mcp as mcp_server
    import scorer.serving.service as serve

    seen: dict[str, Any] = {}
    monkeypatch.setattr(serve, "serve", lambda model, cfg: seen.update(serve=cfg.options.echo))
    monkeypatch.setattr(mcp_server, "serve_mcp", lambda model, transport, **kw: seen.update(mcp=kw["options"].echo))
    for argv, key, want in ((["serve", "--echo"], "serve", "digest"), (["serve", "--echo", "full"], "serve", "full"),
                            (["serve"], "serve", None), (["mcp", "--echo", "full"], "mcp", "full"),
                            (["mcp"], "mcp", None)):
        assert cli.main(argv) == 0
        assert seen.pop(key) == want, argv
