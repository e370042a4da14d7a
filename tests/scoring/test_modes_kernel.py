"""The blockwise fan-out attention equals SDPA over the packed 4-D mask (random tensors, no model)."""

from __future__ import annotations

import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tb = pytest.importorskip("scorer.backends.torch_backend")


def _spec(p: int, lens: list[int]):
    fake = types.SimpleNamespace(torch=torch, device="cpu", logits_dtype="float32")
    own, allowed = tb.TorchBackend._own_blocks(fake, lens)
    mask = tb.TorchBackend._packed_mask(fake, p, lens)
    return own, allowed, mask


def test_own_blocks_name_each_querys_own_suffix_causally():
    own, allowed, _ = _spec(5, [2, 3])
    assert own.tolist() == [[0, 1, 1], [0, 1, 1], [2, 3, 4], [2, 3, 4], [2, 3, 4]]
    assert allowed.tolist() == [[True, False, False], [True, True, False],
                                [True, False, False], [True, True, False], [True, True, True]]


@pytest.mark.parametrize(("n_heads", "n_kv"), [(4, 4), (14, 2), (9, 3)])
@pytest.mark.parametrize("lens", [[3, 1, 5, 2], [1], [7, 7]])
def test_blockwise_attention_equals_sdpa_with_the_packed_mask(n_heads, n_kv, lens):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    g = torch.Generator().manual_seed(sum(lens) * n_heads)
    p, d, n_q = 11, 16, sum(lens)
    q = torch.randn(1, n_heads, n_q, d, generator=g)
    k = torch.randn(1, n_kv, p + n_q, d, generator=g)
    v = torch.randn(1, n_kv, p + n_q, d, generator=g)
    module = types.SimpleNamespace(num_key_value_groups=n_heads // n_kv, is_causal=True, training=False)
    own, allowed, mask = _spec(p, lens)
    ref, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=d ** -0.5)
    tb._PACK.spec = (p, own, allowed)
    try:
        got, _ = tb._blockwise_attention(module, q, k, v, mask, scaling=d ** -0.5)
    finally:
        tb._PACK.spec = None
    assert got.shape == ref.shape == (1, n_q, n_heads, d)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), atol=2e-6, rtol=1e-5)
    # outside a fan-out pass the function is SDPA itself
    same, _ = tb._blockwise_attention(module, q, k, v, mask, scaling=d ** -0.5)
    assert torch.equal(same, ref)


def test_blockwise_is_offered_only_for_full_causal_attention():
    ok = types.SimpleNamespace(model_type="qwen2", _attn_implementation="sdpa", use_sliding_window=False,
                               layer_types=["full_attention"] * 2)
    assert tb.blockwise_supported(ok)
    for change in ({"model_type": "gemma3"}, {"use_sliding_window": True}, {"_attn_implementation": "eager"},
                   {"layer_types": ["full_attention", "sliding_attention"]}):
        assert not tb.blockwise_supported(types.SimpleNamespace(**{**vars(ok), **change}))
