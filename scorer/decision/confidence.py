"""``confidence``: how sure an answer is, in [0, 1], computed from the probabilities the answer acts on (the calibrated
readout when there is one, else the raw one) — the number the decision-model ecosystem's clients threshold on.

Defined once, here, as the System One wire format defines it (TypeSafe's documentation, as five open servers
implement it independently: jev-style, any2jev, callo, avrik-server, ruling):

* **choice** over K options: ``(p_max − 1/K) / (1 − 1/K)`` — 0 when every option is equally likely, 1 when one has
  all the mass (1 for a single option);
* **score** over ordered levels 0…n−1: ``max(0, 1 − E|i − m| / MAD_u)`` where ``m`` is the most probable level,
  ``E|i − m| = Σ p_i |i − m|`` how far the mass lies from it, and ``MAD_u = (1/n) Σ |i − (n−1)/2|`` the same spread
  for a uniform distribution (1 for a single level). Mass on levels next to the mode costs less than mass far away:
  ``p = (0, 0.95, 0.05)`` gives 1 − 0.05 / 0.667 = 0.925;
* **yes/no** (``noul``, ``predicate``): the wire formats carry only p(yes); :func:`binary_confidence` is the choice
  formula for two options, ``|2 p − 1|``, for callers that want one.

These say how peaked the distribution is, not how often such answers are right. Where the weights' default readout
was measured on labelled rows, the answer's ``confidence`` is this peakedness through the weights' curve
(:mod:`scorer.calibration.confidence_map`, the record's ``confidence`` block), fitted so that it estimates how often
such answers are right; elsewhere it is the peakedness itself (:attr:`scorer.decision.questions.Answer.confidence`).
"""

from __future__ import annotations

from collections.abc import Sequence


def choice_confidence(probabilities: Sequence[float]) -> float:
    """``(p_max − 1/K) / (1 − 1/K)``, clipped to [0, 1] (module docstring)."""
    k = len(probabilities)
    if k <= 1:
        return 1.0
    top = max(probabilities)
    return min(1.0, max(0.0, (top - 1.0 / k) / (1.0 - 1.0 / k)))


def score_confidence(probabilities: Sequence[float]) -> float:
    """``max(0, 1 − Σ p_i |i − m| / MAD_u)`` over ordered levels (module docstring)."""
    n = len(probabilities)
    if n <= 1:
        return 1.0
    mode = max(range(n), key=lambda i: probabilities[i])
    spread = sum(p * abs(i - mode) for i, p in enumerate(probabilities))
    uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return min(1.0, max(0.0, 1.0 - spread / uniform))


def peakedness(probabilities: Sequence[float], qtype: str | None) -> float:
    """How peaked an answer of type ``qtype`` is: :func:`score_confidence` for a ``score`` question,
    :func:`choice_confidence` for any other (a yes/no question is a choice over two)."""
    return score_confidence(probabilities) if qtype == "score" else choice_confidence(probabilities)


def binary_confidence(p_yes: float) -> float:
    """The choice formula for two options: ``|2 p − 1|``."""
    return min(1.0, abs(2.0 * p_yes - 1.0))


def expected_level(probabilities: Sequence[float]) -> float:
    """A score's value on the wire: the expected level index ``Σ i · p_i``."""
    return float(sum(i * p for i, p in enumerate(probabilities)))
