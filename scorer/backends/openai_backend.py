"""A remote engine over the OpenAI-compatible HTTP API: vLLM or llama.cpp's server (``llama-server``).

Prompts are rendered and encoded HERE, by the reference tokenizer of ``--model`` (the very ids the torch and
llama.cpp backends score), and sent as **token ids** (``"prompt": [ids]`` of ``POST /v1/completions``), so a
record's ``prompt_sha256``/``tokens_sha256`` equal the in-process backends' row for row. The engine computes
one next-token distribution per request (``max_tokens: 1``) and returns full-vocabulary log-probabilities of
the ids asked for; nothing it generates is read. What each engine needs for that (:class:`Dialect`):

* **vLLM** (``owned_by: vllm``): ``logprob_token_ids: [slot ids]`` with ``logprobs: 1`` and
  ``return_tokens_as_token_ids``: the log-softmax over the whole vocabulary of exactly those ids, taken from
  the raw logits (the server's default ``--logprobs-mode raw_logprobs``: before temperature, penalties and
  any ``allowed_token_ids`` mask), plus the greedy token (temperature 0: the full-vocabulary argmax) with its
  own log-probability.
* **llama.cpp server** (``owned_by: llamacpp``): ``n_probs: K`` (pre-sampling, ``post_sampling_probs``
  false): the K most likely tokens of the softmax over the raw logits (``get_token_probabilities``), with
  their ids. Slots among them are exact. While no slot is among them (a model far off the format), more of
  the vocabulary is asked for (512, 8192, then all of it). A slot still outside is asked for again with
  ``post_sampling_probs`` after a ``logit_bias`` of +:data:`_LIFT` on every slot and ``top_k`` = the number
  of slots as the only sampler: the slots' probabilities relative to each other (the bias cancels in their
  softmax; float32 rounding of ``logit + bias`` bounds the error by about 1e-5), levelled by a slot whose
  absolute log-probability came back; ``allowed_token_mass`` is then exact too.

The returned logit vector holds those log-probabilities at their ids and ``-inf`` elsewhere
(:attr:`~scorer.backends.base.Backend.sparse_logits`, :attr:`~scorer.backends.base.Backend.logits_normalized`):
the option probabilities are the softmax over the slots' entries, exactly as for the other backends.

Prefix reuse is the engine's own (vLLM's automatic prefix caching, llama.cpp's ``cache_prompt``): ``prefill``
sends the prefix once so its KV blocks are cached, and a fan-out sends every suffix's request at once, at most
:attr:`OpenAIBackend.concurrency` in flight, so the engine batches them. A request refused for load (429, 503)
or lost on the wire is retried with exponential backoff (honouring ``Retry-After``); an engine that stays down
is an :class:`~scorer.errors.EngineError` (exit 1) and the run keeps what it wrote (``--resume`` continues).

At start (before any row is scored) the engine is identified and checked: ``GET /v1/models`` (the served
model), the engine's version (vLLM ``/version``, llama.cpp ``/props``), and a tokenize probe — the engine's
own tokenizer must encode the probe prompts to the reference ids and each answer letter to the reference's
single slot token — so an engine serving another model's tokenizer is refused. Where the engine's weights are
readable here (the launcher's state file, :mod:`scorer.engine_state`, or a GGUF path llama.cpp reports), their
sha256 is checked against the model named by ``--model``.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import random
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from scorer import __version__, gguf_header, store
from scorer.backends import BackendConfig
from scorer.backends.base import Backend, Grammar, Prefix
from scorer.backends.reference_tokenizer import load_reference_tokenizer
from scorer.engine_state import state_for_url
from scorer.errors import EngineError, ModelError, ValidationError
from scorer.gguf_check import probe_texts
from scorer.prompt import LETTERS, Tokenizer
from scorer.tokenizer import STOP_NAMES, HFTokenizer

KERNEL = "openai.engine-batch"
TOP_K = 20
"""Top tokens asked for besides the slots (the full-vocabulary argmax, generation's top-k)."""
_LIFT = 100.0
"""llama.cpp fallback: the bias that lifts every slot above every other token (logits of these models stay
within ±40), small enough that float32 keeps ~1e-5 of a logit's precision at ``logit + bias``."""
_RETRY_STATUS = {429, 502, 503, 504}
_SCORE_KIND = ("remote-engine conditional option score, uncalibrated: softmax over the declared options' answer-slot "
               "log-probabilities at the answer position, computed by {engine} {version} ({shape}); "
               "not a calibrated probability of correctness")


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


def normalize_base_url(url: str) -> str:
    """``http://host:port`` of ``url`` (a trailing ``/v1`` or ``/`` dropped); refused unless http(s) with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(f"--base-url {url!r} (expected http://HOST:PORT or https://HOST:PORT)")
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise ValidationError(f"--base-url {url!r}: bad port (expected 1 to 65535)") from None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return f"{parts.scheme}://{parts.netloc}{path}"


def identify(t: Transport, served: str | None) -> EngineFacts:
    """Who serves at ``t.base``: its model list, kind and version (an EngineError when it is not an engine
    this backend knows, or does not serve ``served``)."""
    models = t.call("GET", "/v1/models")
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list) or not data:
        raise EngineError(f"the engine at {t.base} lists no model at /v1/models (got {str(models)[:200]})")
    names = [str(m.get("id")) for m in data]
    if served is None:
        if len(data) != 1:
            raise EngineError(f"the engine at {t.base} serves {len(data)} models ({', '.join(names)}): "
                              "name one with --served-model")
        entry = data[0]
    else:
        entry = next((m for m in data if m.get("id") == served), None)
        if entry is None:
            raise EngineError(f"the engine at {t.base} does not serve {served!r} (it serves {', '.join(names)})")
    owner = str(entry.get("owned_by", ""))
    if owner == "vllm":
        ver = t.call("GET", "/version")
        return EngineFacts("vllm", str(ver.get("version")), str(entry["id"]), entry.get("root"),
                           entry.get("max_model_len"), {"model": _model_entry(entry), "version": ver})
    if owner == "llamacpp":
        props = t.call("GET", "/props")
        gen = props.get("default_generation_settings") or {}
        return EngineFacts("llamacpp", str(props.get("build_info", "unknown")), str(entry["id"]),
                           props.get("model_path"), gen.get("n_ctx") or props.get("n_ctx"),
                           {"model": _model_entry(entry), "props": {k: props.get(k) for k in (
                               "build_info", "model_path", "total_slots", "n_ctx")}})
    raise EngineError(f"the engine at {t.base} says its model is owned by {owner!r}; this backend knows vLLM "
                      "('vllm') and llama.cpp's server ('llamacpp')")


def _model_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """The stable part of a ``/v1/models`` entry (no creation time, no permission ids)."""
    return {k: entry.get(k) for k in ("id", "owned_by", "root", "max_model_len", "meta") if k in entry}


def check_tokenizer(d: Dialect, ref: Tokenizer) -> None:
    """The engine's tokenizer against the reference: the probe prompts (chat template, the sixteen letters,
    JSON, non-ASCII) encode to the same ids, and each letter is the reference's single slot token."""
    for text in probe_texts(ref):
        want = ref.encode(text)
        bos = getattr(ref, "bos_id_prepended", None)
        got = d.tokenize(text)
        if bos is not None and (not got or got[0] != bos):
            got = [bos, *got]
        if got != want:
            i = next((k for k, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got)))
            raise EngineError(f"the engine at {d.t.base} tokenizes a probe prompt differently from the reference "
                              f"tokenizer of this --model ({len(want)} vs {len(got)} tokens, first difference at "
                              f"position {i}: reference {want[i:i + 3]}, engine {got[i:i + 3]}): it serves another "
                              "model or tokenizer")
    for letter in LETTERS:
        ref_ids = ref.encode(letter)
        if getattr(ref, "bos_id_prepended", None) is not None:
            ref_ids = ref_ids[1:]
        got = d.tokenize(letter)
        if got != ref_ids or len(got) != 1:
            raise EngineError(f"the engine at {d.t.base} encodes the answer letter {letter!r} as {got} (the reference "
                              f"tokenizer: {ref_ids}; expected the same single token)")


@dataclass
class Reference:
    """The model ``--model`` names, as this side knows it: the reference tokenizer and the vocabulary size."""

    model: store.ModelRef
    """What ``--model`` resolved to."""
    tokenizer: Tokenizer
    """The reference tokenizer (renders and encodes every prompt)."""
    info: dict[str, Any]
    """Where the tokenizer came from (the record's ``reference_tokenizer``)."""
    n_vocab: int
    """Length of the logit vector (the model's vocabulary)."""
    n_ctx: int | None = None
    """The reference's context limit, when it states one."""


def load_reference(cfg: BackendConfig) -> Reference:
    """The reference of ``cfg.model`` (a registry key, GGUF, local folder or hub id), fetched and verified."""
    ref = store.resolve(cfg.model, cfg.revision)
    gguf_path: Path | None = None
    gguf_sha: str | None = None
    if ref.kind in ("store", "gguf"):
        gguf_path, gguf_sha = store.gguf_for(ref)
    hf_tok, tok_info = load_reference_tokenizer(ref, gguf_path, gguf_sha)
    n_ctx = int(getattr(hf_tok, "model_max_length", 0) or 0)
    return Reference(ref, HFTokenizer(hf_tok), tok_info, _vocab_size(hf_tok, gguf_path),
                     n_ctx if 0 < n_ctx < 10**7 else None)


class OpenAIBackend(Backend):
    """A model served by a remote engine. See :class:`scorer.backends.base.Backend` for the contracts."""

    name = "openai"
    kernel = KERNEL
    logits_dtype = "float32"
    sparse_logits = True
    logits_normalized = True

    def __init__(self, cfg: BackendConfig, transport: Transport | None = None,
                 reference: Reference | None = None):
        """``transport`` and ``reference``: the tests' fake engine and tokenizer (else from ``cfg``)."""
        if not cfg.base_url:
            raise ValidationError("--backend openai needs --base-url URL (the engine, e.g. http://127.0.0.1:8080)")
        base = normalize_base_url(cfg.base_url)
        key = None
        if cfg.api_key_env:
            key = os.environ.get(cfg.api_key_env)
            if not key:
                raise ValidationError(f"--api-key-env {cfg.api_key_env}: that environment variable is not set "
                                      "(expected the engine's API key in it)")
        t0 = time.perf_counter()
        ref = reference or load_reference(cfg)
        self.tokenizer = ref.tokenizer
        self.concurrency = cfg.concurrency
        self._t = transport or Transport(base, key, cfg.retries, cfg.request_timeout_s, cfg.concurrency)
        self._pool = ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="semif-openai")
        facts = identify(self._t, cfg.served_model)
        self._d: Dialect = DIALECTS[facts.kind](self._t, facts)
        self._d.n_vocab = ref.n_vocab
        check_tokenizer(self._d, self.tokenizer)
        weights = _weights_identity(facts, ref.model, base)
        self.load_s = time.perf_counter() - t0
        self.n_vocab = ref.n_vocab
        limits = [n for n in (facts.n_ctx, ref.n_ctx) if n]
        self.n_ctx = int(min(limits)) if limits else 32768
        import httpx

        self._info: dict[str, Any] = {
            "key": ref.model.key, "source": ref.model.kind, "revision": ref.model.revision,
            "gguf_sha256": weights.get("gguf_sha256"), "dtype": _dtype(facts, weights),
            "device": "remote", "backend": self.name, "n_ctx": self.n_ctx, "vocab_size": self.n_vocab,
            "logits_dtype": self.logits_dtype,
            "score_kind": _SCORE_KIND.format(engine=facts.kind, version=facts.version, shape=self._d.shape),
            "engine": {"kind": facts.kind, "version": facts.version, "base_url": base,
                       "served_model": facts.served_model, "model_path": facts.model_path,
                       "request_shape": self._d.shape, "concurrency": self.concurrency,
                       "weights": weights, "reported": facts.raw},
            "reference_tokenizer": ref.info,
            "validation": {"tokenizer": "engine's tokenize of the probe prompts and the 16 letters equals the "
                                        "reference's", "answer_slots": "checked per prompt on the reference",
                           "prompt": "token ids sent as rendered by the reference tokenizer"},
            "versions": {"semif": __version__, "python": platform.python_version(), "httpx": httpx.__version__,
                         "numpy": np.__version__, facts.kind: facts.version},
        }

    # --- kernel ------------------------------------------------------------------------------------
    def model_info(self) -> dict[str, Any]:
        info = dict(self._info)
        info["engine"] = {**info["engine"], "requests": self._t.requests, "retried": self._t.retried,
                          "slot_fallbacks": self._d.fallbacks}
        return info

    def _vector(self, values: dict[int, float]) -> np.ndarray:
        out = np.full(self.n_vocab, -np.inf, dtype=np.float32)
        for i, v in values.items():
            if 0 <= i < self.n_vocab:
                out[i] = v
        return out

    def _read(self, ids: list[int], want: Sequence[int] | None, fresh: bool = False) -> np.ndarray:
        assert want is not None  # the base class refuses a missing want for this backend
        return self._vector(self._d.logprobs(ids, want, 1, fresh))

    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        return self._read(ids, want, fresh=True)

    def _prefill(self, ids: list[int]) -> Prefix:
        t0 = time.perf_counter()
        self._d.warm(ids)
        return Prefix(ids=list(ids), handle=tuple(ids), prefill_s=time.perf_counter() - t0)

    def _score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, float]:
        return self._read(prefix.ids + suffix, want), 0.0

    def _branch(self, prefix: Prefix, part: list[list[int]]) -> None:
        return None

    def _pass(self, prefix: Prefix, branched: None, part: list[list[int]],
              wants: list[Sequence[int]] | None = None) -> list[np.ndarray]:
        assert wants is not None
        return list(self._pool.map(lambda sw: self._read(prefix.ids + sw[0], sw[1]), zip(part, wants, strict=True)))

    def _decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        session = list(ids)
        return session, self._vector(self._d.logprobs(session, [], TOP_K))

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        session.append(int(token_id))
        return self._vector(self._d.logprobs(session, [], TOP_K))

    def decode_end(self, session: Any) -> None:
        session.clear()

    def stop_ids(self) -> list[int]:
        ids = set(self.tokenizer.special_ids(STOP_NAMES)) if hasattr(self.tokenizer, "special_ids") else set()
        eos = getattr(getattr(self.tokenizer, "hf", None), "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        return sorted(ids)

    def grammar(self, gbnf: str) -> Grammar:
        raise ModelError("grammar-constrained generation is not available over --backend openai (the engine would "
                         "have to apply the grammar; use --backend torch or llamacpp for the constrained lane)")

    def _free_resources(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._t.close()


def _dtype(facts: EngineFacts, weights: dict[str, Any]) -> str:
    """What the engine computes from: llama.cpp's GGUF type (``Q4_K_M``…, from its model list), vLLM's dtype."""
    meta = (facts.raw.get("model") or {}).get("meta") or {}
    if facts.kind == "llamacpp" and isinstance(meta.get("ftype"), str):
        return str(meta["ftype"])
    return str(weights.get("dtype") or "unknown")


def _vocab_size(hf_tok: Any, gguf: Path | None) -> int:
    """Length of the logit vector: the model's vocabulary (the GGUF's token list, which counts padding
    entries the tokenizer may not), else the tokenizer's."""
    n = len(hf_tok)
    if gguf is not None:
        n = max(n, gguf_header.array_length(gguf, "tokenizer.ggml.tokens") or 0)
    return n


def _weights_identity(facts: EngineFacts, ref: store.ModelRef, base: str) -> dict[str, Any]:
    """What is known of the weights the engine serves, checked where it can be: the launcher's record of
    what it started (:mod:`scorer.engines`), else a GGUF the engine reports by a path readable here."""
    st = state_for_url(base)
    if st is not None:
        want = ref.entry.key if ref.entry else None
        if want and st.get("model_key") not in (None, want):
            raise EngineError(f"the engine at {base} was started by `semif engine start` with --model "
                              f"{st.get('model_key')}, not {want}: it serves another model")
        return {"source": "semif engine start", **{k: st.get(k) for k in (
            "model_key", "gguf_sha256", "weights_path", "weights_sha256", "dtype", "quantization")}}
    path = Path(facts.model_path) if facts.model_path else None
    if facts.kind == "llamacpp" and path is not None and path.is_file():
        # Another rung of the same model (a requantized GGUF) has the same tokenizer (checked): allowed, and
        # the sha256 of what is served is what the record carries.
        sha = store.sha256_file(path)
        return {"source": "model_path reported by the engine, hashed here", "gguf_sha256": sha,
                "weights_path": str(path)}
    return {"source": "not verifiable from here (the engine's weights are not readable on this machine)",
            "reported_path": facts.model_path}
