"""A fake remote engine for ``--backend openai``: :class:`FakeEngine` is vLLM or llama.cpp's server over
``httpx.MockTransport``, serving :class:`~fakes.FakeBackend`'s logits with faults on demand; :func:`engine_backend`
puts ``--backend openai`` on it (split from ``tests/fakes.py``, whose tokenizer and logits it shares)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
from fakes import VOCAB, FakeTokenizer, char_bias, logits_for

ENGINE_URL = "http://fake-engine:8000"
"""The base URL the tests' engines answer on (no network: :attr:`FakeEngine.wire` is the transport)."""
SERVED = "smollm2-135m"
"""The model name a :class:`FakeEngine` serves by default."""
VLLM_MAX_LOGPROBS = 20
"""vLLM's default ``--max-logprobs``: a request asking for more top tokens is refused (400)."""


class FakeEngine:
    """An OpenAI-compatible inference server as an ``httpx.MockTransport`` handler (:attr:`wire`): vLLM
    (``kind="vllm"``, shapes measured on vLLM 0.32) or llama.cpp's ``llama-server`` (``kind="llamacpp"``, shapes
    read from its sources: server-context.cpp, server-task.cpp, server-schema.cpp). The logits of a prompt are
    :func:`logits_for` over :data:`VOCAB` (``bias``: per character, as :class:`FakeBackend`'s), and the engine
    computes what the real one does from them, in float32:

    * vLLM ``POST /v1/completions`` (``prompt``: token ids): the greedy token with its log-probability, and in
      ``top_logprobs`` the greedy token plus the ``logprob_token_ids`` asked for, else the top ``logprobs`` tokens
      (keys ``token_id:N`` under ``return_tokens_as_token_ids``, else the tokens' text); 404 for a model it does
      not serve, 400 past ``max_model_len`` (prompt + max_tokens) or above :data:`VLLM_MAX_LOGPROBS`.
    * llama.cpp ``POST /v1/completions``: ``n_probs`` (alias ``logprobs``) top tokens of the softmax over the raw
      logits (``top_logprobs``/``logprob``), or with ``post_sampling_probs`` the candidates left by the sampler
      chain (``logit_bias``, then ``samplers``: ``top_k`` and ``temperature``; then the softmax of ``dist``)
      as ``top_probs``/``prob``, zero probabilities dropped; 400 when the prompt fills the context.
    * ``GET /v1/models``, ``GET /version`` (vLLM) or ``GET /props`` (llama.cpp), ``POST /tokenize`` and
      ``/detokenize`` in each engine's own request and answer shape.

    Faults: :meth:`fail` (the next requests answer 503/429 with ``Retry-After``, or raise ``ConnectError``),
    :meth:`die_after` (after N completions every request is a ``ConnectError``). ``tokenizer`` is the engine's
    own (another one plays "another model"); ``served`` the model names it lists, ``owned_by`` what its
    ``/v1/models`` says (default: the kind), ``api_key`` the bearer token it requires, ``ignores`` the
    completion fields it does not know (as an older version would not). ``log`` holds every request that
    reached it: ``(method, path, body)``.
    """

    def __init__(self, kind: str = "vllm", tokenizer: FakeTokenizer | None = None,
                 bias: dict[str, float] | None = None, served: Sequence[str] = (SERVED,),
                 owned_by: str | None = None, n_ctx: int = 4096, api_key: str | None = None,
                 model_path: str = "/models/smollm2-135m.gguf", version: str | None = None,
                 ignores: Sequence[str] = ()):
        import httpx

        if kind not in ("vllm", "llamacpp"):
            raise ValueError(f"kind {kind!r} (expected vllm or llamacpp)")
        self.kind = kind
        self.tokenizer = tokenizer or FakeTokenizer()
        self.bias = char_bias(bias)
        self.served = list(served)
        self.owned_by = kind if owned_by is None else owned_by
        self.n_ctx = n_ctx
        self.api_key = api_key
        self.model_path = model_path
        self.version = version or ("0.32.0" if kind == "vllm" else "b7000-fake")
        self.ignores = set(ignores)
        self.models_answer: Any = None
        """When set: what ``GET /v1/models`` answers instead (``bytes`` as they are, else as JSON)."""
        self.log: list[tuple[str, str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.completions = 0
        """Completions answered (or being answered)."""
        self._faults: list[tuple[int | str, str | None, str | None, str | None]] = []
        self._die_after: int | None = None
        self._lock = threading.Lock()
        self._httpx = httpx
        self.wire = httpx.MockTransport(self)

    # --- faults ---------------------------------------------------------------------------------------------
    def fail(self, n: int, status: int | str = 503, retry_after: str | None = None, path: str | None = None,
             body: str | None = None) -> None:
        """The next ``n`` requests (to ``path`` only, when given) answer ``status`` (with ``Retry-After`` and
        ``body`` when given), or raise ``httpx.ConnectError`` when ``status`` is ``"connect"``."""
        with self._lock:
            self._faults += [(status, retry_after, path, body)] * n

    def die_after(self, n: int) -> None:
        """After ``n`` more completions, every request is a ``ConnectError`` (the server process is gone)."""
        with self._lock:
            self._die_after = self.completions + n

    def heal(self) -> None:
        """The engine is back: no pending fault, no death."""
        with self._lock:
            self._faults.clear()
            self._die_after = None

    def count(self, path: str) -> int:
        """Requests to ``path`` that reached the engine."""
        return sum(1 for _, p, _ in self.log if p == path)

    # --- the handler ----------------------------------------------------------------------------------------
    def __call__(self, request: Any) -> Any:
        httpx = self._httpx
        path = request.url.path
        with self._lock:
            if self._die_after is not None and self.completions >= self._die_after:
                raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
            fault = next((f for f in self._faults if f[2] in (None, path)), None)
            if fault is not None:
                self._faults.remove(fault)
            elif path == "/v1/completions":
                self.completions += 1
        if fault is not None:
            status, retry_after, _, body = fault
            if status == "connect":
                raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
            headers = {"retry-after": retry_after} if retry_after is not None else {}
            text = body if body is not None else orjson.dumps(
                {"error": {"code": status, "message": "the server is busy", "type": "unavailable_error"}}).decode()
            return httpx.Response(int(status), headers=headers, text=text)
        try:
            body = orjson.loads(request.content) if request.content else None
        except orjson.JSONDecodeError:
            return self._error(400, "invalid JSON body")
        with self._lock:
            self.log.append((request.method, path, body))
            self.headers.append(dict(request.headers))
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self._error(401, "Invalid API Key" if self.kind == "llamacpp" else "Unauthorized")
        route = {("GET", "/v1/models"): self._models, ("POST", "/tokenize"): self._tokenize,
                 ("POST", "/detokenize"): self._detokenize, ("POST", "/v1/completions"): self._completion,
                 ("GET", "/version" if self.kind == "vllm" else "/props"): self._info}.get((request.method, path))
        if route is None:
            return self._error(404, f"File Not Found: {path}")
        return route(body)

    def _json(self, value: Any, status: int = 200) -> Any:
        return self._httpx.Response(status, content=orjson.dumps(value),
                                    headers={"content-type": "application/json"})

    def _error(self, status: int, message: str) -> Any:
        return self._json({"error": {"code": status, "message": message, "type": "invalid_request_error"}}, status)

    def _piece(self, t: int) -> str:
        return self.tokenizer.decode([t])

    # --- identification and tokenizer ------------------------------------------------------------------------
    def _models(self, body: Any) -> Any:
        if self.models_answer is not None:
            if isinstance(self.models_answer, bytes):
                return self._httpx.Response(200, content=self.models_answer)
            return self._json(self.models_answer)
        if self.kind == "vllm":
            data = [{"id": name, "object": "model", "created": 1700000000, "owned_by": self.owned_by,
                     "root": "/models/smollm2-135m", "parent": None, "max_model_len": self.n_ctx,
                     "permission": [{"id": "modelperm-fake", "object": "model_permission"}]} for name in self.served]
            return self._json({"object": "list", "data": data})
        data = [{"id": name, "aliases": [], "tags": [], "object": "model", "created": 1700000000,
                 "owned_by": self.owned_by,
                 "meta": {"vocab_type": 2, "n_vocab": VOCAB, "n_ctx": self.n_ctx, "n_ctx_train": 8192}}
                for name in self.served]
        return self._json({"models": [{"name": n, "model": n} for n in self.served], "object": "list", "data": data})

    def _info(self, body: Any) -> Any:
        if self.kind == "vllm":
            return self._json({"version": self.version})
        return self._json({"default_generation_settings": {"params": {"n_probs": 0}, "n_ctx": self.n_ctx},
                           "total_slots": 4, "model_alias": self.served[0], "model_path": self.model_path,
                           "build_info": self.version, "is_sleeping": False})

    def _tokenize(self, body: dict[str, Any]) -> Any:
        if self.kind == "vllm":
            if body.get("model") not in self.served:
                return self._error(404, f"The model `{body.get('model')}` does not exist.")
            ids = self.tokenizer.encode(body["prompt"])
            return self._json({"count": len(ids), "max_model_len": self.n_ctx, "tokens": ids, "token_strs": None})
        text = body.get("content", "")
        ids = self.tokenizer.encode(text, () if body.get("parse_special", True) else [(0, len(text))])
        if body.get("with_pieces"):
            return self._json({"tokens": [{"id": t, "piece": self._piece(t)} for t in ids]})
        return self._json({"tokens": ids})

    def _detokenize(self, body: dict[str, Any]) -> Any:
        text = self.tokenizer.decode(list(body.get("tokens", [])))
        return self._json({"prompt": text} if self.kind == "vllm" else {"content": text})

    # --- completions ------------------------------------------------------------------------------------------
    def logits(self, ids: list[int]) -> np.ndarray:
        """The raw float32 logits at the position after ``ids``."""
        return logits_for(list(ids), self.bias)

    def _prompt(self, body: dict[str, Any]) -> list[int] | None:
        ids = body.get("prompt")
        if not isinstance(ids, list) or not ids or not all(type(t) is int and 0 <= t < VOCAB for t in ids):
            return None
        return ids

    def _completion(self, body: dict[str, Any]) -> Any:
        body = {k: v for k, v in body.items() if k not in self.ignores}
        ids = self._prompt(body)
        if ids is None:
            return self._error(400, "prompt: expected a non-empty list of token ids in the vocabulary")
        return self._vllm_completion(ids, body) if self.kind == "vllm" else self._llama_completion(ids, body)

    def _vllm_completion(self, ids: list[int], body: dict[str, Any]) -> Any:
        if body.get("model") not in self.served:
            return self._error(404, f"The model `{body.get('model')}` does not exist.")
        max_tokens = int(body.get("max_tokens") or 16)
        if len(ids) + max_tokens > self.n_ctx:
            return self._error(400, f"This model's maximum context length is {self.n_ctx} tokens. However, you "
                                    f"requested {len(ids) + max_tokens} tokens ({len(ids)} in the messages, "
                                    f"{max_tokens} in the completion).")
        n = body.get("logprobs")
        if n is not None and n > VLLM_MAX_LOGPROBS:
            return self._error(400, f"Requested sample logprobs of {n}, which is greater than max allowed: "
                                    f"{VLLM_MAX_LOGPROBS}")
        x = self.logits(ids)
        m = x.max()
        lp = (x - m) - np.log(np.exp(x - m).sum(dtype=np.float32))  # torch's float32 log_softmax
        greedy = int(np.argmax(x))
        logprobs = None
        if n is not None:
            asked = body.get("logprob_token_ids")
            if asked is not None and not all(type(t) is int and 0 <= t < VOCAB for t in asked):
                return self._error(400, "logprob_token_ids: token ids outside the vocabulary")
            shown = [greedy, *(asked if asked is not None else np.argsort(-x, kind="stable")[:n].tolist())]

            def name(t: int) -> str:
                return f"token_id:{t}" if body.get("return_tokens_as_token_ids") else self._piece(t)

            top: dict[str, float] = {}
            for t in shown:
                top.setdefault(name(t), float(lp[t]))
            logprobs = {"text_offset": [0], "token_logprobs": [float(lp[greedy])], "tokens": [name(greedy)],
                        "top_logprobs": [top]}
        return self._json({"id": "cmpl-fake", "object": "text_completion", "created": 1700000000,
                           "model": body["model"],
                           "choices": [{"index": 0, "text": self._piece(greedy), "logprobs": logprobs,
                                        "finish_reason": "length", "stop_reason": None}],
                           "usage": {"prompt_tokens": len(ids), "total_tokens": len(ids) + 1,
                                     "completion_tokens": 1}})

    def _llama_completion(self, ids: list[int], body: dict[str, Any]) -> Any:
        if len(ids) >= self.n_ctx:
            return self._json({"error": {"code": 400, "message": f"request ({len(ids)} tokens) exceeds the available "
                                         f"context size ({self.n_ctx} tokens), try increasing it",
                                         "type": "exceed_context_size_error", "n_prompt_tokens": len(ids),
                                         "n_ctx": self.n_ctx}}, 400)
        n_probs = int(body.get("n_probs", body.get("logprobs", 0)) or 0)
        post = bool(body.get("post_sampling_probs", False))
        x = self.logits(ids)
        # the sampler chain: logit_bias (float32 additions), the samplers in order, then dist's softmax
        cand = x.copy()
        for pair in body.get("logit_bias") or []:
            cand[int(pair[0])] += np.float32(pair[1])
        keep = np.arange(VOCAB)
        for s in body.get("samplers", ["top_k", "temperature"]):
            if s == "top_k":
                k = int(body.get("top_k", 40))
                if k > 0:
                    keep = keep[np.argsort(-cand[keep], kind="stable")[:k]]
            elif s == "temperature":
                if float(body.get("temperature", 0.8)) <= 0:
                    keep = keep[[int(np.argmax(cand[keep]))]]
            else:
                return self._error(400, f"this fake llama-server knows the samplers top_k and temperature, not {s!r}")
        c = cand[keep]
        e = np.exp(c - c.max())
        p_post = (e / e.sum(dtype=np.float32)).astype(np.float32)
        order = np.argsort(-p_post, kind="stable")
        sampled = int(keep[order[0]])
        logprobs = None
        if n_probs > 0:
            def entry(t: int, p: np.float32, key: str) -> dict[str, Any]:
                piece = self._piece(t)
                return {"id": t, "token": piece, "bytes": list(piece.encode()), key: float(p)}

            if post:
                top = [entry(int(keep[i]), p_post[i], "prob") for i in order[:n_probs] if p_post[i] != 0.0]
                first = {**entry(sampled, p_post[order[0]], "prob"), "top_probs": top}
            else:  # get_token_probabilities: the softmax over the raw logits, in float32; log(p) as it sends
                e = np.exp(x - x.max())
                p = (e / e.sum(dtype=np.float32)).astype(np.float32)

                def lg(v: np.float32) -> np.float32:
                    return np.float32(np.finfo(np.float32).min) if v == 0 else np.log(v)

                top = [entry(int(t), lg(p[t]), "logprob") for t in np.argsort(-x, kind="stable")[:n_probs]]
                first = {**entry(sampled, lg(p[sampled]), "logprob"), "top_logprobs": top}
            logprobs = {"content": [first]}
        return self._json({"choices": [{"text": self._piece(sampled), "index": 0, "logprobs": logprobs,
                                        "finish_reason": "length"}],
                           "created": 1700000000, "model": body.get("model", self.served[0]),
                           "system_fingerprint": self.version, "object": "text_completion",
                           "usage": {"completion_tokens": 1, "prompt_tokens": len(ids), "total_tokens": len(ids) + 1},
                           "id": "chatcmpl-fake"})


def fake_reference(tokenizer: FakeTokenizer | None = None, n_ctx: int | None = None) -> Any:
    """The ``--model`` side of ``--backend openai`` without a model: ``tokenizer`` as the reference tokenizer,
    :data:`VOCAB` as the vocabulary size."""
    from scorer.backends.openai_backend import Reference
    from scorer.models import store

    return Reference(store.ModelRef("local", "fake-model"), tokenizer or FakeTokenizer(),
                     {"source": "tests/fakes.py FakeTokenizer"}, VOCAB, n_ctx)


def engine_backend(engine: FakeEngine, tokenizer: FakeTokenizer | None = None, **cfg: Any) -> Any:
    """An :class:`~scorer.backends.openai_backend.OpenAIBackend` over ``engine`` (``tokenizer``: the reference's,
    default a plain :class:`FakeTokenizer`; ``cfg``: :class:`~scorer.backends.BackendConfig` fields)."""
    from scorer.backends import BackendConfig
    from scorer.backends.openai_backend import OpenAIBackend, Transport, normalize_base_url

    c = BackendConfig(**{"backend": "openai", "base_url": ENGINE_URL, **cfg})
    t = Transport(normalize_base_url(c.base_url or ""), None, c.retries, c.request_timeout_s, c.concurrency,
                  wire=engine.wire)
    return OpenAIBackend(c, transport=t, reference=fake_reference(tokenizer))
