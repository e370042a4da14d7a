"""Label-free calibration of one request (scorer/calibration/label_free.py, scorer/scoring/label_free.py): every method
gives a calibrated block equal to the same correction computed by hand from separately scored prompts (the
independent path), the raw readout is never changed, content-free priors are cached per question, a calibration file
that covers a question wins and the label-free one covers the rest, and bad values are field-named errors."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import FakeBackend, prior_for

from scorer import Scorer, YesNo
from scorer.calibration.label_free import CONTENT_FREE_STATES, METHODS, shuffled_state
from scorer.core.errors import SemifError
from scorer.formats.records import validate_records

STATE = "My card was charged twice for order 1182 and I want the money back today."
QUESTIONS = {
    "team": {"type": "choice", "question": "Which team?", "options": {"billing": "payments", "tech": "bugs",
                                                                     "sales": "new orders"}},
    "refund": {"type": "yesno", "question": "Does the customer ask for a refund?"},
    "urgency": {"type": "score", "question": "How urgent?", "options": ["low", "medium", "high", "now"]},
}
ROTATING = ("rotations", "position-prior", "rotations+content-free", "rotations+domain")


def _aligned(answer_probs: dict[str, float], ids: list[str]) -> np.ndarray:
    return np.array([answer_probs[i] for i in ids])


def _rotated_questions(shift: int) -> dict[str, dict]:
    out = {}
    for name, q in QUESTIONS.items():
        ids = list(q["options"]) if "options" in q else ["yes", "no"]
        descs = (q["options"] if isinstance(q.get("options"), dict) else {i: i for i in ids}) if "options" in q \
            else {"yes": "Yes", "no": "No"}
        k = shift % len(ids)
        order = ids[k:] + ids[:k]
        out[name] = {**q, "options": [{"id": i, "description": descs[i]} for i in order]}
    return out


def _by_hand(method: str, name: str) -> np.ndarray:
    """The correction of question ``name`` computed from prompts scored one request each (label_free none)."""
    ids = list(QUESTIONS[name].get("options", ["yes", "no"]))
    n = len(ids)
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", label_free="none") as s:
        rot = [_aligned(s.ask(STATE, {name: _rotated_questions(k)[name]})[name].probabilities, ids)
               for k in range(n)]
        cf = [[_aligned(s.ask(state, {name: _rotated_questions(k)[name]})[name].probabilities, ids)
               for state in CONTENT_FREE_STATES] for k in range(n)]
        dom = [_aligned(s.ask(shuffled_state(STATE, f"{name}/{j}"), {name: QUESTIONS[name]})[name].probabilities, ids)
               for j in range(2)]

    def norm(p):
        p = np.maximum(p, 1e-12)
        return p / p.sum()

    if method == "rotations":
        return norm(np.mean(rot, axis=0))
    if method == "content-free":
        return norm(rot[0] / np.mean(cf[0], axis=0))
    if method == "rotations+content-free":
        return norm(np.mean([norm(r / np.mean(c, axis=0)) for r, c in zip(rot, cf, strict=True)], axis=0))
    if method == "domain":
        return norm(rot[0] / np.mean(dom, axis=0))
    if method == "rotations+domain":
        return norm(norm(np.mean(rot, axis=0)) / np.mean(dom, axis=0))
    if method == "position-prior":  # by position: rotation k shows option (k + pos) % n at position pos
        served = [np.array([r[(k + pos) % n] for pos in range(n)]) for k, r in enumerate(rot)]
        prior = norm(np.mean(served, axis=0))
        fixed = [norm(sv / prior) for sv in served]
        return norm(np.mean([np.array([f[(j - k) % n] for j in range(n)]) for k, f in enumerate(fixed)], axis=0))
    raise AssertionError(method)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "none"])
def test_every_method_equals_the_correction_computed_by_hand_and_keeps_the_raw_readout(method):
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", label_free=method) as s:
        got = s.ask(STATE, QUESTIONS)
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", label_free="none") as s:
        raw = s.ask(STATE, QUESTIONS)
    validate_records(got.records)
    for name in QUESTIONS:
        rec, plain = got[name].record, raw[name].record
        assert rec["probabilities"] == plain["probabilities"]  # the raw readout is untouched
        block = rec["calibrated"]
        assert (block["method"], block["estimator"], block["level"]) == ("label-free", method, "request")
        ids = list(rec["option_ids"])
        assert np.allclose(block["probabilities"], _by_hand(method, name), atol=1e-9), (method, name)
        assert got[name].calibrated and got[name].final_choice == block["choice"]
        n = len(ids)
        want_prompts = (n - 1 if method in ROTATING else 0) + (2 if "domain" in method else 0) \
            + (len(CONTENT_FREE_STATES) * (n if "rotations" in method else 1) if "content-free" in method else 0)
        assert block["label_free"]["prompts"] == want_prompts


def test_content_free_priors_are_cached_per_question():
    backend = FakeBackend()
    with Scorer(backend=backend, slots="letters", mode="shared", label_free="content-free") as s:
        first = s.ask(STATE, QUESTIONS)
        passes = dict(backend.calls)
        again = s.ask("A different ticket: the app crashes when I log in.", QUESTIONS)
        more = {k: backend.calls[k] - passes[k] for k in passes}
    assert not any(a.record["calibrated"]["label_free"]["content_free_cached"] for a in first.values())
    assert all(a.record["calibrated"]["label_free"]["content_free_cached"] for a in again.values())
    assert all(a.record["calibrated"]["label_free"]["prompts"] == 0 for a in again.values())
    assert s.content_free_cache.hits == len(QUESTIONS) and s.content_free_cache.misses == len(QUESTIONS)
    assert more["prefill"] + more["fresh"] <= 2  # only the new state's own prompt was prefilled


def test_a_calibration_file_wins_where_it_covers_and_the_label_free_one_covers_the_rest():
    cal = prior_for(FakeBackend(), "Does the customer ask for a refund?")
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", calibration=cal, label_free="rotations") as s:
        got = s.ask(STATE, {"refund": YesNo("Does the customer ask for a refund?"),
                            "other": YesNo("Is the customer angry?")})
    assert got["refund"].record["calibrated"]["method"] == "prior"  # the file covered it
    assert got["other"].record["calibrated"]["method"] == "label-free"  # no error: corrected label-free
    validate_records(got.records)


def test_a_question_the_calibration_file_covers_costs_no_label_free_prompts(monkeypatch):
    import scorer.api as api

    asked: list[str] = []
    derive = api.derived_decisions
    monkeypatch.setattr(api, "derived_decisions", lambda method, ds, cache: asked.extend(d.id for d in ds)
                        or derive(method, ds, cache))
    cal = prior_for(FakeBackend(), "Does the customer ask for a refund?")
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", calibration=cal,
                label_free="rotations+content-free") as s:
        got = s.ask(STATE, {"refund": YesNo("Does the customer ask for a refund?"),
                            "other": YesNo("Is the customer angry?")})
    assert asked == ["other"]  # only the uncovered question's rotations and content-free prompts were made
    assert got["refund"].record["calibrated"]["method"] == "prior"
    assert got["other"].record["calibrated"]["estimator"] == "rotations+content-free"
    assert got["other"].record["calibrated"]["label_free"]["prompts"] == 1 + 3 * 2


def test_off_means_the_raw_readout_and_the_run_is_named_by_the_method():
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", label_free="none") as s:
        off = s.ask(STATE, QUESTIONS)
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared", label_free="rotations") as s:
        on = s.ask(STATE, QUESTIONS)
    assert all("calibrated" not in a.record for a in off.values())
    assert off["team"].record["run"]["config_sha256"] != on["team"].record["run"]["config_sha256"]


def test_a_bad_method_is_a_field_named_error():
    with pytest.raises(SemifError, match=r"label_free: 'guess' is not one of auto, none, rotations"):
        Scorer(backend=FakeBackend(), slots="letters", label_free="guess")
