"""The reference tokenizer of a ``--model``: the one every backend renders and encodes prompts with.

In-process llama.cpp and remote engines load it to encode exactly the ids the torch backend scores, then prove
their own tokenizer agrees (:mod:`scorer.backends.gguf_check`, :func:`scorer.backends.openai_backend.check_tokenizer`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scorer.core.errors import ModelError
from scorer.models import store
from scorer.prompting.tokenizer import gguf_tokenizer_folder


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
