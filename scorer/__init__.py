"""SemIf: semantic ifs — typed decisions read from option-letter logits in one forward pass.

``from scorer import Scorer, DecisionRecord`` is the public Python API (:mod:`scorer.api`); it is imported
on first use, so ``import scorer`` stays cheap (no torch, no model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["DecisionRecord", "Scorer", "__version__"]

if TYPE_CHECKING:
    from scorer.api import DecisionRecord, Scorer


def __getattr__(name: str) -> Any:
    if name in ("Scorer", "DecisionRecord"):
        from scorer import api

        return getattr(api, name)
    raise AttributeError(f"module 'scorer' has no attribute {name!r}")
