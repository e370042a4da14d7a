#!/usr/bin/env python3
"""Probe for issue #39: does asking for a JSON answer — the shape the PyPI peer typed-gguf uses — make SemIf's single
requests right more often? The single-request study (:mod:`single_request_study`) run unchanged, with every prompt
rendered in a JSON-answer shape instead of SemIf's own:

* system: "… Reply with a JSON object and nothing else." (the instructions of both layouts' versions replaced);
* user: the layout's parts in its order (state-major: state, then question and options; question-major: question and
  options, then state), then the cue ``Answer with JSON: {"answer": "<one letter, A to D>"}`` (``PROBE_LABELS=ids``:
  ``<one of billing, tech, …>``, the options listed under their ids);
* ``PROBE_TURNS=two``: the layout's first part (the state in state-major) in a user turn of its own, the rest and
  the cue in a second user turn (as typed-gguf asks its question after the state); ``one`` (the default) keeps both in
  one turn;
* ``PROBE_LISTING=bulleted``: each option as ``- id: description`` and the cue ``<exactly one option id>`` (naming no
  option) instead of ``id. description`` under a cue that lists them (``dotted``, the default) — the listing
  ``--slots json`` has given choice and score questions since ``semif-json-v2``;
* the assistant turn prefilled with ``{"answer":``, every option read as the continuation `` "A"`` (its label in
  quotes, the closing quote included so that no option's tokens begin another's), summed or averaged per token
  (``--sequence-norm``).

The prompt version of every record is ``probe-json-LABELS[-two-turns]|<the layout's own>`` so no calibration or
cache of the real versions is ever applied to it. It is a probe, not a product option: the patch replaces the
prompting module's functions for this process only.

    PROBE_LABELS=letters .venv/bin/python benchmarks/single_request_json_probe.py --model qwen2.5-1.5b \\
        --backend llamacpp --sets authored,boundary,single --slots sequence --methods none \\
        --output data/results/single-request-json-probe-qwen2.5-1.5b-letters.json
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from scorer.formats.rows import Decision  # noqa: E402
from scorer.prompting import layouts, prompt  # noqa: E402

LABELS = os.environ.get("PROBE_LABELS", "letters")
TURNS = os.environ.get("PROBE_TURNS", "one")
LISTING = os.environ.get("PROBE_LISTING", "dotted")
PREFILL = '{"answer":'
SYSTEM = ("You are a precise decision function. Read the state and answer the question with exactly one of the "
          "listed options. Reply with a JSON object and nothing else.")


def _labels(decision: Decision) -> tuple[str, ...]:
    return tuple(prompt.LETTERS[: len(decision.options)]) if LABELS == "letters" else tuple(decision.option_ids)


def _question(decision: Decision) -> tuple[str, str]:
    """The question with its options, and the JSON answer cue."""
    labs = _labels(decision)
    lines = [f"Question: {decision.question.strip()}", "Options:"]
    if LISTING == "bulleted":
        lines += [f"- {lab}: {o.description.strip()}" for lab, o in zip(labs, decision.options, strict=True)]
        what = "exactly one option " + ("letter" if LABELS == "letters" else "id")
    else:
        lines += [f"{lab}. {o.description.strip()}" for lab, o in zip(labs, decision.options, strict=True)]
        what = f"one letter, {labs[0]} to {labs[-1]}" if LABELS == "letters" else "one of " + ", ".join(labs)
    return "\n".join(lines), f'Answer with JSON: {{"answer": "<{what}>"}}'


def messages(decision: Decision, layout: str, shown: Sequence[Any] = (),
             slots: str = "letters") -> tuple[list[dict[str, str]], prompt.Head]:
    if shown:
        raise SystemExit("the JSON probe renders no demonstrations")
    question, cue = _question(decision)
    state = prompt.state_block(decision)
    head = f"{question}\n\n" if layout == layouts.QUESTION_MAJOR else f"{state}\n\n"
    rest = state if layout == layouts.QUESTION_MAJOR else question
    if TURNS == "two":
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": head.rstrip()},
                {"role": "user", "content": f"{rest}\n\n{cue}"}], prompt.Head(-2, len(head.rstrip()))
    body = f"{head}{rest}"
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{body}\n\n{cue}"}], prompt.Head(-1, len(head))


def render_messages(tok: prompt.Tokenizer, msgs: list[dict[str, str]], head: prompt.Head, decision: Decision,
                    version: str, slots: str = "letters", **meta: Any) -> prompt.Prompt:
    """The chat rendered with the assistant turn prefilled, each option read as its quoted label's continuation
    (checked by the scorer's own :func:`scorer.prompting.prompt.sequence_slots`)."""
    text = tok.render_chat(msgs, add_generation_prompt=True) + PREFILL
    spans = prompt.message_spans(text, msgs)
    ids = tok.encode(text, spans)
    texts = tuple(f' "{lab}"' for lab in _labels(decision))
    conts = prompt.sequence_slots(tok, decision, text, spans, ids, texts)
    return prompt.Prompt(version, text, ids, text[: spans[head.message][0] + head.length], _labels(decision),
                         [c[0] for c in conts], tok.template_name, spans, "sequence", texts, continuations=conts,
                         **meta)


_layout_version = layouts.version


def version(layout: str, slots: str = "letters", demos: bool = False) -> str:
    turns = "-two-turns" if TURNS == "two" else ""
    turns += "-bulleted" if LISTING == "bulleted" else ""
    return f"probe-json-{LABELS}{turns}|{_layout_version(layout, slots, demos)}"


def main(argv: list[str] | None = None) -> int:
    if LABELS not in ("letters", "ids"):
        raise SystemExit(f"PROBE_LABELS={LABELS!r} (expected letters or ids)")
    if LISTING not in ("dotted", "bulleted"):
        raise SystemExit(f"PROBE_LISTING={LISTING!r} (expected dotted or bulleted)")
    if TURNS not in ("one", "two"):
        raise SystemExit(f"PROBE_TURNS={TURNS!r} (expected one or two)")
    layouts.messages = messages
    layouts.render_messages = render_messages
    layouts.version = version
    import single_request_study

    made = single_request_study.make_report

    def shaped(kind: str, fmt: str, inputs: Any, body: dict[str, Any]) -> dict[str, Any]:
        """The study's report, titled and marked as this probe's (its prompts are not SemIf's)."""
        return made(kind, fmt, inputs, {**body, "title": f"{body['title']}, JSON-answer prompt ({shape()})",
                                        "prompt_shape": shape()})

    single_request_study.make_report = shaped
    return single_request_study.main(argv)


def shape() -> str:
    """What the probe changed, for the report."""
    where = "the options listed under letters" if LABELS == "letters" else "the options listed under their ids"
    turns = ", the question in a second user turn" if TURNS == "two" else ""
    turns += (", each option as '- id: description' and the cue naming no option" if LISTING == "bulleted" else "")
    return f"probe-json: {where}{turns}, assistant prefilled {PREFILL!r}, each option read as its quoted label"


if __name__ == "__main__":
    sys.exit(main())
