"""Grammar-constrained generation through a remote engine (``semif versus``'s constrained lane over
``--backend openai``).

The grammar runs HERE, in llguidance over the reference tokenizer (the torch backend's grammar engine,
:mod:`scorer.backends.guidance`), so the constrained lane means the same on every backend. At each step the mask
of the tokens the grammar allows is computed locally; when the engine's greedy token (the full-vocabulary argmax,
always among the log-probabilities it returned) is allowed, it is the step's token; otherwise the engine is asked
for the argmax among exactly the allowed ids (:meth:`~scorer.backends.openai_wire.Dialect.best_allowed`), and that
token's full-vocabulary log-probability is read and put into the step's logits, so the trace records its real
probability.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from scorer.backends.guidance import LlgConstraint, LlgGrammar
from scorer.core.errors import ValidationError


class RemoteConstraint:
    """One run's grammar state over a remote engine (see :class:`scorer.backends.base.Constraint`)."""

    def __init__(self, inner: LlgConstraint, best_allowed: Callable[[list[int]], tuple[int, float]]):
        self._inner = inner
        self._best_allowed = best_allowed

    def pick(self, logits: np.ndarray) -> tuple[int, bool]:
        allowed = self._inner.mask(len(logits))
        best = int(np.argmax(logits))
        if allowed[best] and np.isfinite(logits[best]):
            return best, False
        ids = np.flatnonzero(allowed).tolist()
        if not ids:
            raise ValidationError("the grammar allows no token here (the grammar or the stop tokens are wrong)")
        tid, logprob = self._best_allowed(ids)
        logits[tid] = logprob  # the caller keeps these logits as the step's evidence
        return tid, True

    def advance(self, token_id: int) -> None:
        self._inner.advance(token_id)

    def close(self) -> None:
        self._inner.close()


class RemoteGrammar:
    """A GBNF grammar compiled by llguidance for the reference vocabulary, applied step by step with the engine
    (see :class:`scorer.backends.base.Grammar`)."""

    def __init__(self, inner: LlgGrammar, best_allowed: Callable[[list[int]], tuple[int, float]]):
        self._inner = inner
        self._best_allowed = best_allowed
        self.engine = f"{inner.engine} (local mask; the engine picks among the allowed ids)"
        self.compile_s = inner.compile_s

    def start(self) -> Any:
        return RemoteConstraint(self._inner.start(), self._best_allowed)
