"""SemIf: semantic ifs — typed decisions read from option-letter logits in one forward pass.

``from scorer import Scorer, DecisionRecord`` is the public Python API (:mod:`scorer.api`); it is imported
on first use, so ``import scorer`` stays cheap (no torch, no model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Choice", "DecisionRecord", "Policy", "Score", "Scorer", "YesNo", "__version__"]

if TYPE_CHECKING:
    from scorer.api import DecisionRecord, Scorer
    from scorer.decision.policy import Policy
    from scorer.decision.questions import Choice, Score, YesNo


def __getattr__(name: str) -> Any:
    if name in ("Scorer", "DecisionRecord"):
        from scorer import api

        return getattr(api, name)
    if name in ("Choice", "YesNo", "Score"):  # question types and the abstention policy: no model library either
        from scorer.decision import questions

        return getattr(questions, name)
    if name == "Policy":
        from scorer.decision import policy as abstain

        return abstain.Policy
    raise AttributeError(f"module 'scorer' has no attribute {name!r}")
