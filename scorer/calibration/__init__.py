"""Calibration that changes decisions: decision signatures, label-free priors, labelled offsets.

The small public API (for other commands, e.g. versus traces that show raw and calibrated numbers):

* :func:`load_calibration` ``(path) -> Calibration`` — read and validate a ``semif calibrate prior|bias``
  file (bad files raise :class:`scorer.core.errors.InputError`: one line, exit 2 on the command line).
* :meth:`Calibration.apply` ``(record, signature=None) -> record`` — a copy of a record with a
  ``calibrated`` block (raw fields untouched); a record of another model or an uncovered signature is
  an :class:`~scorer.core.errors.InputError` naming the file and the signature. v1 records carry no
  signature: pass it, computed by :func:`record_signatures` from the input rows.
* :func:`choice_of` ``(record)`` — the decision a consumer should use: ``calibrated.choice`` when the
  record has a calibrated block, else ``choice``.
* :func:`signature_of` ``(decision, prompt_version, model_block, readout="plain")`` — a decision's signature.
* :func:`fit_prior` / :func:`fit_bias` — fit a calibration in memory from records.

Modules: :mod:`~scorer.formats.signature` (signatures), :mod:`~scorer.calibration.core` (the file and
the calibrated block), :mod:`~scorer.calibration.prior` (label-free estimators),
:mod:`~scorer.calibration.bias` (labelled NLL offsets), :mod:`~scorer.calibration.apply` (scoring-time
application), :mod:`~scorer.calibration.batch` (``--batch-calibrate``), :mod:`~scorer.calibration.evaluate`
(before/after, out of fold), :mod:`~scorer.calibration.methods_report` (``semif calibrate report``),
:mod:`~scorer.calibration.temperature` (temperature scaling and the group-disjoint folds, ``semif calibrate
temperature``);
the command line is :mod:`scorer.cli.calibrate`.
"""

from __future__ import annotations

from scorer.calibration.bias import fit_bias
from scorer.calibration.core import Calibration, choice_of, load_calibration
from scorer.calibration.prior import fit_prior
from scorer.formats.signature import record_signatures, signature_of

__all__ = ["Calibration", "choice_of", "fit_bias", "fit_prior", "load_calibration", "record_signatures",
           "signature_of"]
