"""Score decisions in one of three modes, written once on top of the backend protocol.

* ``direct``: one fresh forward pass per decision.
* ``serial``: each row's prefix state comes from the radix prefix cache (:mod:`scorer.scoring.radix_cache`: the longest
  cached prefix at any depth is reused and only the rest prefilled; keyed by token ids, so a
  reordered-but-equal JSON state is a miss, never a wrong hit), then its suffix is scored after it.
* ``shared``: each state's prefix comes from the radix cache once, then all of its criteria are scored in
  packed passes (the last level of reuse: :meth:`~scorer.backends.base.Backend.fan_out`).

A run uses the cache it is given (a :class:`~scorer.api.Scorer`'s, which lives across calls) or one of its own,
released at its end. Each fast-mode record says how its prefix was obtained (``cache``: lookup, reused and
prefilled tokens, state and held bytes, the budget).

Records come out in input order whatever the mode, one dict per decision (schema
``scorer/formats/schemas/record-v2.json``). Two readouts: the plain one (one ordering of the options) and the
order-averaged one (``permute`` K > 1: :func:`scorer.scoring.permuted.score_permuted`, merged by
:mod:`scorer.decision.permute`).
What a run is and how it is named: :mod:`scorer.scoring.options`; a run into a records file, resumable:
:mod:`scorer.scoring.file_run`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.backends.base import Backend, pack_chunks
from scorer.core.checks import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_SEQUENCE_NORM, MODES, SEQUENCE_SLOTS
from scorer.core.errors import ValidationError
from scorer.decision import readout
from scorer.formats.record_schema import RECORD_SCHEMA
from scorer.formats.records import SCORE_KIND, SEQUENCE_SCORE_KIND
from scorer.formats.rows import Decision
from scorer.formats.signature import signature_of, signature_readout
from scorer.prompting.demos import Demos, prompt_for
from scorer.prompting.layouts import STATE_MAJOR
from scorer.prompting.prompt import Prompt, closing_block, common_prefix, prefix_ids, sha256_tokens
from scorer.scoring.radix_cache import RadixCache
from scorer.scoring.sequence import SequenceScores, pass_need, score_rows
from scorer.scoring.sequence import check_backend as check_sequence_backend


@dataclass
class Item:
    """A decision with its rendered prompt, ready to score."""

    index: int
    decision: Decision
    prompt: Prompt
    encode_s: float
    prefix: list[int]
    """Shared token prefix of this row's group (empty in direct mode)."""


def prepare(backend: Backend, decisions: list[Decision], with_prefix: bool = True, layout: str = STATE_MAJOR,
            demos: Demos | None = None, slots: str = "letters") -> list[Item]:
    """Render, encode and validate every prompt before any is scored, in ``layout`` (a resolved one:
    :func:`~scorer.scoring.options.resolve_layout` turns ``auto`` into one) with ``demos``' demonstrations when
    given, read out through answer ``slots`` (:data:`scorer.core.checks.SLOTS`).

    Rows are grouped by their state head's token prefix; each group's prefix is the longest common
    token prefix of its full prompts (so BPE merges across the state boundary are handled), and
    every full prompt is checked to start with it.
    """
    tok = backend.tokenizer
    items: list[Item] = []
    heads: list[list[int]] = []
    for i, d in enumerate(decisions):
        t0 = time.perf_counter()
        try:
            p = prompt_for(tok, d, layout, demos, slots)
        except ValidationError as exc:
            raise ValidationError(f"{d.source}: {exc}") from None
        head = prefix_ids(tok, p) if with_prefix else []
        dt = time.perf_counter() - t0
        try:  # a backend that runs its own tokenizer (llama.cpp) proves per prompt that it sees these ids
            backend.validate_prompt(p)
        except ValidationError as exc:
            raise ValidationError(f"{d.source}: row {d.id!r}: {exc}") from None
        answer = max((len(c) for c in p.continuations), default=1)  # the answer's tokens (sequence: the longest)
        if len(p.ids) + answer > backend.n_ctx:
            raise ValidationError(f"{d.source}: the prompt of row {d.id!r} is {len(p.ids)} tokens and its answer "
                                  f"{answer} but the model's context holds {backend.n_ctx}; SemIf never truncates "
                                  "(shorten the state or use a model with a longer context)")
        items.append(Item(i, d, p, dt, []))
        heads.append(head)
    if with_prefix:
        for group in group_by_prefix(items, heads).values():
            pre = common_prefix([items[i].prompt.ids for i in group])
            pre = pre[: min(len(items[i].prompt.ids) for i in group) - 1]
            for i in group:
                if items[i].prompt.ids[: len(pre)] != pre:
                    raise AssertionError(f"row {items[i].decision.id!r} does not start with its group prefix")
                items[i].prefix = pre
    return items


def refuse_continuations(items: list[Item], what: str) -> None:
    """A :class:`ValidationError` naming the first row read as a continuation (``--slots sequence``, or a question with
    more options than letters, read by number) when ``what`` (``--exact``, ``--permute``) reads one answer position."""
    for it in items:
        if it.prompt.continuations:
            d = it.decision
            raise ValidationError(f"{d.source}: row {d.id!r} has {len(d.options)} options, read as continuations "
                                  f"(readout {it.prompt.slots}), which {what} does not combine with yet (it reads one "
                                  "answer position); score such rows without it, or with at most 16 options")


def group_by_prefix(items: list[Item], heads: list[list[int]]) -> OrderedDict[str, list[int]]:
    """Indices of items grouped by the sha256 of their head token ids, in order of first appearance."""
    groups: OrderedDict[str, list[int]] = OrderedDict()
    for it, head in zip(items, heads, strict=True):
        groups.setdefault(sha256_tokens(head), []).append(it.index)
    return groups


def make_record(item: Item, logits: np.ndarray | SequenceScores, backend: Backend, model_info: dict[str, Any],
                mode: str, timing: dict[str, float], cache: dict[str, Any] | None,
                run: dict[str, Any]) -> dict[str, Any]:
    """One decision record (the same fields in every mode and backend): read from the answer position's ``logits``, or
    under ``--slots sequence`` from the options' continuations (:class:`~scorer.scoring.sequence.SequenceScores`)."""
    d, p = item.decision, item.prompt
    slots: dict[str, Any] = {"readout": p.slots, "texts": list(p.slot_texts), "token_ids": list(p.slot_ids)}
    score_kind = model_info.get("score_kind", SCORE_KIND)
    sig_readout = "plain"
    tok = backend.tokenizer
    if isinstance(logits, SequenceScores):
        conts, norm = logits.continuations, logits.normalisation
        r = readout.read_sequences([c.logprobs for c in conts], conts[0].head_logits, norm, backend.logits_dtype)
        slots.update(token_ids=[list(c) for c in p.continuations], normalisation=norm,
                     token_counts=[len(c) for c in p.continuations],
                     token_logprobs=[[float(v) for v in c.logprobs] for c in conts])
        if p.closers:
            slots["closing"] = [closing_block(tok.decode([c[-1]]), cls)
                                for c, cls in zip(p.continuations, p.closers, strict=True)]
        score_kind = SEQUENCE_SCORE_KIND.format(norm=norm, backend=model_info.get("backend"),
                                                dtype=model_info.get("dtype"))
        sig_readout = signature_readout(1, p.slots, norm)
    else:
        r = readout.read(logits, p.slot_ids, backend.logits_dtype, normalized=backend.logits_normalized)
    ids = d.option_ids
    timing = {k: round(v, 6) for k, v in timing.items()}
    return {
        "schema": RECORD_SCHEMA,
        "id": d.id,
        "signature": signature_of(d, p.signature_version, model_info, sig_readout),
        "option_ids": ids,
        "letters": list(p.letters),
        "slots": slots,
        "probabilities": r.probabilities,
        "option_logits": r.option_logits,
        "choice": None if r.choice_index is None else ids[r.choice_index],
        "margin": r.margin,
        "tie": r.tie,
        "tied_option_ids": [ids[i] for i in r.tied_indices],
        "allowed_token_mass": r.allowed_token_mass,
        "full_vocab_argmax": {"token_id": r.argmax_token_id, "text": tok.decode([r.argmax_token_id]),
                              "is_slot": r.argmax_token_id in p.slot_ids},
        "score_kind": score_kind,
        "input_tokens": len(p.ids),
        "prompt_version": p.version,
        "layout": p.layout,
        **({"demos": {"k": p.demos_k, "ids": list(p.demo_ids), "level": p.demo_level}} if p.demos_k else {}),
        "prompt_template": p.template,
        "prompt_sha256": p.sha256,
        "tokens_sha256": p.tokens_sha256,
        "mode": mode,
        "kernel": kernel_name(backend, mode, p.slots),
        "prefix_tokens": cache["prefix_tokens"] if cache else None,
        "suffix_tokens": cache["suffix_tokens"] if cache else None,
        "cache_hit": cache["cache_hit"] if cache else None,
        "prefix_sha256": cache["prefix_sha256"] if cache else None,
        "cache": cache.get("cache") if cache else None,
        "escalated": False,
        "timing": timing,
        "model": model_info,
        "extra": d.extra,
        "run": {**run, "index": item.index},
        **({"gguf": model_info["gguf"]} if "gguf" in model_info else {}),
        **({"type": d.type} if d.type is not None else {}),  # how the readout is meant (scorer.decision.questions)
    }


def kernel_name(backend: Backend, mode: str, slots: str = "letters") -> str:
    """The kernel a record of ``mode`` names: the backend's packed kernel in shared mode (and for ``--slots
    sequence`` in every mode: the options' passes are packed), else ``<backend>.fresh`` (direct) or
    ``<backend>.prefix-reuse`` (serial)."""
    if mode == "shared" or slots in SEQUENCE_SLOTS:
        return backend.kernel
    return f"{backend.name}.{'fresh' if mode == 'direct' else 'prefix-reuse'}"


def _cache_fields(item: Item, block: dict[str, Any]) -> dict[str, Any]:
    """A fast-mode record's prefix fields and its ``cache`` block (``block``: how the prefix state was had)."""
    return {"prefix_tokens": len(item.prefix), "suffix_tokens": len(item.prompt.ids) - len(item.prefix),
            "cache_hit": block["lookup"] in ("hit", "group"), "prefix_sha256": sha256_tokens(item.prefix),
            "cache": block}


def memory_need(items: list[Item], mode: str, max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS) -> dict[str, Any]:
    """The most a run of ``mode`` over ``items`` puts through a backend at once, for backends that size a
    fixed state up front (llama.cpp's KV cache): the longest prompt, prefix and suffix, how many distinct
    prefixes a serial run may keep (a radix cache holds them off the KV cache, within its budget), and the
    largest packed pass (prefix + suffix tokens, suffixes, suffix tokens), its longest branch (prefix + longest
    suffix) and rectangle (suffixes × longest suffix)."""
    groups: OrderedDict[str, list[Item]] = OrderedDict()
    for it in items:
        groups.setdefault(sha256_tokens(it.prefix), []).append(it)
    need: dict[str, Any] = {
        "mode": mode, "longest_prompt": max(len(it.prompt.ids) for it in items),
        "longest_prefix": max(len(it.prefix) for it in items),
        "longest_suffix": max(len(it.prompt.ids) - len(it.prefix) for it in items),
        "held_prefixes": len(groups) if mode == "serial" else 0,
        "pass_cells": 0, "pass_branches": 0, "pass_tokens": 0, "longest_branch": 0,
        "pass_rectangle": 0,
    }
    if any(it.prompt.continuations for it in items):  # --slots sequence: every row's options pass, in every mode
        need.update(pass_need([it.prompt for it in items], max_batch_tokens))
    elif mode == "shared":
        for g in groups.values():
            p = len(g[0].prefix)
            for chunk in pack_chunks([it.prompt.ids[p:] for it in g], max_batch_tokens):
                n = sum(len(x) for x in chunk)
                need["pass_cells"] = max(need["pass_cells"], p + n)
                need["longest_branch"] = max(need["longest_branch"], p + max(len(x) for x in chunk))
                need["pass_rectangle"] = max(need["pass_rectangle"], len(chunk) * max(len(x) for x in chunk))
                need["pass_branches"] = max(need["pass_branches"], len(chunk))
                need["pass_tokens"] = max(need["pass_tokens"], n)
    return need


def score_items(backend: Backend, items: list[Item], mode: str, run: dict[str, Any], skip: int = 0,
                max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
                cache: RadixCache | None = None, sequence_norm: str | None = None) -> Iterator[dict[str, Any]]:
    """Yield the records of ``items[skip:]`` in input order.

    ``skip`` is the number of leading records a resumed run already has. Shared mode recomputes any
    group that still has rows to emit, whole, so a resumed run's numbers equal an uninterrupted run's.
    ``cache``: the radix prefix cache the fast modes take their prefix states from (kept as it is for the
    caller's next run); without one, the run makes its own (default budget) and releases it at the end.
    Items rendered for ``--slots sequence`` are read through their continuations (:mod:`scorer.scoring.sequence`) with
    ``sequence_norm`` (default :data:`~scorer.core.checks.DEFAULT_SEQUENCE_NORM`).
    """
    if mode not in MODES:
        raise ValidationError(f"unknown mode {mode!r} (expected one of {', '.join(MODES)})")
    sequence = any(it.prompt.continuations for it in items)
    if sequence:
        check_sequence_backend(backend)  # before any memory is planned
    if sequence and not all(it.prompt.continuations for it in items):
        # A run reading letters where some questions have more options than letters (read by number): each kind
        # goes its own way, and the records come back in input order.
        yield from _mixed(backend, items, mode, run, skip, max_batch_tokens, cache, sequence_norm)
        return
    need = memory_need(items, mode, max_batch_tokens)
    if cache is not None and mode != "direct":  # a held state longer than this run's prompts may be restored
        need["longest_held"] = cache.longest_held
    backend.plan_memory(need)  # a fixed-size state (llama.cpp's KV cache)
    info = backend.model_info()
    if sequence and mode == "direct":
        yield from _sequence(backend, items, mode, run, skip, info, max_batch_tokens, None, sequence_norm)
        return
    if mode == "direct":
        for it in items[skip:]:
            t0 = time.perf_counter()
            logits = backend.score_fresh(it.prompt.ids, want=it.prompt.slot_ids)
            fwd = time.perf_counter() - t0
            yield make_record(it, logits, backend, info, mode,
                              {"encode_s": it.encode_s, "forward_s": fwd, "total_s": it.encode_s + fwd}, None, run)
        return
    own = cache is None
    prefixes = RadixCache() if cache is None else cache
    try:
        if sequence:
            yield from _sequence(backend, items, mode, run, skip, info, max_batch_tokens, prefixes, sequence_norm)
        elif mode == "serial":
            yield from _serial(backend, items, run, skip, info, prefixes)
        else:
            yield from _shared(backend, items, run, skip, info, max_batch_tokens, prefixes)
    finally:
        if own:
            prefixes.clear()


def _mixed(backend: Backend, items: list[Item], mode: str, run: dict[str, Any], skip: int, max_batch_tokens: int,
           cache: RadixCache | None, sequence_norm: str | None) -> Iterator[dict[str, Any]]:
    """``items`` of which some are read as continuations and some at one position: each part scored on its own
    (renumbered from 0, as :func:`score_items` wants), the records put back in input order with their own index."""
    parts = ([it for it in items if not it.prompt.continuations], [it for it in items if it.prompt.continuations])
    own = cache is None
    prefixes = RadixCache() if cache is None else cache
    try:
        done: dict[int, dict[str, Any]] = {}
        streams = []
        for part in parts:
            local = [Item(k, it.decision, it.prompt, it.encode_s, it.prefix) for k, it in enumerate(part)]
            sub_skip = sum(1 for it in part if it.index < skip)
            streams.append((part, score_items(backend, local, mode, run, sub_skip, max_batch_tokens,
                                              prefixes if mode != "direct" else cache, sequence_norm)))
        plain, seq = streams
        for it, rec in zip(seq[0][sum(1 for x in seq[0] if x.index < skip):], seq[1], strict=True):
            done[it.index] = {**rec, "run": {**rec["run"], "index": it.index}}
        next_out = skip
        for it, rec in zip(plain[0][sum(1 for x in plain[0] if x.index < skip):], plain[1], strict=True):
            done[it.index] = {**rec, "run": {**rec["run"], "index": it.index}}
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
        while next_out in done:
            yield done.pop(next_out)
            next_out += 1
    finally:
        if own:
            prefixes.clear()


def _sequence(backend: Backend, items: list[Item], mode: str, run: dict[str, Any], skip: int, info: dict[str, Any],
              max_batch_tokens: int, cache: RadixCache | None, norm: str | None) -> Iterator[dict[str, Any]]:
    """``--slots sequence`` records (:func:`scorer.scoring.sequence.score_rows`); in the fast modes the prefix fields
    describe the forked state (the prompt less its last token, the one token its options' passes start with)."""
    rows = [(it.prompt, it.prefix) for it in items[skip:]]
    norm = DEFAULT_SEQUENCE_NORM if norm is None else norm
    for it, sc in zip(items[skip:], score_rows(backend, rows, mode, norm, max_batch_tokens, cache), strict=True):
        yield make_record(it, sc, backend, info, mode, sc.timing(it.encode_s), sc.prefix_fields(it.prompt), run)


def _serial(backend: Backend, items: list[Item], run: dict[str, Any], skip: int, info: dict[str, Any],
            cache: RadixCache) -> Iterator[dict[str, Any]]:
    for it in items[skip:]:
        with cache.prefix(backend, it.prefix) as (state, look):
            t0 = time.perf_counter()
            logits, copy_s = backend.score_with_prefix(state, it.prompt.ids[len(it.prefix):],
                                                      want=it.prompt.slot_ids)
            suffix_s = time.perf_counter() - t0 - copy_s
        fwd = look.prefill_s + copy_s + suffix_s
        timing = {"encode_s": it.encode_s, "forward_s": fwd, "total_s": it.encode_s + fwd,
                  "prefill_s": look.prefill_s, "copy_s": copy_s, "suffix_s": suffix_s}
        yield make_record(it, logits, backend, info, "serial", timing, _cache_fields(it, look.block()), run)


def _shared(backend: Backend, items: list[Item], run: dict[str, Any], skip: int, info: dict[str, Any],
            max_batch_tokens: int, cache: RadixCache) -> Iterator[dict[str, Any]]:
    groups: OrderedDict[str, list[int]] = OrderedDict()
    for it in items:
        groups.setdefault(sha256_tokens(it.prefix), []).append(it.index)
    done: dict[int, dict[str, Any]] = {}
    next_out = skip
    for members in groups.values():
        if all(i < skip for i in members):
            continue
        first = items[members[0]]
        suffixes = [items[i].prompt.ids[len(first.prefix):] for i in members]
        with cache.prefix(backend, first.prefix) as (pre, look):
            logits, t = backend.fan_out(pre, suffixes, max_batch_tokens,
                                        wants=[items[i].prompt.slot_ids for i in members])
        # The group's first row says how the state was had; the others reuse that state whole.
        block = look.block()
        follower = {**block, "lookup": "group", "reused_tokens": len(first.prefix), "prefilled_tokens": 0}
        prefill_s = look.prefill_s
        n = len(members)
        for i, lg in zip(members, logits, strict=True):
            if i < skip:
                continue
            it = items[i]
            # Prefill and pass times are shared by the group: each record carries its equal share
            # (the group totals are kept alongside so nothing is hidden by the amortisation).
            share = (prefill_s + t.copy_s + t.suffix_s) / n
            timing = {"encode_s": it.encode_s, "forward_s": share, "total_s": it.encode_s + share,
                      "prefill_s": prefill_s / n, "copy_s": t.copy_s / n, "suffix_s": t.suffix_s / n,
                      "group_prefill_s": prefill_s, "group_copy_s": t.copy_s, "group_suffix_s": t.suffix_s,
                      "group_rows": n, "group_chunks": t.chunks}
            fields = _cache_fields(it, block if i == members[0] else follower)
            done[i] = make_record(it, lg, backend, info, "shared", timing, fields, run)
        while next_out in done:
            yield done.pop(next_out)
            next_out += 1
    assert not done and next_out == len(items), "shared mode lost a record"


def fresh_scorer(backend: Backend) -> Callable[[list[Decision]], Iterator[dict[str, Any]]]:
    """A function that scores rows fresh on ``backend`` (direct mode, plain readout) and yields their records
    in order: how a content-free prior (:func:`scorer.calibration.prior.content_free_prior`) scores its
    probe rows."""
    def score(rows: list[Decision]) -> Iterator[dict[str, Any]]:
        return score_items(backend, prepare(backend, rows, with_prefix=False), "direct", {"content_free": True})

    return score
