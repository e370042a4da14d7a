"""The constrained lane over a remote engine (scorer/backends/openai_grammar.py): the local grammar mask decides
what is allowed; the engine's greedy token is kept when allowed, else the engine picks among exactly the allowed
ids and that token's log-probability is written into the step's logits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scorer.backends.openai_grammar import RemoteConstraint
from scorer.core.errors import ValidationError


class _Mask:
    """A stand-in for llguidance's constraint: a fixed allowed set; records what it was advanced with."""

    def __init__(self, allowed: set[int]):
        self.allowed = allowed
        self.advanced: list[int] = []
        self.closed = False

    def mask(self, n: int) -> np.ndarray:
        m = np.zeros(n, dtype=bool)
        m[list(self.allowed)] = True
        return m

    def advance(self, t: int) -> None:
        self.advanced.append(t)

    def close(self) -> None:
        self.closed = True


def _sparse(values: dict[int, float], n: int = 50) -> np.ndarray:
    out = np.full(n, -np.inf, dtype=np.float32)
    for k, v in values.items():
        out[k] = v
    return out


def test_an_allowed_greedy_token_is_kept_without_asking_the_engine() -> None:
    asked: list[Any] = []
    c = RemoteConstraint(_Mask({3, 7}), lambda ids: asked.append(ids) or (0, 0.0))  # type: ignore[arg-type]
    assert c.pick(_sparse({7: -0.1, 9: -3.0})) == (7, False)
    assert asked == []


def test_a_refused_greedy_token_is_replaced_by_the_engines_pick_among_the_allowed() -> None:
    asked: list[list[int]] = []

    def best(ids: list[int]) -> tuple[int, float]:
        asked.append(ids)
        return 3, -6.5

    inner = _Mask({3, 4})
    c = RemoteConstraint(inner, best)  # type: ignore[arg-type]
    lg = _sparse({7: -0.1, 9: -3.0})  # neither allowed token is among the engine's top tokens
    assert c.pick(lg) == (3, True)
    assert asked == [[3, 4]]
    assert lg[3] == pytest.approx(-6.5)  # the step's evidence gets the chosen token's real log-probability
    c.advance(3)
    c.close()
    assert inner.advanced == [3] and inner.closed


def test_a_grammar_that_allows_nothing_is_refused() -> None:
    c = RemoteConstraint(_Mask(set()), lambda ids: (0, 0.0))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="allows no token"):
        c.pick(_sparse({1: -0.5}))
