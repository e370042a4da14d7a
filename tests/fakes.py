"""The tests' shared fakes (the one module tests import them from): no weights, deterministic.

``FakeTokenizer`` is character-level (so answer letters are single tokens and boundaries are stable)
with a few special tokens and a ChatML-like template; ``merges`` adds multi-character tokens to
imitate BPE merges across boundaries, and ``broken`` breaks one slot rule on purpose.
``FakeBackend`` derives from :class:`scorer.backends.base.Backend` (``tests/test_backend_contract.py``
holds it to the contract) with logits that are a pure function of the token ids (so prefix reuse is
exact unless ``drift`` is set; every position of a pass too, for ``--slots sequence``), and generation that
follows a script (to emit, e.g., a broken JSON array).
``SlowFakeBackend`` makes its kernel calls take wall time; ``NearTieBackend`` builds near-ties that flip
under the fast path's noise (with :func:`decision_rows` and :func:`write_rows` for its workloads).
``FakeEngine`` is a remote engine (vLLM or llama.cpp's server over ``httpx.MockTransport``) serving the same
logits, with faults on demand; :func:`engine_backend` puts ``--backend openai`` on it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scorer.backends.base import Backend, FanOutTiming, Prefix
from scorer.schema import Decision, parse_decision

SPECIALS = ["<pad>", "<bos>", "<|im_start|>", "<|im_end|>", "<eos>"]  # each starts with "<" (encode relies on it)
_BASE = 16
VOCAB = _BASE + 4096 + 64  # chars with ord < 4096, then merge tokens


class FakeTokenizer:
    """Character tokenizer with ChatML-like template. ``merges``: extra multi-char tokens (BPE-like)."""

    def __init__(self, merges: list[str] | None = None, broken: str | None = None, template: bool = True):
        self.merges = sorted(merges or [], key=len, reverse=True)
        self.broken = broken  # "multi" | "decode" | "collide" | "boundary"
        self.has_template = template
        self.bos_id_prepended = None

    @property
    def template_name(self) -> str:
        return "chat" if self.has_template else "semif-plain"

    def _merge_id(self, m: str) -> int:
        return _BASE + 4096 + sorted(self.merges).index(m)

    def encode(self, text: str, plain: Sequence[tuple[int, int]] = ()) -> list[int]:
        ids: list[int] = []
        i = 0
        # Per character: inside user content? (Scanning the spans at every character made this fake the slowest
        # part of the service tests on a loaded machine: 42 shape rows took over httpx's 5 s.)
        plain_at = bytearray(len(text))
        for a, b in plain:
            lo, hi = max(a, 0), min(b, len(text))
            if hi > lo:
                plain_at[lo:hi] = b"\x01" * (hi - lo)
        while i < len(text):
            in_plain = bool(plain_at[i])  # user content: special strings stay characters
            for j, sp in enumerate(SPECIALS if text[i] == "<" else ()):  # every special starts with "<"
                if not in_plain and text.startswith(sp, i):
                    ids.append(j)
                    i += len(sp)
                    break
            else:
                for m in self.merges:
                    if text.startswith(m, i):
                        ids.append(self._merge_id(m))
                        i += len(m)
                        break
                else:
                    c = text[i]
                    if self.broken == "multi" and c == "B":
                        ids += [ord("B") + _BASE, ord("B") + _BASE]
                    elif self.broken == "collide" and c == "B":
                        ids.append(ord("A") + _BASE)
                    else:
                        ids.append(ord(c) + _BASE if ord(c) < 4096 else 15)
                    i += 1
        if self.broken == "boundary" and len(text) > 1 and text[-1] in "AB" and text[-2] == "\n":
            ids[-2:] = [ids[-2] + 1, ids[-1]]  # appending a letter changes the previous token
        return ids

    def decode(self, ids: list[int]) -> str:
        out = []
        for t in ids:
            if t < len(SPECIALS):
                out.append(SPECIALS[t])
            elif t >= _BASE + 4096:
                k = t - _BASE - 4096
                out.append(sorted(self.merges)[k] if k < len(self.merges) else f"<m{k}>")
            elif t >= _BASE:
                c = chr(t - _BASE)
                out.append("b" if self.broken == "decode" and c == "B" else c)
            else:
                out.append("\ufffd")
        return "".join(out)

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        if not self.has_template:
            from scorer.prompt import plain_render

            return plain_render(messages, add_generation_prompt)
        s = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return s + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def special_ids(self, names: list[str]) -> list[int]:
        return [SPECIALS.index(n) for n in names if n in SPECIALS]


def _h(ids: list[int]) -> int:
    """A stable 64-bit hash of token ids (the fake's logits are seeded by it)."""
    return int.from_bytes(hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).digest()[:8], "little")


def _logits_for(ids: list[int], bias: dict[int, float]) -> np.ndarray:
    out = np.random.default_rng(_h(ids)).normal(0.0, 1.0, VOCAB).astype(np.float32)
    for t, b in bias.items():
        out[t] += b
    return out


FAKE_STATE_BYTES = 1000
"""Bytes the fake says it holds per prefix token (a prefix state's ``nbytes``)."""


class FakeBackend(Backend):
    """Deterministic backend: logits = f(token ids). ``drift`` adds reuse-path noise of that size;
    ``script`` is the text greedy generation emits (then end-of-turn). Prefix states are their token ids
    (:data:`FAKE_STATE_BYTES` bytes per token); ``extend`` continues and cuts them."""

    name = "fake"
    kernel = "fake.packed"
    logits_dtype = "float32"
    n_vocab = VOCAB
    extends_prefixes = True
    cuts_prefixes = True
    scores_continuations = True

    def __init__(self, tokenizer: FakeTokenizer | None = None, n_ctx: int = 100_000, drift: float = 0.0,
                 bias: dict[str, float] | None = None, script: str = '["yes","no"]', step_s: float = 0.0):
        self.tokenizer = tokenizer or FakeTokenizer()
        self.n_ctx = n_ctx
        self.drift = drift
        self.bias = {ord(k) + _BASE: v for k, v in (bias or {}).items()}
        self.script = script
        self.step_s = step_s
        self.calls: dict[str, int] = {"fresh": 0, "prefill": 0, "extend": 0, "with_prefix": 0, "fan_out": 0,
                                      "chunks": 0}
        self.fed: dict[str, int] = {"prefill": 0, "extend": 0}
        """Tokens that went through the "model" to build prefix states, by call."""

    def model_info(self) -> dict[str, Any]:
        return {"key": "fake", "source": "fake", "revision": None, "gguf_sha256": None, "dtype": "float32",
                "device": "cpu", "backend": "fake", "versions": {"semif": "test"}}

    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        self.calls["fresh"] += 1
        return _logits_for(list(ids), self.bias)

    def _drifted(self, ids: list[int]) -> np.ndarray:
        out = _logits_for(ids, self.bias)
        if self.drift:
            rng = np.random.default_rng(len(ids))
            out = out + rng.uniform(-self.drift, self.drift, out.shape).astype(np.float32)
        return out

    def _prefill(self, ids: list[int]) -> Prefix:
        self.calls["prefill"] += 1
        self.fed["prefill"] += len(ids)
        return Prefix(list(ids), tuple(ids), 0.001, FAKE_STATE_BYTES * len(ids))

    def _extend(self, prefix: Prefix, keep: int, ids: list[int]) -> Prefix:
        self.calls["extend"] += 1
        self.fed["extend"] += len(ids)
        held = [*prefix.handle[:keep], *ids]  # from the state itself: a wrong keep shows in the logits
        return Prefix(held, tuple(held), 0.001, FAKE_STATE_BYTES * len(held))

    def _score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, float]:
        self.calls["with_prefix"] += 1
        return self._drifted(list(prefix.handle) + list(suffix)), 0.0

    def fan_out(self, prefix: Prefix, suffixes: list[list[int]], max_batch_tokens: int,
                wants: Sequence[Sequence[int]] | None = None) -> tuple[list[np.ndarray], FanOutTiming]:
        self.calls["fan_out"] += 1
        return super().fan_out(prefix, suffixes, max_batch_tokens, wants)

    def _branch(self, prefix: Prefix, part: list[list[int]]) -> tuple[int, ...]:
        return tuple(prefix.handle)

    def _pass(self, prefix: Prefix, branched: tuple[int, ...], part: list[list[int]],
              wants: list[Sequence[int]] | None = None) -> list[np.ndarray]:
        self.calls["chunks"] += 1
        return [self._drifted([*branched, *s]) for s in part]

    def _pass_all(self, prefix: Prefix, branched: tuple[int, ...], part: list[list[int]]) -> list[np.ndarray]:
        self.calls["chunks"] += 1
        return [np.stack([self._drifted([*branched, *s[:j + 1]]) for j in range(len(s))]) for s in part]

    def _decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        session = {"ids": list(ids), "script": [*self.tokenizer.encode(self.script), SPECIALS.index("<|im_end|>")],
                   "i": 0}
        return session, self._script_logits(session)

    def _script_logits(self, session: dict[str, Any]) -> np.ndarray:
        if self.step_s:
            time.sleep(self.step_s)
        out = _logits_for(session["ids"], {})
        nxt = session["script"][min(session["i"], len(session["script"]) - 1)]
        out[nxt] = out.max() + 5.0
        return out

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        session["ids"].append(token_id)
        session["i"] += 1
        return self._script_logits(session)

    def decode_end(self, session: Any) -> None:
        session.clear()

    def stop_ids(self) -> list[int]:
        return [SPECIALS.index("<|im_end|>"), SPECIALS.index("<eos>")]

    def grammar(self, gbnf: str) -> Any:
        """The torch backend's engine (llguidance) over the fake vocabulary."""
        from scorer.backends import guidance

        lltok = guidance.tokenizer_from_tokens(fake_vocab(self.tokenizer), self.stop_ids(), self.tokenizer.encode,
                                               special_ids=range(_BASE))
        return guidance.LlgGrammar(lltok, gbnf, VOCAB)


def fake_vocab(tok: FakeTokenizer) -> list[bytes]:
    """Bytes of every fake token id; special and unused ids carry llguidance's 0xFF marker."""
    out = [b"\xff" + s.encode() for s in SPECIALS] + [b"\xff<unused%d>" % i for i in range(len(SPECIALS), _BASE)]
    out += [chr(c).encode("utf-8", "surrogatepass") for c in range(4096)]
    merges = sorted(tok.merges)
    out += [merges[k].encode() if k < len(merges) else b"\xff<m%d>" % k for k in range(VOCAB - _BASE - 4096)]
    return out


MERGES = ['["', '","', '"]', "yes", "no"]
"""BPE-like merges for JSON arrays of "yes"/"no" (the versus traces' fake tokenizer)."""


class SlowFakeBackend(FakeBackend):
    """FakeBackend whose kernel calls take wall time, so timestamps mean something and a test can stop a run
    between records: ``prefill_s`` before every prefill, extension and generation prefill (``decode_start``),
    ``pass_s`` before every packed fan-out pass, ``reuse_s`` before every fresh or prefix-reuse pass."""

    def __init__(self, *args: Any, prefill_s: float = 0.0, pass_s: float = 0.0, reuse_s: float = 0.0,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.prefill_sleep = prefill_s
        self.pass_sleep = pass_s
        self.reuse_sleep = reuse_s

    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        time.sleep(self.reuse_sleep)
        return super()._score_fresh(ids)

    def _prefill(self, ids: list[int]) -> Prefix:
        time.sleep(self.prefill_sleep)
        return super()._prefill(ids)

    def _extend(self, prefix: Prefix, keep: int, ids: list[int]) -> Prefix:
        time.sleep(self.prefill_sleep)  # a prefix state built from a cached one is a prefill too
        return super()._extend(prefix, keep, ids)

    def _score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, float]:
        time.sleep(self.reuse_sleep)
        return super()._score_with_prefix(prefix, suffix)

    def _pass(self, prefix: Prefix, branched: tuple[int, ...], part: list[list[int]],
              wants: list[Sequence[int]] | None = None) -> list[np.ndarray]:
        time.sleep(self.pass_sleep)
        return super()._pass(prefix, branched, part)

    def _decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        time.sleep(self.prefill_sleep)
        return super()._decode_start(ids)


SLOT_A, SLOT_B = ord("A") + _BASE, ord("B") + _BASE
"""FakeTokenizer's ids of the answer letters A and B."""
NEAR_TIE_NOISE = 0.02
"""Logit noise of :class:`NearTieBackend`'s fast path."""


class NearTieBackend(FakeBackend):
    """Two-option rows; every other row is a near-tie (slot logit gap within ±2·D), the rest are clear.
    The fast path adds per-row noise of ±D (:data:`NEAR_TIE_NOISE`) to every logit, so near-ties flip
    without --exact. ``tie_every`` rows (prompt hash) have identical slot logits on both paths: a tie
    either way."""

    def __init__(self, tie_every: int = 0, **kw: Any):
        super().__init__(**kw)
        self.tie_every = tie_every

    def _base(self, ids: list[int]) -> np.ndarray:
        out = _logits_for(ids, {})
        h = _h(ids)
        d = NEAR_TIE_NOISE
        gap = ((h % 2001) / 1000.0 - 1.0) * 2 * d if h % 2 == 0 else (1.5 if h % 4 == 1 else -1.5)
        out[SLOT_A], out[SLOT_B] = 8.0, 8.0 + gap
        return out

    def _tie(self, ids: list[int]) -> bool:
        return bool(self.tie_every) and _h(ids) % self.tie_every == 0

    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        self.calls["fresh"] += 1
        out = self._base(list(ids))
        if self._tie(list(ids)):
            out[SLOT_B] = out[SLOT_A]
        return out

    def _drifted(self, ids: list[int]) -> np.ndarray:
        out = self._base(ids)
        if self._tie(ids):
            out[SLOT_B] = out[SLOT_A]
            return out
        rng = np.random.default_rng(_h(ids) + 1)
        return out + rng.uniform(-NEAR_TIE_NOISE, NEAR_TIE_NOISE, out.shape).astype(np.float32)


def decision_rows(n_states: int = 6, n_q: int = 8, prefix: str = "s") -> list[Decision]:
    """``n_states`` states × ``n_q`` yes/no criteria (ids ``{prefix}{state}-q{criterion}``), states in order."""
    out = []
    for s in range(n_states):
        for q in range(n_q):
            out.append(parse_decision({
                "id": f"{prefix}{s}-q{q}", "state": {"ticket": f"{prefix}{s}", "n": s * 7},
                "question": f"Is criterion number {q} met?",
                "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]}, "mem", None))
    return out


def row_of(d: Decision, extra: bool = True) -> dict[str, Any]:
    """``d`` as the input row it was parsed from (:func:`~scorer.schema.parse_decision`'s inverse): id, state,
    question, options as ``{id, description}``, then its extra fields unless ``extra`` is False."""
    row = {"id": d.id, "state": d.state, "question": d.question,
           "options": [{"id": o.id, "description": o.description} for o in d.options]}
    return {**row, **d.extra} if extra else row


def write_rows(folder: Path, rows: list[Decision], name: str = "rows.jsonl") -> Path:
    """``rows`` as a JSONL input file in ``folder`` (id, state, question, options)."""
    p = folder / name
    p.write_bytes(b"\n".join(orjson.dumps(row_of(d, extra=False)) for d in rows) + b"\n")
    return p


def fake_prompt_json(folder: Path, d: Decision, args: Sequence[str], monkeypatch: Any, capsys: Any) -> dict[str, Any]:
    """``semif prompt --input ROWS --id ID ARGS --json`` on :class:`FakeBackend` for the one row ``d`` (written with
    its extra fields into ``folder``): the printed document, after checking the command exited 0."""
    from scorer import cli

    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    inp = folder / "rows.jsonl"
    inp.write_bytes(orjson.dumps(row_of(d)) + b"\n")
    assert cli.main(["prompt", "--input", str(inp), "--id", d.id, *args, "--json"]) == 0
    doc: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return doc


# --- remote engines ---------------------------------------------------------------------------------------------
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
    :func:`_logits_for` over :data:`VOCAB` (``bias``: per character, as :class:`FakeBackend`'s), and the engine
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
        self.bias = {ord(k) + _BASE: v for k, v in (bias or {}).items()}
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
        return _logits_for(list(ids), self.bias)

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
    from scorer import store
    from scorer.backends.openai_backend import Reference

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
