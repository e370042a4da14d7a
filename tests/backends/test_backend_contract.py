"""The backend contract (:class:`scorer.backends.base.Backend`), one suite run over every backend: the fake
(tests/fakes.py), torch (SmolLM2-135M fp32, CPU), llama.cpp (SmolLM2-135M Q4_1 GGUF) and the remote engine
(``--backend openai``) over tests/fake_engine.py's FakeEngine, as vLLM and as llama.cpp's server.

The remote engine is sparse (:attr:`~scorer.backends.base.Backend.sparse_logits`): every call that scores names
the ids it reads (``want``; the suite passes a decision's slots, which the other backends ignore) and gets
the engine's log-probabilities of those ids and of the top tokens it returned, ``-inf`` elsewhere; the suite
checks exactly that shape, and compares two results over the entries both hold (which must coincide for two
paths to the same logits).

Paths that compute the same logits must agree within the backend's tolerance on the largest |Δ logit| over
the whole vocabulary. Measured on this project's 2-core AVX-512 CPU (a 76-token prefix, suffixes of 21, 22
and 34 tokens; the suffixes' own logits lie 2.5 apart, so each result is also checked to be its own):
* fake: every path is the same pure function of the token ids (drift 0): exact. ``extend`` (continue a prefix, cut
  it short) is held to the same tolerances as prefix reuse; the remote engine refuses it. ``fan_out_logprobs``
  (``--slots sequence``: every position of a packed pass) is held to the fan-out's tolerance on the logits, twice
  that on log-probabilities; the remote engine refuses it too.
* openai (over the fake engines): every path sends the engine the same request (the prompt's token ids), and
  the fake engine's logits are that pure function: exact.
* torch fp32: prefix reuse, the packed fan-out and generation steps sum in another order than a fresh
  pass (other matrix shapes): measured at most 3.1e-5; allowed 1e-3 (:data:`TOLERANCE`).
* llama.cpp Q4_1: every scoring path computes the answer positions as a fresh pass does (the canonical rules of
  :mod:`scorer.backends.llamacpp_backend`: no weight repacking, one KV stream per sequence, no decode of fewer than
  eight tokens of a sequence): exact (measured 0.0 on every path, packed passes included). Generation steps decode one
  token at a time, outside those rules (nothing compares them with a score): allowed 0.5 on one logit
  (:data:`GENERATION_TOLERANCE`; measured 0.19 on other batch shapes before the rules).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from fake_engine import FakeEngine, engine_backend
from fakes import MERGES, FakeBackend, FakeTokenizer, decision_rows

from scorer.backends.base import Backend, Prefix, pack_chunks
from scorer.backends.openai_backend import TOP_K
from scorer.core.errors import ModelError, ValidationError
from scorer.formats.rows import parse_decision
from scorer.scoring.modes import Item, memory_need, prepare

TOLERANCE = {"fake": 0.0, "torch": 1e-3, "llamacpp": 0.0, "openai": 0.0}
"""Largest |Δ logit| between a fresh pass and prefix reuse (see the module docstring)."""
FAN_OUT_TOLERANCE = TOLERANCE
"""Largest |Δ logit| between a fan-out result and the same suffix scored alone."""
GENERATION_TOLERANCE = {**TOLERANCE, "llamacpp": 0.5}
"""Largest |Δ logit| between a generation step and a fresh pass of the same tokens."""
_GRAMMAR = 'root ::= "yes" | "no"'

BACKENDS = [
    "fake",
    "openai-vllm",
    "openai-llamacpp",
    pytest.param("torch", marks=pytest.mark.slow),
    pytest.param("llamacpp", marks=[pytest.mark.slow, pytest.mark.llamacpp]),
]


def _load(name: str) -> Backend:
    """A backend of its own (for the tests that close it), never the session's shared one."""
    if name == "fake":
        return FakeBackend(FakeTokenizer(merges=MERGES))
    if name.startswith("openai-"):
        return _engine(name.removeprefix("openai-"))
    from scorer.backends import BackendConfig, load_backend
    from scorer.models import store

    return load_backend(BackendConfig(model=store.TEST_MODEL, backend=name, device="cpu",
                                      dtype="float32" if name == "torch" else None))


def _engine(kind: str) -> Backend:
    """``--backend openai`` over a fake engine of ``kind`` (vllm, llamacpp) serving the fake's logits."""
    return engine_backend(FakeEngine(kind, tokenizer=FakeTokenizer(merges=MERGES)), FakeTokenizer(merges=MERGES))


@pytest.fixture(scope="module")
def fake() -> FakeBackend:
    return FakeBackend(FakeTokenizer(merges=MERGES))


@pytest.fixture(scope="module")
def openai_vllm() -> Backend:
    return _engine("vllm")


@pytest.fixture(scope="module")
def openai_llamacpp() -> Backend:
    return _engine("llamacpp")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    name = {"fake": "fake", "torch": "smol_torch", "llamacpp": "smol_llamacpp", "openai-vllm": "openai_vllm",
            "openai-llamacpp": "openai_llamacpp"}[request.param]
    return request.getfixturevalue(name)


@pytest.fixture
def tol(backend: Backend) -> float:
    return TOLERANCE[backend.name]


_QUESTIONS = ("Is the order paid?", "Has it shipped?",
              "Is the customer angry about the late delivery of a parcel that was promised for Monday?")


@pytest.fixture
def items(backend: Backend) -> list[Item]:
    """Three criteria about one state (one shared prefix, suffixes of different lengths), then another state."""
    state = "Order 17: paid, shipped 2024-05-02, the customer asked for a refund."
    rows = [parse_decision({"id": f"q{k}", "state": state, "question": q,
                            "options": [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]},
                           "contract", None) for k, q in enumerate(_QUESTIONS)]
    return prepare(backend, rows + decision_rows(1, 1))


def _split(items: list[Item]) -> tuple[list[int], list[list[int]]]:
    """The first state's shared prefix and its three suffixes."""
    prefix = items[0].prefix
    assert all(it.prefix == prefix for it in items[:3]) and items[3].prefix != prefix
    return prefix, [it.prompt.ids[len(prefix):] for it in items[:3]]


def _wants(items: list[Item]) -> list[list[int]]:
    """The answer slots of the first state's three decisions (what a run asks a sparse backend for)."""
    return [it.prompt.slot_ids for it in items[:3]]


def _dev(a: np.ndarray, b: np.ndarray, common: bool = False) -> float:
    """Largest |Δ| over the entries both hold: all of them for a dense backend; a sparse backend's must be the
    same entries (else ``inf``) unless ``common`` (then over those both hold, at least one)."""
    fa, fb = np.isfinite(a), np.isfinite(b)
    both = fa & fb
    if (not common and not np.array_equal(fa, fb)) or not both.any():
        return math.inf
    return float(np.max(np.abs(a[both].astype(np.float64) - b[both].astype(np.float64))))


def _is_logits(backend: Backend, lg: Any, want: list[int] | None = None) -> bool:
    """One position's logits: float32 over the vocabulary, all finite; for a sparse backend finite at every id
    of ``want``, at most ``want`` and the engine's top tokens (more only when no asked id is among the top
    ones), ``-inf`` elsewhere, and (normalized)
    log-probabilities of a part of the vocabulary: their logsumexp is at most 0."""
    if not (isinstance(lg, np.ndarray) and lg.dtype == np.float32 and lg.shape == (backend.n_vocab,)):
        return False
    if not backend.sparse_logits:
        return bool(np.isfinite(lg).all())
    held = np.isfinite(lg)
    if not (held[list(want or [])].all() and (lg[~held] == -np.inf).all()):
        return False
    if held.sum() < 1:
        return False
    if held.sum() > len(set(want or [])) + TOP_K + 1:
        # more of the vocabulary only when no asked id is among the top TOP_K (llama.cpp's ladder)
        top = set(np.argsort(-lg)[:TOP_K].tolist())
        if top & set(want or []):
            return False
    v = lg[held].astype(np.float64)
    return not backend.logits_normalized or float(v.max() + np.log(np.exp(v - v.max()).sum())) <= 1e-5


# --- what a backend says about itself ---------------------------------------------------------------------
def test_attributes_and_model_info(backend: Backend) -> None:
    assert isinstance(backend, Backend)
    assert backend.name in ("fake", "torch", "llamacpp", "openai") and backend.kernel.startswith(backend.name)
    assert backend.logits_dtype in ("float32", "bfloat16", "float16")
    assert backend.n_ctx >= 2048 and backend.n_vocab >= 256 and backend.load_s >= 0.0
    info = backend.model_info()
    assert {"key", "source", "dtype", "device", "backend", "versions"} <= set(info)
    assert info["backend"] == backend.name and info["versions"]["semif"]
    info["key"] = "edited"
    assert backend.model_info()["key"] != "edited"  # a copy: a caller cannot change the next record's block


def test_tokenization_round_trip(backend: Backend, items: list[Item]) -> None:
    tok = backend.tokenizer
    text = "Order 17: paid, shipped 2024-05-02; the customer wrote \"où est mon colis?\"\nA. yes"
    ids = tok.encode(text)
    bos = getattr(tok, "bos_id_prepended", None)  # the Tokenizer protocol leaves it optional
    assert tok.decode(ids[1:] if bos is not None else ids) == text
    for it in items:
        p = it.prompt
        assert tok.encode(p.text, p.plain_spans) == p.ids and tok.decode(p.ids) == p.text
        assert all(0 <= t < backend.n_vocab for t in p.ids)
        assert [tok.decode([s]) for s in p.slot_ids] == list(p.letters)


# --- scoring ----------------------------------------------------------------------------------------------
def test_score_fresh_gives_the_last_positions_logits(backend: Backend, items: list[Item]) -> None:
    ids, want = items[0].prompt.ids, items[0].prompt.slot_ids
    lg = backend.score_fresh(ids, want=want)
    assert _is_logits(backend, lg, want)
    assert np.array_equal(backend.score_fresh(ids, want=want), lg)  # deterministic
    earlier = backend.score_fresh(ids[:-1], want=want)
    assert _dev(earlier, lg, common=True) > 0.1  # the last position, not a pooled or earlier one
    if backend.sparse_logits:  # the slots themselves, where a sparse backend holds little else
        assert _dev(earlier[want], lg[want]) > 0.1


def test_want_is_required_by_a_sparse_backend_and_checked_by_every_backend(backend: Backend,
                                                                          items: list[Item]) -> None:
    ids, want = items[0].prompt.ids, items[0].prompt.slot_ids
    prefix, suffixes = _split(items)
    pre = backend.prefill(prefix)
    try:
        if backend.sparse_logits:
            for call in (lambda: backend.score_fresh(ids), lambda: backend.score_with_prefix(pre, suffixes[0]),
                         lambda: backend.fan_out(pre, suffixes, 64)):
                with pytest.raises(ValidationError, match="expected want="):
                    call()
        else:  # ignored: the same logits with or without
            assert np.array_equal(backend.score_fresh(ids, want=want), backend.score_fresh(ids))
        top = backend.n_vocab
        for bad, why in [([top], f"want holds the token id {top}"), ([-1], "want holds the token id -1"),
                         ([], "want has no tokens")]:
            with pytest.raises(ValidationError, match=why):
                backend.score_fresh(ids, want=bad)
            with pytest.raises(ValidationError, match=why):
                backend.score_with_prefix(pre, suffixes[0], want=bad)
            with pytest.raises(ValidationError, match=why):
                backend.fan_out(pre, suffixes, 64, wants=[*_wants(items)[:2], bad])
        with pytest.raises(ValidationError, match="2 wants for 3 suffixes"):
            backend.fan_out(pre, suffixes, 64, wants=_wants(items)[:2])
    finally:
        backend.release(pre)


def test_prefix_reuse_equals_direct_and_leaves_the_prefix_as_it_was(backend: Backend, items: list[Item],
                                                                    tol: float) -> None:
    prefix, suffixes = _split(items)
    wants = _wants(items)
    pre = backend.prefill(prefix)
    try:
        assert isinstance(pre, Prefix) and pre.ids == prefix and pre.handle is not None and pre.prefill_s >= 0
        got = [backend.score_with_prefix(pre, s, want=w) for s, w in zip(suffixes, wants, strict=True)]
        again, _ = backend.score_with_prefix(pre, suffixes[0], want=wants[0])
    finally:
        backend.release(pre)
    for (lg, copy_s), s, w in zip(got, suffixes, wants, strict=True):
        assert _is_logits(backend, lg, w) and copy_s >= 0.0
        assert _dev(lg, backend.score_fresh(prefix + s, want=w)) <= tol
    assert np.array_equal(again, got[0][0])  # the first suffix did not change what the prefix holds


def test_extend_continues_and_cuts_a_prefix_and_leaves_it_as_it_was(backend: Backend, items: list[Item],
                                                                    tol: float) -> None:
    prefix, suffixes = _split(items)
    wants = _wants(items)
    half = len(prefix) // 2
    base = backend.prefill(prefix[:half])
    made: list[Prefix] = [base]
    try:
        if not backend.extends_prefixes:  # a remote engine: its own cache does this
            assert not backend.cuts_prefixes
            with pytest.raises(ModelError, match="cannot continue a prefix's state"):
                backend.extend(base, prefix[half:])
            return
        before = backend.score_with_prefix(base, prefix[half:] + suffixes[0], want=wants[0])[0]
        whole = backend.extend(base, prefix[half:])  # continued: only the new tokens run
        made.append(whole)
        assert isinstance(whole, Prefix) and whole.ids == prefix and whole.handle is not None
        assert whole.prefill_s >= 0 and whole.nbytes > base.nbytes > 0
        got = backend.score_with_prefix(whole, suffixes[0], want=wants[0])[0]
        assert _dev(got, backend.score_fresh(prefix + suffixes[0], want=wants[0])) <= tol
        assert np.array_equal(backend.score_with_prefix(base, prefix[half:] + suffixes[0], want=wants[0])[0], before)
        if not backend.cuts_prefixes:
            with pytest.raises(ModelError, match="cannot cut"):
                backend.extend(whole, [], keep=half)
            return
        cut = backend.extend(whole, [], keep=half)  # cut short: the first half's state, nothing run
        branch = backend.extend(whole, suffixes[1][:-1], keep=len(prefix))  # and continued along another suffix
        made += [cut, branch]
        assert cut.ids == prefix[:half] and 0 < cut.nbytes < whole.nbytes
        rest = prefix[half:] + suffixes[0]
        assert _dev(backend.score_with_prefix(cut, rest, want=wants[0])[0],
                    backend.score_fresh(prefix + suffixes[0], want=wants[0])) <= tol
        assert _dev(backend.score_with_prefix(branch, suffixes[1][-1:], want=wants[1])[0],
                    backend.score_fresh(prefix + suffixes[1], want=wants[1])) <= tol
        cut_mid = backend.extend(whole, suffixes[2], keep=half + 1)  # cut inside, then continued
        made.append(cut_mid)
        assert cut_mid.ids == prefix[:half + 1] + suffixes[2]
        assert np.array_equal(backend.score_with_prefix(whole, suffixes[0], want=wants[0])[0], got)  # left as it was
    finally:
        for pre in made:
            backend.release(pre)


def test_extend_refuses_bad_input(backend: Backend, items: list[Item]) -> None:
    prefix, suffixes = _split(items)
    pre = backend.prefill(prefix)
    try:
        if not backend.extends_prefixes:
            with pytest.raises(ModelError):
                backend.extend(pre, suffixes[0])
            return
        n, top = len(prefix), backend.n_vocab
        for keep in (0, -1, n + 1, True, 1.5):
            with pytest.raises(ValidationError, match="keep"):
                backend.extend(pre, suffixes[0], keep=keep)  # type: ignore[arg-type]
        for bad, why in [([], "extension has no tokens"), ([top], f"token id {top}"),
                         ([0] * (backend.n_ctx - n + 1), "exceed the model's context")]:
            with pytest.raises(ValidationError, match=why):
                backend.extend(pre, bad)
        backend.release(pre)
        with pytest.raises(ValidationError, match="released"):
            backend.extend(pre, suffixes[0])
    finally:
        backend.release(pre)


@pytest.mark.parametrize("budget", [10_000, 1], ids=["one-pass", "pass-per-suffix"])
def test_fan_out_equals_one_by_one(backend: Backend, items: list[Item], budget: int) -> None:
    tol = FAN_OUT_TOLERANCE[backend.name]
    prefix, suffixes = _split(items)
    wants = _wants(items)
    pre = backend.prefill(prefix)
    try:
        one_by_one = [backend.score_with_prefix(pre, s, want=w)[0] for s, w in zip(suffixes, wants, strict=True)]
        fanned, timing = backend.fan_out(pre, suffixes, budget, wants=wants)
        after = backend.score_with_prefix(pre, suffixes[0], want=wants[0])[0]
    finally:
        backend.release(pre)
    assert len(fanned) == len(suffixes) and all(_is_logits(backend, lg, w) for lg, w in zip(fanned, wants,
                                                                                              strict=True))
    for i, (lg, s) in enumerate(zip(fanned, suffixes, strict=True)):
        assert _dev(lg, one_by_one[i]) <= tol
        assert _dev(lg, backend.score_fresh(prefix + s, want=wants[i])) <= tol
        # in order: each result is nearest its own suffix's (the three questions differ)
        assert min(range(3), key=lambda j: _dev(lg, one_by_one[j])) == i
    assert timing.chunks == len(pack_chunks(suffixes, budget)) == (1 if budget > 1 else 3)
    assert timing.copy_s >= 0.0 and timing.suffix_s > 0.0
    assert np.array_equal(after, one_by_one[0])  # fan-out left the prefix as it was


def _fresh_logprobs(backend: Backend, ids: list[int], cont: list[int]) -> np.ndarray:
    """Each token of ``cont`` by a fresh pass over ``ids`` and ``cont``'s tokens before it (log-softmax, float64)."""
    out = []
    for j, t in enumerate(cont):
        z = backend.score_fresh(ids + cont[:j]).astype(np.float64)
        out.append(z[t] - (z.max() + np.log(np.exp(z - z.max()).sum())))
    return np.array(out)


@pytest.mark.parametrize("budget", [10_000, 1], ids=["one-pass", "pass-per-suffix"])
def test_fan_out_logprobs_equal_fresh_log_probabilities(backend: Backend, items: list[Item], budget: int) -> None:
    """``--slots sequence``'s call: continuations of a prompt (4, 2 and 1 tokens), fed after the state of all but its
    last token, equal a fresh pass per continuation prefix; the head logits are the answer position's. A log-softmax
    moves at most twice as far as the logits it is taken from."""
    ids = items[0].prompt.ids
    conts = [items[1].prompt.ids[-4:], items[2].prompt.ids[-2:], items[3].prompt.ids[-1:]]
    suffixes, targets = [[ids[-1], *c[:-1]] for c in conts], [list(c) for c in conts]
    pre = backend.prefill(ids[:-1])
    try:
        if not backend.scores_continuations:  # a remote engine: refused, whatever it is asked
            with pytest.raises(ModelError, match="logits of one position"):
                backend.fan_out_logprobs(pre, suffixes, targets, budget)
            return
        got, timing = backend.fan_out_logprobs(pre, suffixes, targets, budget)
        again, _ = backend.fan_out_logprobs(pre, suffixes[:1], targets[:1], budget)
    finally:
        backend.release(pre)
    tol = FAN_OUT_TOLERANCE[backend.name]
    head = backend.score_fresh(ids)
    assert len(got) == 3 and timing.chunks == len(pack_chunks(suffixes, budget))
    for c, cont in zip(got, conts, strict=True):
        assert c.logprobs.dtype == np.float64 and c.logprobs.shape == (len(cont),) and (c.logprobs <= 0).all()
        assert float(np.max(np.abs(c.logprobs - _fresh_logprobs(backend, ids, cont)))) <= 2 * tol
        assert _is_logits(backend, c.head_logits) and _dev(c.head_logits, head) <= tol
    if budget == 1:  # the very same one-suffix pass again: the prefix was left as it was
        assert np.array_equal(again[0].logprobs, got[0].logprobs)


def test_fan_out_logprobs_refuses_bad_input(backend: Backend, items: list[Item]) -> None:
    ids = items[0].prompt.ids
    pre = backend.prefill(ids[:-1])
    try:
        for suffixes, targets, why in [([[ids[-1]]], [], "0 target lists for 1 suffixes"),
                                       ([[ids[-1]]], [[1, 2]], "suffix 0 has 1 tokens but 2 targets"),
                                       ([[ids[-1]]], [[backend.n_vocab]], f"token id {backend.n_vocab}"),
                                       ([[]], [[]], "suffix 0 has no tokens")]:
            with pytest.raises(ValidationError, match=why):
                backend.fan_out_logprobs(pre, suffixes, targets, 64)
        with pytest.raises(ValidationError, match="max_batch_tokens"):
            backend.fan_out_logprobs(pre, [[ids[-1]]], [[ids[-1]]], 0)
    finally:
        backend.release(pre)
    with pytest.raises(ValidationError, match="released"):
        backend.fan_out_logprobs(pre, [[ids[-1]]], [[ids[-1]]], 64)


def test_fan_out_over_no_suffixes_runs_no_pass(backend: Backend, items: list[Item]) -> None:
    pre = backend.prefill(items[0].prefix)
    try:
        logits, timing = backend.fan_out(pre, [], 64, wants=[])
    finally:
        backend.release(pre)
    assert logits == [] and timing.chunks == 0


def test_a_released_prefix_is_refused(backend: Backend, items: list[Item]) -> None:
    prefix, suffixes = _split(items)
    pre = backend.prefill(prefix)
    backend.release(pre)
    backend.release(pre)  # idempotent
    with pytest.raises(ValidationError, match="released"):
        backend.score_with_prefix(pre, suffixes[0], want=_wants(items)[0])
    with pytest.raises(ValidationError, match="released"):
        backend.fan_out(pre, suffixes, 64, wants=_wants(items))


# --- generation -------------------------------------------------------------------------------------------
def test_generation_steps_continue_the_prompt(backend: Backend, items: list[Item]) -> None:
    tol = GENERATION_TOLERANCE[backend.name]
    ids = items[3].prompt.ids
    session, lg = backend.decode_start(ids)
    steps: list[np.ndarray] = []
    out: list[int] = []
    try:
        for _ in range(3):
            assert _is_logits(backend, lg)  # a sparse backend: the engine's top tokens
            steps.append(np.array(lg, copy=True))
            out.append(int(np.argmax(lg)))
            lg = backend.decode_next(session, out[-1])
    finally:
        backend.decode_end(session)
    backend.decode_end(session)  # idempotent
    if isinstance(backend, FakeBackend):
        # The fake's generation follows its script by design (to emit e.g. a broken JSON array).
        assert out == backend.tokenizer.encode(backend.script)[:3]
        return
    # Each step continues the session: its logits match a fresh pass over the prompt and the tokens generated
    # so far (a wrong position or a lost cache entry would move them by whole logits); a sparse backend's over
    # the entries both hold (the step's top tokens, the fresh pass's asked-for id and greedy token).
    for k, step in enumerate(steps):
        fresh = backend.score_fresh([*ids, *out[:k]], want=[out[k]])
        assert _dev(step, fresh, common=backend.sparse_logits) <= tol


def test_stop_ids_hold_the_end_of_turn_token(backend: Backend) -> None:
    stops = backend.stop_ids()
    assert stops and all(isinstance(t, int) and 0 <= t < backend.n_vocab for t in stops)
    im_end = backend.tokenizer.special_ids(["<|im_end|>"])  # type: ignore[attr-defined]
    assert im_end and im_end[0] in stops


def test_grammar_constrains_greedy_generation(backend: Backend, items: list[Item]) -> None:
    from scorer.scoring.generation import greedy

    if backend.name == "openai":
        # The grammar runs locally in llguidance over the reference's Hugging Face tokenizer; the fake engine's
        # tokenizer is not one, so it is refused with the reason (tests/backends/test_remote_grammar.py holds the step
        # logic, tests/engines/test_engines_real.py the lane over real engines).
        with pytest.raises(ModelError, match="needs the reference's Hugging Face tokenizer"):
            backend.grammar(_GRAMMAR)
        return
    g = backend.grammar(_GRAMMAR)
    assert g.engine and g.compile_s >= 0.0
    dec = greedy(backend, items[3].prompt.ids, 8, 0.0, g.start())
    text = backend.tokenizer.decode([t for t in dec.ids if t not in backend.stop_ids()])
    assert text in ("yes", "no") and dec.reason == "end_of_turn", (text, dec.reason)
    with pytest.raises(ValidationError):
        backend.grammar('root ::= "unterminated')


# --- hooks --------------------------------------------------------------------------------------------------
def test_hooks_accept_what_a_run_gives_them(backend: Backend, items: list[Item]) -> None:
    tol = FAN_OUT_TOLERANCE[backend.name]
    for it in items:
        assert backend.validate_prompt(it.prompt) is None
    prefix, suffixes = _split(items)
    backend.plan_memory(memory_need(items, "shared", 10_000))
    wants = _wants(items)
    pre = backend.prefill(prefix)
    try:
        fanned, _ = backend.fan_out(pre, suffixes, 10_000, wants=wants)  # what the plan was made for still runs
    finally:
        backend.release(pre)
    for lg, s, w in zip(fanned, suffixes, wants, strict=True):
        assert _dev(lg, backend.score_fresh(prefix + s, want=w)) <= tol
    backend.plan_memory(memory_need(items, "direct"))  # and the smallest plan still scores a whole prompt
    assert _is_logits(backend, backend.score_fresh(items[0].prompt.ids, want=wants[0]), wants[0])


def test_hooks_are_no_ops_unless_a_backend_needs_them(fake: FakeBackend) -> None:
    assert type(fake).validate_prompt is Backend.validate_prompt and type(fake).plan_memory is Backend.plan_memory
    assert fake.validate_prompt(prepare(fake, decision_rows(1, 1))[0].prompt) is None
    assert fake.plan_memory({"mode": "direct"}) is None


# --- bad input ----------------------------------------------------------------------------------------------
def test_bad_input_is_refused_before_any_kernel_runs(backend: Backend, items: list[Item]) -> None:
    prefix, suffixes = _split(items)
    top = backend.n_vocab
    for bad, why in [([], "no tokens"), ([*prefix[:3], top], f"token id {top}"), ([-1], "token id -1"),
                     ([1.5], "token id 1.5"), ([0] * (backend.n_ctx + 1), "exceed the model's context")]:
        for call in (backend.score_fresh, backend.prefill, backend.decode_start):
            with pytest.raises(ValidationError, match=why):
                call(bad)  # type: ignore[operator]
    pre = backend.prefill(prefix)
    try:
        with pytest.raises(ValidationError, match="no tokens"):
            backend.score_with_prefix(pre, [])
        with pytest.raises(ValidationError, match="suffix 1 has no tokens"):
            backend.fan_out(pre, [suffixes[0], []], 64)
        with pytest.raises(ValidationError, match="exceed the model's context"):
            backend.score_with_prefix(pre, [0] * (backend.n_ctx - len(prefix) + 1))
        for budget in (0, -3, 2.5):
            with pytest.raises(ValidationError, match="max_batch_tokens"):
                backend.fan_out(pre, suffixes, budget)  # type: ignore[arg-type]
        ok, _ = backend.score_with_prefix(pre, suffixes[0], want=_wants(items)[0])  # a refusal left the prefix usable
    finally:
        backend.release(pre)
    assert _is_logits(backend, ok, _wants(items)[0])


# --- close ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", BACKENDS)
def test_close_and_the_context_manager(name: str) -> None:
    with _load(name) as backend:
        prompt = prepare(backend, decision_rows(1, 1), with_prefix=False)[0].prompt
        ids, want = prompt.ids, prompt.slot_ids
        assert _is_logits(backend, backend.score_fresh(ids, want=want), want)
        pre = backend.prefill(ids[:-1])
    backend.close()  # idempotent
    for call in (lambda: backend.score_fresh(ids, want=want), lambda: backend.prefill(ids),
                 lambda: backend.decode_start(ids), lambda: backend.score_with_prefix(pre, ids[-1:], want=want),
                 lambda: backend.fan_out(pre, [ids[-1:]], 64, wants=[want]), lambda: backend.extend(pre, ids[-1:]),
                 lambda: backend.fan_out_logprobs(pre, [ids[-1:]], [ids[-1:]], 64)):
        with pytest.raises(ModelError, match="closed"):
            call()


def test_every_registered_backend_is_held_to_the_contract():
    """A backend added to the registry (scorer.backends.registry) without a place in this file's BACKENDS is never
    checked: refuse that here."""
    from scorer.backends.registry import BACKENDS as REGISTERED

    covered = {(p.values[0] if hasattr(p, "values") else p).split("-")[0] for p in BACKENDS}
    assert set(REGISTERED) <= covered, sorted(set(REGISTERED) - covered)
