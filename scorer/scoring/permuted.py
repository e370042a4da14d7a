"""The order-averaged readout (``semif score --permute K``): every decision read out over K cyclic orderings of its
options, one scoring pass per ordering, merged per decision by :mod:`scorer.decision.permute`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scorer.backends.base import Backend
from scorer.core.checks import DEFAULT_MAX_BATCH_TOKENS
from scorer.core.progress import bar
from scorer.decision.permute import merge_permuted, permute_shifts
from scorer.evaluation.perturb import rotate
from scorer.formats.rows import Decision
from scorer.formats.signature import signature_of
from scorer.prompting.layouts import STATE_MAJOR
from scorer.scoring.modes import Item, prepare, refuse_continuations, score_items
from scorer.scoring.radix_cache import RadixCache


def score_permuted(backend: Backend, decisions: list[Decision], k: int, mode: str, run: dict[str, Any],
                   skip: int = 0, max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
                   layout: str = STATE_MAJOR, slots: str = "letters",
                   cache: RadixCache | None = None) -> Iterator[dict[str, Any]]:
    """Records of ``decisions[skip:]`` read out over ``k`` cyclic orderings each (pass j scores every row
    that has a j-th shift; rows with fewer options than ``k`` use all n of their rotations).

    Every pass's prompts are rendered and validated here, before any is scored (like a plain run);
    the records come from the returned iterator, in input order, once all passes have run.
    """

    rows = decisions[skip:]
    shifts = [permute_shifts(len(d.options), k) for d in rows]
    passes = []
    for j in range(max(len(s) for s in shifts) if rows else 0):
        sel = [rotate(d, s[j]) for d, s in zip(rows, shifts, strict=True) if j < len(s)]
        passes.append(prepare(backend, sel, with_prefix=mode != "direct", layout=layout, slots=slots))
        refuse_continuations(passes[-1], "--permute")
    return _permuted_records(backend, rows, shifts, passes, k, mode, run, skip, max_batch_tokens, cache)


def _permuted_records(backend: Backend, rows: list[Decision], shifts: list[list[int]], passes: list[list[Item]],
                      k: int, mode: str, run: dict[str, Any], skip: int, max_batch_tokens: int,
                      cache: RadixCache | None) -> Iterator[dict[str, Any]]:

    by_pass = []
    # One cache across the passes: the orderings of a row share its prompt up to the options.
    prefixes = RadixCache() if cache is None and mode != "direct" else cache
    try:
        for j, items in enumerate(passes):
            # The merged records only exist once every pass has run: show each pass's own progress meanwhile.
            b = bar(len(items), f"permute pass {j + 1}/{len(passes)}")
            recs = {}
            for r in score_items(backend, items, mode, run, 0, max_batch_tokens, prefixes):
                recs[r["id"]] = r
                b.update(1)
            b.close()
            by_pass.append(recs)
    finally:
        if prefixes is not None and prefixes is not cache:
            prefixes.clear()
    for i, (d, s) in enumerate(zip(rows, shifts, strict=True)):
        rec = merge_permuted([by_pass[j][d.id] for j in range(len(s))], k, s, skip + i)
        # an order-averaged readout is its own decision procedure: its signature says so
        rec["signature"] = signature_of(d, rec["prompt_version"], rec["model"], f"permute-{k}")
        yield rec
