"""Applying a calibration to records as they are produced, and reading calibrated records back.

``semif score --calibration FILE`` checks every row with :func:`check_decisions` *before* the first
record is scored, so a file for another model or for other questions fails at once (exit 2, naming
the file and the signature) rather than after an hour of scoring; then each record passes through
:meth:`scorer.calibration.core.Calibration.apply`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scorer.calibration.core import Calibration
from scorer.calibration.signature import identity_sha256, model_identity, signature_of
from scorer.schema import Decision

READOUT_FIELDS = ("probabilities", "option_logits", "choice", "margin", "tie", "tied_option_ids")


def check_decisions(cal: Calibration, decisions: Sequence[Decision], model: dict[str, Any], permute: int = 1,
                    prompt_version: str | None = None) -> None:
    """Raise the lookup error of the first decision the calibration does not cover (model first).
    ``prompt_version``: what the run's signatures name (its layout and demonstrations:
    :func:`scorer.layouts.signature_version`; default ``semif-direct-v1``)."""
    from scorer.prompt import PROMPT_VERSION

    version = PROMPT_VERSION if prompt_version is None else prompt_version
    cal.check_model(model)
    msha = identity_sha256(model_identity(model))
    readout = f"permute-{permute}" if permute > 1 else "plain"
    for d in decisions:
        fam = d.extra.get("family")
        cal.lookup(signature_of(d, version, model, readout), msha, readout,
                   None if fam is None else str(fam), d.option_ids)


def calibrated_view(record: dict[str, Any]) -> dict[str, Any]:
    """The record as a consumer of calibrated decisions sees it: the top-level readout fields replaced by
    the calibrated block's (records without a block are returned unchanged)."""
    block = record.get("calibrated")
    if not isinstance(block, dict):
        return record
    return {**record, **{k: block[k] for k in READOUT_FIELDS}}
