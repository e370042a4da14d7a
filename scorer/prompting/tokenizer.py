"""The reference tokenizer of a ``--model`` (the one every backend renders and encodes prompts with): the adapter from
a Hugging Face tokenizer to :class:`scorer.prompting.prompt.Tokenizer`, the verified cache of the tokenizer that
transformers loads from a GGUF, and :func:`load_reference_tokenizer`, which in-process llama.cpp and remote engines
call to encode exactly the ids the torch backend scores before they prove their own tokenizer agrees
(:mod:`scorer.backends.gguf_check`, :func:`scorer.backends.openai_backend.check_tokenizer`).

This is the reference tokenizer for both backends: prompts are rendered and encoded here once, so the
llama.cpp backend can prove (rather than assume) that it scores the very same token ids.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scorer.core.errors import ModelError
from scorer.models import store
from scorer.prompting.prompt import PLAIN_TEMPLATE, Span, SpecialSplitter, plain_render

TOKENIZER_MARK = "semif-tokenizer.json"
STOP_NAMES = ["<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eot_id|>", "<eos>", "</s>"]
"""Special tokens that end an assistant turn, in the chat templates of the supported models."""


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
        self._special = special_tokens(tok)
        self._splitter = SpecialSplitter(self._special)
        self._pieces: list[str] | None = None
        self._beginning: dict[str, tuple[int, ...]] = {}

    @property
    def template_name(self) -> str:
        return "chat" if self.has_template else PLAIN_TEMPLATE

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    @property
    def special_token_ids(self) -> frozenset[int]:
        """Ids of the special (control) tokens: what user content must never produce."""
        return frozenset(self._special.values())

    def encode(self, text: str, plain: Sequence[Span] = ()) -> list[int]:
        if plain:
            pieces = self._splitter.split(text, plain)
            texts = [p for p, special in pieces if not special]
            enc = iter(self.hf(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"] if texts
                       else [])
            ids = [t for p, special in pieces for t in ([self._special[p]] if special else next(enc))]
        else:
            ids = list(self.hf(text, add_special_tokens=False)["input_ids"])
        if self.bos_id_prepended is not None and (not ids or ids[0] != self.bos_id_prepended):
            ids.insert(0, self.bos_id_prepended)
        return ids

    def decode(self, ids: list[int]) -> str:
        return self.hf.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def ids_beginning(self, text: str) -> tuple[int, ...]:
        found = self._beginning.get(text)
        if found is None:
            if self._pieces is None:  # every token decoded alone, once (1.4 s for qwen2.5's 151,936, other core busy)
                special = self.special_token_ids
                ids = [[i] for i in range(self.vocab_size)]
                self._pieces = [("" if i in special else p) for i, p in enumerate(self.hf.batch_decode(
                    ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))]
            found = tuple(i for i, p in enumerate(self._pieces) if text and p.startswith(text))
            self._beginning[text] = found
        return found

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        if not self.has_template:
            return plain_render(messages, add_generation_prompt)
        return self.hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                           enable_thinking=False)

    def special_ids(self, names: list[str]) -> list[int]:
        """Ids of the named tokens that exist in the vocabulary."""
        vocab = self.hf.get_vocab()
        return [vocab[n] for n in names if n in vocab]


def special_tokens(tok: Any) -> dict[str, int]:
    """Text → id of every special added token (what ``split_special_tokens`` stops parsing)."""
    out = {t.content: i for i, t in sorted(tok.added_tokens_decoder.items()) if t.special}
    for text, i in zip(tok.all_special_tokens, tok.all_special_ids, strict=True):
        out.setdefault(text, i)
    return out


def gguf_tokenizer_folder(gguf: Path, sha256: str) -> tuple[Path, dict[str, Any]]:
    """A verified folder holding the reference tokenizer of a GGUF, and how it was obtained.

    The torch backend's fp32 checkpoint of the same GGUF holds the very same files and is used when present
    (its tokenizer files checked against its manifest, its weights not read); otherwise the tokenizer alone
    is loaded from the GGUF by transformers once and cached, verified the same way, under
    ``store.tokenizer_dir``. A folder that fails its manifest is refused (:class:`ModelError`).
    """
    dequant = store.dequant_dir(sha256)
    if dequant.exists():
        store.verify_manifest(dequant, sha256, weights=False)
        return dequant, {"from": "dequantized HF folder", "gguf_sha256": sha256}
    target = store.tokenizer_dir(sha256)
    if target.exists():
        store.verify_manifest(target, sha256)
    else:
        def build(tmp: Path) -> None:
            from transformers import AutoTokenizer

            print(f"[semif] first load of {gguf.name}'s reference tokenizer (cached for next time) …", file=sys.stderr)
            AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(tmp))
            (tmp / TOKENIZER_MARK).write_text(json.dumps({"gguf_file": gguf.name, "gguf_sha256": sha256}) + "\n")

        store.build_verified(target, sha256, "reference-tokenizer", build)
    return target, {"from": "tokenizer loaded from the GGUF by transformers", "gguf_sha256": sha256}


def load_reference_tokenizer(ref: store.ModelRef, gguf_path: Path | None, gguf_sha: str | None
                              ) -> tuple[Any, dict[str, Any]]:
    """The reference (HF) tokenizer: the very tokenizer the torch backend uses for this model."""
    from transformers import AutoTokenizer

    if ref.kind in ("local", "hub"):
        kw = {"revision": ref.revision} if ref.kind == "hub" else {}
        try:
            return AutoTokenizer.from_pretrained(ref.name, **kw), {"from": ref.kind, "name": ref.name, **kw}
        except OSError as exc:
            raise ModelError(f"could not load the reference tokenizer of {ref.name}: {exc}") from None
    assert gguf_path is not None and gguf_sha is not None
    if ref.kind == "store" and not gguf_path.is_file():
        assert ref.entry is not None
        gguf_path = store.fetch(ref.entry)
    folder, info = gguf_tokenizer_folder(gguf_path, gguf_sha)
    return AutoTokenizer.from_pretrained(str(folder)), info
