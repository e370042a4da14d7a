"""Score decisions in one of three modes, written once on top of the backend protocol.

* ``direct``: one fresh forward pass per decision.
* ``serial``: each row's prefix state comes from the radix prefix cache (:mod:`scorer.radix_cache`: the longest
  cached prefix at any depth is reused and only the rest prefilled; keyed by token ids, so a
  reordered-but-equal JSON state is a miss, never a wrong hit), then its suffix is scored after it.
* ``shared``: each state's prefix comes from the radix cache once, then all of its criteria are scored in
  packed passes (the last level of reuse: :meth:`~scorer.backends.base.Backend.fan_out`).

A run uses the cache it is given (a :class:`~scorer.api.Scorer`'s, which lives across calls) or one of its own,
released at its end. Each fast-mode record says how its prefix was obtained (``cache``: lookup, reused and
prefilled tokens, state and held bytes, the budget).

Records come out in input order whatever the mode, one dict per decision (schema
``scorer/schema/record-v2.json``). Two readouts: the plain one (one ordering of the options) and the
order-averaged one (``permute`` K > 1: :func:`score_permuted`, merged by :mod:`scorer.permute`).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import orjson

from scorer import readout
from scorer.backends.base import Backend, pack_chunks
from scorer.calibration.signature import signature_of, signature_readout
from scorer.demos import Demos, prompt_for
from scorer.errors import InputError, ValidationError, brief
from scorer.io import RecordsOutput, ResumePoint, read_resume
from scorer.layouts import (
    AUTO,
    LAYOUTS,
    STATE_MAJOR,
    LayoutChoice,
    check_layout,
    check_slots_layout,
    choose,
    signature_version,
)
from scorer.options import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_SEQUENCE_NORM,
    MODES,
    check_run_options,
    check_sequence_norm,
    check_slots,
    positive_float,
    positive_int,
)
from scorer.prompt import Prompt, common_prefix, prefix_ids, sha256_tokens
from scorer.radix_cache import RadixCache
from scorer.record_schema import RECORD_SCHEMA
from scorer.records import SCORE_KIND, SEQUENCE_SCORE_KIND, check_record, dumps_record
from scorer.runs.sequence import SequenceScores, check_sequence_options, pass_need, score_rows
from scorer.runs.sequence import check_backend as check_sequence_backend
from scorer.schema import Decision

if TYPE_CHECKING:
    from scorer.calibration.batch import BatchResult
    from scorer.calibration.core import Calibration
    from scorer.presets import Preset

RECORD_LINE_PREFIX = b'{"schema":"' + RECORD_SCHEMA.encode() + b'"'
"""How every record line starts: a torn tail must be a piece of one for ``--resume`` to cut it."""


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
    :func:`resolve_layout` turns ``auto`` into one) with ``demos``' demonstrations when given, read out
    through answer ``slots`` (:data:`scorer.options.SLOTS`).

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
    under ``--slots sequence`` from the options' continuations (:class:`~scorer.runs.sequence.SequenceScores`)."""
    d, p = item.decision, item.prompt
    slots: dict[str, Any] = {"readout": p.slots, "texts": list(p.slot_texts), "token_ids": list(p.slot_ids)}
    score_kind = model_info.get("score_kind", SCORE_KIND)
    sig_readout = "plain"
    if isinstance(logits, SequenceScores):
        conts, norm = logits.continuations, logits.normalisation
        r = readout.read_sequences([c.logprobs for c in conts], conts[0].head_logits, norm, backend.logits_dtype)
        slots.update(token_ids=[list(c) for c in p.continuations], normalisation=norm,
                     token_counts=[len(c) for c in p.continuations],
                     token_logprobs=[[float(v) for v in c.logprobs] for c in conts])
        score_kind = SEQUENCE_SCORE_KIND.format(norm=norm, backend=model_info.get("backend"),
                                                dtype=model_info.get("dtype"))
        sig_readout = signature_readout(1, p.slots, norm)
    else:
        r = readout.read(logits, p.slot_ids, backend.logits_dtype, normalized=backend.logits_normalized)
    ids = d.option_ids
    tok = backend.tokenizer
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
        **({"type": d.type} if d.type is not None else {}),  # how the readout is meant (scorer.questions)
    }


def kernel_name(backend: Backend, mode: str, slots: str = "letters") -> str:
    """The kernel a record of ``mode`` names: the backend's packed kernel in shared mode (and for ``--slots
    sequence`` in every mode: the options' passes are packed), else ``<backend>.fresh`` (direct) or
    ``<backend>.prefix-reuse`` (serial)."""
    if mode == "shared" or slots == "sequence":
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
    largest packed pass (prefix + suffix tokens, suffixes, suffix tokens)."""
    groups: OrderedDict[str, list[Item]] = OrderedDict()
    for it in items:
        groups.setdefault(sha256_tokens(it.prefix), []).append(it)
    need: dict[str, Any] = {
        "mode": mode, "longest_prompt": max(len(it.prompt.ids) for it in items),
        "longest_prefix": max(len(it.prefix) for it in items),
        "longest_suffix": max(len(it.prompt.ids) - len(it.prefix) for it in items),
        "held_prefixes": len(groups) if mode == "serial" else 0,
        "pass_cells": 0, "pass_branches": 0, "pass_tokens": 0,
    }
    if any(it.prompt.continuations for it in items):  # --slots sequence: every row's options pass, in every mode
        need.update(pass_need([it.prompt for it in items], max_batch_tokens))
    elif mode == "shared":
        for g in groups.values():
            p = len(g[0].prefix)
            for chunk in pack_chunks([it.prompt.ids[p:] for it in g], max_batch_tokens):
                n = sum(len(x) for x in chunk)
                need["pass_cells"] = max(need["pass_cells"], p + n)
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
    Items rendered for ``--slots sequence`` are read through their continuations (:mod:`scorer.runs.sequence`) with
    ``sequence_norm`` (default :data:`~scorer.options.DEFAULT_SEQUENCE_NORM`).
    """
    if mode not in MODES:
        raise ValidationError(f"unknown mode {mode!r} (expected one of {', '.join(MODES)})")
    sequence = any(it.prompt.slots == "sequence" for it in items)
    if sequence:
        check_sequence_backend(backend)  # before any memory is planned
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


def _sequence(backend: Backend, items: list[Item], mode: str, run: dict[str, Any], skip: int, info: dict[str, Any],
              max_batch_tokens: int, cache: RadixCache | None, norm: str | None) -> Iterator[dict[str, Any]]:
    """``--slots sequence`` records (:func:`scorer.runs.sequence.score_rows`); in the fast modes the prefix fields
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


def config_sha256(parts: dict[str, Any]) -> str:
    """Hash of everything that must match for ``--resume`` to continue a run."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def config_parts(info: Mapping[str, Any], run_parts: Mapping[str, Any], mode: str,
                 max_batch_tokens: int) -> dict[str, Any]:
    """What identifies a plain run (no permute/temperature/exact): ``run_parts`` (input hash, version), the
    identity of the loaded model (``info``: its ``model_info()``), the mode and the pass budget. Its
    :func:`config_sha256` goes into every record, so every entry (CLI, Python API, HTTP service) that scores
    the same rows the same way names the same run."""
    ident = {k: info.get(k) for k in ("key", "source", "gguf_sha256", "revision", "local_sha256", "dtype",
                                       "device", "backend")}
    engine = info.get("engine")
    if isinstance(engine, dict):  # a remote engine: which one, serving what, is part of the run's identity
        ident["engine"] = {k: engine.get(k) for k in ("kind", "version", "served_model")}
    return {**run_parts, "model": ident, "mode": mode, "max_batch_tokens": max_batch_tokens}


ProgressFn = Callable[[dict[str, Any]], None]


def resume_point(data: bytes, path: Path | str, config_hash: str | None, decisions: list[Decision]) -> ResumePoint:
    """Where a resumed run continues: the complete records already in ``data`` (the output's bytes),
    all of which must belong to this very run configuration, in input order.

    Only reads: a torn last line (the run was killed mid-write) is reported, not cut, and anything
    that does not match (another configuration, another input, records out of order, a file that is
    not a records file) raises :class:`InputError` or :class:`~scorer.errors.OutputError`.
    ``config_hash`` None checks everything but the configuration (possible before the model loads).
    """
    name = str(path)
    point = read_resume(data, name, RECORD_LINE_PREFIX)
    for lineno, raw in enumerate(point.lines, start=1):
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise InputError(name, lineno, None, "not a JSON record", "records of an earlier run; nothing was "
                             "changed") from None
        if not isinstance(rec, dict) or rec.get("schema") != RECORD_SCHEMA:
            raise InputError(name, lineno, "schema", f"not a {RECORD_SCHEMA} record",
                             "records of an earlier run; nothing was changed")
        run = rec.get("run")
        got = run.get("config_sha256") if isinstance(run, dict) else None
        if config_hash is not None and got != config_hash:
            raise InputError(name, lineno, "run.config_sha256",
                             f"{brief(got)} differs from this run's {config_hash!r}",
                             "the same input, model, backend, mode and options as the run being resumed; "
                             "nothing was changed")
        n = lineno - 1
        if n >= len(decisions) or rec.get("id") != decisions[n].id:
            raise InputError(name, lineno, "id", f"{brief(rec.get('id'))} is not input row {n + 1}",
                             "records in input order; nothing was changed")
        try:  # the run's records are kept as they are: each must be a valid record (issue #21)
            check_record(rec, name, lineno)
        except InputError as exc:
            raise InputError(name, lineno, exc.field, exc.problem, f"{exc.expected}; nothing was changed") from None
    return point


class RecordPolicy(Protocol):
    """A policy that re-scores some fast-path records before they are written (``--exact``:
    :class:`scorer.runs.exact.ExactPolicy`). Scoring calls it; it is free to score again itself."""

    def config(self) -> dict[str, Any]:
        """What must match for ``--resume`` (goes into the run's config hash)."""
        ...

    def calibrate(self, backend: Backend, items: list[Item], mode: str, max_batch_tokens: int) -> None:
        """Settle the policy on these rows before any record is written."""
        ...

    def apply(self, backend: Backend, items: list[Item], mode: str,
              records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The records, in order, some of them replaced."""
        ...


@dataclass(frozen=True)
class ScoreConfig:
    """How a records file is scored: everything but the rows, the backend and the output."""

    mode: str = "direct"
    """One of :data:`MODES`."""
    run_parts: Mapping[str, Any] = field(default_factory=dict)
    """What identifies the run besides the model and these options (input hash, semif version); the
    model block is added by :func:`run_score`."""
    resume: bool = False
    """Continue the records already in the output (all of them must be this configuration's)."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per packed pass."""
    permute: int = 1
    """K > 1: read each decision out over K cyclic option orderings (:func:`score_permuted`)."""
    temperature: float | None = None
    """Rescale the option logits by 1/T (:func:`scorer.calibration.temperature.apply_temperature`)."""
    exact: RecordPolicy | None = None
    """Re-score fresh the fast-path decisions under a drift bound (:class:`scorer.runs.exact.ExactPolicy`)."""
    route: RecordPolicy | None = None
    """Re-score low-margin decisions on an accurate engine (:class:`scorer.runs.route.RoutePolicy`)."""
    calibration: Calibration | None = None
    """Add a ``calibrated`` block to every record (:meth:`scorer.calibration.core.Calibration.apply`)."""
    on_uncovered: str = "error"
    """A row the calibration does not cover: refuse the run (``error``) or keep its raw numbers, flagged
    (``raw``; :data:`scorer.calibration.apply.ON_UNCOVERED`)."""
    echo: str | None = None
    """Store the question, options and a state digest (``digest``) or the state (``full``) in every record
    (:mod:`scorer.echo`)."""
    slots: str = "letters"
    """The answer slots read out: the letters A–P, the option ids, or the ids as token sequences
    (:data:`scorer.options.SLOTS`)."""
    sequence_norm: str | None = None
    """``slots="sequence"``: ``sum`` (the default) or ``mean`` of each option's token log-probabilities
    (:data:`scorer.options.SEQUENCE_NORMS`); resolved at construction (None for the other slots)."""
    layout: str = STATE_MAJOR
    """The prompt layout (:mod:`scorer.layouts`): ``state-major``, ``question-major`` or ``auto``."""
    demos: Demos | None = None
    """Demonstrations shown before each decision (:mod:`scorer.demos`)."""
    prefix_cache: RadixCache | None = None
    """The radix prefix cache of the fast modes (its budget, its stats for the run's summary; kept for the
    caller); None: the run makes its own. Not part of the run's identity: it changes how much is reused, not
    what is scored."""
    preset: Preset | None = None
    """The preset whose values the run took (:mod:`scorer.presets`): named in every record and in the run's hash."""

    def __post_init__(self) -> None:
        """The options checked by the rules the command line and the API use (:mod:`scorer.options`)."""
        from scorer.calibration.apply import check_on_uncovered
        from scorer.echo import check_echo

        check_on_uncovered(self.on_uncovered)
        object.__setattr__(self, "echo", check_echo(self.echo))
        check_run_options(self.mode, self.max_batch_tokens)
        check_slots(self.slots)
        object.__setattr__(self, "sequence_norm", check_sequence_norm(self.sequence_norm, self.slots))
        if self.sequence_norm is not None:
            check_sequence_options(self.permute, self.exact, self.route)
        check_layout(self.layout)
        check_slots_layout(self.slots, self.layout, self.demos is not None)
        positive_int(self.permute, "permute")
        if self.temperature is not None:
            positive_float(self.temperature, "temperature")


def checked_config_parts(info: dict[str, Any], decisions: Sequence[Decision], run_parts: Mapping[str, Any], mode: str,
                         max_batch_tokens: int, *, permute: int = 1, temperature: float | None = None,
                         calibration: Calibration | None = None,
                         exact: RecordPolicy | None = None, route: RecordPolicy | None = None,
                         on_uncovered: str = "error", echo: str | None = None, layout: str = STATE_MAJOR,
                         demos: Demos | None = None, slots: str = "letters",
                         sequence_norm: str | None = None, preset: str | None = None) -> dict[str, Any]:
    """What identifies a run (:func:`config_parts` plus the options that change its records, each only when
    set, so a plain run's hash is what it always was), checked before anything is scored: a calibration
    must cover every row's signature, and ``exact`` does not combine with ``permute``. The CLI, the Python
    API and the Ray engine all name their runs through this one function. ``on_uncovered="raw"`` (only the
    calibration's model is checked then), ``echo``, ``layout`` (a resolved one) and ``demos`` enter the hash
    only when set, and so does ``preset`` (the sha256 of the preset file that ran: :mod:`scorer.presets`);
    ``--slots sequence`` names its normalisation (``sequence_norm``, default sum) and refuses ``permute`` and
    ``exact`` (:class:`~scorer.options.OptionError` naming the field)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} must be resolved before the run is named (resolve_layout)")
    parts = config_parts(info, run_parts, mode, max_batch_tokens)
    if check_slots(slots) != "letters":  # the letters' run hash stays what it always was
        parts["slots"] = slots
    sequence_norm = check_sequence_norm(sequence_norm, slots)
    if sequence_norm is not None:
        parts["sequence_norm"] = sequence_norm
        check_sequence_options(permute, exact, route)
    if layout != STATE_MAJOR:
        parts["layout"] = layout
    if demos is not None:
        if permute > 1:
            raise ValidationError("--demos and --permute cannot be combined yet (the demonstrations of a rotated "
                                  "decision would be picked for another option order)")
        parts["demos"] = demos.config()
    if permute > 1:
        parts["permute"] = permute
    if temperature is not None:
        parts["temperature"] = temperature
    if calibration is not None:
        from scorer.calibration.apply import check_decisions

        check_decisions(calibration, decisions, info, permute, on_uncovered,
                        prompt_version=signature_version(layout, demos.k if demos is not None else 0, slots),
                        readout=signature_readout(permute, slots, sequence_norm))
        parts["calibration"] = calibration.source.get("sha256")  # the file's content, wherever it lies
        if on_uncovered != "error":
            parts["uncovered"] = on_uncovered
    if echo is not None:
        parts["echo"] = echo
    if preset is not None:
        parts["preset"] = preset
    if exact is not None:
        if permute > 1:
            raise ValidationError("--exact and --permute cannot be combined (escalation re-scores one ordering)")
        parts["exact"] = exact.config()
    if route is not None:
        if slots != "letters":
            raise ValidationError(f"live routing (--fast/--accurate) reads the letters; it does not take --slots "
                                  f"{slots}")
        if layout != STATE_MAJOR or demos is not None:
            raise ValidationError("live routing (--fast/--accurate) renders the state-major layout without "
                                  "demonstrations (no --layout question-major, no --demos)")
        if permute > 1 or calibration is not None or temperature is not None:
            raise ValidationError("live routing (--fast/--accurate) takes its calibrations in the SPECs "
                                  "(calibration=FILE) and does not combine with --permute, --temperature or "
                                  "--calibration")
        parts["route"] = route.config()
    return parts


def resolve_layout(backend: Backend, decisions: Sequence[Decision], layout: str,
                   demos: Demos | None = None) -> tuple[str, LayoutChoice | None]:
    """``layout`` itself, or for ``auto`` the layout whose prompts share more prefix tokens over
    ``decisions`` (both rendered and counted on ``backend``'s tokenizer: :func:`scorer.layouts.choose`)."""
    if check_layout(layout) != AUTO:
        return layout, None
    tok = backend.tokenizer
    prompts: dict[str, list[Prompt]] = {}
    for name in LAYOUTS:
        try:
            prompts[name] = [prompt_for(tok, d, name, demos) for d in decisions]
        except ValidationError as exc:
            raise ValidationError(f"--layout auto: rendering {name}: {exc}") from None
    choice = choose(prompts)
    return choice.layout, choice


def run_score(decisions: list[Decision], backend: Backend, output: Path | RecordsOutput, cfg: ScoreConfig,
              on_record: ProgressFn | None = None, on_start: Callable[[int, int], None] | None = None,
              on_layout: Callable[[LayoutChoice], None] | None = None) -> int:
    """Score ``decisions`` into ``output`` (JSONL, one record handed to the kernel at a time). Returns the
    records written.

    ``output`` is a path (opened here: created exclusively, or continued with ``cfg.resume``) or an
    already locked :class:`~scorer.io.RecordsOutput` (the CLI takes the lock before the model loads;
    ``cfg.resume`` is then how it was opened). Existing records are kept only if every one belongs to this
    run's configuration; otherwise the file is refused unchanged. ``cfg.run_parts`` identifies the run
    (input hash, options); the model block is added here, so a resumed run is refused unless it loads
    the very same weights the same way. With ``cfg.calibration`` every row's signature is checked against
    it before anything is scored. ``on_start(total, skip)`` runs once the rows are ready to score,
    ``on_record(record)`` after each record is written, ``on_layout(choice)`` once ``--layout auto`` has chosen.
    """
    from dataclasses import replace

    layout, choice = resolve_layout(backend, decisions, cfg.layout, cfg.demos)
    if choice is not None:
        cfg = replace(cfg, layout=layout)
        if on_layout is not None:
            on_layout(choice)
    parts = checked_config_parts(backend.model_info(), decisions, cfg.run_parts, cfg.mode, cfg.max_batch_tokens,
                                 permute=cfg.permute, temperature=cfg.temperature, calibration=cfg.calibration,
                                 exact=cfg.exact, route=cfg.route, on_uncovered=cfg.on_uncovered, echo=cfg.echo,
                                 layout=cfg.layout, demos=cfg.demos, slots=cfg.slots, sequence_norm=cfg.sequence_norm,
                                 preset=None if cfg.preset is None else cfg.preset.sha256)
    chash = config_sha256(parts)
    if isinstance(output, RecordsOutput):
        return _score_into(output, decisions, backend, cfg, chash, on_record, on_start)
    with RecordsOutput.resume(output) if cfg.resume else RecordsOutput.create(output) as sink:
        return _score_into(sink, decisions, backend, cfg, chash, on_record, on_start)


def _score_into(sink: RecordsOutput, decisions: list[Decision], backend: Backend, cfg: ScoreConfig, chash: str,
                on_record: ProgressFn | None, on_start: Callable[[int, int], None] | None) -> int:
    point = resume_point(sink.read(), sink.path, chash, decisions)
    sink.accept(point)
    skip = len(point.lines)
    run = {"config_sha256": chash, "started_unix": round(time.time(), 3), "resumed_from": skip}
    mode, exact = cfg.mode, cfg.exact
    records: Iterator[dict[str, Any]]
    if cfg.permute > 1:
        records = score_permuted(backend, decisions, cfg.permute, mode, run, skip, cfg.max_batch_tokens, cfg.layout,
                                 cfg.slots, cfg.prefix_cache)
        if on_start:
            on_start(len(decisions), skip)
    else:
        items = prepare(backend, decisions, with_prefix=mode != "direct", layout=cfg.layout, demos=cfg.demos,
                        slots=cfg.slots)
        if exact is not None:  # the bound is set (probe or drift report) before any record is written
            exact.calibrate(backend, items, mode, cfg.max_batch_tokens)
        if cfg.route is not None:  # the accurate engine's prompts validated before any record is written
            cfg.route.calibrate(backend, items, mode, cfg.max_batch_tokens)
        if on_start:
            on_start(len(items), skip)
        records = score_items(backend, items, mode, run, skip, cfg.max_batch_tokens, cfg.prefix_cache,
                              cfg.sequence_norm)
        if exact is not None:
            records = exact.apply(backend, items, mode, records)
        if cfg.route is not None:
            records = cfg.route.apply(backend, items, mode, records)
    if cfg.temperature is not None:
        from scorer.calibration.temperature import apply_temperature

        temperature = cfg.temperature
        records = (apply_temperature(r, temperature) for r in records)
    if cfg.calibration is not None:
        from scorer.calibration.apply import apply_records

        records = apply_records(cfg.calibration, records, cfg.on_uncovered)
    if cfg.echo is not None:
        from scorer.echo import with_echo

        records = with_echo(records, decisions, cfg.echo)
    if cfg.preset is not None:
        from scorer.presets import with_preset

        records = with_preset(records, cfg.preset)
    written = 0
    for rec in records:
        sink.write_line(dumps_record(rec))
        written += 1
        if on_record:
            on_record(rec)
    return written


def run_batch_calibrated(decisions: list[Decision], backend: Backend, output: Path, cfg: ScoreConfig,
                         estimator: str = "mean", min_rows: int = 8, fallback: str = "none",
                         raw_sink: RecordsOutput | None = None, on_record: ProgressFn | None = None,
                         on_start: Callable[[int, int], None] | None = None,
                         on_layout: Callable[[LayoutChoice], None] | None = None) -> BatchResult:
    """``semif score --batch-calibrate``: the raw phase is :func:`run_score` under ``cfg`` into
    ``OUT.raw.jsonl``, then the in-run prior is fitted and applied into ``output``
    (:mod:`scorer.calibration.batch`). ``raw_sink``: the raw phase's records file, already opened and locked
    by the caller (the CLI takes the lock before the model loads); without it the raw file is opened here."""
    from dataclasses import replace

    from scorer.calibration import batch

    raw = batch.check_outputs(output, cfg.resume, raw_sink is not None)
    raw_cfg = replace(cfg, run_parts=batch.run_parts(cfg.run_parts, estimator, min_rows, fallback))
    written = run_score(decisions, backend, raw_sink if raw_sink is not None else raw, raw_cfg,
                        on_record=on_record, on_start=on_start, on_layout=on_layout)
    return batch.finish(raw, output, written, estimator, min_rows, fallback)


# --- the order-averaged readout (semif score --permute K) ----------------------------------------------------
def score_permuted(backend: Backend, decisions: list[Decision], k: int, mode: str, run: dict[str, Any],
                   skip: int = 0, max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
                   layout: str = STATE_MAJOR, slots: str = "letters",
                   cache: RadixCache | None = None) -> Iterator[dict[str, Any]]:
    """Records of ``decisions[skip:]`` read out over ``k`` cyclic orderings each (pass j scores every row
    that has a j-th shift; rows with fewer options than ``k`` use all n of their rotations).

    Every pass's prompts are rendered and validated here, before any is scored (like a plain run);
    the records come from the returned iterator, in input order, once all passes have run.
    """
    from scorer.permute import permute_shifts
    from scorer.perturb import rotate

    rows = decisions[skip:]
    shifts = [permute_shifts(len(d.options), k) for d in rows]
    passes = []
    for j in range(max(len(s) for s in shifts) if rows else 0):
        sel = [rotate(d, s[j]) for d, s in zip(rows, shifts, strict=True) if j < len(s)]
        passes.append(prepare(backend, sel, with_prefix=mode != "direct", layout=layout, slots=slots))
    return _permuted_records(backend, rows, shifts, passes, k, mode, run, skip, max_batch_tokens, cache)


def _permuted_records(backend: Backend, rows: list[Decision], shifts: list[list[int]], passes: list[list[Item]],
                      k: int, mode: str, run: dict[str, Any], skip: int, max_batch_tokens: int,
                      cache: RadixCache | None) -> Iterator[dict[str, Any]]:
    from scorer.permute import merge_permuted
    from scorer.progress import bar

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
