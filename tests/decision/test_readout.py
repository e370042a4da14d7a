"""Softmax over declared slots only, margin, ties at dtype resolution, allowed mass, top-k."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scorer.decision.readout import read, resolution, softmax, top_k


def test_probabilities_are_softmax_over_slots_only():
    logits = np.full(10, -5.0, dtype=np.float32)
    logits[[2, 5, 7]] = [1.0, 2.0, 0.0]
    logits[9] = 50.0  # a huge non-slot logit must not change the option probabilities
    r = read(logits, [2, 5, 7], "float32")
    e = np.exp([1.0, 2.0, 0.0])
    assert r.probabilities == pytest.approx(list(e / e.sum()))
    assert sum(r.probabilities) == pytest.approx(1.0)
    assert r.choice_index == 1 and not r.tie
    assert r.margin == pytest.approx(r.probabilities[1] - r.probabilities[0])
    assert r.argmax_token_id == 9
    full = np.exp(logits.astype(np.float64) - logits.max())
    assert r.allowed_token_mass == pytest.approx(full[[2, 5, 7]].sum() / full.sum())


def test_exact_tie_is_reported_not_resolved_to_a():
    logits = np.zeros(4, dtype=np.float32)
    logits[[0, 1]] = 3.25
    r = read(logits, [0, 1, 2], "float32")
    assert r.tie and r.choice_index is None and r.tied_indices == [0, 1] and r.margin == 0.0


def test_tie_within_bfloat16_resolution_but_not_float32():
    a = 10.0
    b = a + 2 ** -6  # within bf16 spacing at 10 (2**-4), far above fp32 spacing
    logits = np.array([a, b, 0.0], dtype=np.float64)
    assert read(logits, [0, 1], "bfloat16").tie
    r32 = read(logits, [0, 1], "float32")
    assert not r32.tie and r32.choice_index == 1


def test_resolution_values():
    assert resolution(1.0, "float32") == 2 ** -23
    assert resolution(-3.0, "bfloat16") == 2 ** -6
    assert resolution(0.0, "float16") == 0.0
    with pytest.raises(ValueError):
        resolution(1.0, "int8")


def test_nonfinite_slot_logits_refused():
    logits = np.array([np.nan, 1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        read(logits, [0, 1], "float32")


def test_softmax_stable_and_top_k():
    p = softmax(np.array([1000.0, 1000.0]))
    assert list(p) == [0.5, 0.5]
    logits = np.array([0.0, 3.0, 1.0, 2.0])
    tk = top_k(logits, 2, lambda ids: f"t{ids[0]}")
    assert [t["id"] for t in tk] == [1, 3] and tk[0]["text"] == "t1"
    assert tk[0]["p"] == pytest.approx(math.exp(3) / np.exp(logits).sum())
