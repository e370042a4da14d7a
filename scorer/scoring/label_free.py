"""Label-free calibration of one request, scored: the prompts each method needs (:func:`derived_decisions`), scored in
the same pass as the request's own (shared mode: a state prefilled once serves its rotations too), and the
``calibrated`` block each record gets from them (:func:`calibrate_records`; the math is
:mod:`scorer.calibration.label_free`). Content-free priors are cached per question (the question, its options in
order and the scorer's prompt configuration: one :class:`ContentFreeCache` per scorer), so a repeated question costs
nothing more than its own prompt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scorer.calibration.label_free import (
    CONTENT_FREE_STATES,
    DOMAIN_SAMPLES,
    block,
    calibrate,
    method_for,
    needs,
    shuffled_state,
)
from scorer.decision.questions import answer_kind
from scorer.formats.rows import Decision

CACHE_QUESTIONS = 4096
"""Questions whose content-free priors a scorer keeps (least recently used dropped past it)."""
SEP = "#label-free:"
"""Derived rows' ids are ``ROW#label-free:KIND``; they are scored beside the request's rows and never returned."""


def _rotated(d: Decision, shift: int) -> Decision:
    k = shift % len(d.options)
    return replace(d, options=d.options[k:] + d.options[:k])


def question_key(d: Decision) -> tuple[Any, ...]:
    """What a content-free prior depends on besides the scorer's configuration: the question, its type and its
    options in order (ids and descriptions)."""
    return (d.question, d.type, tuple((o.id, o.description) for o in d.options))


@dataclass
class ContentFreeCache:
    """Content-free probabilities per question (:func:`question_key`) and rotation, by position, per state."""

    entries: OrderedDict[tuple[Any, ...], list[list[list[float]]]] = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0

    def get(self, key: tuple[Any, ...]) -> list[list[list[float]]] | None:
        got = self.entries.get(key)
        if got is not None:
            self.entries.move_to_end(key)
            self.hits += 1
        return got

    def put(self, key: tuple[Any, ...], value: list[list[list[float]]]) -> None:
        self.misses += 1
        self.entries[key] = value
        while len(self.entries) > CACHE_QUESTIONS:
            self.entries.popitem(last=False)


def row_method(method: str, d: Decision) -> str:
    """The method ``d`` is corrected by under ``method`` (its kind's, when ``method`` is one per kind)."""
    return method_for(method, answer_kind(d.type, d.option_ids))


def derived_decisions(method: str, decisions: Sequence[Decision], cache: ContentFreeCache) -> list[Decision]:
    """The prompts ``method`` needs for ``decisions`` besides their own (module docstring), content-free ones only for
    questions not in ``cache`` (once per question)."""
    out: list[Decision] = []
    asked: set[tuple[Any, ...]] = set()
    for d in decisions:
        need = needs(row_method(method, d))
        n = len(d.options)
        shifts = range(n) if need.rotations else range(1)
        if need.rotations:
            out.extend(replace(_rotated(d, s), id=f"{d.id}{SEP}rot{s}") for s in range(1, n))
        key = question_key(d)
        if need.content_free and key not in asked and key not in cache.entries:
            asked.add(key)
            for j, state in enumerate(CONTENT_FREE_STATES):
                out.extend(replace(_rotated(d, s), id=f"{d.id}{SEP}cf{j}.rot{s}", state=state, extra={})
                           for s in shifts)
        if need.domain:
            out.extend(replace(d, id=f"{d.id}{SEP}dom{j}", state=shuffled_state(d.state, f"{d.id}/{j}"), extra={})
                       for j in range(DOMAIN_SAMPLES))
    return out


def calibrate_records(method: str, decisions: Sequence[Decision], records: Sequence[dict[str, Any]],
                      derived: Sequence[dict[str, Any]], cache: ContentFreeCache,
                      chosen: dict[str, Any]) -> list[dict[str, Any]]:
    """``records`` (one per decision, in order) with the label-free ``calibrated`` block of ``method``, computed from
    the ``derived`` records (:func:`derived_decisions`' prompts for these decisions, scored). ``chosen``: how the
    method was chosen (the block's ``label_free.chosen``)."""
    by_id = {r["id"]: r for r in derived}
    owner: dict[tuple[Any, ...], str] = {}
    for d in decisions:  # the row whose id named a question's content-free prompts (the first that asked it)
        owner.setdefault(question_key(d), d.id)
    out = []
    for d, rec in zip(decisions, records, strict=True):
        own = row_method(method, d)
        need = needs(own)
        n = len(d.options)
        shifts = list(range(n)) if need.rotations else [0]
        by_position = [np.asarray(rec["probabilities"], dtype=np.float64)]
        by_position += [np.asarray(by_id[f"{d.id}{SEP}rot{s}"]["probabilities"]) for s in shifts[1:]]
        prompts = n - 1 if need.rotations else 0
        cf: list[list[np.ndarray]] | None = None
        cached = False
        if need.content_free:
            key = question_key(d)
            got = cache.get(key)
            if got is None:
                src = owner[key]
                got = [[list(by_id[f"{src}{SEP}cf{j}.rot{s}"]["probabilities"])
                        for j in range(len(CONTENT_FREE_STATES))] for s in shifts]
                cache.put(key, got)
                prompts += len(CONTENT_FREE_STATES) * len(shifts) if src == d.id else 0
            else:
                cached = True
            cf = [[np.asarray(p) for p in per_state] for per_state in got]
        dom = None
        if need.domain:
            dom = [np.asarray(by_id[f"{d.id}{SEP}dom{j}"]["probabilities"]) for j in range(DOMAIN_SAMPLES)]
            prompts += DOMAIN_SAMPLES
        p = calibrate(own, by_position, cf, dom)
        out.append({**rec, "calibrated": block(rec, own, p, prompts, cached, str(rec["signature"]), chosen)})
    return out
