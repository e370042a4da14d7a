"""Grammar-constrained decoding with llama.cpp's own grammar sampler (GBNF), through the low-level C API.

Per step, as llama.cpp's own sampling code does it (``common_sampler_sample``): the model's argmax is
offered to the grammar alone first (a one-entry ``llama_token_data_array``); if the grammar keeps its
logit finite the token is taken (``masked`` false). Otherwise the grammar is applied to the whole
vocabulary (refused tokens get a logit of -inf) and the argmax of what is left is taken (``masked``
true). Either way the token is the argmax over the allowed tokens. ``llama_sampler_accept`` then
advances the grammar. Once the grammar is complete llama.cpp allows only end-of-generation tokens.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

import numpy as np

from scorer.core.errors import ValidationError

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class LlamaConstraint:
    """One run's llama.cpp grammar sampler (see :class:`scorer.backends.base.Constraint`)."""

    def __init__(self, lib: Any, vocab: Any, gbnf: bytes, n_vocab: int):
        self._lib = lib
        self._smpl = lib.llama_sampler_init_grammar(vocab, gbnf, b"root")
        if not self._smpl:
            raise ValidationError("llama.cpp could not parse the grammar (see its log)")
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self._n_vocab = n_vocab

    def _apply(self, data: np.ndarray) -> None:
        arr = self._lib.llama_token_data_array(
            data=data.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data)), size=len(data), selected=-1,
            sorted=False)
        self._lib.llama_sampler_apply(self._smpl, ctypes.byref(arr))

    def pick(self, logits: np.ndarray) -> tuple[int, bool]:
        best = int(np.argmax(logits))
        self._one["id"], self._one["logit"] = best, logits[best]
        self._apply(self._one)
        if np.isfinite(self._one["logit"][0]):
            return best, False
        self._all["id"] = np.arange(self._n_vocab, dtype=np.int32)  # apply rewrites logits only; reset ids anyway
        self._all["logit"] = logits[: self._n_vocab]
        self._apply(self._all)
        allowed = np.isfinite(self._all["logit"])
        if not allowed.any():
            raise ValidationError("the grammar allows no token here (the grammar or the stop tokens are wrong)")
        k = int(np.argmax(np.where(allowed, self._all["logit"], -np.inf)))
        return int(self._all["id"][k]), True

    def advance(self, token_id: int) -> None:
        # llama.cpp aborts the process on a refused token, so pick() must never offer one; check it here.
        self._one["id"], self._one["logit"] = token_id, 0.0
        self._apply(self._one)
        if not np.isfinite(self._one["logit"][0]):
            raise ValidationError(f"the grammar refused token {token_id}")
        self._lib.llama_sampler_accept(self._smpl, int(token_id))

    def close(self) -> None:
        if self._smpl:
            self._lib.llama_sampler_free(self._smpl)
            self._smpl = None


class LlamaGrammar:
    """A GBNF grammar for one llama.cpp vocabulary (see :class:`scorer.backends.base.Grammar`)."""

    def __init__(self, lib: Any, vocab: Any, gbnf: str, n_vocab: int):
        self._lib, self._vocab, self._n_vocab = lib, vocab, n_vocab
        self._gbnf = gbnf.encode("utf-8")
        t0 = time.perf_counter()
        LlamaConstraint(lib, vocab, self._gbnf, n_vocab).close()  # parse once: a bad grammar fails before any run
        self.compile_s = time.perf_counter() - t0
        self.engine = f"llama.cpp grammar sampler (llama-cpp-python {lib.__version__})"

    def start(self) -> LlamaConstraint:
        return LlamaConstraint(self._lib, self._vocab, self._gbnf, self._n_vocab)
