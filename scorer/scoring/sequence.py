"""``--slots sequence``: each option id scored as a continuation of its prompt, from a fork of the prompt's state.

A row's prompt ``P`` ends where the answer starts; option ``i``'s continuation ``c`` is the tokens its id adds to
``P`` (:func:`scorer.prompting.prompt.sequence_slots`), and its token log-probabilities are ``log p(c[j] | P +
c[:j])`` (``--slots json``: the last, the closing quote, that of any token beginning with it,
:attr:`~scorer.prompting.prompt.Prompt.closers`). A
held state keeps no logits, and the answer position's are the output at ``P``'s last token, so the state forked is
``P`` less its last token and each option's pass feeds ``[P[-1]] + c[:-1]``, read at every position
(:meth:`~scorer.backends.base.Backend.fan_out_logprobs`): one short pass of ``len(c)`` tokens per option, a row's
options packed together like shared mode packs suffixes. A one-token option costs exactly what the letters'
readout costs; a longer one only its own extra tokens.

Where the forked state comes from is the mode's:

* ``direct``: prefilled fresh for the row and released after it (nothing is reused across rows);
* ``serial`` and ``shared``: the radix prefix cache (:mod:`scorer.scoring.radix_cache`). The row's group prefix (its
state)
  is held first, so every row's state extends it (a ``partial`` lookup) whether or not the backend can cut a held
  state, and an equal prompt is a ``hit``; the record's ``cache`` block says how the forked state was had, and
  when this row paid the group prefix's prefill its tokens count as prefilled, not reused
  (:meth:`~scorer.scoring.radix_cache.Lookup.after`), and its seconds are in ``prefill_s``. Both modes run the same
  per-row passes: the options of one row already share a pass, and packing several rows' options would repeat each row's
  question once per option.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from scorer.backends.base import Backend, Continuation, pack_chunks
from scorer.core.checks import OptionError
from scorer.prompting.prompt import Prompt, sha256_tokens
from scorer.scoring.radix_cache import Lookup, RadixCache


@dataclass(frozen=True)
class SequenceScores:
    """One row's options scored as continuations (what a ``--slots sequence`` record is made from)."""

    continuations: list[Continuation]
    """Per option, its tokens' log-probabilities and the answer position's logits."""
    normalisation: str
    """``sum`` or ``mean`` (:data:`scorer.core.checks.SEQUENCE_NORMS`)."""
    prefill_s: float
    """Seconds building the forked state (0 for a cache hit)."""
    copy_s: float
    """Seconds making the state visible to the options' passes."""
    pass_s: float
    """Seconds of the options' passes."""
    chunks: int
    """Passes the options were packed into."""
    lookup: Lookup | None
    """How the forked state came out of the radix cache (None in direct mode)."""

    def timing(self, encode_s: float) -> dict[str, float]:
        """The record's ``timing`` (``suffix_s``: the options' passes, ``sequence_chunks`` of them)."""
        fwd = self.prefill_s + self.copy_s + self.pass_s
        return {"encode_s": encode_s, "forward_s": fwd, "total_s": encode_s + fwd, "prefill_s": self.prefill_s,
                "copy_s": self.copy_s, "suffix_s": self.pass_s, "sequence_chunks": self.chunks}

    def prefix_fields(self, prompt: Prompt) -> dict[str, Any] | None:
        """A fast-mode record's prefix fields: the forked state (the prompt less its last token, the one token the
        options' passes start with) and its ``cache`` block; None in direct mode."""
        if self.lookup is None:
            return None
        state = prompt.ids[:-1]
        return {"prefix_tokens": len(state), "suffix_tokens": 1, "cache_hit": self.lookup.lookup == "hit",
                "prefix_sha256": sha256_tokens(state), "cache": self.lookup.block()}


def check_backend(backend: Backend) -> None:
    """Refuse a backend that cannot read every position of a pass (a remote engine) before anything is scored (the
    command line and the API refuse ``--backend openai`` before it loads:
    :func:`scorer.core.checks.check_slots_backend`)."""
    if not backend.scores_continuations:
        raise OptionError("slots", f"sequence and codes (how a question with more than 16 options is read) score each "
                          f"option's tokens at every position of a pass, which the {backend.name} backend does not "
                          "return; use the torch or llamacpp backend, or --slots ids")


def option_passes(prompt: Prompt) -> tuple[list[list[int]], list[list[int]]]:
    """The suffixes fed after the forked state (``[P[-1]] + c[:-1]`` per option) and their targets (``c``)."""
    last = prompt.ids[-1]
    return [[last, *c[:-1]] for c in prompt.continuations], [list(c) for c in prompt.continuations]


def check_sequence_options(permute: int, exact: object | None, route: object | None, slots: str = "sequence") -> None:
    """What ``--slots sequence`` (and ``json``, ``auto``) does not combine with yet: ``permute`` (its merge and
    signatures), ``exact`` and ``route`` (their re-scoring reads one answer position); each refused with an
    :class:`~scorer.core.checks.OptionError` naming the field and the slots (exit 2)."""
    for name, on in (("permute", permute > 1), ("exact", exact is not None), ("route", route is not None)):
        if on:
            raise OptionError(name, f"does not combine with slots {slots} yet (its re-scoring or orderings read one "
                              "answer position); use slots letters or ids with it")


def pass_need(prompts: list[Prompt], max_batch_tokens: int) -> dict[str, Any]:
    """The largest packed pass of any row's options (for :func:`scorer.scoring.modes.memory_need`): ``pass_cells`` (the
    forked state and the pass's tokens), ``longest_branch`` (the state and one option's tokens), ``pass_branches``,
    ``pass_tokens``, ``pass_rectangle`` (options × longest option) and ``sequence: True``."""
    need: dict[str, Any] = {"pass_cells": 0, "pass_branches": 0, "pass_tokens": 0, "longest_branch": 0,
                            "pass_rectangle": 0, "sequence": True}
    for prompt in prompts:
        suffixes, _ = option_passes(prompt)
        for chunk in pack_chunks(suffixes, max_batch_tokens):
            n = sum(len(s) for s in chunk)
            need["pass_cells"] = max(need["pass_cells"], len(prompt.ids) - 1 + n)
            need["longest_branch"] = max(need["longest_branch"], len(prompt.ids) - 1 + max(len(s) for s in chunk))
            need["pass_rectangle"] = max(need["pass_rectangle"], len(chunk) * max(len(s) for s in chunk))
            need["pass_branches"] = max(need["pass_branches"], len(chunk))
            need["pass_tokens"] = max(need["pass_tokens"], n)
    return need


def score_rows(backend: Backend, rows: list[tuple[Prompt, list[int]]], mode: str, normalisation: str,
               max_batch_tokens: int, cache: RadixCache | None) -> Iterator[SequenceScores]:
    """Each row's options scored as continuations, in order. ``rows``: each row's prompt and its group prefix (the
    state its group shares; ignored in direct mode). ``cache``: the radix cache of the fast modes (None in direct)."""
    check_backend(backend)
    for prompt, group in rows:
        if len(prompt.ids) < 2:
            raise AssertionError("a rendered prompt holds more than one token")
        suffixes, targets = option_passes(prompt)
        state_ids = prompt.ids[:-1]
        look: Lookup | None = None
        with ExitStack() as stack:
            if mode == "direct" or cache is None:
                t0 = time.perf_counter()
                state = backend.prefill(state_ids)
                stack.callback(backend.release, state)
                prefill_s = time.perf_counter() - t0
            else:
                held: Lookup | None = None
                if group and len(group) < len(state_ids):  # held first: the row's state extends it
                    held = stack.enter_context(cache.prefix(backend, group))[1]
                state, look = stack.enter_context(cache.prefix(backend, state_ids))
                if held is not None:
                    look = look.after(held)
                prefill_s = look.prefill_s
            conts, timing = backend.fan_out_logprobs(state, suffixes, targets, max_batch_tokens,
                                                     prompt.closers or None)
        yield SequenceScores(conts, normalisation, prefill_s, timing.copy_s, timing.suffix_s, timing.chunks, look)
