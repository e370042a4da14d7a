"""The tests' shared fakes: no weights, deterministic.

``FakeTokenizer`` is character-level (so answer letters are single tokens and boundaries are stable)
with a few special tokens and a ChatML-like template; ``merges`` adds multi-character tokens to
imitate BPE merges across boundaries, and ``broken`` breaks one slot rule on purpose.
``FakeBackend`` derives from :class:`scorer.backends.base.Backend` (``tests/backends/test_backend_contract.py``
holds it to the contract) with logits that are a pure function of the token ids (so prefix reuse is
exact unless ``drift`` is set; every position of a pass too, for ``--slots sequence``), and generation that
follows a script (to emit, e.g., a broken JSON array).
``SlowFakeBackend`` makes its kernel calls take wall time; ``NearTieBackend`` builds near-ties that flip
under the fast path's noise (with :func:`decision_rows` and :func:`write_rows` for its workloads).
``FakeEngine`` (a remote engine serving the same logits) lives beside it in ``tests/fake_engine.py``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scorer.backends.base import Backend, FanOutTiming, Prefix
from scorer.formats.rows import Decision, Option, parse_decision
from scorer.prompting.demos import Demos, demo_of

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
        self._pieces: list[str] | None = None

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

    def ids_beginning(self, text: str) -> tuple[int, ...]:
        if self._pieces is None:
            self._pieces = [self.decode([i]) for i in range(VOCAB)]
        return tuple(i for i in range(len(SPECIALS), VOCAB) if text and self._pieces[i].startswith(text))

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        if not self.has_template:
            from scorer.prompting.prompt import plain_render

            return plain_render(messages, add_generation_prompt)
        s = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return s + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def special_ids(self, names: list[str]) -> list[int]:
        return [SPECIALS.index(n) for n in names if n in SPECIALS]


def _h(ids: list[int]) -> int:
    """A stable 64-bit hash of token ids (the fake's logits are seeded by it)."""
    return int.from_bytes(hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).digest()[:8], "little")


def char_bias(bias: dict[str, float] | None) -> dict[int, float]:
    """A per-character logit bias (``{"A": 2.0}``) as the token ids of :class:`FakeTokenizer`'s characters."""
    return {ord(k) + _BASE: v for k, v in (bias or {}).items()}


def logits_for(ids: list[int], bias: dict[int, float]) -> np.ndarray:
    """The fake model's logits after ``ids``: a pure function of them, plus ``bias`` (token id -> added logit)."""
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
        self.bias = char_bias(bias)
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
        return logits_for(list(ids), self.bias)

    def _drifted(self, ids: list[int]) -> np.ndarray:
        out = logits_for(ids, self.bias)
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
        out = logits_for(session["ids"], {})
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


class WeighedFake(FakeBackend):
    """The fake model under the identity of catalogued weights (what the label-free default and the confidence curve
    are keyed on)."""

    def __init__(self, gguf_sha256: str | None) -> None:
        super().__init__()
        self.sha = gguf_sha256

    def model_info(self) -> dict[str, Any]:
        return {**super().model_info(), "gguf_sha256": self.sha}


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
        out = logits_for(ids, {})
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
    """``d`` as the input row it was parsed from (:func:`~scorer.formats.rows.parse_decision`'s inverse): id, state,
    question, options as ``{id, description}``, its type when it names one, then its extra fields unless ``extra`` is
    False."""
    row: dict[str, Any] = {"id": d.id, "state": d.state, "question": d.question,
                           "options": [{"id": o.id, "description": o.description} for o in d.options]}
    if d.type is not None:
        row["type"] = d.type
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


def prior_for(backend: FakeBackend, question: str) -> Any:
    """A prior covering one yesno question on the fake's model."""
    from scorer import Scorer, YesNo
    from scorer.calibration.core import Calibration, Entry
    from scorer.formats.signature import identity_sha256, model_identity

    with Scorer(backend=backend, mode="shared", slots="letters") as s:  # a calibration file's readout
        sig = s.ask("a state to ask about", {"q": YesNo(question)})["q"].record["signature"]
    ident = model_identity(backend.model_info())
    msha = identity_sha256(ident)
    entry = Entry("signature", msha, "plain", {"yes": 0.7, "no": -0.7}, 1.0, 10, sig, option_ids=("yes", "no"))
    return Calibration("prior", "mean", {msha: ident}, [entry], source={"kind": "file", "path": "p.json",
                                                                         "sha256": "ab" * 32})


def fresh_loglik(backend: Backend, prompt: list[int], cont: list[int],
                 seen: dict[tuple[int, ...], np.ndarray] | None = None,
                 last: Sequence[int] = ()) -> list[float]:
    """The independent path: each token of ``cont`` scored by a fresh pass over the whole prompt and the option's
    tokens before it (``score_fresh`` only: no prefix state, no packed pass), as a full-vocabulary log-softmax;
    ``last`` (a JSON answer's closing class): the last token's read as the log of those tokens' summed probability.

    ``seen`` keeps each fresh pass by the tokens it read, for callers that check several modes or options against
    the same prompt on one unchanging backend (options share their first positions; modes share every one): each
    distinct sequence is still read by its own fresh pass, once."""
    out = []
    for j, t in enumerate(cont):
        key = tuple(prompt + cont[:j])
        z = seen.get(key) if seen is not None else None
        if z is None:
            z = backend.score_fresh(list(key)).astype(np.float64)
            if seen is not None:
                seen[key] = z
        lse = z.max() + np.log(np.exp(z - z.max()).sum())
        if last and j == len(cont) - 1:  # the class's logsumexp, then the normaliser: the operations a pass makes
            zc = z[np.asarray(last)]
            out.append(float(zc.max() + np.log(np.exp(zc - zc.max()).sum()) - lse))
        else:
            out.append(float(z[t] - lse))
    return out


# Several characters each: continuations of 6, 5 and 4 tokens in the fake's character tokenizer (the readouts that
# score an option's tokens as a continuation: sequence, json, codes).
MULTI_TOKEN_OPTIONS = (Option("refund", "the customer asks for money back"), Option("other", "anything else"),
                       Option("spam", "not a customer"))
MULTI_TOKEN_STATES = ["I was charged twice, refund me.", "How do I change my email?", "WIN A PRIZE NOW"]


def multi_token_rows(n: int = 6, options: tuple[Option, ...] = MULTI_TOKEN_OPTIONS) -> list[Decision]:
    """Rows over three states (two questions each), so the fast modes reuse a state per group."""
    return [Decision(f"r{i}", MULTI_TOKEN_STATES[i % 3], f"Question {i // 3}?", options, {"family": "f"},
                     f"rows.jsonl:{i + 1}") for i in range(n)]


def multi_token_demos(k: int = 2) -> Demos:
    """Labelled rows about other states (so no row is its own demonstration)."""
    rows = [Decision(f"d{i}", f"Demonstration state {i}.", f"Question {i % 2}?", MULTI_TOKEN_OPTIONS,
                     {"family": "f", "label": MULTI_TOKEN_OPTIONS[i % 3].id}, f"demos.jsonl:{i + 1}")
            for i in range(6)]
    return Demos([demo_of(d, "demos.jsonl", n) for n, d in enumerate(rows, start=1)], k, 0)
