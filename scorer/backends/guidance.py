"""Grammar-constrained decoding with llguidance over a token vocabulary (the torch backend, the test fake).

Why llguidance (pinned ``llguidance==1.9.1``, the ``grammar`` extra): ``benchmarks/grammar-mask-probe.py``
measured the per-step cost of the three maintained engines on the real tokenizers (rough, on a shared
2-core machine; ``benchmarks/results/grammar-mask-probe-*.json``). Median mask computation per step,
smollm2-135m (49k vocabulary) / qwen2.5-1.5b (152k): outlines-core 0.2.14 13 / 101 µs, xgrammar 0.2.8
44 / 146 µs, llguidance 1.9.1 59 / 170 µs; whole grammar step (mask, boolean vector, masked argmax,
advance) 50-300 µs for all three. A CPU decode step of these models costs tens of milliseconds, so the
spread between engines is under 0.5 % of a step: all three pass, and the tie is broken on what the
measurement cannot show. outlines-core takes regular expressions only and a vocabulary we would have
to rebuild from token strings ourselves (the probe's byte-level-BPE conversion would be wrong for
SentencePiece vocabularies such as Gemma's); xgrammar pulls in triton, pydantic and a TVM runtime;
llguidance has no dependencies, converts any fast Hugging Face tokenizer itself, and reads the very
GBNF text llama.cpp's grammar sampler gets, so both backends enforce one grammar. The per-run grammar
time is recorded in every constrained run (``grammar_s``), so the choice stays checkable.

Every step computes the full token mask (llguidance's own bitmask, one bit per token id), then takes
the argmax of the logits over the allowed ids; ``masked`` is true when the model's full-vocabulary
argmax was not allowed. Logit positions past the tokenizer's vocabulary (padding rows of the output
matrix) are never allowed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from scorer.core.errors import ModelError, ValidationError

ENGINE = "llguidance"


def _lib() -> Any:
    try:
        import llguidance
    except ImportError:
        raise ModelError("grammar-constrained generation on this backend needs llguidance "
                         "(pip install 'llguidance==1.9.1', or scripts/install.sh)") from None
    return llguidance


def version() -> str | None:
    """The installed llguidance version, None when it is not installed."""
    try:
        return str(_lib().__version__)
    except ModelError:
        return None


class _Wrapper:
    """The duck-typed tokenizer ``llguidance.TokenizerWrapper`` reads: token bytes (special tokens
    prefixed with 0xFF, llguidance's convention), end-of-sequence ids and an encoder."""

    def __init__(self, tokens: Sequence[bytes], stop_ids: Sequence[int], bos_id: int | None,
                 encode: Callable[[str], list[int]], special_ids: Sequence[int]):
        self.tokens = list(tokens)
        self.eos_token_id = int(stop_ids[0])
        self.bos_token_id = bos_id
        self.special_token_ids = list(special_ids)
        self._encode = encode

    def __call__(self, s: str | bytes) -> list[int]:
        return self._encode(s.decode("utf-8", "replace") if isinstance(s, bytes) else s)


def tokenizer_from_tokens(tokens: Sequence[bytes], stop_ids: Sequence[int], encode: Callable[[str], list[int]],
                          special_ids: Sequence[int] = (), bos_id: int | None = None) -> Any:
    """An ``llguidance.LLTokenizer`` over an explicit vocabulary (``tokens[i]`` = bytes of token i)."""
    lg = _lib()
    wrap = lg.TokenizerWrapper(_Wrapper(tokens, stop_ids, bos_id, encode, special_ids))
    return lg.LLTokenizer(wrap, eos_token=[int(i) for i in stop_ids])


def tokenizer_from_hf(hf_tokenizer: Any, stop_ids: Sequence[int]) -> Any:
    """An ``llguidance.LLTokenizer`` from a fast Hugging Face tokenizer (about a second: cache it)."""
    _lib()
    from llguidance.hf import from_tokenizer

    try:
        return from_tokenizer(hf_tokenizer, eos_token=[int(i) for i in stop_ids])
    except ValueError as exc:
        raise ModelError(f"llguidance cannot use this tokenizer: {exc}") from None


class LlgConstraint:
    """One run's grammar state (see :class:`scorer.backends.base.Constraint`)."""

    def __init__(self, matcher: Any, n_vocab: int):
        self._m = matcher
        self._n_vocab = n_vocab
        self._bits = np.full((1, (n_vocab + 31) // 32), -1, dtype=np.int32)
        self._allowed = np.zeros(0, dtype=bool)

    def mask(self, n_logits: int) -> np.ndarray:
        """The tokens the grammar allows next, as a boolean array over ``n_logits`` ids."""
        return self._mask(n_logits)

    def _mask(self, n_logits: int) -> np.ndarray:
        from llguidance.numpy import fill_next_token_bitmask

        fill_next_token_bitmask(self._m, self._bits)
        if self._m.is_error():
            raise ValidationError(f"the grammar engine failed: {self._m.get_error()}")
        bits = np.unpackbits(self._bits[0].view(np.uint8), bitorder="little")
        allowed = np.zeros(n_logits, dtype=bool)
        k = min(n_logits, self._n_vocab)
        allowed[:k] = bits[:k].astype(bool)
        return allowed

    def pick(self, logits: np.ndarray) -> tuple[int, bool]:
        allowed = self._mask(len(logits))
        best = int(np.argmax(logits))
        if allowed[best]:
            return best, False
        if not allowed.any():
            raise ValidationError("the grammar allows no token here (the grammar or the stop tokens are wrong)")
        return int(np.argmax(np.where(allowed, logits, -np.inf))), True

    def advance(self, token_id: int) -> None:
        if not self._m.consume_token(int(token_id)):
            raise ValidationError(f"the grammar refused token {token_id}: {self._m.get_error()}")

    def close(self) -> None:
        """Nothing to free: the matcher holds no external resources."""


class LlgGrammar:
    """A GBNF grammar compiled by llguidance for one vocabulary (see :class:`scorer.backends.base.Grammar`)."""

    def __init__(self, lltokenizer: Any, gbnf: str, n_vocab: int):
        lg = _lib()
        t0 = time.perf_counter()
        try:
            self._grammar = lg.grammar_from("gbnf", gbnf)
        except ValueError as exc:
            raise ValidationError(f"llguidance rejected the grammar: {exc}") from None
        msg = lg.LLMatcher.validate_grammar(self._grammar, lltokenizer)
        if msg:
            raise ValidationError(f"llguidance rejected the grammar: {msg}")
        self._tok = lltokenizer
        self._n_vocab = n_vocab
        self.engine = f"{ENGINE} {lg.__version__}"
        self.compile_s = time.perf_counter() - t0

    def start(self) -> LlgConstraint:
        m = _lib().LLMatcher(self._tok, self._grammar, log_level=0)
        if m.is_error():
            raise ValidationError(f"llguidance could not start the grammar: {m.get_error()}")
        return LlgConstraint(m, self._n_vocab)
