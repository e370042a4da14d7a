"""Serial and shared modes against fresh scoring, with fakes: same numbers, grouping of shuffled rows,
token-keyed prefix cache, the BPE-merge boundary, chunking under a tiny budget, one record schema."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fakes import FakeBackend, FakeTokenizer

from scorer.formats.records import validate_records
from scorer.formats.rows import parse_decision
from scorer.prompting.prompt import prefix_ids, sha256_tokens
from scorer.scoring.modes import prepare, score_items

_OPTS2 = [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]
_OPTS3 = [{"id": "a", "description": "Alpha"}, {"id": "b", "description": "Beta"}, {"id": "c", "description": "Gamma"}]
_QUESTIONS = ["Is it late?", "Does it ask for a refund?", "Is the total above 100?", "Was it sent by phone?"]
_STATES = [{"ticket": "T-1", "note": "late parcel", "amount": 120},
           "A plain text state about a broken lamp.",
           {"ticket": "T-2", "note": "refund please", "tags": ["x", "y"]}]


def _rows(states=_STATES, questions=_QUESTIONS) -> list:
    out = []
    for s, state in enumerate(states):
        for q, question in enumerate(questions):
            opts = _OPTS3 if q == 2 else _OPTS2
            out.append(parse_decision({"id": f"s{s}-q{q}", "state": state, "question": question, "options": opts,
                                       "state_id": f"s{s}"}, "mem", None))
    return out


def _run(backend, rows, mode, budget=4096):
    items = prepare(backend, rows, with_prefix=mode != "direct")
    return list(score_items(backend, items, mode, {"config_sha256": "t"}, 0, budget))


_SAME = ("id", "probabilities", "option_logits", "choice", "margin", "tie", "tied_option_ids",
         "allowed_token_mass", "input_tokens", "prompt_sha256", "tokens_sha256")


def _same(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in _SAME)


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_fast_modes_equal_fresh_with_exact_kernel(mode):
    rows = _rows()
    fresh = _run(FakeBackend(), rows, "direct")
    fast = _run(FakeBackend(), rows, mode)
    assert [r["id"] for r in fast] == [d.id for d in rows]
    assert all(_same(a, b) for a, b in zip(fresh, fast, strict=True))
    # the logits of the fake depend on every token: a wrong prefix or position would change them
    assert len({r["probabilities"][0] for r in fresh}) == len(rows)


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_fast_records_carry_cache_fields_and_phase_timing(mode):
    recs = _run(FakeBackend(), _rows(), mode)
    validate_records(recs)
    for r in recs:
        assert r["mode"] == mode
        assert r["prefix_tokens"] > 0 and r["suffix_tokens"] >= 1
        assert r["prefix_tokens"] + r["suffix_tokens"] == r["input_tokens"]
        assert len(r["prefix_sha256"]) == 64
        assert {"prefill_s", "copy_s", "suffix_s"} <= set(r["timing"])
    assert [r["cache_hit"] for r in recs[:4]] == [False, True, True, True]
    assert recs[0]["kernel"] == ("fake.packed" if mode == "shared" else "fake.prefix-reuse")


def test_shared_groups_shuffled_rows_by_prefix_and_keeps_input_order():
    rows = _rows()
    random.Random(7).shuffle(rows)
    fb = FakeBackend()
    shared = _run(fb, rows, "shared")
    # one prefix state per state (the first prefilled, the others extended from the instructions they share)
    assert fb.calls["prefill"] + fb.calls["extend"] == len(_STATES) and fb.calls["fan_out"] == len(_STATES)
    assert [r["id"] for r in shared] == [d.id for d in rows]
    fresh = _run(FakeBackend(), rows, "direct")
    assert all(_same(a, b) for a, b in zip(fresh, shared, strict=True))
    by_state: dict[str, set] = {}
    for d, r in zip(rows, shared, strict=True):
        by_state.setdefault(d.extra["state_id"], set()).add(r["prefix_sha256"])
    assert all(len(v) == 1 for v in by_state.values())
    assert len({next(iter(v)) for v in by_state.values()}) == len(_STATES)


def test_serial_cache_is_keyed_by_token_ids_reordered_json_is_a_miss():
    a = {"x": 1, "y": 2}
    b = {"y": 2, "x": 1}  # equal as Python objects, a different prompt
    assert a == b
    rows = _rows(states=[a, b, a], questions=_QUESTIONS[:2])
    fb = FakeBackend()
    recs = _run(fb, rows, "serial")
    assert [r["cache_hit"] for r in recs] == [False, True, False, True, True, True]
    assert [r["cache"]["lookup"] for r in recs] == ["miss", "hit", "partial", "hit", "hit", "hit"]
    assert fb.calls["prefill"] == fb.calls["extend"] == 1
    assert recs[0]["prefix_sha256"] != recs[2]["prefix_sha256"]
    assert recs[0]["prefix_sha256"] == recs[4]["prefix_sha256"]
    fresh = _run(FakeBackend(), rows, "direct")
    assert all(_same(x, y) for x, y in zip(fresh, recs, strict=True))


@pytest.mark.parametrize("merge", ["\n\nQuestion", "}\n\nQ"])
@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_bpe_merge_across_the_state_boundary(merge, mode):
    tok = FakeTokenizer(merges=[merge])
    rows = _rows(states=[_STATES[0], _STATES[2]])
    fb = FakeBackend(tokenizer=tok)
    items = prepare(fb, rows)
    for it in items:
        naive = tok.encode(it.prompt.prefix_text)
        # the state head encoded alone is NOT a prefix of the full prompt: the merge crosses the boundary
        assert it.prompt.ids[: len(naive)] != naive
        head = prefix_ids(tok, it.prompt)
        assert it.prompt.ids[: len(head)] == head and len(head) < len(naive)
        assert it.prompt.ids[: len(it.prefix)] == it.prefix
    fresh = _run(FakeBackend(tokenizer=tok), rows, "direct")
    fast = _run(FakeBackend(tokenizer=tok), rows, mode)
    assert all(_same(a, b) for a, b in zip(fresh, fast, strict=True))


def test_group_prefix_is_the_longest_common_token_prefix():
    rows = _rows(states=[_STATES[0]])
    items = prepare(FakeBackend(), rows)
    ids = [it.prompt.ids for it in items]
    pre = items[0].prefix
    assert all(x[: len(pre)] == pre for x in ids)
    assert len({tuple(x[: len(pre) + 1]) for x in ids}) > 1  # one more token and they differ
    assert all(sha256_tokens(it.prefix) == sha256_tokens(pre) for it in items)


def test_single_row_group_keeps_one_suffix_token():
    rows = _rows(states=[_STATES[1]], questions=_QUESTIONS[:1])
    (it,) = prepare(FakeBackend(), rows)
    assert len(it.prompt.ids) - len(it.prefix) == 1


def test_chunking_under_a_tiny_budget_gives_the_same_records():
    rows = _rows()
    big, small = FakeBackend(), FakeBackend()
    a = _run(big, rows, "shared", budget=4096)
    b = _run(small, rows, "shared", budget=1)  # every suffix alone in its own pass
    assert big.calls["chunks"] == len(_STATES)
    assert small.calls["chunks"] == len(rows)
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))
    assert max(r["timing"]["group_chunks"] for r in b) == len(_QUESTIONS)


def test_records_of_all_modes_validate_against_one_schema():
    rows = _rows()
    recs = [r for mode in ("direct", "serial", "shared") for r in _run(FakeBackend(), rows, mode)]
    validate_records(recs)
    assert {r["mode"] for r in recs} == {"direct", "serial", "shared"}
    keys = {frozenset(r) for r in recs}
    assert len(keys) == 1  # the very same fields in every mode


def test_fake_drift_reaches_the_records():
    rows = _rows()
    fresh = _run(FakeBackend(), rows, "direct")
    fast = _run(FakeBackend(drift=0.05), rows, "shared")
    d = max(float(np.max(np.abs(np.subtract(a["probabilities"], b["probabilities"]))))
            for a, b in zip(fresh, fast, strict=True))
    assert 0 < d < 0.05
