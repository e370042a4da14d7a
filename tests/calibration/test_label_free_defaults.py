"""The label-free default (scorer/calibration/label_free_defaults.py): ``auto`` applies the method measured for the
loaded weights and readout — one per kind of question — exactly as naming that method would, each question
corrected as naming its kind's method alone would, says so in the record, and is the raw readout (the run named as
a plain one) for weights or readouts nothing was measured for; every measured default is the one its committed
selection report picked by the rule, from the committed study it names, for the weights the catalogue pins."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from fakes import FakeBackend, WeighedFake

from scorer import Scorer
from scorer.calibration.confidence_map import KINDS
from scorer.calibration.label_free import METHODS, by_kind, method_for
from scorer.calibration.label_free_defaults import AUTO, CONFIDENCE_REPORT, DEFAULTS, check_label_free, find, resolve
from scorer.core.checks import OptionError
from scorer.decision.confidence import choice_confidence, score_confidence
from scorer.formats.records import validate_records
from scorer.models import store
from scorer.scoring.options import ScorerOptions

ROOT = Path(__file__).resolve().parents[2]
STATE = "My card was charged twice for order 1182 and I want the money back today."
QUESTIONS = {
    "team": {"type": "choice", "question": "Which team?", "options": {"billing": "payments", "tech": "bugs",
                                                                     "sales": "new orders"}},
    "refund": {"type": "yesno", "question": "Does the customer ask for a refund?"},
    "urgency": {"type": "score", "question": "How urgent?", "options": ["low", "medium", "high"]},
}
KIND = {"team": "choice", "refund": "yesno", "urgency": "score"}
MEASURED = next(m for m in DEFAULTS if m.model == "qwen2.5-1.5b" and m.slots == "letters")


def _ask(sha: str | None, label_free: str, slots: str = "letters"):
    with Scorer(backend=WeighedFake(sha), slots=slots, mode="shared", label_free=label_free) as s:
        return s.ask(STATE, QUESTIONS)


def test_auto_is_the_default_on_every_face():
    assert ScorerOptions.label_free == AUTO


def test_auto_applies_the_measured_method_as_naming_it_would_and_says_why():
    auto, named = _ask(MEASURED.gguf_sha256, AUTO), _ask(MEASURED.gguf_sha256, MEASURED.method)
    validate_records(auto.records)
    for name in QUESTIONS:
        a, n = auto[name].record, named[name].record
        assert a["probabilities"] == n["probabilities"]
        assert a["calibrated"]["probabilities"] == n["calibrated"]["probabilities"]
        assert a["calibrated"]["estimator"] == method_for(MEASURED.method, KIND[name])
        assert a["run"]["config_sha256"] == n["run"]["config_sha256"]  # the run is named by the method applied
        chosen = a["calibrated"]["label_free"]["chosen"]
        assert chosen["by"] == "auto" and chosen["measured"]["report"] == MEASURED.report
        assert chosen["measured"]["model"] == MEASURED.model and chosen["measured"]["method"] == MEASURED.method
        assert n["calibrated"]["label_free"]["chosen"] == {"by": "option", "asked": MEASURED.method}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_a_method_per_kind_corrects_each_question_as_its_kinds_method_alone_would(name):
    per_kind = by_kind({"choice": "rotations+content-free", "score": "domain", "yesno": "none"})
    got = _ask(MEASURED.gguf_sha256, per_kind)[name].record
    own = method_for(per_kind, KIND[name])
    alone = _ask(MEASURED.gguf_sha256, own)[name].record
    assert got["probabilities"] == alone["probabilities"]  # the raw readout is untouched
    if own == "none":
        assert "calibrated" not in got  # no correction, no extra prompts, no block
    else:
        assert got["calibrated"]["estimator"] == own
        assert got["calibrated"]["probabilities"] == alone["calibrated"]["probabilities"]
        assert got["calibrated"]["label_free"]["prompts"] == alone["calibrated"]["label_free"]["prompts"]


@pytest.mark.parametrize("bad,why", [
    ("by-kind:choice=none,score=none", r"names every kind"),
    ("by-kind:choice=none,score=guess,yesno=none", r"unknown label-free method 'guess' for score questions"),
    ("by-kind:choice=none,choice=none,score=none,yesno=none", r"a kind is named twice"),
    ("guess", r"'guess' is not one of auto, none, .*, or by-kind:choice=M1,score=M2,yesno=M3"),
])
def test_a_bad_method_per_kind_is_a_field_named_error(bad, why):
    with pytest.raises(OptionError, match=r"^label_free: .*" + why):
        Scorer(backend=FakeBackend(), slots="letters", label_free=bad)
    with pytest.raises(OptionError, match=why):
        check_label_free(bad)


@pytest.mark.parametrize("sha,slots", [(None, "letters"), ("0" * 64, "letters"), (MEASURED.gguf_sha256, "json")])
def test_auto_is_the_raw_readout_where_nothing_was_measured(sha, slots):
    auto, raw = _ask(sha, AUTO, slots), _ask(sha, "none", slots)
    for name in QUESTIONS:
        assert "calibrated" not in auto[name].record
        assert auto[name].record["probabilities"] == raw[name].record["probabilities"]
        assert auto[name].record["run"]["config_sha256"] == raw[name].record["run"]["config_sha256"]


def test_a_named_method_is_not_replaced_by_the_measured_one():
    assert resolve("none", {"gguf_sha256": MEASURED.gguf_sha256}, MEASURED.slots).method == "none"
    assert resolve("domain", {"gguf_sha256": MEASURED.gguf_sha256}, MEASURED.slots).method == "domain"
    assert resolve(AUTO, {"gguf_sha256": MEASURED.gguf_sha256}, MEASURED.slots).method == MEASURED.method
    assert resolve(AUTO, {}, MEASURED.slots).method == "none"


@pytest.mark.parametrize("m", DEFAULTS, ids=lambda m: f"{m.model}-{m.slots}")
def test_every_measured_default_is_its_selection_reports_pick_for_the_pinned_weights(m):
    assert m.gguf_sha256 == store.REGISTRY[m.model].sha256
    assert find(m.gguf_sha256, m.slots) is m
    assert {method_for(m.method, k) for k in KIND.values()} <= set(METHODS)
    report = json.loads((ROOT / m.report).read_text(encoding="utf-8"))
    assert report["kind"] == "label-free-selection"
    assert report["model"]["key"] == m.model and report["model"]["gguf_sha256"] == m.gguf_sha256
    assert report["slots"] == m.slots and report["method"] == m.method
    assert m.cross_fitted == tuple((name, round(v["none"]["balanced_accuracy"], 3),
                                    round(v["cross_fitted"]["balanced_accuracy"], 3))
                                   for name, v in sorted(report["sets"].items()))
    study = json.loads((ROOT / report["study"]).read_text(encoding="utf-8"))  # the study it read is committed
    assert study["model"]["gguf_sha256"] == m.gguf_sha256 and study["slots"] == m.slots
    with gzip.open(ROOT / study["sets"]["authored"]["records"]["path"]) as records:  # and so are its records
        assert records.readline()
    for kind, path in (report.get("studies_for") or {}).items():  # a kind voted from another study: the same
        other = json.loads((ROOT / path).read_text(encoding="utf-8"))
        assert other["model"]["gguf_sha256"] == m.gguf_sha256 and kind in other["kinds"]
        assert set(report["candidates"][kind]) <= set(other["sets"]["authored"]["methods"])
        with gzip.open(ROOT / other["sets"]["authored"]["records"]["path"]) as records:
            assert records.readline()


@pytest.mark.parametrize("m", DEFAULTS, ids=lambda m: f"{m.model}-{m.slots}")
def test_the_served_defaults_carry_the_confidence_curve_their_report_fitted(m):
    report = json.loads((ROOT / CONFIDENCE_REPORT).read_text(encoding="utf-8"))
    assert report["kind"] == "confidence"
    fitted = report["maps"].get(m.model)
    if m.slots != "auto":  # the report fits the served default's answers (lane semif:default: slots auto) only
        assert m.confidence is None
        return
    assert fitted is not None and fitted["gguf_sha256"] == m.gguf_sha256
    assert m.confidence is not None and set(fitted["kinds"]) == set(KINDS)
    for kind in KINDS:
        curve = m.confidence.for_kind(kind)
        assert (curve.a, curve.b) == (fitted["kinds"][kind]["a"], fitted["kinds"][kind]["b"])
    assert set(fitted["sets"]) == {"authored", "boundary", "single"}  # never the held-out set


AUTO_MEASURED = next(m for m in DEFAULTS if m.model == "qwen2.5-1.5b" and m.slots == "auto")


def test_every_answer_of_a_measured_default_has_its_curves_confidence():
    answers = _ask(AUTO_MEASURED.gguf_sha256, AUTO, "auto")
    validate_records([dict(a.record) for a in answers.values()])
    curves = AUTO_MEASURED.confidence
    assert curves is not None
    for name, a in answers.items():
        block = a.record["confidence"]
        curve = curves.for_kind(KIND[name])
        p = list(a.probabilities.values())  # the acting readout: corrected where the kind's method is not none
        peak = score_confidence(p) if KIND[name] == "score" else choice_confidence(p)
        assert block["peakedness"] == peak and block["value"] == curve(peak) == a.confidence
        assert (block["curve"]["a"], block["curve"]["b"], block["curve"]["kind"]) == (curve.a, curve.b, KIND[name])
        assert block["curve"]["report"] == CONFIDENCE_REPORT and block["curve"]["slots"] == "auto"
        assert answers.to_json()[name]["confidence"] == a.confidence
        assert ("calibrated" in a.record) == (method_for(AUTO_MEASURED.method, KIND[name]) != "none")


@pytest.mark.parametrize("label_free", ["none", "rotations"])
def test_a_named_method_keeps_the_peakedness_the_curve_was_not_fitted_on(label_free):
    answers = _ask(AUTO_MEASURED.gguf_sha256, label_free, "auto")
    for name, a in answers.items():
        assert "confidence" not in a.record
        p = list(a.probabilities.values())
        assert a.confidence == (score_confidence(p) if KIND[name] == "score" else choice_confidence(p))
