"""Prompt layouts: where the state, the question and the demonstrations sit in a decision's prompt.

Each layout is a prompt version of its own (``prompt_version`` in every record, and ``layout``):

* ``state-major`` (``semif-direct-v1``): system instructions, then ``State:``, then the question and the
  lettered options. What all criteria about one state share comes first, so the state is the reusable
  prefix: right when many questions are asked about one state (the shape workload). Without
  demonstrations its prompts are byte for byte those of :func:`scorer.prompting.prompt.render`.
* ``question-major`` (``semif-question-major-v1``): system instructions, then the question and the
  lettered options, then ``State:`` and the state, last. What every row asking the same question shares
  comes first, so instructions + demonstrations + question + options are the reusable prefix: right when
  many states are asked one question (routing queues, the authored and boundary sets).
* ``auto``: per run, the layout whose prompts share more tokens over the run's actual rows
  (:func:`shared_prefix_tokens`: the tokens a prefix tree of the prompts saves); a tie keeps state-major.

Every layout is read out through any answer slots (:data:`scorer.core.checks.SLOTS`): with ``ids`` or ``sequence`` the
options are listed under their own ids and the model is asked for an id (the ``-ids`` versions:
``semif-direct-ids-v1``, ``semif-question-major-ids-v1``; ``sequence`` scores the ids prompt unchanged); with ``codes``
they are numbered and the model is asked for a number (the ``-codes`` versions). A question with more options than
letters is numbered when the run reads letters (:func:`scorer.prompting.prompt.slots_for`); its demonstrations are then
numbered too. With ``json`` (``semif-json-v2``, ``semif-question-major-json-v2``) each layout's two parts go in two user
turns, its first part (state-major: the state; question-major: the question and options) in a turn of its own and the
other with the JSON answer cue in the next (:func:`scorer.prompting.prompt.json_turns`); demonstrations are shown in
the same turns, answered ``{"answer": "id"}``, before the row's, in both layouts.

Demonstrations (:mod:`scorer.prompting.demos`) are earlier chat turns (user: the demonstration's decision in the same
layout; assistant: its letter, or its option id when the run reads ids), right after the instructions in both
layouts. In question-major they sit inside the prefix a question's rows share. State-major with demonstrations
is its own version (``semif-state-major-demos-v1``): instructions, demonstrations, then the row's own
``semif-direct-v1`` turn (state, question, options), so the radix cache (:mod:`scorer.scoring.radix_cache`) reuses the
demonstrations across every row shown the same ones and the state across the state's criteria. (Before it,
state-major put the demonstrations after the state: every state paid for them again, 1.95× the time of k = 0
with k = 8 on shape-full, qwen2.5-0.5b llama.cpp.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scorer.core.checks import AUTO_FORMS, SLOTS, one_of
from scorer.core.errors import ValidationError
from scorer.formats.rows import Decision
from scorer.prompting.prompt import (
    CODES_PROMPT_VERSION,
    IDS_PROMPT_VERSION,
    JSON_PROMPT_VERSION,
    LETTERS,
    PROMPT_VERSION,
    Head,
    Prompt,
    Tokenizer,
    json_messages,
    json_turns,
    labels,
    question_block,
    render_messages,
    slots_for,
    state_block,
    system_for,
    user_content,
)

STATE_MAJOR = "state-major"
QUESTION_MAJOR = "question-major"
AUTO = "auto"
LAYOUTS = (STATE_MAJOR, QUESTION_MAJOR)
"""The layouts a prompt is rendered in."""
LAYOUT_CHOICES = (*LAYOUTS, AUTO)
"""What ``--layout`` / ``Scorer(layout=…)`` accept."""
QUESTION_MAJOR_VERSION = "semif-question-major-v1"
QUESTION_MAJOR_IDS_VERSION = "semif-question-major-ids-v1"
VERSIONS = {STATE_MAJOR: PROMPT_VERSION, QUESTION_MAJOR: QUESTION_MAJOR_VERSION}
"""The prompt version each layout renders with letters."""
IDS_VERSIONS = {STATE_MAJOR: IDS_PROMPT_VERSION, QUESTION_MAJOR: QUESTION_MAJOR_IDS_VERSION}
"""The prompt version each layout renders when the options are read out by id (``ids``, ``sequence``)."""
QUESTION_MAJOR_CODES_VERSION = "semif-question-major-codes-v1"
CODES_VERSIONS = {STATE_MAJOR: CODES_PROMPT_VERSION, QUESTION_MAJOR: QUESTION_MAJOR_CODES_VERSION}
"""The prompt version each layout renders when the options are numbered (``codes``)."""
QUESTION_MAJOR_JSON_VERSION = "semif-question-major-json-v2"
JSON_VERSIONS = {STATE_MAJOR: JSON_PROMPT_VERSION, QUESTION_MAJOR: QUESTION_MAJOR_JSON_VERSION}
"""The prompt version each layout renders when the answer is asked for as JSON (``json``): the same with
demonstrations, which ``json`` always shows before the row's turns."""
STATE_MAJOR_DEMOS_VERSION = "semif-state-major-demos-v1"
STATE_MAJOR_DEMOS_IDS_VERSION = "semif-state-major-demos-ids-v1"
STATE_MAJOR_DEMOS_CODES_VERSION = "semif-state-major-demos-codes-v1"
"""State-major with demonstrations shown: the demonstrations first, then the row's state-major turn. (Until
2026-12-02 its demonstrations followed the state under ``semif-direct-v1``; see the module docstring.)"""

QUESTION_MAJOR_SYSTEM = (
    "You are a precise decision function. Read the question and its lettered options, then the state, and "
    "answer the question about that state by choosing exactly one of the lettered options. Reply with the "
    "option's letter only."
)
QUESTION_MAJOR_IDS_SYSTEM = (
    "You are a precise decision function. Read the question and its options, then the state, and answer the "
    "question about that state by choosing exactly one of the options. Reply with the option's id only."
)
QUESTION_MAJOR_CODES_SYSTEM = (
    "You are a precise decision function. Read the question and its numbered options, then the state, and answer "
    "the question about that state by choosing exactly one of the numbered options. Reply with the option's number "
    "only."
)


@dataclass(frozen=True)
class Shown:
    """A demonstration as the prompt shows it: a labelled decision and the index of its label's option."""

    id: str
    decision: Decision
    label_index: int


def check_layout(layout: Any, option: str | None = "layout") -> str:
    """``layout`` if it is one of :data:`LAYOUT_CHOICES`, else :class:`~scorer.core.checks.OptionError` (exit 2)."""
    return one_of(layout, LAYOUT_CHOICES, option)


def version(layout: str, slots: str = "letters", demos: bool = False) -> str:
    """The prompt version ``layout`` renders when read out through ``slots``, with demonstrations shown or not
    (only state-major's order changes with them)."""
    if slots in AUTO_FORMS:  # a run's name: auto renders each row in one of the two (prompt.slots_for)
        return "|".join(version(layout, s, demos) for s in ("letters", "json"))
    one_of(slots, SLOTS, "slots")
    if slots == "json":
        return JSON_VERSIONS[layout]
    if demos and layout == STATE_MAJOR:
        return {"letters": STATE_MAJOR_DEMOS_VERSION,
                "codes": STATE_MAJOR_DEMOS_CODES_VERSION}.get(slots, STATE_MAJOR_DEMOS_IDS_VERSION)
    return {"letters": VERSIONS, "codes": CODES_VERSIONS}.get(slots, IDS_VERSIONS)[layout]


def signature_version(layout: str, demos_k: int = 0, slots: str = "letters") -> str:
    """The prompt version the decision signatures of a run name
    (:attr:`scorer.prompting.prompt.Prompt.signature_version`)."""
    base = version(layout, slots, demos_k > 0)
    return f"{base}+demos-{demos_k}" if demos_k else base


def question_major_content(decision: Decision, slots: str = "letters") -> tuple[str, int]:
    """The question-major user message, and the length of its shared head (question, options and the
    ``State:`` heading; the state and the answer reminder after it are this row's own)."""
    head = f"{question_block(decision, slots)}\n\n"
    if slots == "letters":
        reminder = f"Answer with one letter, A to {LETTERS[len(decision.options) - 1]}."
    elif slots == "codes":
        numbers = labels(decision, slots)
        reminder = f"Answer with one number, {numbers[0]} to {numbers[-1]}."
    else:
        ids = decision.option_ids
        reminder = f"Answer with one option id: {', '.join(ids[:-1])} or {ids[-1]}."
    return f"{head}{state_block(decision)}\n\n{reminder}", len(head)


def _demo_turns(shown: Sequence[Shown], layout: str, slots: str) -> list[dict[str, str]]:
    """Each demonstration as a user turn (its decision in ``layout``) and an assistant turn (its answer: the
    label's letter, its number when ``slots`` reads numbers, or its option id when ``slots`` reads ids); with
    ``json`` its two user turns and the answer as the JSON object the row's answer begins."""
    out: list[dict[str, str]] = []
    for s in shown:
        if slots == "json":
            turns = json_turns(s.decision, question_first=layout == QUESTION_MAJOR)
            answer = json.dumps({"answer": s.decision.option_ids[s.label_index]}, ensure_ascii=False)
            out += [*({"role": "user", "content": t} for t in turns), {"role": "assistant", "content": answer}]
            continue
        if slots == "letters" and len(s.decision.options) > len(LETTERS):
            raise ValidationError(f"demonstration {s.id!r} has {len(s.decision.options)} options, more than the "
                                  f"{len(LETTERS)} letters of the row it is shown with (expected a demonstration "
                                  "with at most 16 options, or --slots codes to number every row's options)")
        if layout == STATE_MAJOR:
            text = user_content(s.decision, slots)[0]
        else:
            text = question_major_content(s.decision, slots)[0]
        answer = labels(s.decision, slots)[s.label_index]
        out += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
    return out


def messages(decision: Decision, layout: str, shown: Sequence[Shown] = (),
             slots: str = "letters") -> tuple[list[dict[str, str]], Head]:
    """The chat messages of ``decision`` in ``layout`` with demonstrations ``shown``, its options listed for
    ``slots``, and where the head shared with other rows ends."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} is not rendered (expected one of {', '.join(LAYOUTS)}; auto is "
                         "resolved per run first)")
    if slots == "json":
        return json_messages(decision, layout == QUESTION_MAJOR, _demo_turns(shown, layout, slots))
    if layout == QUESTION_MAJOR:
        content, head_len = question_major_content(decision, slots)
        system = {"letters": QUESTION_MAJOR_SYSTEM, "codes": QUESTION_MAJOR_CODES_SYSTEM}.get(
            slots, QUESTION_MAJOR_IDS_SYSTEM)
        msgs = [{"role": "system", "content": system}, *_demo_turns(shown, layout, slots),
                {"role": "user", "content": content}]
        return msgs, Head(-1, head_len)
    system = system_for(slots)
    # semif-direct-v1 (semif-direct-ids-v1) exactly, with the demonstrations (if any) as earlier turns before it
    content, head_len = user_content(decision, slots)
    return [{"role": "system", "content": system}, *_demo_turns(shown, layout, slots),
            {"role": "user", "content": content}], Head(-1, head_len)


def render(tok: Tokenizer, decision: Decision, layout: str = STATE_MAJOR, shown: Sequence[Shown] = (),
           level: str | None = None, demos_k: int = 0, slots: str = "letters") -> Prompt:
    """Render, encode and validate ``decision``'s prompt in ``layout`` read out through ``slots``
    (:func:`scorer.prompting.prompt.render_messages`: every answer slot one token, decoding to itself, distinct, and
    stable
    at the prompt's end; ``sequence``: every option id a continuation that leaves the prompt's tokens as they are).

    ``shown`` are the demonstrations picked for this row (:meth:`scorer.prompting.demos.Demos.pick`), ``level`` where
    they came from and ``demos_k`` how many the run asked for; all three are recorded in the prompt.
    """
    slots = slots_for(slots, len(decision.options), decision.option_ids, decision.type)
    msgs, head = messages(decision, layout, shown, slots)
    return render_messages(tok, msgs, head, decision, version(layout, slots, bool(shown)), slots=slots,
                           layout=layout,
                           demo_ids=tuple(s.id for s in shown), demo_level=level if shown else None,
                           demos_k=demos_k)


def shared_prefix_tokens(seqs: Iterable[Sequence[int]]) -> int:
    """Tokens a prefix tree of ``seqs`` saves: the total length minus the tree's nodes, i.e. for every
    sequence the length of its longest prefix shared with an earlier one, summed. This is what a cache that
    reuses any cached prefix (at any depth) does not have to compute again."""
    root: dict[int, Any] = {}  # a trie: token id -> child node
    saved = 0
    for seq in seqs:
        node = root
        for t in seq:
            child = node.get(t)
            if child is None:
                child = node[t] = {}
            else:
                saved += 1
            node = child
    return saved


@dataclass(frozen=True)
class LayoutChoice:
    """What ``auto`` decided: the layout, and the shared prefix tokens each layout had over the run's rows."""

    layout: str
    shared_tokens: dict[str, int]
    total_tokens: dict[str, int]

    def describe(self) -> str:
        parts = ", ".join(f"{name} {self.shared_tokens[name]} of {self.total_tokens[name]}" for name in LAYOUTS)
        return f"layout auto: {self.layout} (shared prefix tokens: {parts})"


def choose(prompts: Mapping[str, Sequence[Prompt]]) -> LayoutChoice:
    """``auto``'s choice over the rendered prompts of each layout (same rows in each): the layout with more
    shared prefix tokens; a tie keeps state-major (today's prompt)."""
    shared = {name: shared_prefix_tokens(p.ids for p in prompts[name]) for name in LAYOUTS}
    total = {name: sum(len(p.ids) for p in prompts[name]) for name in LAYOUTS}
    best = QUESTION_MAJOR if shared[QUESTION_MAJOR] > shared[STATE_MAJOR] else STATE_MAJOR
    return LayoutChoice(best, shared, total)
