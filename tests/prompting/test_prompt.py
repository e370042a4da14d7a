"""Prompt rendering, hashing, slot validation (each rule broken once) and the shared token prefix."""

from __future__ import annotations

import hashlib

import pytest
from fakes import FakeTokenizer

from scorer.core.errors import ValidationError
from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import (
    LETTERS,
    PROMPT_VERSION,
    SYSTEM,
    common_prefix,
    letter_slots,
    prefix_ids,
    render,
    sha256_tokens,
    state_text,
)


def _d(state="Ticket: printer on fire.", question="Is this urgent?", n=2, **extra) -> Decision:
    opts = tuple(Option(f"o{i}", f"option {i}") for i in range(n))
    return Decision("r1", state, question, opts, extra)


def test_render_layout_shared_part_first_and_ids_never_shown():
    tok = FakeTokenizer()
    p = render(tok, _d(n=3, label="o1", family="secret-family"))
    assert p.version == PROMPT_VERSION == "semif-direct-v1"
    assert p.text.index(SYSTEM) < p.text.index("Ticket: printer on fire.") < p.text.index("Is this urgent?")
    assert "A. option 0\nB. option 1\nC. option 2" in p.text
    assert "o0" not in p.text and "o1" not in p.text and "secret-family" not in p.text
    assert p.text.endswith("<|im_start|>assistant\n")
    assert p.prefix_text.endswith("Ticket: printer on fire.\n\n")
    assert p.text.startswith(p.prefix_text)
    assert p.letters == "ABC" and p.template == "chat"


def test_hashes_are_of_the_string_and_of_int32_ids():
    tok = FakeTokenizer()
    p = render(tok, _d())
    assert p.sha256 == hashlib.sha256(p.text.encode()).hexdigest()
    assert p.tokens_sha256 == hashlib.sha256(b"".join(i.to_bytes(4, "little") for i in p.ids)).hexdigest()
    assert sha256_tokens([1, 2]) != sha256_tokens([2, 1])
    assert render(tok, _d()).sha256 == p.sha256  # stable


def test_json_state_keeps_key_order():
    assert state_text({"b": 1, "a": 2}) != state_text({"a": 2, "b": 1})
    assert state_text("  padded  ") == "padded"


def test_plain_template_fallback():
    tok = FakeTokenizer(template=False)
    p = render(tok, _d())
    assert p.template == "semif-plain" and p.text.endswith("Answer:")


@pytest.mark.parametrize(("broken", "fragment"), [
    ("multi", "'B' is 2 tokens"),
    ("decode", "decodes to 'b'"),
    ("collide", "answer slots collide"),
    ("boundary", "not stable at the prompt boundary"),
])
def test_each_slot_rule_refuses(broken, fragment):
    tok = FakeTokenizer(broken=broken)
    with pytest.raises(ValidationError, match=fragment):
        render(tok, _d(n=2))


def test_letter_slots_sixteen_distinct():
    ids = letter_slots(FakeTokenizer(), 16)
    assert len(set(ids)) == 16 and len(LETTERS) == 16


def test_prefix_handles_bpe_merge_across_state_boundary():
    # "\n\nQ" merges into one token: the head's own encoding ends in "\n\n" tokens that the full prompt
    # does not contain, so the prefix must stop before the merged token.
    tok = FakeTokenizer(merges=["\n\nQ"])
    p = render(tok, _d())
    head_ids = tok.encode(p.prefix_text)
    pre = prefix_ids(tok, p)
    assert p.ids[: len(pre)] == pre
    assert len(pre) < len(head_ids)  # the merged boundary token is not part of the prefix
    assert head_ids[: len(pre)] == pre
    assert tok.decode(p.ids[len(pre):]).startswith("\n\nQuestion:")


def test_common_prefix():
    assert common_prefix([[1, 2, 3], [1, 2, 4], [1, 2]]) == [1, 2]
    assert common_prefix([[5], [6]]) == []
    assert common_prefix([]) == []
