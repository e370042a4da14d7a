"""The backend contract: the handful of kernel operations every mode is written on top of.

Modes (direct, serial, shared) and generation live in :mod:`scorer.scoring`; a backend implements only
kernel calls. :class:`Backend` is the one base class of the torch and llama.cpp kernels and of the
tests' fake; ``tests/backends/test_backend_contract.py`` holds all three to the contracts below.

* Logits come back as a 1-D ``numpy.float32`` array of :attr:`Backend.n_vocab` values, for the LAST
  position of what was fed. No token is sampled. A remote engine (:attr:`Backend.sparse_logits`) returns
  only what it was asked for: the caller names the ids it will read (``want``: a decision's answer slots),
  the engine's full-vocabulary **log-probabilities** of those ids (and of whatever else it returned, such
  as its top tokens) fill the array, every other entry is ``-inf``, and :attr:`Backend.logits_normalized`
  is true (a softmax over any subset is unchanged by the shift from logits to log-probabilities).
* A :class:`Prefix` is immutable from the caller's point of view: ``score_with_prefix``, ``fan_out`` and
  ``extend`` never change what a later call over the same prefix sees. Its :attr:`Prefix.nbytes` is the size
  of the state the backend holds for it (what a prefix cache's memory budget counts).
* :meth:`Backend.extend` continues a prefix: a new prefix of the first ``keep`` tokens of a held one plus more
  tokens, computed from the held state (only the new tokens go through the model). A backend says what it can
  do: :attr:`Backend.extends_prefixes` (continue a state at its end) and :attr:`Backend.cuts_prefixes` (also
  keep only its first ``keep`` tokens); one that cannot (a remote engine, which keeps its own prefix cache)
  refuses the call with a :class:`~scorer.core.errors.ModelError`. The radix prefix cache
  (:mod:`scorer.scoring.radix_cache`) is written on this call.
* :meth:`Backend.fan_out_logprobs` scores token sequences as continuations (``--slots sequence``): suffixes packed
  and branched as in fan-out, but the logits of EVERY suffix position are read (kernel ``_pass_all``) and turned here,
  once for every backend, into the full-vocabulary log-probabilities of given target tokens. A backend says it can
  (:attr:`Backend.scores_continuations`); one that cannot (a remote engine, which returns one position's
  log-probabilities) refuses the call with a :class:`~scorer.core.errors.ModelError`.
* Results over a prefix equal the fresh results over ``prefix.ids + suffix`` up to the backend's
  stated numerical drift; drift is measured (``semif drift``), never assumed zero.
* Bad input is refused before any kernel runs, with a :class:`~scorer.core.errors.ValidationError` that says
  what was wrong: an empty id list, an id outside ``0..n_vocab-1``, more tokens than :attr:`Backend.n_ctx`
  (never truncated), a released prefix, a ``max_batch_tokens`` below 1, a ``keep`` outside
  ``1..len(prefix.ids)``. A closed backend refuses every call that starts work with a
  :class:`~scorer.core.errors.ModelError`.

The public calls (:meth:`Backend.score_fresh`, :meth:`~Backend.prefill`, :meth:`~Backend.extend`,
:meth:`~Backend.score_with_prefix`, :meth:`~Backend.fan_out`, :meth:`~Backend.fan_out_logprobs`,
:meth:`~Backend.decode_start`) check their input
here, once, and hand it to the backend's kernel (``_score_fresh``…). Fan-out is written once, here: suffixes
are packed into passes of at most ``max_batch_tokens`` tokens (:func:`pack_chunks`), and each pass is a kernel
``_branch`` (make the prefix state visible to the pass: copy a cache, restore a saved state) then ``_pass`` (one
forward over the pass's suffixes).

Optional hooks, no-ops here (torch and the fake keep the defaults):

* :meth:`Backend.validate_prompt`: called by :func:`scorer.scoring.modes.prepare` for every rendered prompt
  before anything is scored (llama.cpp: its GGUF tokenizer must reproduce the ids).
* :meth:`Backend.plan_memory`: called before a run with :func:`scorer.scoring.modes.memory_need`, so a
  fixed-size state (llama.cpp's KV cache) is sized from the rows.
* :meth:`Backend.close` (also the context manager's exit): free what the backend holds.

Grammar-constrained generation (``semif versus``'s constrained lane) adds one call, ``grammar(gbnf)``:
the backend compiles a GBNF grammar with its own engine (llama.cpp: its grammar sampler; torch:
llguidance over the tokenizer's vocabulary, see :mod:`scorer.backends.guidance`) and returns a
:class:`Grammar`; each run starts a fresh :class:`Constraint` from it. The decoding loop itself is
written once, in :func:`scorer.scoring.generation.greedy`.
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from scorer.core.errors import ModelError, ValidationError
from scorer.prompting.prompt import Prompt, Tokenizer

_R = TypeVar("_R")


@dataclass
class Prefix:
    """A prefilled shared prefix held by a backend."""

    ids: list[int]
    """The prefix token ids."""
    handle: Any
    """Backend-private state (a KV cache, a saved llama.cpp state…); ``None`` once released."""
    prefill_s: float = 0.0
    """Seconds the prefill took (for :meth:`Backend.extend`: the whole call, restoring or cutting included)."""
    nbytes: int = 0
    """Bytes of the state the backend holds for this prefix (its K/V tensors, its saved llama.cpp state…),
    measured from the state itself; what :class:`scorer.scoring.radix_cache.RadixCache` counts against its budget."""


@dataclass(frozen=True)
class Continuation:
    """What :meth:`Backend.fan_out_logprobs` gives for one suffix."""

    logprobs: np.ndarray
    """float64, one per target token: its full-vocabulary log-probability at its position."""
    head_logits: np.ndarray
    """The logits at the suffix's first position (float32, :attr:`Backend.n_vocab` values; ``--slots sequence``: the
    answer position's, whose argmax a record names)."""


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
        :class:`~scorer.core.errors.ValidationError` (it would be a bug in :meth:`pick`)."""
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


class Backend(ABC):
    """A model that scores prompts by the logits of their last position and generates greedily.

    Subclasses set the attributes below and implement the abstract kernel calls; the public calls, the
    fan-out loop and the optional hooks are written here once. Usable as a context manager (exit closes).
    """

    name: str
    """``torch``, ``llamacpp`` (``fake`` in the tests)."""
    tokenizer: Tokenizer
    """The reference tokenizer (renders and encodes every prompt; the same for both backends)."""
    n_ctx: int
    """Largest number of tokens one sequence may hold; longer input is an error, never truncated."""
    n_vocab: int
    """Length of every logits vector; valid token ids are ``0 .. n_vocab - 1``."""
    logits_dtype: str
    """dtype the logits are computed in (for tie resolution): float32, bfloat16, float16."""
    kernel: str
    """Name of the shared-mode kernel this backend runs (recorded in each shared-mode record)."""
    load_s: float = 0.0
    """Seconds loading the weights took (0 when nothing was loaded)."""
    sparse_logits: bool = False
    """True when the logits hold only the ids a call asked for (``want``) and what the engine returned besides,
    ``-inf`` elsewhere (remote engines); the calls that score then refuse a missing ``want``."""
    logits_normalized: bool = False
    """True when the values are log-probabilities over the full vocabulary (their logsumexp over the whole
    vocabulary is 0 even where only some are known), false for raw logits."""
    extends_prefixes: bool = False
    """True when :meth:`extend` can continue a held prefix's state with more tokens."""
    cuts_prefixes: bool = False
    """True when :meth:`extend` can also keep only the first ``keep`` tokens of a held state (every layer
    holds every past token: no sliding window, no recurrent state)."""
    scores_continuations: bool = False
    """True when a pass can return the logits of every position of its suffixes (:meth:`fan_out_logprobs`)."""
    _closed: bool = False

    # --- the public calls: input checked here, then the kernel ------------------------------------------
    def score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        """Logits at the last position of one forward pass over ``ids`` from an empty state. ``want``: the ids
        the caller reads (required by a :attr:`sparse_logits` backend, ignored by the others)."""
        self._check_open()
        self._check_ids(ids, "prompt")
        self._check_want(want)
        return self._score_fresh(ids, want=want)

    def prefill(self, ids: list[int]) -> Prefix:
        """Run ``ids`` and keep the resulting state for reuse (until :meth:`release`)."""
        self._check_open()
        self._check_ids(ids, "prefix")
        return self._prefill(ids)

    def extend(self, prefix: Prefix, ids: list[int], keep: int | None = None) -> Prefix:
        """A new prefix holding ``prefix.ids[:keep] + ids`` (``keep`` defaults to all of ``prefix``), computed
        from ``prefix``'s state: only ``ids`` go through the model. ``prefix`` is left as it was. ``ids`` may be
        empty only when ``keep`` cuts the prefix short. Results over the new prefix equal fresh results over its
        ids up to the backend's measured drift, as for :meth:`prefill`. Refused (:class:`ModelError`) unless
        :attr:`extends_prefixes` (and :attr:`cuts_prefixes` for a ``keep`` short of the whole prefix)."""
        self._check_open()
        self._check_prefix(prefix)
        n = len(prefix.ids)
        keep = n if keep is None else keep
        if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or not 1 <= keep <= n:
            raise ValidationError(f"keep {keep!r} (expected an integer from 1 to {n}, the prefix's length)")
        if not self.extends_prefixes:
            raise ModelError(f"the {self.name} backend cannot continue a prefix's state (prefill the whole prefix "
                             "instead)")
        if keep < n and not self.cuts_prefixes:
            raise ModelError(f"the {self.name} backend cannot cut a prefix's state short (keep {keep} of {n} tokens); "
                             "extend it whole or prefill the shorter prefix")
        if ids or keep == n:
            self._check_ids(ids, "extension", keep)
        return self._extend(prefix, int(keep), list(ids))

    def score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                          ) -> tuple[np.ndarray, float]:
        """Logits at the last suffix position, continuing ``prefix``; also the seconds spent restoring
        (copying) the prefix state. ``prefix`` is left as it was. ``want`` as in :meth:`score_fresh`."""
        self._check_open()
        self._check_prefix(prefix)
        self._check_ids(suffix, "suffix", len(prefix.ids))
        self._check_want(want)
        return self._score_with_prefix(prefix, suffix, want=want)

    def fan_out(self, prefix: Prefix, suffixes: list[list[int]], max_batch_tokens: int,
                wants: Sequence[Sequence[int]] | None = None) -> tuple[list[np.ndarray], FanOutTiming]:
        """Logits at the last position of every suffix (in order), each continuing ``prefix`` independently,
        with suffix tokens packed into passes of at most ``max_batch_tokens`` (one suffix is never split;
        a backend may split a pass further, see :meth:`_max_branches`). ``prefix`` is left as it was.
        ``wants``: per suffix, the ids the caller reads (as ``want`` in :meth:`score_fresh`)."""
        self._check_open()
        self._check_prefix(prefix)
        if isinstance(max_batch_tokens, bool) or not isinstance(max_batch_tokens, int) or max_batch_tokens < 1:
            raise ValidationError(f"max_batch_tokens {max_batch_tokens!r} (expected an integer >= 1)")
        for k, suffix in enumerate(suffixes):
            self._check_ids(suffix, f"suffix {k}", len(prefix.ids))
        if wants is not None and len(wants) != len(suffixes):
            raise ValidationError(f"{len(wants)} wants for {len(suffixes)} suffixes (expected one per suffix)")
        for w in wants if wants is not None else [None]:
            self._check_want(w)

        def run(branched: Any, part: list[list[int]], at: int) -> list[np.ndarray]:
            return self._pass(prefix, branched, part, wants=None if wants is None else list(wants[at:at + len(part)]))
        return self._packed(prefix, suffixes, max_batch_tokens, run)

    def fan_out_logprobs(self, prefix: Prefix, suffixes: list[list[int]], targets: list[list[int]],
                         max_batch_tokens: int, closers: Sequence[Sequence[int]] | None = None,
                         ) -> tuple[list[Continuation], FanOutTiming]:
        """Teacher-forced log-probabilities: for every suffix ``s`` (each continuing ``prefix`` independently, packed
        into passes as in :meth:`fan_out`) and its targets ``t`` (one token id per token of ``s``), the
        full-vocabulary log-probability of ``t[j]`` in the next-token distribution after ``prefix.ids + s[:j + 1]``,
        and the logits at ``s``'s first position (:class:`Continuation`). ``prefix`` is left as it was.
        ``closers`` (one per suffix; an empty one reads the target alone): at the last position the log of the summed
        probability of those tokens, ``t[-1]`` among them (a JSON answer's closing quote:
        :func:`scorer.prompting.prompt.closing_classes`).

        ``--slots sequence`` (:mod:`scorer.scoring.sequence`) passes the state of a prompt's tokens but its last, the
        suffixes ``[last token] + option[:-1]`` and the targets ``option``: each option's tokens scored as a
        continuation of the whole prompt, one short pass per option. The log-probabilities are taken here, in
        float64 from the kernel's logits, once for every backend. Refused (:class:`ModelError`) unless
        :attr:`scores_continuations`."""
        self._check_open()
        self._check_prefix(prefix)
        if isinstance(max_batch_tokens, bool) or not isinstance(max_batch_tokens, int) or max_batch_tokens < 1:
            raise ValidationError(f"max_batch_tokens {max_batch_tokens!r} (expected an integer >= 1)")
        if len(targets) != len(suffixes):
            raise ValidationError(f"{len(targets)} target lists for {len(suffixes)} suffixes (expected one per suffix)")
        for k, (suffix, target) in enumerate(zip(suffixes, targets, strict=True)):
            self._check_ids(suffix, f"suffix {k}", len(prefix.ids))
            self._check_ids(target, f"targets of suffix {k}")
            if len(target) != len(suffix):
                raise ValidationError(f"suffix {k} has {len(suffix)} tokens but {len(target)} targets (expected one "
                                      "target per suffix token)")
        if closers is not None:
            if len(closers) != len(suffixes):
                raise ValidationError(f"{len(closers)} closing classes for {len(suffixes)} suffixes (expected one per "
                                      "suffix)")
            for k, cls in enumerate(closers):
                if cls:
                    self._check_ids(list(cls), f"closing class of suffix {k}")
                    if targets[k][-1] not in cls:
                        raise ValidationError(f"the closing class of suffix {k} lacks its last target "
                                              f"{targets[k][-1]} (expected a class holding it)")
        if not self.scores_continuations:
            raise ModelError(f"the {self.name} backend returns the logits of one position per pass, not of every "
                             "position (score token sequences on the torch or llamacpp backend)")

        def run(branched: Any, part: list[list[int]], at: int) -> list[Continuation]:
            out = []
            for k, logits in enumerate(self._pass_all(prefix, branched, part)):
                target = targets[at + k]
                if logits.shape != (len(target), self.n_vocab):
                    raise AssertionError(f"a pass returned logits of shape {logits.shape} for {len(target)} positions")
                out.append(Continuation(token_logprobs(logits, target, closers[at + k] if closers else None),
                                        logits[0]))
            return out
        return self._packed(prefix, suffixes, max_batch_tokens, run)

    def _packed(self, prefix: Prefix, suffixes: list[list[int]], max_batch_tokens: int,
                run: Callable[[Any, list[list[int]], int], list[_R]]) -> tuple[list[_R], FanOutTiming]:
        """The fan-out loop of :meth:`fan_out` and :meth:`fan_out_logprobs`: suffixes packed into passes of at most
        ``max_batch_tokens`` tokens, each pass branched from the prefix, run by ``run(branched, part, index of the
        part's first suffix)`` and unbranched, timed."""
        timing = FanOutTiming()
        results: list[_R] = []
        width = self._max_branches(prefix)
        at = 0
        for chunk in pack_chunks(suffixes, max_batch_tokens):
            for k in range(0, len(chunk), width):
                part = chunk[k:k + width]
                t0 = time.perf_counter()
                branched = self._branch(prefix, part)
                t1 = time.perf_counter()
                try:
                    results += run(branched, part, at)
                finally:
                    self._unbranch(branched)
                at += len(part)
                t2 = time.perf_counter()
                timing.copy_s += t1 - t0
                timing.suffix_s += t2 - t1
                timing.chunks += 1
        return results, timing

    def release(self, prefix: Prefix) -> None:
        """Free the prefix state; the prefix is refused by every later call. Idempotent."""
        prefix.handle = None

    def decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        """Begin greedy generation: prefill ``ids``; return a session and the last position's logits."""
        self._check_open()
        self._check_ids(ids, "prompt")
        return self._decode_start(ids)

    # --- optional hooks (no-ops unless a backend needs them) ------------------------------------------
    def validate_prompt(self, prompt: Prompt) -> None:  # noqa: B027 (a no-op default on purpose)
        """Raise :class:`~scorer.core.errors.ValidationError` when this backend would not score exactly
        ``prompt.ids`` (called for every rendered prompt before anything is scored)."""

    def plan_memory(self, need: dict[str, Any]) -> None:  # noqa: B027 (a no-op default on purpose)
        """Size fixed-size state for a run from :func:`scorer.scoring.modes.memory_need` (called before the run,
        outside its clock)."""

    def close(self) -> None:
        """Free what the backend holds; afterwards every call that starts work raises
        :class:`~scorer.core.errors.ModelError`. Idempotent."""
        self._closed = True
        self._free_resources()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the kernel: what each backend implements -------------------------------------------------------
    @abstractmethod
    def model_info(self) -> dict[str, Any]:
        """The record's ``model`` block: key, source, revision or GGUF sha256, dtype, device, backend,
        library versions."""

    @abstractmethod
    def _score_fresh(self, ids: list[int], want: Sequence[int] | None = None) -> np.ndarray:
        """:meth:`score_fresh` on checked ids (``want``: only a :attr:`sparse_logits` backend reads it)."""

    @abstractmethod
    def _prefill(self, ids: list[int]) -> Prefix:
        """:meth:`prefill` on checked ids; the returned handle is never ``None``."""

    def _extend(self, prefix: Prefix, keep: int, ids: list[int]) -> Prefix:
        """:meth:`extend` on a live prefix, ``1 <= keep <= len(prefix.ids)`` and checked ids (empty only when
        ``keep`` cuts); only reached when :attr:`extends_prefixes` says the backend implements it."""
        raise ModelError(f"the {self.name} backend does not implement extend")

    @abstractmethod
    def _score_with_prefix(self, prefix: Prefix, suffix: list[int], want: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, float]:
        """:meth:`score_with_prefix` on a live prefix and a checked suffix."""

    @abstractmethod
    def _branch(self, prefix: Prefix, part: list[list[int]]) -> Any:
        """Make the prefix state visible to one fan-out pass over ``part`` (timed as the pass's copy);
        what it returns is handed to :meth:`_pass` and then :meth:`_unbranch`. Cleans up after itself
        when it raises."""

    @abstractmethod
    def _pass(self, prefix: Prefix, branched: Any, part: list[list[int]],
              wants: list[Sequence[int]] | None = None) -> list[np.ndarray]:
        """One forward over every suffix of ``part``: the logits at each suffix's last token, in order
        (``wants``: per suffix, as ``want`` of :meth:`_score_fresh`)."""

    def _pass_all(self, prefix: Prefix, branched: Any, part: list[list[int]]) -> list[np.ndarray]:
        """One forward over every suffix of ``part`` (branched by :meth:`_branch`, as for :meth:`_pass`): the logits
        at EVERY position of each suffix, a float32 ``[len(suffix), n_vocab]`` array per suffix, in order; only
        reached when :attr:`scores_continuations` says the backend implements it."""
        raise ModelError(f"the {self.name} backend does not implement _pass_all")

    def _unbranch(self, branched: Any) -> None:  # noqa: B027 (a no-op default on purpose)
        """Free what :meth:`_branch` made (called even when :meth:`_pass` raised)."""

    def _max_branches(self, prefix: Prefix) -> int:
        """Most suffixes one pass continuing ``prefix`` may hold (a backend with a fixed number of sequences, or
        memory per branch, lowers it)."""
        return sys.maxsize

    @abstractmethod
    def _decode_start(self, ids: list[int]) -> tuple[Any, np.ndarray]:
        """:meth:`decode_start` on checked ids."""

    @abstractmethod
    def decode_next(self, session: Any, token_id: int) -> np.ndarray:
        """Append one token (an id the generation loop picked from this backend's logits) to the session
        and return the logits of the next position."""

    @abstractmethod
    def decode_end(self, session: Any) -> None:
        """Free the generation session (idempotent)."""

    @abstractmethod
    def stop_ids(self) -> list[int]:
        """Token ids that end the assistant turn (end-of-turn and end-of-sequence)."""

    @abstractmethod
    def grammar(self, gbnf: str) -> Grammar:
        """Compile a GBNF grammar (root rule ``root``) for this model's vocabulary. Once the grammar is
        complete, only :meth:`stop_ids` tokens are allowed. A grammar the engine rejects is a
        :class:`~scorer.core.errors.ValidationError`; a missing engine library a
        :class:`~scorer.core.errors.ModelError`."""

    def _free_resources(self) -> None:  # noqa: B027 (a no-op default on purpose)
        """What :meth:`close` frees (nothing by default: dropping the object frees a torch model)."""

    # --- input checks ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ModelError(f"this {self.name} backend was closed; load the model again")

    def _check_ids(self, ids: list[int], what: str, before: int = 0) -> None:
        """Refuse ids that are empty, out of the vocabulary, or that would take the sequence (``before``
        tokens already in it) past ``n_ctx``."""
        if len(ids) == 0:
            raise ValidationError(f"the {what} has no tokens (expected at least one token id)")
        bad = next((t for t in ids if isinstance(t, bool) or not isinstance(t, (int, np.integer))
                    or not 0 <= t < self.n_vocab), None)
        if bad is not None:
            raise ValidationError(f"the {what} holds the token id {bad!r} (expected integers 0 to "
                                  f"{self.n_vocab - 1}, this model's vocabulary)")
        if before + len(ids) > self.n_ctx:
            raise ValidationError(f"{before} + {len(ids)} tokens exceed the model's context ({self.n_ctx}); "
                                  "SemIf never truncates")

    def _check_want(self, want: Sequence[int] | None) -> None:
        if want is None:
            if self.sparse_logits:
                raise ValidationError(f"the {self.name} backend returns only the logits a call asks for "
                                      "(expected want=[the answer slots' token ids])")
            return
        self._check_ids(list(want), "want")

    def _check_prefix(self, prefix: Prefix) -> None:
        if prefix.handle is None:
            raise ValidationError("this prefix was released (prefill it again)")


def token_logprobs(logits: np.ndarray, targets: Sequence[int], last: Sequence[int] | None = None) -> np.ndarray:
    """Row ``j`` of ``logits`` ([positions, vocabulary]) as a log-softmax over the whole vocabulary, read at
    ``targets[j]`` (float64: the normaliser of a 150k-token vocabulary summed in float32 would cost digits); ``last``
    (non-empty): the last row read as the log of the summed probability of those tokens instead."""
    z = np.asarray(logits, dtype=np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("non-finite logits: the forward pass produced NaN/inf")
    top = z.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
    out = z[np.arange(len(targets)), np.asarray(targets, dtype=np.int64)] - lse
    if last:
        row = z[-1, np.asarray(last, dtype=np.int64)]
        out[-1] = float(row.max() + np.log(np.exp(row - row.max()).sum())) - lse[-1]
    return out


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
