"""Greedy generation of a JSON answer array, free or under a grammar, with per-token evidence.

One module for every run that asks a model to *write* its answers (``semif versus``'s free and
constrained lanes, ``semif quant``'s generation check):

* the input: one state and its ordered yes/no criteria (:class:`VersusInput`, :class:`Criterion`);
* the prompt (``semif-array-v1``): the state, the numbered yes/no questions, the exact answer shape;
* :class:`~scorer.prompting.grammar.ArrayGrammar`: a GBNF grammar admitting exactly one JSON array with one of each
criterion's
  option ids per position (valid by construction), enforced by the backend's own engine
  (:meth:`scorer.backends.base.Backend.grammar`);
* :func:`greedy`: the decoding loop, written once on the backend protocol, timestamps taken inside it
  with a monotonic clock relative to the run's t0;
* the evidence derived AFTER the clock stops from logits kept during the run (token texts, top-k,
  which token starts which answer value, the yes/no split there, whether the grammar overruled the
  model), so none of it inflates a lane's time;
* :func:`run_generated`: one traced run of a lane as a ``semif-trace-v2`` run record, judged strictly
  and never repaired.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from scorer import trace
from scorer.backends.base import Backend, Constraint, Grammar
from scorer.core.errors import ValidationError
from scorer.decision import readout
from scorer.prompting.prompt import (
    ARRAY_SYSTEM,
    Tokenizer,
    array_user_content,
    common_prefix,
    message_spans,
    sha256_text,
)
from scorer.trace.answers import locate_answers


@dataclass(frozen=True)
class Criterion:
    """One binary criterion about the state."""

    id: str
    """Unique id within the input file."""
    question: str
    """The yes/no question."""
    label: str | None = None
    """Gold answer ``yes``/``no`` when known; never shown to the model."""


@dataclass(frozen=True)
class VersusInput:
    """One state and its ordered criteria (``scorer/data/versus/*.json``)."""

    id: str
    """Input id; names the trace file."""
    state: str | dict[str, Any] | list[Any]
    """The evidence: text or a JSON object/array."""
    criteria: tuple[Criterion, ...]
    """The criteria, in the order the generated array must follow."""

    def as_json(self) -> dict[str, Any]:
        """The trace's ``inputs`` identity: ``{id, state, criteria}``."""
        crit = [{"id": c.id, "question": c.question, **({"label": c.label} if c.label else {})}
                for c in self.criteria]
        return {"id": self.id, "state": self.state, "criteria": crit}


class ArrayInput(Protocol):
    """What a generated run needs: a state and its ordered criteria (:class:`VersusInput` is one)."""

    @property
    def state(self) -> str | dict[str, Any] | list[Any]: ...

    @property
    def criteria(self) -> tuple[Any, ...]: ...


# --- the prompt ------------------------------------------------------------------------------------
def array_messages(inp: ArrayInput) -> list[dict[str, str]]:
    """``semif-array-v1``: the state, then the numbered questions, then the exact answer shape."""
    user = array_user_content(inp.state, [c.question for c in inp.criteria])
    return [{"role": "system", "content": ARRAY_SYSTEM}, {"role": "user", "content": user}]


def render_array(tok: Tokenizer, inp: ArrayInput) -> tuple[str, list[int]]:
    """The rendered prompt text and its token ids (both lanes decode from this one prompt)."""
    msgs = array_messages(inp)
    text = tok.render_chat(msgs, add_generation_prompt=True)
    return text, tok.encode(text, message_spans(text, msgs))  # user content tokenized as text


def default_max_new_tokens(n: int) -> int:
    """The free lane's limit: enough for ``["yes", …]`` with one or two tokens per value plus slack."""
    return 4 * n + 16


# --- the loop --------------------------------------------------------------------------------------
@dataclass
class Decoded:
    """What one greedy generation produced, measured inside the run's clock."""

    ids: list[int]
    """Generated token ids, the stop token included when the model ended its turn."""
    times: list[float]
    """Seconds from t0 at which each token's id was known."""
    logits: list[np.ndarray]
    """Each step's full-vocabulary logits (copies; evidence is derived from them after the clock stops)."""
    masked: list[bool | None]
    """Per token: the grammar overruled the model's argmax (None without a grammar)."""
    reason: str
    """``end_of_turn`` or ``max_new_tokens``."""
    done_s: float
    """Seconds from t0 when the loop finished (the session freed)."""
    grammar_s: float | None
    """Seconds spent inside the grammar (picking under the mask and advancing); None without a grammar."""
    normalized: bool = False
    """The logits are a remote engine's full-vocabulary log-probabilities, only some known (``-inf`` elsewhere):
    the vocabulary's logsumexp is 0, not computed from them (:attr:`scorer.backends.base.Backend.logits_normalized`)."""


def greedy(backend: Backend, ids: list[int], max_new_tokens: int, t0: float,
           constraint: Constraint | None = None) -> Decoded:
    """Greedy decoding with the backend's KV cache until a stop token or ``max_new_tokens``.

    With ``constraint``, each step's token is the argmax over the tokens the grammar allows, and the
    grammar is advanced by it. Timestamps are ``perf_counter() - t0`` when each id is known.
    """
    stops = set(backend.stop_ids())
    out: list[int] = []
    ts: list[float] = []
    kept: list[np.ndarray] = []
    masked: list[bool | None] = []
    in_grammar = 0.0
    reason = "max_new_tokens"
    session, lg = backend.decode_start(ids)
    try:
        while True:
            if constraint is None:
                tid, over = int(np.argmax(lg)), None
            else:
                g0 = time.perf_counter()
                tid, over = constraint.pick(lg)
                constraint.advance(tid)
                in_grammar += time.perf_counter() - g0
            ts.append(time.perf_counter() - t0)
            out.append(tid)
            masked.append(over)
            # A copy: a kernel may reuse its logits buffer on the next step.
            kept.append(np.array(lg, dtype=np.float32, copy=True))
            if tid in stops:
                reason = "end_of_turn"
                break
            if len(out) >= max_new_tokens:
                break
            lg = backend.decode_next(session, tid)
    finally:
        backend.decode_end(session)
        if constraint is not None:
            constraint.close()
    return Decoded(out, ts, kept, masked, reason, time.perf_counter() - t0,
                   None if constraint is None else in_grammar, backend.logits_normalized)


# --- token evidence --------------------------------------------------------------------------------
def token_texts(tok: Tokenizer, ids: list[int]) -> list[str]:
    """Text of token i = decode(ids[:i+1]) minus decode(ids[:i]), multi-byte safe.

    While a character is split across tokens, the partial decode ends in U+FFFD: those tokens get ""
    and the character is given to the token that completes it.
    """
    out: list[str] = []
    acc = ""
    for i in range(len(ids)):
        cur = tok.decode(ids[: i + 1])
        if i < len(ids) - 1 and cur.endswith("\ufffd"):
            out.append("")
            continue
        keep = len(common_prefix([acc, cur])) if not cur.startswith(acc) else len(acc)
        out.append(cur[keep:])
        acc = cur
    return out


def _first_token(tok: Tokenizer, text: str) -> int | None:
    ids = tok.encode(text)
    bos = getattr(tok, "bos_id_prepended", None)
    if bos is not None and ids and ids[0] == bos:
        ids = ids[1:]
    return ids[0] if ids else None


def answer_candidates(tok: Tokenizer, lead: str) -> tuple[int, int] | None:
    """Token ids that would start ``yes`` / ``no`` after ``lead`` (e.g. "" when the quote was its own
    token, '"' when the model writes '"yes' as one token). None when no single token decides."""
    got = []
    for word in ("yes", "no"):
        t = _first_token(tok, lead + word)
        if t is None:
            return None
        piece = tok.decode([t])
        if not piece.startswith(lead) or len(piece) <= len(lead) or not (lead + word).startswith(piece):
            return None
        got.append(t)
    return (got[0], got[1]) if got[0] != got[1] else None


def _prob(logit: np.ndarray, lse: float, tid: int) -> float:
    return min(float(np.exp(logit[tid] - lse)), 1.0)


def token_records(tok: Tokenizer, dec: Decoded, top_k: int) -> tuple[list[dict[str, Any]], str]:
    """The per-token evidence of a run (trace ``token`` objects) and the output text without the stop token."""
    stop_last = dec.reason == "end_of_turn"
    out = dec.ids
    body_ids = out[:-1] if stop_last else out
    texts = token_texts(tok, body_ids)
    if stop_last:
        texts.append(tok.decode([out[-1]]))
    ev = locate_answers(texts, stop_last)
    tokens = []
    for i, (tid, t, logit, over) in enumerate(zip(out, dec.times, dec.logits, dec.masked, strict=True)):
        lse = 0.0 if dec.normalized else readout.logsumexp(logit)
        yes_no = None
        k = ev.answer_at.get(i)
        if k is not None:
            cand = answer_candidates(tok, ev.leads[i])
            if cand is not None and np.isfinite(logit[cand[0]]) and np.isfinite(logit[cand[1]]):
                # (a remote engine returns only its top tokens: a yes/no pair outside them has no share here)
                ly, ln = float(logit[cand[0]]), float(logit[cand[1]])
                two = readout.softmax(np.array([ly, ln]))
                mass = float(np.exp(ly - lse) + np.exp(ln - lse))
                yes_no = {"yes": float(two[0]), "no": float(two[1]), "yes_id": cand[0], "no_id": cand[1],
                          "mass": min(mass, 1.0)}
        free = None
        if over:
            best = int(np.argmax(logit))
            free = {"id": best, "text": tok.decode([best]), "p": _prob(logit, lse, best)}
        tokens.append({"i": i, "t": round(t, 6), "id": tid, "text": texts[i], "p": _prob(logit, lse, tid),
                       "top_k": readout.top_k(logit, top_k, tok.decode, dec.normalized) if top_k else [],
                       "stop": stop_last and i == len(out) - 1, "answer_index": k, "yes_no": yes_no,
                       "masked": over, "free_argmax": free})
    return tokens, "".join(texts[:-1] if stop_last else texts)


# --- one run ---------------------------------------------------------------------------------------
def run_generated(backend: Backend, inp: ArrayInput, repeat: int, warmup: bool, clock0: float,
                  max_new_tokens: int, top_k: int, expect_sha256: str | None = None,
                  grammar: Grammar | None = None) -> dict[str, Any]:
    """One generated run (lane ``free``, or ``constrained`` when ``grammar`` is given): render+encode,
    greedy decoding with the KV cache (under the grammar), then strict judging. Returns the trace-v2 run
    record; ``agreement`` is left empty for the caller, who knows the typed run to compare with."""
    tok = backend.tokenizer
    t0 = time.perf_counter()
    text, ids = render_array(tok, inp)
    t_enc = time.perf_counter() - t0
    if expect_sha256 is not None and sha256_text(text) != expect_sha256:
        raise ValidationError("the generated prompt rendered differently between runs")
    if len(ids) + max_new_tokens > backend.n_ctx:
        raise ValidationError(f"the generated prompt is {len(ids)} tokens + {max_new_tokens} new tokens but the "
                              f"model's context holds {backend.n_ctx}; SemIf never truncates")
    dec = greedy(backend, ids, max_new_tokens, t0, grammar.start() if grammar is not None else None)
    # --- clock stopped: evidence and judging ---
    tokens, body = token_records(tok, dec, top_k)
    n = len(inp.criteria)
    valid, complete, parsed, error = trace.parse_array(body, n)
    capped = dec.reason == "max_new_tokens"
    masked = None if grammar is None else sum(1 for m in dec.masked if m)
    return {"path": "free" if grammar is None else "constrained", "repeat": repeat, "warmup": warmup,
            "start_s": round(t0 - clock0, 6),
            "events": [{"name": "encoded", "t": round(t_enc, 6)}, {"name": "first_token", "t": round(dec.times[0], 6)},
                       {"name": "done", "t": round(dec.done_s, 6)}],
            "ttft_s": round(dec.times[0], 6), "total_s": round(dec.done_s, 6), "tokens": tokens,
            "output_tokens": len(dec.ids), "decode_steps": len(dec.ids) - 1, "stop_reason": dec.reason,
            "text": body, "valid": valid, "complete": complete, "error": error, "parsed": parsed,
            "capped": capped,
            "verdict": trace.verdict(valid, complete, capped, parsed, error, max_new_tokens),
            "correct": trace.labels_correct(parsed, complete, [c.label for c in inp.criteria]),
            "masked_tokens": masked,
            "grammar_s": None if dec.grammar_s is None else round(dec.grammar_s, 6),
            "agreement": []}
