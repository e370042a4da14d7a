"""Proofs that a GGUF scores the very prompt the reference tokenizer built.

The llama.cpp backend never trusts a score until three checks pass, each failing with a
:class:`~scorer.core.errors.ValidationError` that says what differed and where:

1. **Vocabulary parity** (at load): the GGUF and the reference (Hugging Face) tokenizer have the same
   number of tokens, the same token text at every id, and encode a probe set of rendered prompts to
   identical ids.
2. **Single-token answer slots** (per prompt): every letter in use is one GGUF token, that token is
   the reference's slot id, its GGUF piece is the letter, and appending the letter to the prompt adds
   exactly that token (``--slots sequence``: appending each option id adds exactly its reference tokens).
3. **Per-row parity** (per prompt): the GGUF tokenizer encodes the rendered prompt to exactly the
   reference ids, so ``prompt_sha256`` and ``tokens_sha256`` mean the same thing as on the torch backend.

The checks are written against a small protocol (:class:`GGUFTokenizer`) so tests can hold them to
constructed mismatches without a model file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scorer.core.errors import ValidationError
from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import LETTERS, Prompt, Span, Tokenizer, render

# SentencePiece vocabularies spell a space as U+2581; llama.cpp reports some such tokens with real spaces.
_SPM_SPACE = "\u2581"
_SHOW = 5


class GGUFTokenizer(Protocol):
    """What the checks need from the GGUF's own tokenizer (llama.cpp's, or a test double)."""

    @property
    def n_vocab(self) -> int:
        """Number of tokens in the GGUF vocabulary."""

    def token_text(self, token_id: int) -> str:
        """The vocabulary entry of ``token_id`` as stored in the GGUF."""

    def piece(self, token_id: int) -> str:
        """The text ``token_id`` renders to (what llama.cpp would print for it)."""

    def encode(self, text: str, with_bos: bool = True, plain: Sequence[Span] = ()) -> list[int]:
        """Token ids of ``text``, special tokens parsed except inside the ``plain`` spans (user content, always
        tokenized as text); BOS prepended by the model's own rule (only when the GGUF asks for one and the
        text does not already start with it) if ``with_bos``."""


def _same_text(a: str, b: str) -> bool:
    return a == b or a.replace(" ", _SPM_SPACE) == b.replace(" ", _SPM_SPACE)


def check_vocabulary(reference_texts: Sequence[str], gguf: GGUFTokenizer) -> None:
    """Validation 1a: same size and the same token text at every id (spaces and U+2581 are equal)."""
    if len(reference_texts) != gguf.n_vocab:
        raise ValidationError(f"vocabulary parity: the GGUF has {gguf.n_vocab} tokens but the reference tokenizer "
                              f"has {len(reference_texts)} (expected the same vocabulary)")
    bad = [(i, gguf.token_text(i), reference_texts[i]) for i in range(gguf.n_vocab)
           if not _same_text(gguf.token_text(i), reference_texts[i])]
    if bad:
        shown = ", ".join(f"id {i}: GGUF {g!r} vs reference {r!r}" for i, g, r in bad[:_SHOW])
        raise ValidationError(f"vocabulary parity: {len(bad)} token id(s) differ between the GGUF and the reference "
                              f"tokenizer ({shown}); scores from this GGUF would not be about the same tokens")


def probe_texts(ref: Tokenizer) -> list[str]:
    """Rendered prompts that exercise the chat template, all sixteen letters, JSON, digits and non-ASCII."""
    options = tuple(Option(f"o{i}", f"option {LETTERS[i]}: value {i * 37} ({'é' * (i % 3)})") for i in range(16))
    states: list[str | dict[str, object]] = [
        "Ticket #4411 from Zoë: «paiement refusé», 3×29,00 € — see https://example.test/a?b=c&d=1.\n\tTabs, spaces  ,"
        " and 日本語 text.",
        {"id": 7, "tags": ["a", "b"], "nested": {"ok": True, "n": None, "amount": 1e-3}},
    ]
    texts = []
    for k, state in enumerate(states):
        d = Decision(f"probe-{k}", state, "Which option fits best?", options if k == 0 else options[:2])
        texts.append(render(ref, d).text)
    return texts


def check_encodings(ref: Tokenizer, gguf: GGUFTokenizer, texts: Sequence[str]) -> None:
    """Validation 1b: the reference and the GGUF tokenizer produce identical ids on each text."""
    for text in texts:
        want = ref.encode(text)
        got = gguf.encode(text)
        if got != want:
            raise ValidationError("vocabulary parity: the GGUF tokenizer and the reference tokenizer encode a probe "
                                  f"prompt differently: {_first_difference(want, got, gguf)}")


def check_row(prompt: Prompt, gguf: GGUFTokenizer) -> None:
    """Validation 3: the GGUF tokenizer encodes this prompt to exactly the reference ids (user content as text)."""
    got = gguf.encode(prompt.text, plain=prompt.plain_spans)
    if got != prompt.ids:
        raise ValidationError("per-row parity: the GGUF tokenizer does not reproduce this prompt's reference token "
                              f"ids ({_first_difference(prompt.ids, got, gguf)}); its tokens_sha256 would not be "
                              "comparable with the torch backend's")


def check_slots(prompt: Prompt, gguf: GGUFTokenizer, letters_ok: set[str] | None = None) -> None:
    """Validation 2: each answer slot's text (a letter, or an option id under ``--slots ids``) is one GGUF token,
    the reference's slot id, rendering as that text, and appending it to the prompt adds exactly that token.
    ``letters_ok`` caches slot texts already proven. Under ``--slots sequence`` (and ``codes``) each option id (or
    number) is no single token but a continuation: appending it to the prompt (as plain text) must add exactly the
    reference's continuation tokens (under ``--slots json``, each quoted id's)."""
    if prompt.continuations:  # sequence, codes, json
        for label, cont in zip(prompt.answer_texts, prompt.continuations, strict=True):
            end = len(prompt.text)
            ext = gguf.encode(prompt.text + label, plain=(*prompt.plain_spans, (end, end + len(label))))
            want = [*prompt.ids, *cont]
            if ext != want:
                raise ValidationError(f"option {label!r} is not the same continuation in the GGUF tokenizer "
                                      f"(prompt+{label!r}: {_first_difference(want, ext, gguf)})")
        return
    for letter, slot in zip(prompt.slot_texts, prompt.slot_ids, strict=True):
        if letters_ok is None or letter not in letters_ok:
            ids = gguf.encode(letter, with_bos=False)
            if len(ids) != 1:
                raise ValidationError(f"answer slot {letter!r} is {len(ids)} tokens {ids} in the GGUF tokenizer "
                                      "(expected exactly one token)")
            if ids[0] != slot:
                raise ValidationError(f"answer slot {letter!r} is GGUF token {ids[0]} but reference token {slot} "
                                      "(expected the same id)")
            piece = gguf.piece(slot)
            if piece != letter:
                raise ValidationError(f"answer slot {letter!r} (token {slot}) has the GGUF piece {piece!r} "
                                      f"(expected {letter!r})")
            if letters_ok is not None:
                letters_ok.add(letter)
        ext = gguf.encode(prompt.text + letter, plain=prompt.plain_spans)
        want = [*prompt.ids, slot]
        if ext != want:
            raise ValidationError(f"answer slot {letter!r} is not stable at the prompt boundary in the GGUF tokenizer "
                                  f"(prompt+{letter!r}: {_first_difference(want, ext, gguf)})")


def _first_difference(want: list[int], got: list[int], gguf: GGUFTokenizer) -> str:
    i = 0
    while i < min(len(want), len(got)) and want[i] == got[i]:
        i += 1

    def show(ids: list[int]) -> str:
        part = ids[i:i + 3]
        return f"{part} {[gguf.piece(t) if 0 <= t < gguf.n_vocab else '?' for t in part]}"

    return (f"reference {len(want)} tokens, GGUF {len(got)} tokens; first difference at position {i}: "
            f"reference {show(want)}, GGUF {show(got)}")
