"""Helpers shared by the trace tests (no tests here): honest edits of a trace's inputs, its prompts re-rendered."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from scorer.prompting.prompt import ARRAY_SYSTEM, SYSTEM, common_prefix
from scorer.trace.rendering import _frame, array_user_message, typed_user_message


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def edit_inputs(doc: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Apply ``edit`` to ``doc["inputs"]`` and render every prompt again from the edited inputs, inside the same
    template text as before (what a rerun on the edited inputs would record as prompt texts and hashes)."""
    old = copy.deepcopy(doc["inputs"])
    ty, ge = doc["prompts"]["typed"], doc["prompts"]["generated"]
    frame = _frame(ty["prefix_text"] + ty["suffix_texts"][0], SYSTEM, typed_user_message(old, 0))
    gframe = _frame(ge["text"], ARRAY_SYSTEM, array_user_message(old))
    assert frame is not None and gframe is not None, "the trace's prompts are not its inputs' to begin with"
    edit(doc["inputs"])
    new = [frame[0] + typed_user_message(doc["inputs"], k) + frame[1] for k in range(len(doc["inputs"]["criteria"]))]
    prefix = "".join(common_prefix(new))[: min(map(len, new)) - 1]
    ty["prefix_text"], ty["suffix_texts"] = prefix, [t[len(prefix):] for t in new]
    ty["prompt_sha256"] = [_sha(t) for t in new]
    ge["text"] = gframe[0] + array_user_message(doc["inputs"]) + gframe[1]
    ge["prompt_sha256"] = _sha(ge["text"])
    return doc
