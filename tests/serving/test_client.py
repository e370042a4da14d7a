"""`scorer.serving.client.AsyncClient` against a live `semif serve` app on loopback (fake backend), and its retry rules
against scripted answers (httpx.MockTransport)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx
import pytest
from fakes import FakeBackend
from serve_helpers import live, workload_rows

from scorer import Scorer
from scorer.core.checks import OptionError
from scorer.serving.client import AsyncClient, ServiceError, ServiceUnavailable
from scorer.serving.service import build_app

OPTIONS = {"yes": "the customer asks for money back", "no": "anything else"}


def _stable(rec: dict[str, Any]) -> dict[str, Any]:
    # what earlier calls left in the scorer's prefix cache decides cache/cache_hit, not the answer
    return {k: v for k, v in rec.items() if k not in ("timing", "run", "cache", "cache_hit")}


def test_decide_decide_many_models_and_health_equal_the_api():
    rows = workload_rows()[:4]
    state, question = "I was charged twice, please refund me.", "Is the customer asking for a refund?"
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        want_one = s.decide(state, question, OPTIONS, id="t1", ticket="T-1")
        want_many = s.decide_many(rows)
        with live(build_app(s)) as url:
            async def go() -> tuple[Any, ...]:
                async with AsyncClient(url) as c:
                    return (await c.decide(state, question, OPTIONS, id="t1", ticket="T-1"),
                            await c.decide_many(rows), await c.models(), await c.health())

            one, many, models, health = asyncio.run(go())
    assert one.choice == want_one.choice and dict(one.probabilities) == dict(want_one.probabilities)
    assert _stable(one.record) == _stable(want_one.record) and one.record["extra"] == {"ticket": "T-1"}
    assert one.record["run"]["config_sha256"] == want_one.record["run"]["config_sha256"]
    assert [_stable(d.record) for d in many] == [_stable(d.record) for d in want_many]
    assert models["models"][0]["backend"] == "fake" and health == {"status": "ok", "queued": 0}


def test_a_refused_row_raises_the_services_field_message_at_once():
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(422, json={"error": "body: field 'options': 1 option (expected 2 to 255 options)",
                                         "field": "options", "row": None})

    async def go() -> None:
        async with AsyncClient("http://semif.test", transport=httpx.MockTransport(handler), retries=3) as c:
            await c.decide("s", "q?", {"a": "only one"})

    with pytest.raises(ServiceError) as e:
        asyncio.run(go())
    assert calls == 1 and e.value.status == 422 and e.value.field == "options"
    assert str(e.value) == "semif serve answered 422: body: field 'options': 1 option (expected 2 to 255 options)"


def test_a_live_422_and_401_name_what_was_wrong():
    with Scorer(backend=FakeBackend()) as s, live(build_app(s, token="s3cret")) as url:
        async def go(token: str | None) -> Any:
            async with AsyncClient(url, token=token, retries=0) as c:
                return await c.decide_row({**workload_rows()[0], "options": []})

        with pytest.raises(ServiceError) as e:
            asyncio.run(go(None))
        assert e.value.status == 401 and "bearer token" in str(e.value)
        with pytest.raises(ServiceError) as e:
            asyncio.run(go("s3cret"))
        assert e.value.status == 422 and e.value.field == "options" and "body: field 'options'" in str(e.value)


def test_busy_and_slow_body_answers_are_retried_with_retry_after():
    answers = [httpx.Response(503, headers={"retry-after": "0"}, json={"error": "busy", "field": None, "row": None}),
               httpx.Response(408, json={"error": "request body not received within 30 s"}),
               httpx.Response(200, json={"status": "ok", "queued": 0})]
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return answers[len(seen) - 1]

    async def go() -> Any:
        async with AsyncClient("http://semif.test", transport=httpx.MockTransport(handler), retries=2,
                               backoff_s=0.01) as c:
            return await c.health()

    assert asyncio.run(go()) == {"status": "ok", "queued": 0} and seen == ["/healthz"] * 3


def test_a_service_that_stays_busy_raises_unavailable_after_the_retries():
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(503, headers={"retry-after": "7"}, json={"error": "busy: 64 requests are waiting"})

    async def go() -> None:
        async with AsyncClient("http://semif.test", transport=httpx.MockTransport(handler), retries=2,
                               max_backoff_s=0.01) as c:
            await c.health()

    with pytest.raises(ServiceUnavailable) as e:
        asyncio.run(go())
    assert calls == 3 and e.value.status == 503 and e.value.exit_code == 1
    assert "after 3 tries" in str(e.value) and "busy: 64 requests are waiting" in str(e.value)


def test_a_refused_connection_is_retried_then_unavailable():
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def go() -> None:
        async with AsyncClient(f"http://127.0.0.1:{port}", retries=1, backoff_s=0.01) as c:
            await c.models()

    with pytest.raises(ServiceUnavailable, match=r"after 2 tries \(ConnectError"):
        asyncio.run(go())


def test_a_read_timeout_is_not_resent():
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ReadTimeout("timed out", request=request)

    async def go() -> None:
        async with AsyncClient("http://semif.test", transport=httpx.MockTransport(handler), retries=3,
                               timeout_s=2) as c:
            await c.decide_row(workload_rows()[0])

    with pytest.raises(ServiceUnavailable, match="did not answer POST /v1/decide within 2 s"):
        asyncio.run(go())
    assert calls == 1


def test_options_are_checked_by_the_api_rules():
    with pytest.raises(OptionError, match="retries: -1 is not an integer >= 0"):
        AsyncClient(retries=-1)
    with pytest.raises(OptionError, match="timeout_s: 0 is not a finite number > 0"):
        AsyncClient(timeout_s=0)
