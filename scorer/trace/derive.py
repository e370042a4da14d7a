"""What a trace's fields are derived from: the strict parse of a generated output, agreement, verdicts,
right/wrong against labels, calibrated blocks, token limits, and the runs and events they are taken over.

Shared by the writer (``scorer.studies.versus``, ``scorer.scoring.generation``), :mod:`scorer.trace.verify` (which
re-derives them) and the summary and export.
"""

from __future__ import annotations

import json
from typing import Any

from scorer.trace.format import ANSWERS


def parse_array(text: str, n: int, v1_wording: bool = False) -> tuple[bool, bool, list[str] | None, str | None]:
    """Judge a generated output strictly: ``(valid, complete, parsed, error)``.

    Valid: the text, whitespace around it aside, is a JSON array whose every value is the string
    ``"yes"`` or ``"no"``. Complete: valid with exactly ``n`` values. Nothing is repaired: a code
    fence, a capitalised ``"Yes"``, a missing bracket or a 20-value array for 21 criteria is a failure.
    ``v1_wording`` reproduces v1's error text ("starting at at char"), so committed v1 traces still verify.
    """
    body = text.strip()
    if not body:
        return False, False, None, "empty output"
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        at = " at" if v1_wording or not exc.msg.endswith(" at") else ""
        return False, False, None, f"not a JSON value ({exc.msg}{at} char {exc.pos})"
    if not isinstance(value, list):
        return False, False, None, f"a JSON {type(value).__name__}, not an array"
    for i, v in enumerate(value):
        if v not in ANSWERS or not isinstance(v, str):
            shown = json.dumps(v, ensure_ascii=False)
            return False, False, None, f'value {i + 1} is {shown} (expected "yes" or "no")'
    if len(value) != n:
        return True, False, list(value), f"{len(value)} values for {n} criteria"
    return True, True, list(value), None


def agreement(parsed: list[str] | None, complete: bool, typed_choices: list[str | None]) -> list[bool | None]:
    """Per criterion: the generated value equals the typed choice; None where either is missing.

    An incomplete array cannot be aligned to the criteria, so all its entries are None.
    """
    if not complete or parsed is None:
        return [None] * len(typed_choices)
    return [None if c is None else g == c for g, c in zip(parsed, typed_choices, strict=True)]


def verdict(valid: bool, complete: bool, capped: bool, parsed: list[str] | None, error: str | None,
            limit: int) -> str:
    """A generated run's outcome in words (v2 ``verdict``; the site shows it as is)."""
    if complete:
        tail = f" (then stopped at the {limit}-token limit)" if capped else ""
        return f"valid: {len(parsed or [])} values{tail}"
    if capped:
        return f"capped: stopped at the {limit}-token limit before a complete array"
    return f"invalid: {error}"


def labels_correct(parsed: list[str] | None, complete: bool, labels: list[str | None]) -> list[bool | None]:
    """Per criterion: the generated value equals the label; None when unlabelled or the array is incomplete."""
    if not complete or parsed is None:
        return [None] * len(labels)
    return [None if lab is None else v == lab for v, lab in zip(parsed, labels, strict=True)]


def calibrated_block(probs: list[float], option_ids: list[str], label: str | None) -> dict[str, Any]:
    """A typed decision's v2 ``calibrated`` block: the calibrated probabilities and the choice they give
    (a tie when the top two are exactly equal), the margin, and right/wrong against the label."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    tie = probs[order[0]] == probs[order[1]]
    choice = None if tie else option_ids[order[0]]
    return {"probabilities": [float(p) for p in probs], "choice": choice,
            "margin": float(probs[order[0]] - probs[order[1]]), "tie": tie,
            "correct": None if label is None else choice == label}


def measured(trace: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """Measured (non-warm-up) runs of one path, in order."""
    return [r for r in trace["runs"] if r["path"] == path and not r["warmup"]]


def event_t(run: dict[str, Any], name: str) -> float:
    """The time of the run's event ``name`` (seconds from the run's start)."""
    for e in run["events"]:
        if e["name"] == name:
            return float(e["t"])
    raise KeyError(name)


def token_limit(trace: dict[str, Any], run: dict[str, Any]) -> int:
    """The token limit a generated run ran under (v2's constrained lane has its own)."""
    if run["path"] == "constrained":
        return int(trace["protocol"]["constrained_max_new_tokens"])
    return int(trace["protocol"]["max_new_tokens"])
