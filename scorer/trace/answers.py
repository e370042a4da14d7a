"""Which generated token starts which answer value: derived from the token texts alone.

A generated run's tokens carry ``answer_index`` (the k-th string value of the top-level JSON array
starts inside this token) and, there, a ``yes_no`` split. Both are facts about the token texts, so
they live in the trace layer: :mod:`scorer.scoring.generation` derives them when it writes a run and
:mod:`scorer.trace.verify` derives them again when it reads one, so an edited ``answer_index`` (a
value moved to another token, or added to a run whose text is no array) does not verify.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def string_value_starts(text: str) -> list[int]:
    """Character offsets where each string value of the top-level array begins (after its quote)."""
    starts: list[int] = []
    depth, in_str, esc = 0, False, False
    for pos, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
            if depth == 1 and pos + 1 < len(text):
                starts.append(pos + 1)
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return starts


@dataclass
class AnswerSpans:
    """Where the answer values start in one run's tokens."""

    texts: list[str]
    """The run's token texts, the stop token's last when the run ended on it."""
    answer_at: dict[int, int] = field(default_factory=dict)
    """token index -> answer index k."""
    leads: dict[int, str] = field(default_factory=dict)
    """token index -> text between the token's start and the value's first character."""


def locate_answers(texts: list[str], stop_last: bool) -> AnswerSpans:
    """The tokens where each top-level string value starts (the stop token, when ``stop_last``, never does)."""
    ev = AnswerSpans(texts)
    body = texts[:-1] if stop_last else texts
    text = "".join(body)
    offsets = []
    pos = 0
    for t in body:
        offsets.append(pos)
        pos += len(t)
    for k, v in enumerate(string_value_starts(text)):
        for i, (start, t) in enumerate(zip(offsets, body, strict=True)):
            if t and start <= v < start + len(t):
                ev.answer_at[i] = k
                ev.leads[i] = text[start:v]
                break
    return ev
