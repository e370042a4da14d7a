"""The llama.cpp backend on the real SmolLM2-135M GGUF: validations, modes, hashes, records (the kernel calls
themselves, generation included, are held to the backend contract in tests/backends/test_backend_contract.py).

Exactness: direct, serial and shared agree to the last bit (the canonical batch shapes of
:mod:`scorer.backends.llamacpp_backend`; before them, measured here: serial 0.19 in one logit for some batch shapes,
shared max |dp| 0.036 over 42 shape rows). Both layouts, on rows with one and with several criteria per state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from scorer.backends import llamacpp_backend
from scorer.core.errors import ValidationError
from scorer.formats.records import validate_records
from scorer.formats.rows import Option, load_decisions
from scorer.models import store
from scorer.prompting.layouts import LAYOUTS
from scorer.scoring.exact import ExactPolicy
from scorer.scoring.modes import prepare, score_items

pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]



@pytest.fixture(scope="module")
def rows(data_dir: Any) -> list[Any]:
    # One state with three criteria (shared prefix, several branches) and two single-row states.
    return (load_decisions(data_dir / "workloads" / "shape-small.jsonl")[:3]
            + load_decisions(data_dir / "examples" / "decisions.jsonl")[:2])


@pytest.fixture(scope="module", params=LAYOUTS)
def by_mode(smol_llamacpp: Any, rows: list[Any], request: pytest.FixtureRequest) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for mode in ("direct", "serial", "shared"):
        items = prepare(smol_llamacpp, rows, with_prefix=mode != "direct", layout=request.param)
        out[mode] = list(score_items(smol_llamacpp, items, mode, {"config_sha256": "test"}))
    return out


def _max_dp(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    return max(max(abs(x - y) for x, y in zip(ra["probabilities"], rb["probabilities"], strict=True))
               for ra, rb in zip(a, b, strict=True))


def test_load_validates_and_records_what_llama_cpp_did(smol_llamacpp: Any) -> None:
    info = smol_llamacpp.model_info()
    entry = store.REGISTRY[store.TEST_MODEL]
    assert info["backend"] == "llamacpp" and info["gguf_sha256"] == entry.sha256
    assert info["gguf"] == {"file": entry.filename, "bytes": entry.size, "sha256": entry.sha256, "quantization": "Q4_1"}
    assert info["validation"]["vocabulary"].startswith("49152 token texts")
    assert info["score_kind"].startswith("quantized-weight conditional option score, uncalibrated")
    llama = info["llama"]
    assert llama["n_gpu_layers_requested"] == 0 and llama["layers_offloaded"] == 0
    assert llama["layer_slots"] == 31 and isinstance(llama["gpu_offload_supported"], bool)
    assert llama["kv_cells"] >= 256 and llama["n_threads"] >= 1 and llama["flash_attn"] == "disabled"
    # the threads llama.cpp runs (n_threads and n_threads_batch) are the ones chosen, and the wait policy is recorded
    threading = info["threading"]
    assert threading["threads"]["chosen"] == info["threads"] == llama["n_threads"] == llama["n_threads_batch"]
    assert threading["threads"]["asked"] is None and "usable cores" in threading["threads"]["why"]
    assert {"OMP_WAIT_POLICY", "source", "in_effect"} <= set(threading["wait_policy"])


def test_serial_and_shared_equal_direct_to_the_bit(by_mode: dict[str, list[dict[str, Any]]]) -> None:
    for mode in ("serial", "shared"):
        assert _max_dp(by_mode["direct"], by_mode[mode]) == 0.0, mode
        assert [r["option_logits"] for r in by_mode[mode]] == [r["option_logits"] for r in by_mode["direct"]], mode
    assert by_mode["shared"][0]["kernel"] == "llamacpp.seq-cp-batch"
    assert by_mode["serial"][0]["kernel"] == "llamacpp.prefix-reuse"
    if by_mode["shared"][0]["layout"] == "state-major":  # one state, three criteria: one packed pass
        assert by_mode["shared"][0]["timing"]["group_rows"] == 3


def test_a_pass_of_very_different_suffixes_goes_in_width_groups_and_equals_direct(
        smol_llamacpp: Any, rows: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two short questions and one with long options about one state: the pass is decoded in two width groups (the
    long branch apart, so the short ones are not padded to it), and every readout still equals direct scoring."""
    words = "a rather long description of what choosing this option would mean for the ticket " * 3
    long = replace(rows[0], id="long-options",
                   options=tuple(Option(f"o{i}", f"Option {i}: {words}") for i in range(6)))
    mixed = [rows[0], long, rows[1]]
    seen: list[list[list[int]]] = []
    real = llamacpp_backend.width_groups

    def recording(lengths: Any, overhead: int = llamacpp_backend.GROUP_COST_TOKENS) -> list[list[int]]:
        seen.append(real(lengths, overhead))
        return seen[-1]

    monkeypatch.setattr(llamacpp_backend, "width_groups", recording)
    batches: list[list[int]] = []
    decode = smol_llamacpp._decode
    monkeypatch.setattr(smol_llamacpp, "_decode", lambda tokens, pos, seqs, want: (
        batches.append(list(dict.fromkeys(seqs))), decode(tokens, pos, seqs, want))[1])
    out = {}
    for mode in ("direct", "shared", "shared"):  # shared twice: the second pass reuses the ids the first freed
        items = prepare(smol_llamacpp, mixed, with_prefix=mode != "direct")
        out[mode] = list(score_items(smol_llamacpp, items, mode, {"config_sha256": "test"}))
    # one grouping per pass (the branching and the batches follow it): two groups, the long branch apart
    assert len(seen) == 4 and all(g == seen[0] for g in seen) and sorted(len(x) for x in seen[0]) == [1, 2]
    assert [r["option_logits"] for r in out["shared"]] == [r["option_logits"] for r in out["direct"]]
    # every packed batch's branches have ids that step up by one, so llama.cpp decodes each width group as one ubatch
    # (rule 4 makes that ubatch equal to direct), whatever order earlier passes left the free ids in
    packed = [b for b in batches if len(b) > 1]
    assert len(packed) == 2 and all(b == list(range(b[0], b[0] + len(b))) for b in packed)


@pytest.mark.parametrize("moves", [True, False], ids=["moved", "decoded-again"])
def test_a_held_state_outlives_a_resize_to_other_streams(smol_llamacpp: Any, rows: list[Any], moves: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A state saved before the context was resized to another number of streams: llama.cpp refuses it as saved.
    Moved (``restream``: a plain KV cache, as SmolLM2's), it is restored with no model work at all; where it cannot
    be moved (a sliding-window or recurrent cache, forced here) an extension decodes only its kept tokens again, not
    the whole state to be cut back, and a pure cut decodes it whole once and refreshes it, so the next cut costs
    nothing. Every path equals fresh scoring to the bit."""
    monkeypatch.setattr(smol_llamacpp, "_restreams", moves)
    (item,) = prepare(smol_llamacpp, rows[:1], with_prefix=False)
    ids, slots = item.prompt.ids, item.prompt.slot_ids
    fresh = smol_llamacpp.score_fresh(ids, want=slots)
    held = smol_llamacpp.prefill(ids[:-1] + ids[5:40])  # longer than what is kept, and then not the prompt
    streams = smol_llamacpp._ctx_info["n_seq_max"]
    smol_llamacpp._resize(smol_llamacpp._stream_cells, streams + 3, smol_llamacpp._ctx_info["n_batch"])
    decoded: list[int] = []
    real = smol_llamacpp._run
    monkeypatch.setattr(smol_llamacpp, "_run", lambda s, t, logits, canonical=True: (
        decoded.append(len(t)), real(s, t, logits, canonical))[1])
    keep = len(ids) // 2
    extended = smol_llamacpp.extend(held, ids[keep:-1], keep=keep)
    # the kept part (only where the state cannot be moved), then the extension: never the whole held state
    assert decoded == ([] if moves else [keep]) + [len(ids) - 1 - keep]
    decoded.clear()
    cut = smol_llamacpp.extend(held, [], keep=len(ids) - 1)
    assert decoded == ([] if moves else [len(held.ids)]) and held.handle.streams == streams + 3
    decoded.clear()
    again = smol_llamacpp.extend(held, [], keep=len(ids) - 1)
    assert decoded == []  # restored and cut: no model work
    for prefix in (extended, cut, again):
        logits, _ = smol_llamacpp.score_with_prefix(prefix, ids[-1:], want=slots)
        assert np.array_equal(logits, fresh)
    # and back to fewer streams than it was saved under (a plan capped by memory): still the same numbers
    smol_llamacpp._resize(smol_llamacpp._stream_cells, 2, smol_llamacpp._ctx_info["n_batch"])
    decoded.clear()
    logits, _ = smol_llamacpp.score_with_prefix(extended, ids[-1:], want=slots)
    assert np.array_equal(logits, fresh) and decoded == ([1] if moves else [len(ids) - 1, 1])
    for prefix in (held, extended, cut, again):
        smol_llamacpp.release(prefix)


def test_a_plan_keeps_the_streams_and_batch_the_context_has(smol_llamacpp: Any, rows: list[Any]) -> None:
    """A run that needs fewer branches or a smaller batch than the last one keeps the context's (held states stay
    restorable, and the context is not re-created for every request)."""
    items = prepare(smol_llamacpp, rows)
    list(score_items(smol_llamacpp, items, "shared", {"config_sha256": "t"}))
    wide = dict(smol_llamacpp._ctx_info)
    list(score_items(smol_llamacpp, prepare(smol_llamacpp, rows[3:4]), "shared", {"config_sha256": "t"}))
    assert smol_llamacpp._ctx_info["n_seq_max"] == wide["n_seq_max"] >= 4
    assert smol_llamacpp._ctx_info["n_batch"] == wide["n_batch"]


def test_records_validate_and_carry_the_gguf_block(by_mode: dict[str, list[dict[str, Any]]]) -> None:
    for recs in by_mode.values():
        validate_records(recs)
        for r in recs:
            assert r["gguf"]["sha256"] == store.REGISTRY[store.TEST_MODEL].sha256
            assert r["score_kind"] == r["model"]["score_kind"]
            assert r["model"]["threading"]["threads"]["chosen"] == r["model"]["threads"]
            assert abs(sum(r["probabilities"]) - 1.0) < 1e-6


def test_prompt_hashes_equal_the_torch_backends(smol_llamacpp: Any, smol_torch: Any, rows: list[Any],
                                                by_mode: dict[str, list[dict[str, Any]]]) -> None:
    ref = prepare(smol_torch, rows, with_prefix=False, layout=by_mode["direct"][0]["layout"])
    for it, rec in zip(ref, by_mode["direct"], strict=True):
        assert rec["prompt_sha256"] == it.prompt.sha256
        assert rec["tokens_sha256"] == it.prompt.tokens_sha256


def test_validations_fail_on_a_constructed_mismatch(smol_llamacpp: Any, rows: list[Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = smol_llamacpp._vocab
    real = vocab.encode
    prompt = prepare(smol_llamacpp, rows[:1], with_prefix=False)[0].prompt
    first = prompt.ids[5]
    monkeypatch.setattr(vocab, "encode", lambda text, with_bos=True, plain=(): [t + 1 if t == first else t
                                                                                for t in real(text, with_bos, plain)])
    with pytest.raises(ValidationError, match="per-row parity"):
        smol_llamacpp.validate_prompt(prompt)
    monkeypatch.setattr(vocab, "encode",
                        lambda text, with_bos=True, plain=(): real(text, with_bos, plain) * (2 if text == "B" else 1))
    smol_llamacpp._letters_ok.clear()
    with pytest.raises(ValidationError, match="answer slot 'B' is 2 tokens"):
        smol_llamacpp.validate_prompt(prompt)
    monkeypatch.setattr(vocab, "encode", real)
    smol_llamacpp.validate_prompt(prompt)


@pytest.fixture(scope="module")
def fresh_by_prompt() -> dict[tuple[tuple[int, ...], tuple[int, ...] | None], np.ndarray]:
    return {}


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_exact_escalates_nothing_on_the_shape_workload(smol_llamacpp: Any, data_dir: Any, mode: str,
                                                       fresh_by_prompt: dict[Any, np.ndarray],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A regression guard for the canonical batch shapes: on the committed shape workload (42 rows, states of up to
    ten criteria) the --exact probe measures no drift at all, so its bound is the float32 floor and no decision is
    re-scored; a drift would raise the bound and escalate the near-ties."""
    # The probe's fresh reference does not depend on the mode: both modes are held to the same fresh passes (each
    # prompt read once from an empty state), so the second mode costs only its own fast passes.
    fresh = smol_llamacpp.score_fresh

    def kept(ids: list[int], want: Any = None) -> np.ndarray:
        key = (tuple(ids), None if want is None else tuple(want))
        if key not in fresh_by_prompt:
            fresh_by_prompt[key] = fresh(ids, want=want)
        return fresh_by_prompt[key].copy()

    monkeypatch.setattr(smol_llamacpp, "score_fresh", kept)
    rows = load_decisions(data_dir / "workloads" / "shape-small.jsonl")
    items = prepare(smol_llamacpp, rows)
    policy = ExactPolicy(safety=2.0, probe_rows=len(rows))
    policy.calibrate(smol_llamacpp, items, mode, 4096)
    assert policy.block["max_abs_dp"] == 0.0
    assert policy.bound is not None and policy.bound < 1e-5
    fast = score_items(smol_llamacpp, items, mode, {"config_sha256": "t"})
    recs = list(policy.apply(smol_llamacpp, items, mode, fast))
    assert len(recs) == 42 and not any(r["tie"] for r in recs)
    assert policy.escalated == 0 and not any(r.get("escalated") for r in recs)
