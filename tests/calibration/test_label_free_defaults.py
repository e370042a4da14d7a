"""The label-free default (scorer/calibration/label_free_defaults.py): ``auto`` applies the method measured for the
loaded weights and readout, exactly as naming that method would, says so in the record, and is the raw readout
(the run named as a plain one) for weights or readouts nothing was measured for; every measured default is the
one its committed study report names best on the authored set, for the weights the catalogue pins."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeBackend

from scorer import Scorer
from scorer.calibration.label_free import METHODS
from scorer.calibration.label_free_defaults import AUTO, DEFAULTS, find, resolve
from scorer.formats.records import validate_records
from scorer.models import store
from scorer.scoring.options import ScorerOptions

ROOT = Path(__file__).resolve().parents[2]
STATE = "My card was charged twice for order 1182 and I want the money back today."
QUESTIONS = {
    "team": {"type": "choice", "question": "Which team?", "options": {"billing": "payments", "tech": "bugs",
                                                                     "sales": "new orders"}},
    "refund": {"type": "yesno", "question": "Does the customer ask for a refund?"},
}
MEASURED = next(m for m in DEFAULTS if m.method != "none")


class WeighedFake(FakeBackend):
    """The fake model under the identity of catalogued weights (what ``auto`` keys on)."""

    def __init__(self, gguf_sha256: str | None) -> None:
        super().__init__()
        self.sha = gguf_sha256

    def model_info(self) -> dict[str, Any]:
        return {**super().model_info(), "gguf_sha256": self.sha}


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
        assert a["calibrated"]["estimator"] == MEASURED.method
        assert a["run"]["config_sha256"] == n["run"]["config_sha256"]  # the run is named by the method applied
        chosen = a["calibrated"]["label_free"]["chosen"]
        assert chosen["by"] == "auto" and chosen["measured"]["report"] == MEASURED.report
        assert chosen["measured"]["model"] == MEASURED.model
        assert n["calibrated"]["label_free"]["chosen"] == {"by": "option", "asked": MEASURED.method}


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
def test_every_measured_default_is_its_reports_best_on_authored_for_the_pinned_weights(m):
    assert m.gguf_sha256 == store.REGISTRY[m.model].sha256
    assert m.method in METHODS and find(m.gguf_sha256, m.slots) is m
    report = json.loads((ROOT / m.report).read_text(encoding="utf-8"))
    assert report["model"]["key"] == m.model and report["model"]["gguf_sha256"] == m.gguf_sha256
    assert report["slots"] == m.slots
    authored = report["sets"]["authored"]["methods"]
    best = max(authored, key=lambda k: authored[k]["balanced_accuracy"])
    want = best if authored[best]["balanced_accuracy"] > authored["none"]["balanced_accuracy"] else "none"
    assert m.method == want
    assert m.authored == (round(authored["none"]["balanced_accuracy"], 3),
                          round(authored[m.method]["balanced_accuracy"], 3))
    with gzip.open(ROOT / report["sets"]["authored"]["records"]["path"]) as records:  # its records are committed
        assert records.readline()
