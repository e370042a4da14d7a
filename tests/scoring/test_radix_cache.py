"""The radix prefix cache (scorer/scoring/radix_cache.py) with the fake backend: the trie (insert, longest match at any
depth, split of a node, LRU leaf eviction, the budget), what it tells the records, and its reuse across the rows of
a run, the calls of the Python API and the requests to the service."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fakes import FAKE_STATE_BYTES, FakeBackend

from scorer.api import Scorer
from scorer.core.checks import OptionError, byte_size
from scorer.core.errors import InputError, ValidationError
from scorer.formats.records import check_record, read_records, validate_records
from scorer.formats.rows import parse_decision
from scorer.prompting.prompt import common_prefix
from scorer.scoring.drift import fast_tokens
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.radix_cache import RadixCache

_B = FAKE_STATE_BYTES
_OPTS = [{"id": "yes", "description": "Yes"}, {"id": "no", "description": "No"}]
_STATES = ["The parcel is three days late and the customer is upset.", "A broken lamp was returned on Monday.",
           "The parcel is three days early."]
_QUESTIONS = ["Is it late?", "Does it ask for a refund?", "Is the customer upset?"]


def _look(cache: RadixCache, backend: FakeBackend, ids: list[int]) -> tuple[list[int], dict]:
    """The ids of the state the cache hands out for ``ids`` (the fake's state is its ids) and the record block."""
    with cache.prefix(backend, ids) as (state, look):
        return list(state.handle), look.block()


def _shape(cache: RadixCache) -> list[tuple[int, int, bool]]:
    """The trie, depth first: (depth, edge length, holds a state) of every node below the root."""
    out, stack = [], list(cache._root.children.values())
    while stack:
        n = stack.pop()
        out.append((n.depth, len(n.edge), n.state is not None))
        stack.extend(n.children.values())
    return sorted(out)


# --- the trie ---------------------------------------------------------------------------------------------------
def test_insert_then_the_same_prefix_is_a_hit_with_no_model_call():
    fb, cache = FakeBackend(), RadixCache()
    ids = list(range(20, 30))
    got, block = _look(cache, fb, ids)
    assert got == ids and block["lookup"] == "miss" and block["reused_tokens"] == 0
    assert block["prefilled_tokens"] == 10 and block["state_bytes"] == 10 * _B == block["held_bytes"]
    got, block = _look(cache, fb, ids)
    assert got == ids and block["lookup"] == "hit" and (block["reused_tokens"], block["prefilled_tokens"]) == (10, 0)
    assert fb.calls["prefill"] == 1 and fb.calls["extend"] == 0
    assert cache.stats.as_dict() | {"peak_bytes": 0} == {"hits": 1, "partial": 0, "misses": 1, "reused_tokens": 10,
                                                         "prefilled_tokens": 10, "evictions": 0, "evicted_bytes": 0,
                                                         "peak_bytes": 0}


def test_a_longer_prefix_extends_the_cached_one_and_prefills_only_the_rest():
    fb, cache = FakeBackend(), RadixCache()
    head = list(range(20, 320))  # 300 shared tokens
    _look(cache, fb, [*head, 1, 2, 3])
    got, block = _look(cache, fb, [*head, 7, 8, 9, 10])
    assert got == [*head, 7, 8, 9, 10]
    assert block["lookup"] == "partial" and (block["reused_tokens"], block["prefilled_tokens"]) == (300, 4)
    assert fb.fed == {"prefill": 303, "extend": 4}  # only the 4 new tokens went through the model


def test_longest_match_at_any_depth_inside_an_edge_splits_the_node():
    fb, cache = FakeBackend(), RadixCache()
    a = [5, 6, 7, 8, 9, 10]
    _look(cache, fb, a)
    assert _shape(cache) == [(6, 6, True)]
    got, block = _look(cache, fb, [5, 6, 7, 1, 2])
    assert got == [5, 6, 7, 1, 2] and block["lookup"] == "partial" and block["reused_tokens"] == 3
    # the edge [5..10] was split after 3 tokens: an inner node without a state, two leaves with theirs
    assert _shape(cache) == [(3, 3, False), (5, 2, True), (6, 3, True)]
    for _ in range(2):  # the inner node: a hit, cut from the shallowest state below it for this use only
        extends = fb.calls["extend"]
        got, block = _look(cache, fb, [5, 6, 7])
        assert got == [5, 6, 7] and block["lookup"] == "hit" and block["prefilled_tokens"] == 0
        assert fb.calls["extend"] == extends + 1 and fb.fed["extend"] == 2  # a cut: no token through the model
    assert _shape(cache) == [(3, 3, False), (5, 2, True), (6, 3, True)] and cache.held_bytes == 11 * _B
    got, block = _look(cache, fb, [5, 6])  # inside the first edge: cut short too
    assert got == [5, 6] and block["lookup"] == "hit"
    assert _look(cache, fb, [4, 5])[1]["lookup"] == "miss"  # another first token: nothing to reuse
    calls = dict(fb.calls)
    assert _look(cache, fb, [5, 6, 7, 1, 2])[1]["lookup"] == "hit" and fb.calls == calls  # held: no call at all


@pytest.mark.parametrize("depth", range(1, 12))
def test_a_hit_at_every_depth_hands_out_exactly_that_prefix(depth):
    fb, cache = FakeBackend(), RadixCache()
    ids = list(range(40, 52))
    _look(cache, fb, ids)
    probe = [*ids[:depth], 999, 998]
    got, block = _look(cache, fb, probe)
    assert got == probe and block["reused_tokens"] == depth and block["prefilled_tokens"] == 2


def test_lru_leaves_are_evicted_past_the_budget():
    fb = FakeBackend()
    cache = RadixCache(budget_bytes=8 * _B)  # two 4-token states
    a, b, c = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]
    _look(cache, fb, a)
    _look(cache, fb, b)
    _look(cache, fb, a)  # a is now more recent than b
    _look(cache, fb, c)
    assert cache.stats.evictions == 1 and cache.stats.evicted_bytes == 4 * _B and cache.held_bytes == 8 * _B
    assert _look(cache, fb, a)[1]["lookup"] == "hit" and _look(cache, fb, b)[1]["lookup"] == "miss"
    assert cache.states == 2 and cache.held_bytes <= cache.budget_bytes and cache.stats.peak_bytes == 12 * _B


def test_only_leaves_are_evicted_and_an_inner_state_outlives_its_child():
    fb = FakeBackend()
    cache = RadixCache(budget_bytes=9 * _B)
    a = [1, 2, 3, 4]
    _look(cache, fb, a)
    with cache.prefix(fb, [*a, 5, 6]) as (_, look):  # 4 + 6 tokens held: over budget, but the leaf is in use
        assert look.held_bytes == 10 * _B and cache.held_bytes == 10 * _B
    # a (older) has a child, so it is not a leaf: the child goes
    assert cache.stats.evictions == 1 and cache.held_bytes == 4 * _B and _shape(cache) == [(4, 4, True)]


def test_a_state_larger_than_the_budget_is_used_once_then_evicted():
    fb = FakeBackend()
    cache = RadixCache(budget_bytes=1)
    ids = [3, 4, 5]
    with cache.prefix(fb, ids) as (state, look):
        assert state.handle is not None and look.lookup == "miss" and cache.held_bytes == 3 * _B
    assert state.handle is None  # released by the cache
    assert cache.held_bytes == 0 and cache.states == 0 and _shape(cache) == [] and cache.stats.evictions == 1
    assert _look(cache, fb, ids)[1]["lookup"] == "miss"


def test_states_in_use_are_never_evicted():
    fb = FakeBackend()
    cache = RadixCache(budget_bytes=4 * _B)
    with cache.prefix(fb, [1, 2, 3, 4]) as (outer, _):
        with cache.prefix(fb, [5, 6, 7, 8]) as (inner, _):
            assert cache.held_bytes == 8 * _B and outer.handle is not None and inner.handle is not None
        assert outer.handle is not None and inner.handle is None  # only the unused one went
    assert cache.held_bytes == 4 * _B


def test_evicting_a_leaf_prunes_and_merges_stateless_inner_nodes():
    fb = FakeBackend()
    cache = RadixCache(budget_bytes=8 * _B)
    _look(cache, fb, [1, 2, 3, 4])
    _look(cache, fb, [1, 2, 9, 9])
    assert _shape(cache) == [(2, 2, False), (4, 2, True), (4, 2, True)]
    _look(cache, fb, [7, 7, 7, 7])  # evicts [1, 2, 3, 4]: its parent keeps one child and is merged into it
    assert _shape(cache) == [(4, 4, True), (4, 4, True)]
    got, block = _look(cache, fb, [1, 2, 9, 9])
    assert got == [1, 2, 9, 9] and block["lookup"] == "hit"


def test_held_bytes_are_the_backends_own_state_sizes():
    fb, cache = FakeBackend(), RadixCache()
    for ids in ([1, 2, 3], [1, 2, 3, 4, 5], [1, 2, 8]):
        _look(cache, fb, ids)
    held = [n.state.nbytes for n in cache._held]
    assert cache.held_bytes == sum(held) == (3 + 5 + 3) * _B


def test_a_backend_that_cannot_cut_reuses_whole_states_on_the_path_only():
    fb = FakeBackend()
    fb.cuts_prefixes = False
    cache = RadixCache()
    _look(cache, fb, [1, 2, 3, 4, 5, 6])
    assert _look(cache, fb, [1, 2, 3, 9])[1]["lookup"] == "miss"  # would need a cut
    got, block = _look(cache, fb, [1, 2, 3, 4, 5, 6, 7])
    assert got == [1, 2, 3, 4, 5, 6, 7] and block["lookup"] == "partial" and block["reused_tokens"] == 6
    assert _look(cache, fb, [1, 2, 3])[1]["lookup"] == "miss"  # the inner node has no state of its own
    assert _look(cache, fb, [1, 2, 3])[1]["lookup"] == "hit"  # now it has
    assert _look(cache, fb, [1, 2, 3, 9, 9])[1]["reused_tokens"] == 4


def test_a_backend_that_cannot_extend_gets_exact_hits_only():
    fb = FakeBackend()
    fb.extends_prefixes = fb.cuts_prefixes = False
    cache = RadixCache()
    _look(cache, fb, [1, 2, 3])
    assert _look(cache, fb, [1, 2, 3, 4])[1]["lookup"] == "miss"
    assert _look(cache, fb, [1, 2, 3])[1]["lookup"] == "hit"
    assert fb.calls["extend"] == 0 and fb.calls["prefill"] == 2


def test_bad_use_is_refused():
    fb, cache = FakeBackend(), RadixCache()
    with pytest.raises(ValidationError, match="no tokens"):
        _look(cache, fb, [])
    _look(cache, fb, [1, 2])
    with pytest.raises(ValidationError, match="another backend"):
        _look(cache, FakeBackend(), [1, 2])
    for bad in (0, -1, 1.5, True, "1G"):
        with pytest.raises(OptionError, match="prefix_cache_bytes"):
            RadixCache(budget_bytes=bad)  # type: ignore[arg-type]


def test_clear_releases_every_state_and_the_backend():
    fb, cache = FakeBackend(), RadixCache()
    with cache.prefix(fb, [1, 2, 3]) as (state, _):
        pass
    cache.clear()
    assert state.handle is None and cache.states == 0 and cache.held_bytes == 0
    assert _look(cache, FakeBackend(), [1, 2, 3])[1]["lookup"] == "miss"  # it may serve another backend now
    assert "1 hits" not in cache.summary() and "2 misses" in cache.summary()


def test_byte_sizes():
    assert byte_size(4096) == 4096 and byte_size("512M") == 512 << 20 and byte_size("1.5G") == 3 << 29
    assert byte_size("64KiB") == 64 << 10 and byte_size(" 2 gib ") == 2 << 30 and byte_size("100") == 100
    for bad in (0, "0", "-1K", "1X", "", "nan", "G", True, 1.0, "0.5B"):
        with pytest.raises(OptionError, match="a number of bytes"):
            byte_size(bad, "x")


# --- in a run: records, equality with fresh scoring, eviction -----------------------------------------------------
def _rows(states=_STATES, questions=_QUESTIONS) -> list:
    return [parse_decision({"id": f"s{s}-q{q}", "state": st, "question": qu, "options": _OPTS}, "mem", None)
            for s, st in enumerate(states) for q, qu in enumerate(questions)]


def _run(backend, rows, mode, cache=None):
    items = prepare(backend, rows, with_prefix=mode != "direct")
    return list(score_items(backend, items, mode, {"config_sha256": "t"}, 0, 4096, cache))


def _probs(recs):
    return [r["probabilities"] for r in recs]


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_run_records_say_how_each_prefix_was_had_and_equal_fresh(mode):
    rows = _rows()
    fb = FakeBackend()
    recs = _run(fb, rows, mode)
    validate_records(recs)
    assert _probs(recs) == _probs(_run(FakeBackend(), rows, "direct"))
    looks = [r["cache"]["lookup"] for r in recs]
    later = "hit" if mode == "serial" else "group"
    # state 0 is new; state 1 shares the instructions; state 2 shares them and "The parcel is three days "
    assert looks == ["miss", later, later, "partial", later, later, "partial", later, later]
    firsts = [recs[0], recs[3], recs[6]]
    assert firsts[2]["cache"]["reused_tokens"] > firsts[1]["cache"]["reused_tokens"] > 0
    for r in recs:
        c = r["cache"]
        assert c["kind"] == "radix" and c["reused_tokens"] + c["prefilled_tokens"] == r["prefix_tokens"]
        assert r["cache_hit"] is (c["lookup"] in ("hit", "group"))
    # the records' token count is what went through the model
    assert sum(r["cache"]["prefilled_tokens"] for r in recs) == fb.fed["prefill"] + fb.fed["extend"]
    assert fast_tokens(recs) == fb.fed["prefill"] + fb.fed["extend"] + sum(r["suffix_tokens"] for r in recs)


@pytest.mark.parametrize("states", [0, 1, 2])
@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_eviction_under_a_tiny_budget_stays_correct_and_counts_right(mode, states):
    rows = _rows()
    random.Random(3).shuffle(rows)  # states interleaved: a small cache keeps losing them
    fb = FakeBackend()
    budget = max(1, states * max(len(it.prefix) for it in prepare(fb, rows)) * _B)  # room for that many states
    cache = RadixCache(budget)
    recs = _run(fb, rows, mode, cache)
    validate_records(recs)
    fresh = {r["id"]: r["probabilities"] for r in _run(FakeBackend(), rows, "direct")}
    assert all(r["probabilities"] == fresh[r["id"]] for r in recs)
    looks = [r["cache"]["lookup"] for r in recs if r["cache"]["lookup"] != "group"]
    s = cache.stats
    assert (looks.count("hit"), looks.count("partial"), looks.count("miss")) == (s.hits, s.partial, s.misses)
    assert s.prefilled_tokens == sum(r["cache"]["prefilled_tokens"] for r in recs) == fb.fed["prefill"] + fb.fed[
        "extend"]
    assert cache.held_bytes <= budget
    assert s.evictions + cache.states == s.misses + s.partial  # each state that took model work: held, or evicted
    if states == 0:  # nothing survives a row: every lookup builds its state from scratch
        assert s.misses == len(looks) and s.hits == s.partial == 0 and cache.states == 0
    else:
        assert s.hits + s.partial > 0 and s.evictions > 0


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_a_run_without_a_cache_releases_its_own(mode):
    fb = FakeBackend()
    released = []
    real = fb.release
    fb.release = lambda p: (released.append(p), real(p))  # type: ignore[method-assign]
    _run(fb, _rows(), mode)
    assert len(released) == fb.calls["prefill"] + fb.calls["extend"] and all(p.handle is None for p in released)


def test_direct_records_have_no_cache_block():
    recs = _run(FakeBackend(), _rows(), "direct")
    assert all(r["cache"] is None and r["cache_hit"] is None for r in recs)


def test_a_record_whose_cache_block_does_not_add_up_is_refused():
    (rec,) = _run(FakeBackend(), _rows()[:1], "serial")
    check_record(rec, "r.jsonl", 1)
    n = rec["prefix_tokens"]
    bad = [({"reused_tokens": 1}, "cache.prefilled_tokens", "reused_tokens + prefilled_tokens = prefix_tokens"),
           ({"lookup": "hit"}, "cache.lookup", "hit/group: nothing prefilled"),
           ({"lookup": "partial"}, "cache.lookup", "partial: some of each"),
           ({"lookup": "bogus"}, "cache.lookup", "one of"),
           ({"reused_tokens": n, "prefilled_tokens": 0, "lookup": "hit"}, "cache_hit", "true exactly when")]
    for change, field, expected in bad:
        broken = {**rec, "cache": {**rec["cache"], **change}}
        with pytest.raises(InputError) as exc:
            check_record(broken, "r.jsonl", 1)
        assert exc.value.field == field and expected in exc.value.expected, (change, exc.value)
    with pytest.raises(InputError, match="null in a direct record"):
        check_record({**rec, "prefix_tokens": None, "suffix_tokens": None, "cache_hit": None,
                      "prefix_sha256": None}, "r.jsonl", 1)


# --- across calls: the Python API and the service -------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_the_api_reuses_prefixes_across_calls(mode):
    fb = FakeBackend()
    with Scorer(backend=fb, slots="letters", mode=mode) as s, \
            Scorer(backend=FakeBackend(), slots="letters", mode="direct") as fresh:
        first = s.decide(_STATES[0], _QUESTIONS[0], {"yes": "Yes", "no": "No"})
        second = s.decide(_STATES[0], _QUESTIONS[1], {"yes": "Yes", "no": "No"})
        again = s.decide(_STATES[0], _QUESTIONS[1], {"yes": "Yes", "no": "No"})
        other = s.decide(_STATES[2], _QUESTIONS[1], {"yes": "Yes", "no": "No"})
        want = fresh.decide(_STATES[0], _QUESTIONS[1], {"yes": "Yes", "no": "No"})
    assert first.record["cache"]["lookup"] == "miss"
    c = second.record["cache"]
    # the instructions, the state and "Question: " came from the first call's state: exactly the tokens both share
    a, b = (prepare(fb, [parse_decision({"id": "x", "state": _STATES[0], "question": q, "options": _OPTS}, "m", None)])
            [0] for q in _QUESTIONS[:2])
    shared = len(common_prefix([a.prefix, b.prefix]))
    assert c["lookup"] == "partial" and c["reused_tokens"] == shared > len(_STATES[0])
    assert c["prefilled_tokens"] == len(b.prefix) - shared
    assert again.record["cache"]["lookup"] == "hit" and again.record["cache_hit"] is True
    assert other.record["cache"]["lookup"] == "partial"
    assert second.probabilities == again.probabilities == want.probabilities
    assert s.prefix_cache.stats.misses == 1 and s.prefix_cache.states == 0  # closing the scorer released them


def test_the_api_budget_option_is_checked_and_used():
    with pytest.raises(OptionError, match="prefix_cache_bytes: 0 is not a number of bytes"):
        Scorer(backend=FakeBackend(), slots="letters", prefix_cache_bytes=0)
    s = Scorer(backend=FakeBackend(), slots="letters", mode="serial", prefix_cache_bytes="1K")
    assert s.prefix_cache.budget_bytes == 1024
    rec = s.decide(_STATES[1], _QUESTIONS[0], {"yes": "Yes", "no": "No"}).record
    assert rec["cache"]["budget_bytes"] == 1024 and s.prefix_cache.stats.evictions == 1  # over 1 KiB: used once
    s.close()


def test_the_service_reuses_prefixes_across_requests():
    from starlette.testclient import TestClient

    from scorer.serving.service import build_app

    row = {"id": "r", "state": _STATES[0], "question": _QUESTIONS[0], "options": _OPTS}
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as scorer, \
            TestClient(build_app(scorer)) as client:
        one = client.post("/v1/decide", json=row).json()
        two = client.post("/v1/decide", json={**row, "question": _QUESTIONS[2]}).json()
        batch = client.post("/v1/decide/batch", json={"rows": [{**row, "id": "a"}, {**row, "id": "b",
                                                                                     "question": "Is it?"}]}).json()
        stats = client.get("/v1/models").json()["prefix_cache"]
    assert one["cache"]["lookup"] == "miss" and two["cache"]["lookup"] == "partial"
    assert [r["cache"]["lookup"] for r in batch["records"]] == ["hit", "group"]  # the group prefix was held
    assert stats["kind"] == "radix" and stats["misses"] == 1 and stats["partial"] == 1 and stats["hits"] == 1
    assert stats["held_bytes"] > 0 and stats["budget_bytes"] == scorer.prefix_cache.budget_bytes
    assert np.isclose(sum(two["probabilities"]), 1.0)


# --- the command line -----------------------------------------------------------------------------------------------
def test_semif_score_takes_the_budget_and_sums_the_cache_up(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    from scorer import cli

    rows = Path(__file__).resolve().parents[2] / "data" / "workloads" / "shape-small.jsonl"
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(rows), "--output", str(out), "--mode", "serial", "--summary",
                     "--prefix-cache-bytes", "8M"]) == 0
    captured = capsys.readouterr()
    recs = read_records(out)
    assert all(r["cache"]["budget_bytes"] == 8 << 20 for r in recs)
    n = {k: sum(r["cache"]["lookup"] == k for r in recs) for k in ("hit", "partial", "miss")}
    assert f"prefix cache (radix, budget 8.0 MiB): {n['hit']} hits, {n['partial']} partial, {n['miss']} misses" \
        in captured.err
    assert f"prefix cache: {n['hit']} hits, {n['partial']} partial, {n['miss']} misses" in captured.out
    assert n["hit"] and n["partial"] and n["miss"] == 1
    for bad, shown in (("0", "0"), ("lots", "'lots'")):
        with pytest.raises(SystemExit) as stop:  # argparse refuses it by the API's rule (scorer.core.checks)
            cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "x.jsonl"),
                      "--prefix-cache-bytes", bad])
        assert stop.value.code == 2
        assert f"argument --prefix-cache-bytes: {shown} is not a number of bytes >= 1" in capsys.readouterr().err
