"""A radix prefix cache hit at every depth of a prompt equals fresh scoring, within each backend's measured drift:
the fake (exact), torch on SmolLM2-135M fp32 and llama.cpp on its Q4_1 GGUF.

Stated tolerances on option probabilities, those of serial mode (a prefix state reused for a suffix):
* fake: 0 (every path is the same pure function of the token ids).
* torch fp32: 1e-4, as tests/scoring/test_modes_real.py (serial measured 2.7e-6 there); a state cut from a longer one
holds
  the very K/V values of its positions, and an extension sums in other matrix shapes.
* llama.cpp Q4_1: 0 (bit-identical): a restored or cut state sits in the cells a fresh run uses and every decode keeps
  the canonical batch shapes of :mod:`scorer.backends.llamacpp_backend`; shared mode too.
The largest |Δp| seen over all depths is printed (``-s``) so it can be measured, not assumed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fakes import FakeBackend, FakeTokenizer

from scorer.backends.base import Backend
from scorer.decision import readout
from scorer.formats.rows import Decision, parse_decision
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.radix_cache import RadixCache

TOLERANCE = {"fake": 0.0, "torch": 1e-4, "llamacpp": 0.0}
BACKENDS = ["fake", pytest.param("torch", marks=pytest.mark.slow),
            pytest.param("llamacpp", marks=[pytest.mark.slow, pytest.mark.llamacpp])]
_OPTS = [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]
_STATE = "Order 17: paid on 2024-05-02, shipped two days late; the customer asked for a refund."


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "fake":
        return FakeBackend(FakeTokenizer())
    return request.getfixturevalue({"torch": "smol_torch", "llamacpp": "smol_llamacpp"}[request.param])


def _row(k: int, question: str, state: str = _STATE) -> Decision:
    return parse_decision({"id": f"q{k}", "state": state, "question": question, "options": _OPTS}, "depths", None)


def _probs(backend: Backend, logits: np.ndarray, slots: list[int]) -> np.ndarray:
    r = readout.read(logits, slots, backend.logits_dtype, normalized=backend.logits_normalized)
    return np.asarray(r.probabilities)


def test_a_hit_at_every_depth_equals_fresh(backend: Backend) -> None:
    (item,) = prepare(backend, [_row(0, "Is the order late?")], with_prefix=False)
    ids, slots = item.prompt.ids, item.prompt.slot_ids
    fresh = _probs(backend, backend.score_fresh(ids, want=slots), slots)
    cache = RadixCache()
    worst = 0.0
    with cache.prefix(backend, ids[:-1]) as (_, look):  # the whole prompt but its answer position is held
        assert look.lookup == "miss"
    try:
        for depth in range(1, len(ids)):
            with cache.prefix(backend, ids[:depth]) as (state, look):
                assert state.ids == ids[:depth] and look.lookup == "hit" and look.reused_tokens == depth
                logits, _ = backend.score_with_prefix(state, ids[depth:], want=slots)
            worst = max(worst, float(np.max(np.abs(_probs(backend, logits, slots) - fresh))))
        assert cache.states == 1  # the cuts were handed out once each, not kept
    finally:
        cache.clear()
    print(f"{backend.name}: max |dp| over {len(ids) - 1} depths {worst:.3g}")
    assert worst <= TOLERANCE[backend.name]


def test_a_partial_hit_at_every_depth_equals_fresh(backend: Backend) -> None:
    """Another prompt sharing the first ``depth`` tokens reuses them and prefills only the rest."""
    (item,) = prepare(backend, [_row(0, "Is the order late?")], with_prefix=False)
    ids, slots = item.prompt.ids, item.prompt.slot_ids
    fresh = _probs(backend, backend.score_fresh(ids, want=slots), slots)
    step = 1 if backend.name == "fake" else max(1, len(ids) // 12)  # a real extension runs the model: a dozen depths
    worst = 0.0
    for depth in range(1, len(ids) - 1, step):
        cache = RadixCache()
        other = [*ids[:depth], *[t for t in ids[depth:-1] if t != ids[depth]][:3]]
        try:
            with cache.prefix(backend, other):
                pass
            with cache.prefix(backend, ids[:-1]) as (state, look):
                assert look.lookup == "partial" and look.reused_tokens == depth
                assert look.prefilled_tokens == len(ids) - 1 - depth
                logits, _ = backend.score_with_prefix(state, ids[-1:], want=slots)
        finally:
            cache.clear()
        worst = max(worst, float(np.max(np.abs(_probs(backend, logits, slots) - fresh))))
    print(f"{backend.name}: max |dp| of partial hits {worst:.3g}")
    assert worst <= TOLERANCE[backend.name]


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_runs_over_a_warm_cache_equal_fresh(backend: Backend, mode: str) -> None:
    """Rows of two states, scored twice over one cache (the second run all hits) and under a budget of one byte
    (every state evicted after its row), equal fresh scoring."""
    rows = [_row(k, q, s) for k, (s, q) in enumerate((s, q) for s in (_STATE, _STATE.replace("17", "18"))
                                                      for q in ("Is the order late?", "Is a refund asked for?"))]
    tol = TOLERANCE[backend.name]
    fresh = list(score_items(backend, prepare(backend, rows, with_prefix=False), "direct", {"config_sha256": "t"}))
    items = prepare(backend, rows)
    cache = RadixCache()
    try:
        runs = [list(score_items(backend, items, mode, {"config_sha256": "t"}, 0, 4096, cache)) for _ in range(2)]
    finally:
        cache.clear()
    tiny = RadixCache(1)
    runs.append(list(score_items(backend, items, mode, {"config_sha256": "t"}, 0, 4096, tiny)))
    assert tiny.states == 0 and tiny.stats.evictions == tiny.stats.misses + tiny.stats.partial
    looks: list[Any] = [[r["cache"]["lookup"] for r in run] for run in runs]
    assert looks[0][0] == "miss" and looks[0][2] == "partial"  # the second state shares the instructions
    assert all(x in ("hit", "group") for x in looks[1])
    assert all(x in ("miss", "group") for x in looks[2])
    for run in runs:
        for f, r in zip(fresh, run, strict=True):
            assert np.max(np.abs(np.subtract(f["probabilities"], r["probabilities"]))) <= tol
