"""Adapter from a Hugging Face tokenizer to :class:`scorer.prompt.Tokenizer`.

This is the reference tokenizer for both backends: prompts are rendered and encoded here once, so the
llama.cpp backend can prove (rather than assume) that it scores the very same token ids.
"""

from __future__ import annotations

from typing import Any

from scorer.prompt import PLAIN_TEMPLATE, plain_render


class HFTokenizer:
    """Wraps a ``transformers`` tokenizer: chat template, encode without surprises, decode."""

    def __init__(self, tok: Any):
        self.hf = tok
        self.has_template = bool(getattr(tok, "chat_template", None))
        # Templates put their own special tokens in the text; BOS is added only where the model
        # declares it needs one and the rendered text does not already begin with it.
        # Ask the tokenizer itself rather than its ``add_bos_token`` flag, which GGUF-loaded tokenizers
        # (Gemma 3) report as False while their post-processor does add BOS.
        probe = tok("A", add_special_tokens=True)["input_ids"]
        wants_bos = tok.bos_token_id is not None and bool(probe) and probe[0] == tok.bos_token_id
        self.bos_id_prepended: int | None = tok.bos_token_id if wants_bos else None

    @property
    def template_name(self) -> str:
        return "chat" if self.has_template else PLAIN_TEMPLATE

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    def encode(self, text: str) -> list[int]:
        ids = list(self.hf(text, add_special_tokens=False)["input_ids"])
        if self.bos_id_prepended is not None and (not ids or ids[0] != self.bos_id_prepended):
            ids.insert(0, self.bos_id_prepended)
        return ids

    def decode(self, ids: list[int]) -> str:
        return self.hf.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        if not self.has_template:
            return plain_render(messages, add_generation_prompt)
        return self.hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                           enable_thinking=False)

    def special_ids(self, names: list[str]) -> list[int]:
        """Ids of the named tokens that exist in the vocabulary."""
        vocab = self.hf.get_vocab()
        return [vocab[n] for n in names if n in vocab]
