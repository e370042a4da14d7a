"""The ``prompts`` block checked against the trace's own inputs: hashes re-derived, every prompt re-rendered.

A trace holds each prompt's text but not the model's chat template, and no tokenizer, so what can be
re-derived is the *text*, not the tokens:

* every ``prompt_sha256`` is the sha256 of the prompt's text (typed: ``prefix_text + suffix_texts[k]``);
* the message contents are re-rendered from ``inputs`` with the prompt version the trace names
  (``semif-direct-v1``: the system instructions, then ``State:`` and the state, the criterion's question
  and its options ``A. Yes`` / ``B. No``; ``semif-array-v1``: the state and all questions numbered), and
  each recorded prompt must be exactly *template head + that user message + template tail*, where head
  and tail are the same around all typed prompts and around the generated one, except that the generated
  head holds the array prompt's system message where the typed head holds the typed one. With the fallback
  template (``semif-plain``), which SemIf itself defines, the whole text is re-rendered and compared.

What is not checked here: that the head and tail are what the model's own chat template renders (the
template is not in the trace), and the token ids, counts and hashes (no tokenizer).
"""

from __future__ import annotations

from typing import Any

from scorer.core.hashing import sha256_text
from scorer.formats.rows import Decision
from scorer.prompting.prompt import (
    ARRAY_PROMPT_VERSION,
    ARRAY_SYSTEM,
    LETTERS,
    PLAIN_TEMPLATE,
    PROMPT_VERSION,
    SYSTEM,
    YES_NO,
    array_user_content,
    plain_render,
    user_content,
)

TEMPLATES = ("chat", PLAIN_TEMPLATE)


def _sha(text: str) -> str:
    return sha256_text(text)


def typed_user_message(inputs: dict[str, Any], k: int) -> str:
    """Criterion ``k``'s typed user message (``semif-direct-v1``), re-rendered from the trace's inputs."""
    c = inputs["criteria"][k]
    return user_content(Decision(str(c["id"]), inputs["state"], c["question"], YES_NO))[0]


def array_user_message(inputs: dict[str, Any]) -> str:
    """The generated lanes' user message (``semif-array-v1``), re-rendered from the trace's inputs."""
    return array_user_content(inputs["state"], [c["question"] for c in inputs["criteria"]])


def _frame(text: str, system: str, user: str) -> tuple[str, str] | None:
    """``(head, tail)`` with ``text == head + user + tail``, searched as :func:`scorer.prompting.prompt.message_spans`
    does: the user message after the system message, or anywhere when the template left the system message
    out (it is ours, and a template may rewrite it); None when the user message is not there verbatim."""
    at_sys = text.find(system)
    at = text.find(user, 0 if at_sys < 0 else at_sys + len(system))
    if at < 0:
        return None
    return text[:at], text[at + len(user):]


def check_prompts(trace: dict[str, Any]) -> list[str]:
    """Every problem of the ``prompts`` block against itself and the trace's inputs."""
    out = []
    inputs = trace["inputs"]
    n = len(inputs["criteria"])
    ids = [c["id"] for c in inputs["criteria"]]
    if len(set(ids)) != n:
        out.append("inputs.criteria: duplicate criterion ids")
    ty, ge = trace["prompts"]["typed"], trace["prompts"]["generated"]
    for key in ("suffix_tokens", "suffix_texts", "input_tokens", "prompt_sha256", "tokens_sha256"):
        if len(ty[key]) != n:
            out.append(f"prompts.typed.{key} has {len(ty[key])} entries for {n} criteria")
    if out:
        return out
    for k, (inp, suf) in enumerate(zip(ty["input_tokens"], ty["suffix_tokens"], strict=True)):
        if inp != ty["prefix_tokens"] + suf:
            out.append(f"prompts.typed.input_tokens[{k}] = {inp} is not prefix {ty['prefix_tokens']} + suffix {suf}")
    texts = [ty["prefix_text"] + s for s in ty["suffix_texts"]]
    for k, (text, want) in enumerate(zip(texts, ty["prompt_sha256"], strict=True)):
        if _sha(text) != want:
            out.append(f"prompts.typed.prompt_sha256[{k}] is {want} but prefix_text + suffix_texts[{k}] hashes to "
                       f"{_sha(text)}")
    got = _sha(ge["text"])
    if got != ge["prompt_sha256"]:
        out.append(f"prompts.generated.prompt_sha256 is {ge['prompt_sha256']} but the text hashes to {got}")
    if ge["max_new_tokens"] != trace["protocol"]["max_new_tokens"]:
        out.append("prompts.generated.max_new_tokens differs from protocol.max_new_tokens")
    if ty["letters"] != list(LETTERS[:len(YES_NO)]):
        out.append(f"prompts.typed.letters is {ty['letters']}, expected {list(LETTERS[:len(YES_NO)])} for the "
                   "options yes, no")
    if len(set(ty["slot_token_ids"])) != len(ty["slot_token_ids"]) or len(ty["slot_token_ids"]) != len(YES_NO):
        out.append(f"prompts.typed.slot_token_ids {ty['slot_token_ids']} are not one distinct token per letter")
    return out + _check_rendered(trace, texts)


def _check_rendered(trace: dict[str, Any], texts: list[str]) -> list[str]:
    """Each prompt re-rendered from the inputs (see the module's docstring for what is compared)."""
    inputs = trace["inputs"]
    ty, ge = trace["prompts"]["typed"], trace["prompts"]["generated"]
    out = []
    if ty["version"] != PROMPT_VERSION:
        out.append(f"prompts.typed.version {ty['version']!r} cannot be re-rendered (expected {PROMPT_VERSION!r})")
    if ge["version"] != ARRAY_PROMPT_VERSION:
        out.append(f"prompts.generated.version {ge['version']!r} cannot be re-rendered "
                   f"(expected {ARRAY_PROMPT_VERSION!r})")
    if ty["template"] not in TEMPLATES or ge["template"] != ty["template"]:
        out.append(f"prompts.typed.template {ty['template']!r} and prompts.generated.template {ge['template']!r}: "
                   f"expected one template, one of {', '.join(TEMPLATES)}")
    if out:
        return out
    plain = ty["template"] == PLAIN_TEMPLATE
    frames = []
    for k, text in enumerate(texts):
        user = typed_user_message(inputs, k)
        frame = _frame(text, SYSTEM, user)
        cid = inputs["criteria"][k]["id"]
        if frame is None or (plain and text != plain_render([{"role": "system", "content": SYSTEM},
                                                            {"role": "user", "content": user}])):
            out.append(f"typed prompt {k} ({cid}) is not its {PROMPT_VERSION} prompt re-rendered from inputs "
                       f"(the system message, then the state and criterion {cid}'s question with options A. Yes / "
                       f"B. No, inside the {ty['template']} template)")
        frames.append(frame)
    if frames[0] is not None:
        for k, frame in enumerate(frames[1:], start=1):
            if frame is not None and frame != frames[0]:
                out.append(f"typed prompt {k} is not inside the same template text as typed prompt 0 (the prompts "
                           "differ outside the re-rendered user message)")
    user = array_user_message(inputs)
    frame = _frame(ge["text"], ARRAY_SYSTEM, user)
    if frame is None or (plain and ge["text"] != plain_render([{"role": "system", "content": ARRAY_SYSTEM},
                                                               {"role": "user", "content": user}])):
        out.append(f"prompts.generated.text is not the {ARRAY_PROMPT_VERSION} prompt re-rendered from inputs (the "
                   f"system message, then the state and all {len(inputs['criteria'])} questions numbered, inside "
                   f"the {ge['template']} template)")
    elif frames[0] is not None:
        head, tail = frames[0]
        want = (head.replace(SYSTEM, ARRAY_SYSTEM, 1), tail)
        if frame != want:
            out.append("prompts.generated.text is not inside the same template text as the typed prompts (with "
                       "the array prompt's system message)")
    return out
