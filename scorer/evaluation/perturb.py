"""Deterministic perturbations of decision rows, for order and wording robustness.

Kinds (applied in the order given; each keeps the row id, the option ids and the label):

* ``reverse``: the options in reverse order (so the letters move, the ids stay).
* ``rotate-S``: the options rotated cyclically by S positions (``options[S:] + options[:S]``).
* ``wrap``: the criterion wrapped in meaning-preserving words (one of :data:`WRAPPERS`).
* ``distract``: an irrelevant sentence appended to the state (one of :data:`NOTES`): after a blank line
  for text, under a new key for a JSON object, as a last element for a JSON array.

Which wrapper or note a row gets is ``sha256(row id) mod len(pool)``, so a rebuild is byte-identical
and never depends on row order. Each perturbed row carries ``perturbation`` (e.g. ``"reverse"``,
``"wrap+distract"``) among its extra fields; results are aligned to the original by row id and
option id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from scorer.core.errors import InputError
from scorer.core.io import check_writable, write_atomic
from scorer.formats.rows import Decision, Option, load_decisions

WRAPPERS = (
    "Using only the state above, answer the following question. {q}",
    "Here is the question to decide: {q}",
    "{q} Answer on the basis of the state given.",
)
# Sentences about nothing any labelled row asks about (checked against the authored sets).
NOTES = (
    "Unrelated note: a framed painting of a lighthouse now hangs in the reception area.",
    "Unrelated note: the team quiz night ended in a draw between two tables.",
    "Unrelated note: the sunflowers on the windowsill have grown taller than the window frame.",
    "Unrelated note: a choir rehearsed in the town hall on Saturday afternoon.",
    "Unrelated note: the canteen is serving lentil soup every day this week.",
)
NOTE_KEY = "unrelated_note"
SIMPLE_KINDS = ("reverse", "wrap", "distract")


def _pick(row_id: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(row_id.encode("utf-8")).digest()[:8], "big") % n


def rotate(d: Decision, shift: int) -> Decision:
    """Options rotated cyclically by ``shift`` (ids kept)."""
    k = shift % len(d.options)
    return replace(d, options=d.options[k:] + d.options[:k])


def reverse(d: Decision) -> Decision:
    return replace(d, options=tuple(reversed(d.options)))


def wrap(d: Decision) -> Decision:
    q = d.question.strip()
    return replace(d, question=WRAPPERS[_pick(d.id, len(WRAPPERS))].format(q=q))


def distract(d: Decision) -> Decision:
    note = NOTES[_pick(d.id, len(NOTES))]
    state = d.state
    if isinstance(state, str):
        new: Any = f"{state.rstrip()}\n\n{note}"
    elif isinstance(state, dict):
        key = NOTE_KEY
        n = 2
        while key in state:
            key = f"{NOTE_KEY}_{n}"
            n += 1
        new = {**state, key: note}
    else:
        new = [*state, note]
    return replace(d, state=new)


def parse_kinds(spec: str) -> list[str]:
    """``"reverse,wrap"`` → ``["reverse", "wrap"]``; ``rotate-S`` takes an integer S ≥ 0."""
    kinds = [k.strip() for k in spec.split(",") if k.strip()]
    if not kinds:
        raise InputError("--kind", None, None, "no perturbation named", f"one or more of {SIMPLE_KINDS} or rotate-S")
    for k in kinds:
        if k in SIMPLE_KINDS:
            continue
        if k.startswith("rotate-") and k[7:].isdigit():
            continue
        raise InputError("--kind", None, None, f"unknown perturbation {k!r}",
                         f"one of {', '.join(SIMPLE_KINDS)} or rotate-S (S an integer)")
    return kinds


def perturb(d: Decision, kinds: list[str]) -> Decision:
    """Apply the perturbations in order; the row records which ones in ``extra['perturbation']``."""
    for k in kinds:
        if d.type == "score" and (k == "reverse" or k.startswith("rotate")):
            raise InputError(d.source or d.id, None, "options", f"a score question perturbed by {k}: its levels are "
                             "ordered lowest first, so moving them changes what it asks",
                             "wrap or distract for score questions (their levels keep their order)")
        if k == "reverse":
            d = reverse(d)
        elif k == "wrap":
            d = wrap(d)
        elif k == "distract":
            d = distract(d)
        else:
            d = rotate(d, int(k[7:]))
    prior = d.extra.get("perturbation")
    tag = "+".join(kinds) if not prior else f"{prior}+{'+'.join(kinds)}"
    return replace(d, extra={**d.extra, "perturbation": tag})


def row_json(d: Decision) -> str:
    """One row as compact JSON in the field order of the data builders (id, state, question, options, extras)."""
    obj: dict[str, Any] = {"id": d.id, "state": d.state, "question": d.question,
                           "options": [_opt(o) for o in d.options], **({"type": d.type} if d.type else {}), **d.extra}
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _opt(o: Option) -> dict[str, str]:
    return {"id": o.id, "description": o.description}


def perturb_file(inp: Path, kinds: list[str], out: Path, force: bool = False) -> int:
    """Write the perturbed rows of ``inp`` to ``out`` (UTF-8 JSONL, ``\\n`` endings). Returns the row count."""
    check_writable(out, force, "pass --force to rebuild it")
    rows = [perturb(d, kinds) for d in load_decisions(inp)]
    write_atomic(out, "".join(row_json(d) + "\n" for d in rows).encode("utf-8"), force, "pass --force to rebuild it")
    return len(rows)
