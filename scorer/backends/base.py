"""The backend protocol: the handful of kernel operations every mode is written on top of.

Modes (direct, serial, shared) and generation live in :mod:`scorer.runs`; a backend implements only
these calls. Contracts, shared by every implementation (the tests hold the torch and llama.cpp
kernels and the fake to them):

* Logits come back as a 1-D ``numpy.float32`` array over the full vocabulary, for the LAST position of
  what was fed. No token is sampled.
* A :class:`Prefix` is immutable from the caller's point of view: ``score_with_prefix`` and ``fan_out``
  never change what a later call over the same prefix sees.
* Results over a prefix equal the fresh results over ``prefix.ids + suffix`` up to the backend's
  stated numerical drift; drift is measured (``semif drift``), never assumed zero.

Two optional hooks (looked up with ``getattr``; torch and the fake do without them):

* ``validate_prompt(prompt)``: called by :func:`scorer.runs.score.prepare` for every rendered prompt
  before anything is scored; raises :class:`~scorer.errors.ValidationError` when the backend would not
  score exactly these token ids (llama.cpp: its GGUF tokenizer must reproduce them).
* ``plan_memory(need)``: called by :func:`scorer.runs.score.score_items` with
  :func:`scorer.runs.score.memory_need` of the run, so a fixed-size state (llama.cpp's KV cache) is
  sized from the rows.

Grammar-constrained generation (``semif versus``'s constrained lane) adds one call, ``grammar(gbnf)``:
the backend compiles a GBNF grammar with its own engine (llama.cpp: its grammar sampler; torch:
llguidance over the tokenizer's vocabulary, see :mod:`scorer.backends.guidance`) and returns a
:class:`Grammar`; each run starts a fresh :class:`Constraint` from it. The decoding loop itself is
written once, in :func:`scorer.generate.greedy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from scorer.prompt import Tokenizer


@dataclass
class Prefix:
    """A prefilled shared prefix held by a backend."""

    ids: list[int]
    """The prefix token ids."""
    handle: Any
    """Backend-private state (a KV cache, a llama.cpp sequence id…)."""
    prefill_s: float = 0.0
    """Seconds the prefill took."""


@dataclass
class FanOutTiming:
    """Per-phase seconds of one fan-out call (shared mode)."""

    copy_s: float = 0.0
    """Time to copy/broadcast the prefix state to the branches."""
    suffix_s: float = 0.0
    """Time of the suffix forward passes."""
    chunks: int = 0
    """Number of forward passes the suffixes were split into (memory budget)."""
    extras: dict[str, Any] = field(default_factory=dict)


class Constraint(Protocol):
    """One generation's grammar state: which tokens may come next, advanced token by token."""

    def pick(self, logits: np.ndarray) -> tuple[int, bool]:
        """The argmax of ``logits`` over the tokens the grammar allows now (never a refused token), and
        whether the grammar overruled the model (its full-vocabulary argmax was refused)."""
        ...

    def advance(self, token_id: int) -> None:
        """Feed the chosen token to the grammar; a token the grammar refuses is a
        :class:`~scorer.errors.ValidationError` (it would be a bug in :meth:`pick`)."""
        ...

    def close(self) -> None:
        """Free the grammar state (idempotent)."""
        ...


class Grammar(Protocol):
    """A grammar compiled for one backend's vocabulary; cheap to start, reused across runs."""

    engine: str
    """Who enforces it, with the version: e.g. ``llguidance 1.9.1``."""
    compile_s: float
    """Seconds the compilation took (once, before any run)."""

    def start(self) -> Constraint:
        """A fresh grammar state at the start of the output."""
        ...


class Backend(Protocol):
    """A model that can score prompts by the logits of their last position and generate greedily."""

    name: str
    """``torch`` or ``llamacpp``."""
    tokenizer: Tokenizer
    """The reference tokenizer (renders and encodes every prompt; the same for both backends)."""
    n_ctx: int
    """Largest number of tokens one sequence may hold; longer prompts are an error, never truncated."""
    logits_dtype: str
    """dtype the logits are computed in (for tie resolution): float32, bfloat16, float16."""
    kernel: str
    """Name of the shared-mode kernel this backend runs (recorded in each shared-mode record)."""

    def model_info(self) -> dict[str, Any]:
        """The record's ``model`` block: key, source, revision or GGUF sha256, dtype, device, backend,
        library versions."""
        ...

    def score_fresh(self, ids: list[int]) -> np.ndarray:
        """Logits at the last position of one forward pass over ``ids`` from an empty state."""
        ...

    def prefill(self, ids: list[int]) -> Prefix:
        """Run ``ids`` and keep the resulting state for reuse."""
        ...

    def score_with_prefix(self, prefix: Prefix, suffix: list[int]) -> tuple[np.ndarray, float]:
        """Logits at the last suffix position, continuing ``prefix``; also the seconds spent restoring
        (copying) the prefix state. ``prefix`` is left as it was."""
        ...

    def fan_out(self, prefix: Prefix, suffixes: list[list[int]], max_batch_tokens: int
                ) -> tuple[list[np.ndarray], FanOutTiming]:
        """Logits at the last position of every suffix, each continuing ``prefix`` independently, with
        suffix tokens packed into passes of at most ``max_batch_tokens`` (one suffix is never split)."""
        ...

    def release(self, prefix: Prefix) -> None:
        """Free the prefix state."""
        ...

    def decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        """Begin greedy generation: prefill ``ids``; return a session and the last position's logits."""
        ...

    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        """Append one token to the session and return the logits of the next position."""
        ...

    def decode_end(self, session: Any) -> None:
        """Free the generation session."""
        ...

    def stop_ids(self) -> list[int]:
        """Token ids that end the assistant turn (end-of-turn and end-of-sequence)."""
        ...

    def grammar(self, gbnf: str) -> Grammar:
        """Compile a GBNF grammar (root rule ``root``) for this model's vocabulary. Once the grammar is
        complete, only :meth:`stop_ids` tokens are allowed. A grammar the engine rejects is a
        :class:`~scorer.errors.ValidationError`; a missing engine library a
        :class:`~scorer.errors.ModelError`."""
        ...


def pack_chunks(suffixes: list[list[int]], budget: int) -> list[list[list[int]]]:
    """Greedy packing in order; a chunk holds at least one suffix, even one longer than the budget."""
    out: list[list[list[int]]] = []
    cur: list[list[int]] = []
    size = 0
    for s in suffixes:
        if cur and size + len(s) > budget:
            out.append(cur)
            cur, size = [], 0
        cur.append(s)
        size += len(s)
    if cur:
        out.append(cur)
    return out
