"""Demonstrations: labelled rows shown before a decision as earlier chat turns (``--demos FILE``).

The file holds rows in the input schema, each with a ``label`` (one of its option ids); ``group`` and
``family`` are optional. For each scored row, :meth:`Demos.pick` chooses ``k`` of them:

1. **Levels.** First demonstrations of the row's own signature (the same question with the same options in
   the same order: :func:`scorer.formats.signature.signature_of`, model left out), then of its
   ``family``, then any (``generic``). The record names the broadest level used.
2. **Never the row, never its group.** A demonstration with the row's id, with the row's very state,
   question and options, or with the row's ``group`` is never eligible (and :func:`check_disjoint` checks the
   pick again before it is rendered).
3. **Balanced over labels, deterministic by seed.** Each level's candidates are shuffled once by a
   generator seeded with ``--seed`` and the level's key, bucketed by label, and taken round-robin over the
   labels, skipping ineligible ones. Rows whose group holds none of the first picks therefore all get the
   same demonstrations, in the same order: the shared prefix stays shared.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer.core.checks import OptionError, positive_int
from scorer.core.errors import InputError, ValidationError, brief
from scorer.core.hashing import sha256_file
from scorer.formats.rows import Decision, load_decisions
from scorer.formats.signature import signature_of
from scorer.prompting.layouts import Shown, render
from scorer.prompting.prompt import Prompt, Tokenizer

DEFAULT_K = 4
"""Demonstrations per decision when ``--demos`` is given without ``--demos-k``."""
DEFAULT_SEED = 0
LEVELS = ("signature", "family", "generic")
_NO_MODEL: dict[str, Any] = {}  # demonstrations are matched on the decision's own signature, whatever the model


@dataclass(frozen=True)
class Demo:
    """One labelled row of a demonstrations file."""

    shown: Shown
    group: str | None
    family: str | None
    key: str
    """The row's signature without the model: question and ordered options."""

    @property
    def label(self) -> str:
        return self.shown.decision.options[self.shown.label_index].id


@dataclass(frozen=True)
class Pick:
    """The demonstrations chosen for one row, and the broadest level they came from."""

    shown: tuple[Shown, ...]
    level: str | None


def _scalar_key(value: Any) -> str | None:
    """A ``group``/``family`` value as a comparable key (None when absent)."""
    return None if value is None else str(value)


def _check_scalar(value: Any, path: str, line: int, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
        raise InputError(path, line, name, f"{brief(value)} is a {type(value).__name__}", "a string or an integer")
    if isinstance(value, str) and not value.strip():
        raise InputError(path, line, name, "an empty string", "a non-empty string or an integer")


def row_key(decision: Decision) -> str:
    """The key demonstrations are matched on: the decision's signature with the model left out."""
    return signature_of(decision, "demos", _NO_MODEL)


def demo_of(decision: Decision, path: str, line: int) -> Demo:
    """One row of a demonstrations file, checked: a ``label`` that is one of its option ids, ``group`` and
    ``family`` strings or integers when given. Raises :class:`InputError` naming file, line and field."""
    label = decision.extra.get("label")
    if label is None:
        raise InputError(path, line, "label", "missing", "the id of the option that is right (a demonstration "
                         "shows its answer)")
    if label not in decision.option_ids:
        raise InputError(path, line, "label", f"{brief(label)} is not one of the row's option ids",
                         f"one of {', '.join(decision.option_ids)}")
    for name in ("group", "family"):
        _check_scalar(decision.extra.get(name), path, line, name)
    return Demo(Shown(decision.id, decision, decision.option_ids.index(label)),
                _scalar_key(decision.extra.get("group")), _scalar_key(decision.extra.get("family")),
                row_key(decision))


def _same_decision(a: Decision, b: Decision) -> bool:
    return a.state == b.state and a.question == b.question and a.options == b.options


def eligible(demo: Demo, row: Decision) -> bool:
    """Whether ``demo`` may be shown before ``row``: not the row (by id or by content), not of its group."""
    if demo.shown.id == row.id or _same_decision(demo.shown.decision, row):
        return False
    group = _scalar_key(row.extra.get("group"))
    return group is None or demo.group != group


def check_disjoint(row: Decision, shown: Sequence[Shown], demos: dict[str, Demo]) -> None:
    """Refuse a pick that holds the scored row or a row of its group (the selection never makes one; this
    is the check the records' ``demos.ids`` promise rests on)."""
    for s in shown:
        if not eligible(demos[s.id], row):
            raise ValidationError(f"{row.source}: demonstration {s.id!r} is row {row.id!r} itself or of its group "
                                  f"{row.extra.get('group')!r}; a demonstration never is")


class Demos:
    """The demonstrations of one file, and how many to show (``k``) chosen by which ``seed``."""

    def __init__(self, demos: Sequence[Demo], k: int = DEFAULT_K, seed: int = DEFAULT_SEED,
                 source: dict[str, Any] | None = None) -> None:
        positive_int(k, "demos_k")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise OptionError("seed", f"{brief(seed)} is not an integer")
        self.k, self.seed, self.source = k, seed, dict(source or {})
        self.by_id = {d.shown.id: d for d in demos}
        self._rows = list(demos)
        self._ranked: dict[tuple[str, str | None], list[list[Demo]]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def states(self) -> list[tuple[str, Any]]:
        """``(id, state)`` of every demonstration (what a preset's disjointness check compares rows with)."""
        return [(d.shown.id, d.shown.decision.state) for d in self._rows]

    def config(self) -> dict[str, Any]:
        """What identifies the demonstrations of a run (its configuration hash names them)."""
        return {"sha256": self.source.get("sha256"), "rows": len(self._rows), "k": self.k, "seed": self.seed}

    def _buckets(self, level: str, key: str | None) -> list[list[Demo]]:
        """The level's candidates, shuffled by the seed and bucketed by label (buckets in order of first
        appearance after the shuffle), computed once per level and key."""
        cached = self._ranked.get((level, key))
        if cached is not None:
            return cached
        if level == "signature":
            pool = [d for d in self._rows if d.key == key]
        elif level == "family":
            pool = [d for d in self._rows if key is not None and d.family == key]
        else:
            pool = list(self._rows)
        random.Random(f"semif-demos:{self.seed}:{level}:{key}").shuffle(pool)
        buckets: dict[str, list[Demo]] = {}
        for d in pool:
            buckets.setdefault(d.label, []).append(d)
        self._ranked[(level, key)] = out = list(buckets.values())
        return out

    def pick(self, row: Decision) -> Pick:
        """``k`` demonstrations for ``row`` (module docstring), fewer when the file holds fewer eligible ones."""
        chosen: list[Demo] = []
        taken: set[str] = set()
        level_used: str | None = None
        keys = {"signature": row_key(row), "family": _scalar_key(row.extra.get("family")), "generic": None}
        for level in LEVELS:
            if len(chosen) >= self.k:
                break
            queues = [[d for d in b if d.shown.id not in taken and eligible(d, row)]
                      for b in self._buckets(level, keys[level])]
            before = len(chosen)
            while len(chosen) < self.k and any(queues):
                for q in queues:  # one per label per round: balanced over labels
                    if q and len(chosen) < self.k:
                        d = q.pop(0)
                        chosen.append(d)
                        taken.add(d.shown.id)
            if len(chosen) > before:
                level_used = level
        shown = tuple(d.shown for d in chosen)
        check_disjoint(row, shown, self.by_id)
        return Pick(shown, level_used)


def load_demos(path: str | Path, k: int = DEFAULT_K, seed: int = DEFAULT_SEED) -> Demos:
    """Read and check a demonstrations file (rows in the input schema, each with a ``label``): every line is
    validated as an input row (:func:`scorer.formats.rows.load_decisions`), then as a demonstration
    (:func:`demo_of`). Raises :class:`InputError` naming file, line and field."""
    name = str(path)
    rows = load_decisions(path)
    # load_decisions refuses blank lines, so row i is line i + 1
    demos = [demo_of(d, name, line) for line, d in enumerate(rows, start=1)]
    return Demos(demos, k, seed, {"path": name, "sha256": sha256_file(Path(path))})


def prompt_for(tok: Tokenizer, decision: Decision, layout: str, demos: Demos | None,
               slots: str = "letters") -> Prompt:
    """``decision``'s prompt in ``layout``, with its demonstrations when ``demos`` is given, read out
    through ``slots``."""
    if demos is None:
        return render(tok, decision, layout, slots=slots)
    pick = demos.pick(decision)
    return render(tok, decision, layout, pick.shown, pick.level, demos.k, slots=slots)
