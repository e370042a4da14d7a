"""From one position's full-vocabulary logits to a typed decision (or, ``--slots sequence``, from each option's
continuation log-probabilities: :func:`read_sequences`; or from option probabilities a remote decision API served:
:func:`read_probabilities`).

Probabilities are a softmax over the declared options' slot logits only (their sequence scores). A tie (top two
slot logits
equal within the resolution of the dtype the logits were computed in) is reported, never resolved to
option A: ``choice`` is then ``None`` and ``tied_option_ids`` lists the tied options.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
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
    """Raw logit of each option's answer slot, in option order (``--slots sequence``: each option's sequence score,
    :func:`sequence_score`)."""
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
    """Probability mass of the declared slots in the full-vocabulary softmax (``--slots sequence``: of the declared
    continuations)."""
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
    mass = float(np.exp(logsumexp(opt) - (0.0 if normalized else logsumexp(full))))
    return _decide(opt, logits_dtype, mass, int(np.argmax(full)))


def sequence_score(token_logprobs: np.ndarray, normalisation: str) -> float:
    """An option's score under ``--slots sequence``: the ``sum`` of its tokens' log-probabilities (the log-probability
    of the whole continuation) or their ``mean`` (per token; :data:`scorer.core.checks.SEQUENCE_NORMS`)."""
    lp = np.asarray(token_logprobs, dtype=np.float64)
    if normalisation == "sum":
        return float(lp.sum())
    if normalisation == "mean":
        return float(lp.mean())
    raise ValueError(f"unknown sequence normalisation {normalisation!r} (expected sum or mean)")


def read_sequences(token_logprobs: list[np.ndarray], head_logits: np.ndarray, normalisation: str,
                   logits_dtype: str) -> Readout:
    """Read a decision from its options' continuations (``--slots sequence``): ``token_logprobs[i]`` holds the
    full-vocabulary log-probability of each token of option i's continuation of the prompt, ``head_logits`` the logits
    at the answer position (its argmax is the record's).

    The option scores (:attr:`Readout.option_logits`) are :func:`sequence_score` under ``normalisation``, and the
    probabilities their softmax; the mass is the probability the model gives the declared continuations together,
    ``sum_i exp(sum of option i's log-probabilities)`` whatever the normalisation (the options are disjoint answers:
    no option's tokens begin another's, :func:`scorer.prompting.prompt.sequence_slots`)."""
    if not all(np.all(np.isfinite(lp)) and len(lp) for lp in token_logprobs):
        raise ValueError("non-finite or empty option log-probabilities: the forward pass produced NaN/inf")
    scores = np.array([sequence_score(lp, normalisation) for lp in token_logprobs], dtype=np.float64)
    mass = float(np.exp(logsumexp(np.array([float(np.sum(lp)) for lp in token_logprobs]))))
    return _decide(scores, logits_dtype, mass, int(np.argmax(head_logits)))


LOG_FLOOR = math.log(sys.float_info.min)
"""The log recorded for a probability of 0 (ln of the smallest normal double, about -708.4): finite, so a record stays
JSON, and its softmax share is below any tolerance a record is checked to."""


def read_probabilities(probabilities: Sequence[float]) -> Readout:
    """A decision over option probabilities computed elsewhere (a remote decision API's answer), by the same rules as a
    logits readout: :attr:`Readout.option_logits` are their natural logs (0 as :data:`LOG_FLOOR`), the probabilities
    their softmax (the given ones renormalised), choice, margin and ties from those logs, ties within float64's
    resolution (equal probabilities as served). The two token-level fields mean nothing here:
    :attr:`Readout.allowed_token_mass` is the given sum (capped at 1) and :attr:`Readout.argmax_token_id` -1."""
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 1 or p.size < 2 or not np.all(np.isfinite(p)) or np.any(p < 0) or not p.sum() > 0:
        raise ValueError(f"expected two or more finite probabilities >= 0 with a positive sum, got {list(p)}")
    logs = np.array([math.log(v) if v >= sys.float_info.min else LOG_FLOOR for v in p], dtype=np.float64)
    return _decide(logs, "float64", float(p.sum()), -1)


def _decide(opt: np.ndarray, logits_dtype: str, mass: float, argmax: int) -> Readout:
    """The decision over the option scores ``opt``: softmax, choice, margin and ties (within the dtype's resolution)."""
    probs = softmax(opt)
    order = np.argsort(-opt, kind="stable")
    top = int(order[0])
    res = resolution(float(opt[top]), logits_dtype)
    tied = [int(i) for i in order if opt[top] - opt[i] <= res]
    tie = len(tied) > 1
    margin = float(probs[order[0]] - probs[order[1]])
    return Readout(
        option_logits=[float(v) for v in opt],
        probabilities=[float(p) for p in probs],
        choice_index=None if tie else top,
        margin=margin,
        tie=tie,
        tied_indices=sorted(tied) if tie else [],
        allowed_token_mass=min(mass, 1.0),
        argmax_token_id=argmax,
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
