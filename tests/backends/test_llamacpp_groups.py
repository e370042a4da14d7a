"""The llama.cpp backend's width groups (:func:`scorer.backends.llamacpp_backend.width_groups`): how a packed pass's
branches are split into batches, each padded to its own longest suffix. On plain numbers; the real passes are held
to direct scoring in tests/backends/test_llamacpp_real.py."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from scorer.backends.llamacpp_backend import MIN_OUTPUTS, MIN_PIECE, outputs, width_groups


def _cost(lengths: Sequence[int], groups: list[list[int]], overhead: int) -> int:
    return sum(len(g) * max(MIN_PIECE, *(lengths[i] for i in g)) + overhead for g in groups)


def _brute(lengths: Sequence[int], overhead: int) -> int:
    """The cheapest split of the sorted lengths into consecutive runs, by trying every set of cuts."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    best = None
    for k in range(len(order)):
        for cuts in itertools.combinations(range(1, len(order)), k):
            bounds = [0, *cuts, len(order)]
            groups = [order[a:b] for a, b in itertools.pairwise(bounds)]
            c = _cost(lengths, groups, overhead)
            best = c if best is None else min(best, c)
    assert best is not None
    return best


@pytest.mark.parametrize("lengths", [[5], [40, 40, 40], [3, 95, 30, 31, 94, 12, 60], [8, 9, 100, 101, 102, 7, 1],
                                     [20] * 5 + [200], [1, 2, 3, 4]])
@pytest.mark.parametrize("overhead", [0, 32, 1000])
def test_every_branch_once_and_the_cheapest_split(lengths: list[int], overhead: int) -> None:
    groups = width_groups(lengths, overhead)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    flat = [lengths[i] for g in groups for i in g]
    assert flat == sorted(flat)  # consecutive runs of the lengths in order
    assert _cost(lengths, groups, overhead) == _brute(lengths, overhead)


def test_similar_lengths_stay_one_batch_and_a_far_longer_one_goes_apart() -> None:
    assert width_groups([30, 31, 33, 29]) == [[3, 0, 1, 2]]
    assert width_groups([30] * 10 + [200]) == [list(range(10)), [10]]
    assert width_groups([]) == []


@pytest.mark.parametrize(("want", "n", "read"), [
    ([536], 537, set(range(529, 537))),  # a prompt alone: its last row, and the seven before it
    ([32, 65, 98], 99, {32, 65, 98, 93, 94, 95, 96, 97}),  # three branches: five more rows from the end
    ([], 40, set()),  # nothing wanted, nothing computed
    (list(range(0, 330, 33)), 330, set(range(0, 330, 33))),  # ten branches: as many rows as wanted
    ([0], 1, {0}),  # one token (a generation step): all there is
    ([3], 5, {0, 1, 2, 3, 4}),
])
def test_logits_are_read_from_at_least_min_outputs_rows(want: list[int], n: int, read: set[int]) -> None:
    assert MIN_OUTPUTS == 8
    assert outputs(want, n) == read
