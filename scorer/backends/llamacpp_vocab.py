"""The GGUF's own tokenizer through llama.cpp's C API: the independent side of every tokenizer parity check
(:mod:`scorer.backends.gguf_check`). :class:`LlamaVocab` wraps a loaded model's vocabulary (the llama.cpp backend's);
:class:`GGUFVocab` reads a GGUF's vocabulary alone (``vocab_only``: no weights), for checks without a model."""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scorer.core.errors import ModelError
from scorer.models.llama_log import LLAMA_LOG
from scorer.prompting.prompt import Span, SpecialSplitter


class LlamaVocab:
    """The GGUF's own tokenizer, through llama.cpp (implements :class:`scorer.backends.gguf_check.GGUFTokenizer`)."""

    def __init__(self, lib: Any, vocab: Any):
        self._lib = lib
        self._vocab = vocab
        self._n = int(lib.llama_vocab_n_tokens(vocab))
        self.add_bos = bool(lib.llama_vocab_get_add_bos(vocab))
        self.bos_id = int(lib.llama_vocab_bos(vocab))
        self._control: dict[str, int] | None = None
        self._splitter: SpecialSplitter | None = None

    @property
    def n_vocab(self) -> int:
        return self._n

    def token_text(self, token_id: int) -> str:
        return bytes(self._lib.llama_vocab_get_text(self._vocab, token_id)).decode("utf-8", "replace")

    def piece(self, token_id: int) -> str:
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self._vocab, token_id, buf, len(buf), 0, True)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self._vocab, token_id, buf, len(buf), 0, True)
        return buf.raw[:n].decode("utf-8", "replace")

    def _tokenize(self, text: str, parse_special: bool) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 8
        arr = (self._lib.llama_token * cap)()
        n = self._lib.llama_tokenize(self._vocab, data, len(data), arr, cap, False, parse_special)
        if n < 0:
            cap = -n
            arr = (self._lib.llama_token * cap)()
            n = self._lib.llama_tokenize(self._vocab, data, len(data), arr, cap, False, parse_special)
        return list(arr[:n])

    def control_tokens(self) -> dict[str, int]:
        """Text → id of the GGUF's control tokens (what ``parse_special=False`` never produces from text)."""
        if self._control is None:
            lib, flag = self._lib, int(self._lib.LLAMA_TOKEN_ATTR_CONTROL)
            self._control = {}
            for i in range(self._n):
                if int(lib.llama_vocab_get_attr(self._vocab, i)) & flag:
                    self._control.setdefault(self.token_text(i), i)
            self._splitter = SpecialSplitter(self._control)
        return self._control

    def encode(self, text: str, with_bos: bool = True, plain: Sequence[Span] = ()) -> list[int]:
        """llama.cpp's own tokenization; with ``plain`` spans, the GGUF's control tokens are cut out of the
        template's text only and everything else is tokenized with special parsing off (the user content
        rule of :class:`scorer.prompting.prompt.Tokenizer`, implemented independently of the reference tokenizer)."""
        if plain:
            control = self.control_tokens()
            assert self._splitter is not None
            ids = [t for piece, special in self._splitter.split(text, plain)
                   for t in ([control[piece]] if special else self._tokenize(piece, parse_special=False))]
        else:
            ids = self._tokenize(text, parse_special=True)
        if with_bos and self.add_bos and (not ids or ids[0] != self.bos_id):
            ids.insert(0, self.bos_id)
        return ids


class GGUFVocab(LlamaVocab):
    """The vocabulary of a GGUF file alone (llama.cpp ``vocab_only``: no weights are read), for tokenizer
    checks such as :func:`scorer.backends.gguf_check.check_row` without loading a model. Owns its llama.cpp model."""

    def __init__(self, path: Path):
        import llama_cpp

        LLAMA_LOG.install()
        llama_cpp.llama_backend_init()
        mp = llama_cpp.llama_model_default_params()
        mp.vocab_only = True
        mark = LLAMA_LOG.mark()
        self._model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
        if not self._model:
            raise ModelError(f"llama.cpp could not read the vocabulary of {path}: {LLAMA_LOG.tail(mark)}")
        super().__init__(llama_cpp, llama_cpp.llama_model_get_vocab(self._model))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if self._model:
                self._lib.llama_model_free(self._model)
                self._model = None
