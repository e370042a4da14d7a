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
:attr:`OpenAIBackend.concurrency` in flight, so the engine batches them. ``extend`` is refused
(:attr:`~scorer.backends.base.Backend.extends_prefixes` is false): the radix prefix cache here only remembers which
whole prefixes were sent (their ids are the local state it counts), and the engine's own cache reuses the rest.
A request refused for load (429, 503) or lost on the wire is retried with exponential backoff (honouring
``Retry-After``); an engine that stays down is an :class:`~scorer.core.errors.EngineError` (exit 1) and the run keeps
what it wrote (``--resume`` continues).

At start (before any row is scored) the engine is identified and checked: ``GET /v1/models`` (the served
model), the engine's version (vLLM ``/version``, llama.cpp ``/props``), and a tokenize probe — the engine's
own tokenizer must encode the probe prompts to the reference ids and each answer letter to the reference's
single slot token — so an engine serving another model's tokenizer is refused. Where the engine's weights are
readable here (the launcher's state file, :mod:`scorer.backends.engine_state`, or a GGUF path llama.cpp reports), their
sha256 is checked against the model named by ``--model``.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from scorer import __version__
from scorer.backends import BackendConfig, guidance
from scorer.backends.base import Backend, Grammar, Prefix
from scorer.backends.engine_state import state_for_url
from scorer.backends.gguf_check import probe_texts
from scorer.backends.openai_grammar import RemoteGrammar
from scorer.backends.openai_wire import DIALECTS, TOP_K, Dialect, EngineFacts, Transport
from scorer.core.errors import EngineError, ModelError, ValidationError
from scorer.core.hashing import sha256_file
from scorer.models import gguf_header, store
from scorer.prompting.prompt import LETTERS, Tokenizer
from scorer.prompting.tokenizer import STOP_NAMES, HFTokenizer, load_reference_tokenizer

KERNEL = "openai.engine-batch"
_SCORE_KIND = ("remote-engine conditional option score, uncalibrated: softmax over the declared options' answer-slot "
               "log-probabilities at the answer position, computed by {engine} {version} ({shape}); "
               "not a calibrated probability of correctness")


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
        self._session: list[int] | None = None
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
                       "weights": weights, "threading": _engine_threading(base), "reported": facts.raw},
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
        held = tuple(ids)  # all this side holds: the engine keeps the K/V
        return Prefix(ids=list(ids), handle=held, prefill_s=time.perf_counter() - t0, nbytes=sys.getsizeof(held))

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
        self._session = session  # what a grammar step asks the engine about (one generation at a time)
        return session, self._vector(self._d.logprobs(session, [], TOP_K))

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        session.append(int(token_id))
        return self._vector(self._d.logprobs(session, [], TOP_K))

    def decode_end(self, session: Any) -> None:
        session.clear()
        self._session = None

    def _best_allowed(self, allowed: list[int]) -> tuple[int, float]:
        """The engine's argmax among ``allowed`` after the live generation's tokens, and its full-vocabulary
        log-probability."""
        if self._session is None:
            raise ValidationError("a grammar step outside a generation (decode_start first)")
        tid = self._d.best_allowed(self._session, allowed)
        return tid, self._d.logprobs(self._session, [tid], 1)[tid]

    def stop_ids(self) -> list[int]:
        ids = set(self.tokenizer.special_ids(STOP_NAMES)) if hasattr(self.tokenizer, "special_ids") else set()
        eos = getattr(getattr(self.tokenizer, "hf", None), "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        return sorted(ids)

    def grammar(self, gbnf: str) -> Grammar:
        """llguidance over the reference tokenizer, the engine choosing among the allowed ids at each step
        (:mod:`scorer.backends.openai_grammar`); needs the reference's Hugging Face tokenizer."""

        hf = getattr(self.tokenizer, "hf", None)
        if hf is None:
            raise ModelError("grammar-constrained generation over --backend openai needs the reference's Hugging "
                             "Face tokenizer")
        t0 = time.perf_counter()
        if getattr(self, "_lltokenizer", None) is None:
            self._lltokenizer = guidance.tokenizer_from_hf(hf, self.stop_ids())
        vocab_s = time.perf_counter() - t0
        inner = guidance.LlgGrammar(self._lltokenizer, gbnf, self.n_vocab)
        inner.compile_s += vocab_s
        return RemoteGrammar(inner, self._best_allowed)

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


def _engine_threading(base: str) -> dict[str, Any] | None:
    """The engine's threads and wait policy as the launcher started it (its state's ``threading``); None for an
    engine not started by ``semif engine start`` (its threads are its own, unknown here)."""
    st = state_for_url(base)
    return st.get("threading") if st is not None else None


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
        sha = sha256_file(path)
        return {"source": "model_path reported by the engine, hashed here", "gguf_sha256": sha,
                "weights_path": str(path)}
    return {"source": "not verifiable from here (the engine's weights are not readable on this machine)",
            "reported_path": facts.model_path}
