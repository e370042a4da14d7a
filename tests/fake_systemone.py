"""A fake TypeSafe System One server (Starlette), answering exactly the wire shapes ``typesafe-sdk==0.7.5`` expects
(/work/notes/wire-spec.md §1.7, §1.8, §4): ``GET /v1/models`` (the combined models/data body) and
``POST /v1/systemone`` (answers keyed by question name: choice ``{type, choice, confidence, probabilities}``, score
``{type, score, confidence, legend, probabilities}`` with integer-string keys, noul ``{type, noul}``; ``model`` and
``usage`` always). Probabilities are a pure function of the state, the question and the criteria, so two runs get the
same numbers. Knobs for the failure paths: a key to require (401 ``{"detail": "Invalid API key"}``), questions whose
instructions hold ``REJECT`` (a FastAPI-style 422 with a ``detail`` list), a number of 429s with ``Retry-After`` or of
503s before answering, a delay before every answer (timeouts), rounding to 4 decimals, an exact 0 per choice answer, a
choice answer missing an option.
Every request's body and headers are kept (``calls``) for the tests to look at.

Serve it with :func:`serve_helpers.live` (uvicorn on loopback in a thread).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

MODEL = "jev-test-1"


@dataclass
class Call:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeSystemOne:
    """The server's behaviour and what it saw."""

    models: list[str] = field(default_factory=lambda: [MODEL])
    api_key: str | None = None
    """Require ``Authorization: Bearer <api_key>``."""
    too_many: int = 0
    """Answer this many POSTs with 429 first."""
    retry_after: str = "0.05"
    """The 429s' ``Retry-After``."""
    unavailable: int = 0
    """Answer this many POSTs with 503 (no body) first."""
    delay_s: float = 0.0
    """Wait this long before answering a POST."""
    round4: bool = False
    """Round probabilities to 4 decimals (their sum is then not exactly 1), as some servers do."""
    zero_last: bool = False
    """Give a choice question's last criterion probability exactly 0."""
    drop_last: bool = False
    """Leave a choice answer's last criterion out of its probabilities (a broken server)."""
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def posts(self) -> list[Call]:
        return [c for c in self.calls if c.path == "/v1/systemone"]

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/models", self._models, methods=["GET"]),
                                 Route("/v1/systemone", self._systemone, methods=["POST"])])

    # --- the numbers -------------------------------------------------------------------------------------------------
    @staticmethod
    def weights(state: Any, name: str, question: dict[str, Any], n: int) -> list[float]:
        """A deterministic distribution over ``n`` options."""
        seed = orjson.dumps([state, name, question], option=orjson.OPT_SORT_KEYS)
        raw = [int.from_bytes(hashlib.sha256(seed + bytes([k])).digest()[:4], "big") / 2**32 for k in range(n)]
        e = [math.exp(3 * v) for v in raw]
        s = sum(e)
        return [v / s for v in e]

    def _round(self, p: list[float]) -> list[float]:
        return [round(v, 4) for v in p] if self.round4 else p

    def answer(self, state: Any, name: str, q: dict[str, Any]) -> dict[str, Any]:
        kind = q["type"]
        if kind == "noul":
            return {"type": "noul", "noul": self._round(self.weights(state, name, q, 2))[0]}
        crit = q["criteria"]
        n = len(crit)
        p = self.weights(state, name, q, n)
        if kind == "choice" and self.zero_last:
            p = [*[v / (1 - p[-1]) for v in p[:-1]], 0.0]
        p = self._round(p)
        top = max(range(n), key=lambda i: p[i])
        conf = (p[top] - 1 / n) / (1 - 1 / n)
        if kind == "score":
            return {"type": "score", "score": sum(i * v for i, v in enumerate(p)), "confidence": conf,
                    "legend": {str(i): c for i, c in enumerate(crit)},
                    "probabilities": {str(i): v for i, v in enumerate(p)}}
        names = list(crit)
        probs = dict(zip(names, p, strict=True))
        if self.drop_last:
            probs.pop(names[-1])
        return {"type": "choice", "choice": names[top], "confidence": conf, "probabilities": probs}

    # --- the routes --------------------------------------------------------------------------------------------------
    def _keep(self, request: Request, body: Any) -> None:
        with self.lock:
            self.calls.append(Call(request.url.path, dict(request.headers), body))

    def _auth(self, request: Request) -> Response | None:
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse({"detail": "Invalid API key"}, status_code=401)
        return None

    async def _models(self, request: Request) -> Response:
        self._keep(request, None)
        refused = self._auth(request)
        if refused is not None:
            return refused
        return JSONResponse({"object": "list",
                             "data": [{"id": m, "object": "model", "created": 1767225600, "owned_by": "fake"}
                                      for m in self.models],
                             "models": [{"name": m, "description": "A fake System One model.",
                                         "release_date": "2026-01-01"} for m in self.models]})

    async def _systemone(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self._keep(request, body)
        refused = self._auth(request)
        if refused is not None:
            return refused
        with self.lock:
            if self.unavailable:
                self.unavailable -= 1
                return Response(status_code=503)
            if self.too_many:
                self.too_many -= 1
                return JSONResponse({"error": {"message": "slow down", "type": "rate_limit"}}, status_code=429,
                                    headers={"retry-after": self.retry_after})
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if body.get("model") not in self.models:
            return JSONResponse({"message": f"Unknown model {body.get('model')!r}"}, status_code=404)
        detail = []
        for name, q in body["questions"].items():
            if "REJECT" in str(q.get("instructions")):
                detail.append({"loc": ["body", "questions", name, q["type"], "criteria"],
                               "msg": "List should have at least 1 item after validation, not 0", "type": "too_short",
                               "input": [], "ctx": {"min_length": 1}})
        if "state" not in body:
            detail.append({"loc": ["body", "state"], "msg": "Field required", "type": "missing"})
        if detail:
            return JSONResponse({"detail": detail}, status_code=422)
        answers = {name: self.answer(body["state"], name, q) for name, q in body["questions"].items()}
        return JSONResponse({"model": body["model"], "answers": answers,
                             "usage": {"input_tokens": 100 + 7 * len(answers), "output_tokens": len(answers)}},
                            headers={"x-typesafe-request-id": f"req-{len(self.calls)}"})
