"""Which label-free correction ``label_free="auto"`` (the default) applies: per model weights and readout, one method
per kind of question (choice, yes/no, score: :func:`scorer.decision.questions.answer_kind`), each the one the
single-request study found right most often on that kind, and ``none`` — the raw readout — for every other model and
readout, where nothing was measured.

The rule, the same for every entry (``benchmarks/label_free_selection.py`` applies it to a study's records): per
kind, every family of every labelled set that asks questions of that kind (``data/eval/``: authored, boundary,
single) is one vote of equal weight, the method's balanced accuracy on those questions, each answered alone
(``benchmarks/single_request_study.py``); the kind's default is the best mean (ties to the cheaper). How the rule
does on questions it has not seen is measured by leaving each family out (the selection report's ``cross_fitted``);
those are the numbers :attr:`Measured.cross_fitted` holds and ``docs/results.md`` quotes.

A default is keyed on the GGUF's sha256 (the weights, not the name they were asked for by: a file of one's own under
a known name gets no default it was not measured for) and on the resolved readout (``slots``): a correction measured
through letters says nothing about a JSON answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scorer.calibration.confidence_map import ConfidenceMap, KindCurves
from scorer.calibration.label_free import BY_KIND, METHODS, by_kind, method_for
from scorer.core.checks import AUTO_CHOICE_JSON, AUTO_SLOTS, OptionError, one_of
from scorer.core.errors import brief

AUTO = "auto"
"""The option value that picks the measured default (:func:`resolve`)."""
CHOICES = (AUTO, *METHODS)
"""What ``label_free`` accepts besides a method per kind (:func:`check_label_free`)."""
CONFIDENCE_REPORT = "data/results/confidence-reliability.json"
"""The report that fits the measured defaults' confidence curves (``benchmarks/confidence_reliability.py``)."""
PER_KIND = f"{BY_KIND}choice=M1,score=M2,yesno=M3"
"""How a method per kind is written (each ``M`` one of :data:`~scorer.calibration.label_free.METHODS`)."""


def check_label_free(value: Any) -> str:
    """``value`` as the ``label_free`` option takes it: one of :data:`CHOICES`, or a method per kind of question
    (:data:`PER_KIND`, what ``auto`` resolves to for the measured weights); else :class:`OptionError` (the option
    named by the caller)."""
    if isinstance(value, str) and value.startswith(BY_KIND):
        try:
            method_for(value, "choice")
        except ValueError as exc:
            raise OptionError(None, f"{brief(value)}: {exc} (expected {PER_KIND})") from None
        return value
    try:
        return one_of(value, CHOICES)
    except OptionError as exc:
        raise OptionError(None, f"{exc.problem}, or {PER_KIND}") from None


@dataclass(frozen=True)
class Measured:
    """One measured default: the method (one per kind of question), and where the measurement that chose it is."""

    model: str
    """The catalogue key the weights are known by (``semif models list``)."""
    gguf_sha256: str
    slots: str
    method: str
    """A method per kind (:func:`scorer.calibration.label_free.by_kind`)."""
    report: str
    """The selection report (path in the repository) that chose it, from the single-request study it names."""
    cross_fitted: tuple[tuple[str, float, float], ...]
    """Per labelled set: balanced accuracy of the raw readout, then of the rule's methods picked without each
    family (the selection report's ``cross_fitted``), each row one request."""
    confidence: KindCurves | None = None
    """The curves, one per kind of question, that map an answer's peakedness to its ``confidence``
    (:mod:`scorer.calibration.confidence_map`), fitted on this default's answers to the selection sets
    (:data:`CONFIDENCE_REPORT`'s ``maps``); None: not measured for this readout, the peakedness is the confidence."""
    choice: str = "letters"
    """How ``slots="auto"`` reads these weights' choice questions (an ``auto`` entry only): ``letters``, or ``json``
    where the study of that readout found them right more often than by letters (``auto`` then comes to
    :data:`~scorer.core.checks.AUTO_CHOICE_JSON` for these weights: :func:`auto_slots`)."""


def _by_kind(choice: str, score: str, yesno: str) -> str:
    return by_kind({"choice": choice, "score": score, "yesno": yesno})


def _one_curve(curve: ConfidenceMap) -> KindCurves:
    """Curves in the form "one for every kind" (the reliability report's choice for weights where a curve per kind
    was less calibrated out of fold)."""
    return KindCurves(curve, curve, curve)


_Q05 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
_Q15 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
DEFAULTS: tuple[Measured, ...] = (
    # qwen2.5-0.5b leans hard (read by letters every yes/no question "yes", routing 12/30): every kind is corrected;
    # the options' rotations each divided by their own content-free prior win on choice and score questions.
    Measured("qwen2.5-0.5b", _Q05, "letters",
             _by_kind("rotations+content-free", "rotations+content-free", "content-free"),
             "data/results/label-free-selection-qwen2.5-0.5b-letters.json",
             (("authored", 0.425, 0.508), ("boundary", 0.5, 0.458), ("single", 0.363, 0.525))),
    # Under auto its choice questions keep their letters: read as JSON answers in bullets they were right less often
    # (single-request-json-bullets-choice-qwen2.5-0.5b.json; its selection out of fold: single 0.530 -> 0.497). Its
    # yes/no questions (JSON answers) were studied again with the closing class: rotations still, in every fold.
    Measured("qwen2.5-0.5b", _Q05, "auto",
             _by_kind("rotations+content-free", "rotations+content-free", "rotations"),
             "data/results/label-free-selection-qwen2.5-0.5b-auto-json-close.json",
             (("authored", 0.425, 0.517), ("boundary", 0.5, 0.542), ("single", 0.363, 0.531)),
             _one_curve(ConfidenceMap(-0.17941, 1.204148))),
    # The served default (auto) of each has its confidence curves (CONFIDENCE_REPORT: one per kind of question, or
    # one for every kind, whichever was better calibrated out of fold); letters, never served by default, keeps the
    # peakedness.
    # qwen2.5-1.5b: choice questions gain from the same correction, score questions from the domain prior (the
    # state's own words shuffled); read as a JSON answer (auto) yes/no questions are best left raw. Under auto its
    # choice questions are JSON answers too (choice="json", their options as bullets: right more often than by
    # letters on every labelled set, single-request-json-bullets-choice-qwen2.5-1.5b.json): their votes come from the
    # study of that readout (the selection report's studies_for), which judged the label-free methods that need no
    # domain prompts. Chosen again once a JSON answer's closing quote was read as every token beginning with it (the
    # study of that readout judged every method on choice and yes/no questions): the same three methods, and the sum
    # of an answer's token log-probabilities (what auto reads) ahead of their mean out of fold
    # (label-free-selection-qwen2.5-1.5b-auto-json-close-mean.json), score questions by letters ahead of JSON
    # answers (…-json-close-score-json.json).
    Measured("qwen2.5-1.5b", _Q15, "letters",
             _by_kind("rotations+content-free", "domain", "domain"),
             "data/results/label-free-selection-qwen2.5-1.5b-letters.json",
             (("authored", 0.619, 0.653), ("boundary", 0.625, 0.833), ("single", 0.504, 0.614))),
    Measured("qwen2.5-1.5b", _Q15, "auto",
             _by_kind("rotations+content-free", "domain", "none"),
             "data/results/label-free-selection-qwen2.5-1.5b-auto-json-close.json",
             (("authored", 0.672, 0.671), ("boundary", 0.875, 0.875), ("single", 0.535, 0.584)),
             KindCurves(ConfidenceMap(-0.988461, 2.095058), ConfidenceMap(0.204341, 2.022796),
                        ConfidenceMap(0.097082, 2.632335)), choice="json"),
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
        return {"by": "auto", "asked": AUTO, "measured": {
            "model": m.model, "slots": m.slots, "method": m.method, "report": m.report,
            "cross_fitted": {name: {"none": raw, "method": fixed} for name, raw, fixed in m.cross_fitted}}}


def find(gguf_sha256: str | None, slots: str) -> Measured | None:
    """The measured default for these weights read through ``slots`` (None: nothing measured)."""
    return next((m for m in DEFAULTS if m.gguf_sha256 == gguf_sha256 and m.slots == slots), None)


def auto_slots(model_info: Mapping[str, Any]) -> str:
    """What ``slots="auto"`` comes to for the model ``model_info`` describes (a backend's ``model_info()``): choice
    questions read as JSON answers (:data:`~scorer.core.checks.AUTO_CHOICE_JSON`) for weights measured so
    (:attr:`Measured.choice`), else ``auto`` itself (choice questions by letters: every other model, where nothing was
    measured, and qwen2.5-0.5b, where letters were right more often)."""
    measured = find(model_info.get("gguf_sha256"), AUTO_SLOTS)
    return AUTO_CHOICE_JSON if measured is not None and measured.choice == "json" else AUTO_SLOTS


def resolve(asked: str, model_info: Mapping[str, Any], slots: str) -> Resolved:
    """``asked`` (``auto`` or a method) for the model ``model_info`` describes (a backend's ``model_info()``: its
    ``gguf_sha256``) read through ``slots``."""
    if asked != AUTO:
        return Resolved(asked, asked, None)
    measured = find(model_info.get("gguf_sha256"), slots)
    return Resolved("none" if measured is None else measured.method, AUTO, measured)
