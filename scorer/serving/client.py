"""An async Python client of ``semif serve``: typed decisions over HTTP, with timeouts and retries.

    from scorer.serving.client import AsyncClient

    async with AsyncClient("http://127.0.0.1:8000") as semif:
        d = await semif.decide(ticket, "Is the customer asking for a refund?",
                               {"yes": "the customer asks for money back", "no": "anything else"})
        if d.final_choice == "yes":
            ...

Answers are the service's records as :class:`~scorer.api.DecisionRecord` (the type :class:`~scorer.api.Scorer`
returns), and :meth:`AsyncClient.ask`'s are :class:`~scorer.decision.questions.Answers`, so agent code reads a local
and a
served decision the same way. Requests are JSON in the row schema (``semif-row-v1``), built as
:meth:`Scorer.decide` builds them; ``echo=`` is the request's ``?echo=`` (None: the server's ``--echo``).

Retries (``retries`` more tries, exponential backoff from ``backoff_s`` up to ``max_backoff_s``, a 503's
``Retry-After`` honoured up to ``max_backoff_s``): on a refused or dropped connection, a connect timeout, a 503
(the service's queue is full: nothing was scored) and a 408 (the body was too slow: nothing was scored).
Scoring has no side effect, so resending a decision is safe; still, a **read timeout** is not retried: the
request may be waiting in the service's queue, and a resend would only queue it twice. Every other answer
that is not 200 raises :class:`ServiceError` with the service's message, field and row at once (a 422 names
the field as ``semif score`` would). A service that cannot be reached after the retries raises
:class:`ServiceUnavailable` (an environment fault: exit 1 in a command).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterable, Mapping
from typing import Any

import httpx
import orjson

from scorer.api import DecisionRecord
from scorer.core.checks import non_negative_float, non_negative_int, positive_float
from scorer.core.errors import SemifError
from scorer.decision.questions import Answers, Choice, Question, Score, YesNo, answer_of, normalize_options
from scorer.serving.service import TOKEN_ENV

RETRY_STATUSES = frozenset({408, 503})
"""Answers after which nothing was scored, so the request is sent again."""


class ServiceError(SemifError):
    """The service answered with an error: ``status``, and its ``field`` and ``row`` when it named them."""

    def __init__(self, status: int | None, message: str, field: str | None = None, row: int | None = None) -> None:
        self.status, self.field, self.row = status, field, row
        super().__init__(message if status is None else f"semif serve answered {status}: {message}")


class ServiceUnavailable(ServiceError):
    """No answer: the service could not be reached, or stayed busy, through every retry, or did not answer within
    the timeout (an environment fault; ``status`` is the last answer's, None when there was none)."""

    exit_code = 1

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(None, message)
        self.status = status


class AsyncClient:
    """A client of one ``semif serve`` at ``base_url``; use it with ``async with`` (or call :meth:`aclose`).

    ``token``: the bearer token (default: the ``SEMIF_SERVE_TOKEN`` environment variable, as the server reads
    it). ``timeout_s``: seconds to wait for an answer (scoring included: a long batch needs a long one);
    ``connect_timeout_s``: seconds to connect. ``transport``: an ``httpx`` transport to use instead of the
    network (tests).
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8000", *, token: str | None = None, timeout_s: float = 120.0,
                 connect_timeout_s: float = 5.0, retries: int = 3, backoff_s: float = 0.2, max_backoff_s: float = 5.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.retries = non_negative_int(retries, "retries")
        self.backoff_s = non_negative_float(backoff_s, "backoff_s")
        self.max_backoff_s = non_negative_float(max_backoff_s, "max_backoff_s")
        self.timeout_s = positive_float(timeout_s, "timeout_s")
        timeout = httpx.Timeout(self.timeout_s,
                                connect=positive_float(connect_timeout_s, "connect_timeout_s"))
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
        self._http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout, transport=transport)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- decisions ------------------------------------------------------------------------------------------------
    async def decide(self, state: str | dict[str, Any] | list[Any], question: str, options: Any,
                     id: str = "decision", *, echo: bool | str | None = None, **extra: Any) -> DecisionRecord:
        """One decision, as :meth:`scorer.api.Scorer.decide` takes it (``options``: ``{id: description}`` or
        the row list form); ``extra`` fields go into the record, never into the prompt."""
        row = {"id": id, "state": state, "question": question, "options": normalize_options(options, "decision", None),
               **extra}
        return await self.decide_row(row, echo=echo)

    async def decide_row(self, row: Mapping[str, Any], *, echo: bool | str | None = None) -> DecisionRecord:
        """One row in the JSONL row schema (``POST /v1/decide``)."""
        return DecisionRecord.from_record(await self._call("POST", "/v1/decide", row, echo))

    async def decide_many(self, rows: Iterable[Mapping[str, Any]], *, echo: bool | str | None = None
                          ) -> list[DecisionRecord]:
        """Rows scored as one request (``POST /v1/decide/batch``: rows that share a state prefilled once); the
        records in input order."""
        doc = await self._call("POST", "/v1/decide/batch", {"rows": list(rows)}, echo)
        return [DecisionRecord.from_record(r) for r in doc["records"]]

    async def ask(self, state: str | dict[str, Any] | list[Any], questions: Mapping[str, Question | Mapping[str, Any]],
                  id: str | None = None, *, echo: bool | str | None = None, **extra: Any) -> Answers:
        """Named questions about one state (``POST /v1/ask``), as :meth:`scorer.api.Scorer.ask` takes them
        (``Choice``/``YesNo``/``Score`` or their JSON form): name -> typed answer."""
        wire = {name: q.row_fields() if isinstance(q, Choice | YesNo | Score) else q
                for name, q in questions.items()} if isinstance(questions, Mapping) else questions  # else: its 422
        body: dict[str, Any] = {"state": state, "questions": wire}
        if id is not None:
            body["id"] = id
        if extra:
            body["extra"] = extra
        doc = await self._call("POST", "/v1/ask", body, echo)
        return Answers({name: answer_of(rec, name) for name, rec in zip(doc["answers"], doc["records"], strict=True)})

    async def models(self) -> dict[str, Any]:
        """``GET /v1/models``: the served model's record block, the mode, the batching window and the limits."""
        doc: dict[str, Any] = await self._call("GET", "/v1/models")
        return doc

    async def health(self) -> dict[str, Any]:
        """``GET /healthz``: ``{"status": "ok", "queued": N}``."""
        doc: dict[str, Any] = await self._call("GET", "/healthz")
        return doc

    # --- the wire -------------------------------------------------------------------------------------------------
    async def _call(self, method: str, path: str, body: Any = None, echo: bool | str | None = None) -> Any:
        content = None if body is None else orjson.dumps(body)
        # ?echo= spells the API's values as text (scorer.formats.echo.QUERY_VALUES); a wrong one is the service's 422
        params = None if echo is None else {"echo": "true" if echo is True else "false" if echo is False else str(echo)}
        last = ""  # the last failure, for the message once the retries are spent
        status: int | None = None
        wait: float | None = None
        for attempt in range(self.retries + 1):
            try:
                r = await self._http.request(method, path, content=content, params=params)
            except httpx.ReadTimeout:  # the request may be queued or scoring: a resend would queue it twice
                raise ServiceUnavailable(f"{self._http.base_url} did not answer {method} {path} within "
                                         f"{self.timeout_s:g} s (not resent: it may still be queued; a long "
                                         "batch needs a longer timeout_s)") from None
            except httpx.TransportError as exc:  # refused, dropped, a connect timeout: nothing to answer, resend
                last, wait, status = f"{type(exc).__name__}: {exc}", None, None
            else:
                if r.status_code == 200:
                    return r.json()
                if r.status_code not in RETRY_STATUSES:
                    raise _service_error(r)
                last, wait, status = _service_error(r).args[0], _retry_after(r), r.status_code
            if attempt < self.retries:
                await asyncio.sleep(self._delay(attempt, wait))
        raise ServiceUnavailable(f"no answer from {self._http.base_url} after {self.retries + 1} tries ({last})",
                                 status)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before try ``attempt + 2``: the server's Retry-After, else exponential backoff with jitter (so
        clients that were refused together do not come back together); never above ``max_backoff_s``."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        return min(self.backoff_s * 2 ** attempt * (0.5 + random.random() / 2), self.max_backoff_s)


def _retry_after(r: httpx.Response) -> float | None:
    value = r.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _service_error(r: httpx.Response) -> ServiceError:
    """The service's error answer as a :class:`ServiceError` (its JSON ``{"error", "field", "row"}`` when it sent
    one; the start of the body otherwise: a proxy's page, say)."""
    try:
        doc = r.json()
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        field, row = doc.get("field"), doc.get("row")
        return ServiceError(r.status_code, doc["error"], field if isinstance(field, str) else None,
                            row if isinstance(row, int) else None)
    return ServiceError(r.status_code, r.text[:200] or r.reason_phrase)
