"""From one position's full-vocabulary logits to a typed decision.

Probabilities are a softmax over the declared options' slot logits only. A tie (top two slot logits
equal within the resolution of the dtype the logits were computed in) is reported, never resolved to
option A: ``choice`` is then ``None`` and ``tied_option_ids`` lists the tied options.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# Mantissa bits (explicit) of the dtypes logits can be computed in.
_MANTISSA_BITS = {"float32": 23, "bfloat16": 7, "float16": 10, "float64": 52}


def resolution(value: float, dtype: str) -> float:
    """Spacing between adjacent representable numbers of ``dtype`` at ``value`` (one ulp)."""
    bits = _MANTISSA_BITS.get(dtype)
    if bits is None:
        raise ValueError(f"unknown logits dtype {dtype!r} (expected one of {sorted(_MANTISSA_BITS)})")
    mag = abs(float(value))
    if mag == 0.0 or not math.isfinite(mag):
        return 0.0
    return 2.0 ** (math.floor(math.log2(mag)) - bits)


@dataclass(frozen=True)
class Readout:
    """A typed decision read from one logit vector."""

    option_logits: list[float]
    """Raw logit of each option's answer slot, in option order."""
    probabilities: list[float]
    """Softmax over ``option_logits`` (sums to 1)."""
    choice_index: int | None
    """Index of the argmax option; ``None`` on a tie."""
    margin: float
    """Top minus second probability."""
    tie: bool
    """True when the top two slot logits are equal within the dtype's resolution."""
    tied_indices: list[int]
    """Indices of all options whose logit is within resolution of the top one (length ≥ 2 on a tie)."""
    allowed_token_mass: float
    """Probability mass of the declared slots in the full-vocabulary softmax."""
    argmax_token_id: int
    """Argmax of the full vocabulary at the readout position."""


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.asarray(x, dtype=np.float64)
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def logsumexp(x: np.ndarray) -> float:
    z = np.asarray(x, dtype=np.float64)
    m = float(z.max())
    return m + math.log(float(np.exp(z - m).sum()))


def read(logits: np.ndarray, slot_ids: list[int], logits_dtype: str, normalized: bool = False) -> Readout:
    """Read the options of one decision from its full-vocabulary logits. ``normalized``: the values are
    full-vocabulary log-probabilities (a remote engine's, possibly only some ids known, ``-inf`` elsewhere), so
    the vocabulary's logsumexp is 0 by definition rather than computed from the array."""
    full = np.asarray(logits)
    if full.ndim != 1:
        raise ValueError(f"expected one position's logits (1-D), got shape {full.shape}")
    if not np.all(np.isfinite(full[slot_ids])):
        raise ValueError("non-finite slot logits: the forward pass produced NaN/inf")
    opt = full[slot_ids].astype(np.float64)
    probs = softmax(opt)
    order = np.argsort(-opt, kind="stable")
    top = int(order[0])
    res = resolution(float(opt[top]), logits_dtype)
    tied = [int(i) for i in order if opt[top] - opt[i] <= res]
    tie = len(tied) > 1
    margin = float(probs[order[0]] - probs[order[1]])
    mass = float(np.exp(logsumexp(opt) - (0.0 if normalized else logsumexp(full))))
    return Readout(
        option_logits=[float(v) for v in opt],
        probabilities=[float(p) for p in probs],
        choice_index=None if tie else top,
        margin=margin,
        tie=tie,
        tied_indices=sorted(tied) if tie else [],
        allowed_token_mass=min(mass, 1.0),
        argmax_token_id=int(np.argmax(full)),
    )


def top_k(logits: np.ndarray, k: int, decode: Any, normalized: bool = False) -> list[dict[str, Any]]:
    """The k most likely tokens of the full vocabulary: id, text, probability (``normalized`` as in
    :func:`read`)."""
    full = np.asarray(logits, dtype=np.float64)
    k = min(k, full.shape[0])
    idx = np.argpartition(-full, k - 1)[:k]
    idx = idx[np.argsort(-full[idx], kind="stable")]
    lse = 0.0 if normalized else logsumexp(full)
    return [{"id": int(i), "text": decode([int(i)]), "p": float(math.exp(full[i] - lse))} for i in idx]
