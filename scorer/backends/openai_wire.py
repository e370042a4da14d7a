"""The wire to a remote engine: HTTP with bounded retries (:class:`Transport`), what an engine says about itself
(:class:`EngineFacts`), and per engine the request shape that returns exact full-vocabulary log-probabilities of
chosen token ids (:class:`Dialect`: vLLM, llama.cpp's server). :mod:`scorer.backends.openai_backend` is the
backend over it; its docstring says what each shape computes and why it is exact.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scorer.core.errors import EngineError

TOP_K = 20
"""Top tokens asked for besides the slots (the full-vocabulary argmax, generation's top-k)."""
_LIFT = 100.0
"""llama.cpp fallback: the bias that lifts every slot above every other token (logits of these models stay
within ±40), small enough that float32 keeps ~1e-5 of a logit's precision at ``logit + bias``."""
_RETRY_STATUS = {429, 502, 503, 504}


class Transport:
    """HTTP to one engine with bounded retries: what every request of the backend goes through."""

    def __init__(self, base_url: str, api_key: str | None, retries: int, timeout_s: float, concurrency: int,
                 wire: Any = None):
        """``wire``: an ``httpx`` transport to use instead of the network (the tests' fake engines)."""
        import httpx

        self.base = base_url
        self.retries = retries
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=concurrency + 2, max_keepalive_connections=concurrency + 2)
        self._client = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s, limits=limits,
                                    transport=wire)
        self._httpx = httpx
        self.requests = 0
        self.retried = 0
        self._lock = threading.Lock()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, tries: int | None = None) -> Any:
        """The JSON answer of one request; retried on 429/5xx-busy/connection errors, else an EngineError."""
        httpx = self._httpx
        attempts = (self.retries if tries is None else tries) + 1
        last = ""
        for attempt in range(attempts):
            if attempt:
                with self._lock:
                    self.retried += 1
            try:
                r = self._client.request(method, path, json=body)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {_one_line(str(exc), 200)}"
                self._backoff(attempt, None)
                continue
            with self._lock:
                self.requests += 1
            if r.status_code in _RETRY_STATUS:
                last = f"HTTP {r.status_code}: {_one_line(r.text, 200)}"
                self._backoff(attempt, r.headers.get("retry-after"))
                continue
            if r.status_code >= 400:
                raise EngineError(f"the engine at {self.base} refused {method} {path}: HTTP {r.status_code}: "
                                  f"{_one_line(r.text, 400)}")
            try:
                return r.json()
            except ValueError:
                raise EngineError(f"the engine at {self.base} answered {method} {path} with non-JSON: "
                                  f"{_one_line(r.text, 200)!r}") from None
        raise EngineError(f"the engine at {self.base} did not answer {method} {path} after {attempts} tries "
                          f"({last}); is it running? (`semif engine status`) — records written so far are kept, "
                          "continue with --resume")

    def _backoff(self, attempt: int, retry_after: str | None) -> None:
        if attempt + 1 >= self.retries + 1:
            return
        wait = min(8.0, 0.25 * 2 ** attempt) * (0.5 + random.random() / 2)
        if retry_after:
            with contextlib.suppress(ValueError):  # an HTTP date instead of seconds: keep the backoff
                wait = min(30.0, max(wait, float(retry_after)))
        time.sleep(wait)

    def close(self) -> None:
        self._client.close()


def _one_line(text: str, n: int) -> str:
    """The first ``n`` characters of an answer's text, its whitespace runs (newlines of an HTML error page)
    collapsed: an error message stays one line."""
    return " ".join(text.split())[:n]


@dataclass
class EngineFacts:
    """What the engine says about itself (``/v1/models`` and its own info endpoint)."""

    kind: str
    """``vllm`` or ``llamacpp``."""
    version: str
    """The engine's version string (vLLM's ``/version``; llama.cpp's ``build_info``)."""
    served_model: str
    """The model name requests must carry."""
    model_path: str | None
    """Where the engine loaded its weights from, as it reports it (vLLM's ``root``, llama.cpp's ``model_path``)."""
    n_ctx: int | None
    """The engine's context length per sequence."""
    raw: dict[str, Any]
    """The answers, as received (kept in the model block)."""


class Dialect(ABC):
    """How one engine returns exact log-probabilities of chosen token ids, and tokenizes a probe."""

    kind: str
    shape: str
    """The request shape, in words (goes into ``score_kind``)."""

    def __init__(self, t: Transport, facts: EngineFacts):
        self.t = t
        self.facts = facts
        self.fallbacks = 0
        self.n_vocab: int | None = None
        """The model's vocabulary size (set by the backend once its reference is known)."""
        self._lock = threading.Lock()

    def count_fallback(self) -> None:
        with self._lock:  # fan-out requests run on several threads
            self.fallbacks += 1

    @abstractmethod
    def logprobs(self, ids: list[int], want: Sequence[int], top: int, fresh: bool = False) -> dict[int, float]:
        """Full-vocabulary log-probabilities at the position after ``ids``: every id of ``want`` and the top
        ``top`` tokens (at least the argmax). ``fresh``: computed from an empty state, reusing no cached prefix
        (direct mode and the exact policy's re-scores: a result that does not depend on what ran before)."""

    @abstractmethod
    def best_allowed(self, ids: list[int], allowed: Sequence[int]) -> int:
        """The most likely token among ``allowed`` at the position after ``ids`` (a grammar's next step): the
        argmax of the raw logits over those ids, computed by the engine."""

    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """The engine's own ids of ``text`` (special tokens parsed, nothing added)."""

    @abstractmethod
    def piece(self, token_id: int) -> str:
        """The text the engine renders ``token_id`` to."""

    def warm(self, ids: list[int]) -> None:
        """Have the engine compute and cache the KV state of ``ids`` (a one-token request)."""
        self.t.call("POST", "/v1/completions", {"model": self.facts.served_model, "prompt": ids, "max_tokens": 1,
                                                 "temperature": 0.0, **self.cache_fields()})

    def cache_fields(self) -> dict[str, Any]:
        return {}


class VLLMDialect(Dialect):
    kind = "vllm"
    shape = "/v1/completions with logprob_token_ids = the slots, logprobs 1, raw_logprobs"

    def logprobs(self, ids: list[int], want: Sequence[int], top: int, fresh: bool = False) -> dict[int, float]:
        out: dict[int, float] = {}
        base: dict[str, Any] = {"model": self.facts.served_model, "prompt": ids, "max_tokens": 1, "temperature": 0.0,
                                "return_tokens_as_token_ids": True}
        if fresh:  # a salt no other request carries: vLLM's prefix cache cannot serve any block of this one
            base["cache_salt"] = uuid.uuid4().hex
        if want:
            lp = _first_logprobs(self.t.call("POST", "/v1/completions", {
                **base, "logprobs": 1, "logprob_token_ids": list(want)}), self.t.base)
            out.update(self._entries(lp))
            missing = [w for w in want if w not in out]
            if missing:
                raise EngineError(f"vLLM at {self.t.base} returned no log-probability for token ids {missing} "
                                  "(expected every id of logprob_token_ids; is this vLLM older than 0.32?)")
        if not want or top > 1:  # the natural top-k (generation); a cache hit after the first request
            lp = _first_logprobs(self.t.call("POST", "/v1/completions", {**base, "logprobs": top}), self.t.base)
            for k, v in self._entries(lp).items():
                out.setdefault(k, v)
        return out

    def best_allowed(self, ids: list[int], allowed: Sequence[int]) -> int:
        # allowed_token_ids masks the logits before sampling; temperature 0 samples the argmax among them.
        lp = _first_logprobs(self.t.call("POST", "/v1/completions", {
            "model": self.facts.served_model, "prompt": ids, "max_tokens": 1, "temperature": 0.0, "logprobs": 1,
            "allowed_token_ids": [int(a) for a in allowed], "return_tokens_as_token_ids": True}), self.t.base)
        tokens = lp.get("tokens") or []
        if not tokens:
            raise EngineError(f"vLLM at {self.t.base} returned no token for an allowed_token_ids request")
        tid = _token_id(tokens[0], self.t.base)
        if tid not in set(int(a) for a in allowed):
            raise EngineError(f"vLLM at {self.t.base} chose token {tid} outside allowed_token_ids")
        return tid

    def _entries(self, lp: dict[str, Any]) -> dict[int, float]:
        """The asked-for ids and the greedy (temperature 0: argmax) token, by id."""
        out = {_token_id(key, self.t.base): float(v) for key, v in ((lp.get("top_logprobs") or [{}])[0] or {}).items()}
        tokens, values = lp.get("tokens") or [], lp.get("token_logprobs") or []
        if tokens and values and values[0] is not None:
            out.setdefault(_token_id(tokens[0], self.t.base), float(values[0]))
        return out

    def tokenize(self, text: str) -> list[int]:
        ans = self.t.call("POST", "/tokenize", {"model": self.facts.served_model, "prompt": text,
                                                 "add_special_tokens": False})
        return [int(x) for x in ans["tokens"]]

    def piece(self, token_id: int) -> str:
        ans = self.t.call("POST", "/detokenize", {"model": self.facts.served_model, "tokens": [token_id]})
        return str(ans.get("prompt", ""))


class LlamaServerDialect(Dialect):
    kind = "llamacpp"
    shape = (f"/v1/completions with n_probs {TOP_K} over the raw logits (pre-sampling; more of the vocabulary while no "
             f"slot is among them); a slot outside them: post_sampling_probs after logit_bias +{_LIFT:g} on the "
             "slots and top_k = the slots, levelled by a slot that is")

    def cache_fields(self) -> dict[str, Any]:
        return {"cache_prompt": True}

    def _ask(self, ids: list[int], post_sampling_probs: bool, fresh: bool = False, **fields: Any) -> dict[int, float]:
        """The log-probabilities of the top tokens one request returns, by id. llama-server sends them as
        ``top_logprobs`` with ``logprob`` (over the raw logits), but after the sampler chain
        (``post_sampling_probs``) as ``top_probs`` with ``prob``, a probability (server-task.cpp,
        ``probs_vector_to_json``), zero probabilities left out."""
        body = {"model": self.facts.served_model, "prompt": ids, "max_tokens": 1, "temperature": 0.0,
                "cache_prompt": not fresh, "post_sampling_probs": post_sampling_probs, **fields}
        lp = _first_logprobs(self.t.call("POST", "/v1/completions", body), self.t.base)
        content = lp.get("content")
        if not isinstance(content, list) or not content:
            raise EngineError(f"llama.cpp at {self.t.base} returned no per-token probabilities (got {str(lp)[:200]})")
        first = content[0]
        if post_sampling_probs:
            return {int(e["id"]): math.log(float(e["prob"])) for e in first.get("top_probs") or []
                    if float(e["prob"]) > 0.0}
        return {int(e["id"]): float(e["logprob"]) for e in first.get("top_logprobs") or []}

    def logprobs(self, ids: list[int], want: Sequence[int], top: int, fresh: bool = False) -> dict[int, float]:
        # With cache_prompt a slot reuses whatever prefix it last held, so a "direct" request would depend on the
        # requests before it (measured: p moved by 0.06 between two runs of the same rows): fresh ones opt out.
        # The top tokens first (the common case: the declared slots are among them); a request for more of the
        # vocabulary only while no slot is among them (a model far off the format), up to all of it.
        out: dict[int, float] = {}
        for k in self._ladder(max(top, TOP_K)):
            out = self._ask(ids, False, fresh, n_probs=k)
            if not want or any(w in out for w in want):
                break
        missing = [w for w in want if w not in out]
        if not missing:
            return out
        self.count_fallback()
        slots = list(dict.fromkeys(want))
        rel = self._ask(ids, True, fresh, n_probs=len(slots), samplers=["top_k"], top_k=len(slots),
                        logit_bias=[[s, _LIFT] for s in slots])
        if set(rel) != set(slots):
            raise EngineError(f"llama.cpp at {self.t.base}: the slot-restricted request returned ids {sorted(rel)} "
                              f"for the slots {slots} (expected exactly the slots)")
        known = [s for s in slots if s in out]
        if not known:
            raise EngineError(f"llama.cpp at {self.t.base} returned none of the slot ids {slots} among its whole "
                              f"vocabulary's probabilities ({len(out)} returned; expected {self.n_vocab})")
        shift = out[known[0]] - rel[known[0]]  # one slot's absolute log-probability fixes the level of all
        for s in slots:
            out.setdefault(s, rel[s] + shift)
        return out

    def best_allowed(self, ids: list[int], allowed: Sequence[int]) -> int:
        # The allowed ids lifted above every other token, top_k = 1: the candidate left is their argmax (the lift
        # is the same for all of them, so their order is the raw logits' order).
        ask = sorted({int(a) for a in allowed})
        got = self._ask(ids, True, False, n_probs=1, samplers=["top_k"], top_k=1,
                        logit_bias=[[a, _LIFT] for a in ask])
        if len(got) != 1 or next(iter(got)) not in set(ask):
            raise EngineError(f"llama.cpp at {self.t.base}: the grammar-restricted request returned {sorted(got)} "
                              "(expected one of the allowed ids)")
        return next(iter(got))

    def _ladder(self, first: int) -> list[int]:
        steps = [first, 512, 8192]
        if self.n_vocab:
            steps = [k for k in steps if k < self.n_vocab] + [self.n_vocab]
        return steps

    def tokenize(self, text: str) -> list[int]:
        ans = self.t.call("POST", "/tokenize", {"content": text, "add_special": False, "parse_special": True})
        return [int(x if not isinstance(x, dict) else x["id"]) for x in ans["tokens"]]

    def piece(self, token_id: int) -> str:
        return str(self.t.call("POST", "/detokenize", {"tokens": [token_id]}).get("content", ""))


DIALECTS: dict[str, type[Dialect]] = {"vllm": VLLMDialect, "llamacpp": LlamaServerDialect}


def _first_logprobs(ans: Any, base: str) -> dict[str, Any]:
    try:
        lp = ans["choices"][0]["logprobs"]
    except (KeyError, IndexError, TypeError):
        raise EngineError(f"the engine at {base} answered without choices[0].logprobs: {str(ans)[:300]}") from None
    if not isinstance(lp, dict):
        raise EngineError(f"the engine at {base} returned no logprobs (got {lp!r})")
    return lp


def _token_id(key: Any, base: str) -> int:
    """vLLM's ``return_tokens_as_token_ids`` keys: ``token_id:123``."""
    if isinstance(key, str) and key.startswith("token_id:") and key[9:].isdigit():
        return int(key[9:])
    raise EngineError(f"the engine at {base} named a token {key!r} (expected 'token_id:N'; "
                      "return_tokens_as_token_ids was not honoured)")
