"""Which label-free correction ``label_free="auto"`` (the default) applies: per model weights and readout, the method
the single-request study measured right most often on the set defaults are chosen on (``data/eval/authored.jsonl``,
every row one request; ``benchmarks/single_request_study.py``), and ``none`` — the raw readout — for every other
model and readout, where nothing was measured.

A default is keyed on the GGUF's sha256 (the weights, not the name they were asked for by: a file of one's own under
a known name gets no default it was not measured for) and on the resolved readout (``slots``): a correction measured
through letters says nothing about a JSON answer. The report each one comes from is named in :attr:`Measured.report`
and in ``docs/results.md``; the numbers here are that report's, for the record's reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scorer.calibration.label_free import METHODS

AUTO = "auto"
"""The option value that picks the measured default (:func:`resolve`)."""
CHOICES = (AUTO, *METHODS)
"""What ``label_free`` accepts."""


@dataclass(frozen=True)
class Measured:
    """One measured default: the method, and where the measurement that chose it is."""

    model: str
    """The catalogue key the weights are known by (``semif models list``)."""
    gguf_sha256: str
    slots: str
    method: str
    report: str
    """The single-request study report (path in the repository) that measured it."""
    authored: tuple[float, float]
    """Balanced accuracy on the authored set, each row one request: the raw readout, then ``method``."""


DEFAULTS: tuple[Measured, ...] = (
    # qwen2.5-0.5b reads letters with a strong lean (every yes/no question "yes", routing 12/30): averaging the
    # option rotations, each divided by its own content-free prior, is ahead of the raw readout on authored
    # (0.425 -> 0.508) and on the held-out single set, level on boundary, where the model is at chance either way.
    Measured("qwen2.5-0.5b", "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "letters",
             "rotations+content-free", "data/results/single-request-study-qwen2.5-0.5b-letters.json", (0.425, 0.508)),
    # Read through auto (a yes/no question as a JSON answer), the same correction is best on authored (0.425 ->
    # 0.550) and lifts boundary off chance (0.500 -> 0.625); on the held-out single set it is level with letters'.
    Measured("qwen2.5-0.5b", "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "auto",
             "rotations+content-free", "data/results/single-request-study-qwen2.5-0.5b-auto.json", (0.425, 0.550)),
    # qwen2.5-1.5b: no correction is ahead of the raw readout on authored, under letters (0.619) or auto (0.686,
    # yes/no read as a JSON answer; rotations 0.658, rotations with content-free priors 0.636).
    Measured("qwen2.5-1.5b", "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "letters",
             "none", "data/results/single-request-study-qwen2.5-1.5b-letters.json", (0.619, 0.619)),
    Measured("qwen2.5-1.5b", "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "auto",
             "none", "data/results/single-request-study-qwen2.5-1.5b-auto.json", (0.686, 0.686)),
)


@dataclass(frozen=True)
class Resolved:
    """What a scorer's ``label_free`` option comes to for the weights it loaded."""

    method: str
    """The method applied (``none``: the raw readout acts)."""
    asked: str
    """The option as given (``auto`` or a method)."""
    measured: Measured | None
    """The measurement ``auto`` followed (None: a method named explicitly, or nothing measured for these weights)."""

    def describe(self) -> dict[str, Any]:
        """The record's account of the choice (the calibrated block's ``label_free.chosen``; a record has that block
        only when a method applies, so ``auto`` here always followed a measurement)."""
        if self.measured is None:
            return {"by": "option", "asked": self.asked}
        m = self.measured
        return {"by": "auto", "asked": AUTO, "measured": {"model": m.model, "slots": m.slots, "report": m.report,
                                                          "authored_raw": m.authored[0],
                                                          "authored_method": m.authored[1]}}


def find(gguf_sha256: str | None, slots: str) -> Measured | None:
    """The measured default for these weights read through ``slots`` (None: nothing measured)."""
    return next((m for m in DEFAULTS if m.gguf_sha256 == gguf_sha256 and m.slots == slots), None)


def resolve(asked: str, model_info: Mapping[str, Any], slots: str) -> Resolved:
    """``asked`` (``auto`` or a method) for the model ``model_info`` describes (a backend's ``model_info()``: its
    ``gguf_sha256``) read through ``slots``."""
    if asked != AUTO:
        return Resolved(asked, asked, None)
    measured = find(model_info.get("gguf_sha256"), slots)
    return Resolved("none" if measured is None else measured.method, AUTO, measured)
