"""``codes``: the options numbered ``01`` … ``n`` and each number scored as a continuation of the prompt — how a run
that reads letters reads a question with more than 16 options (up to 255), and what ``--slots codes`` asks for any.

Unit tests on the fake backend (a character tokenizer: every number of two or more digits is a multi-token
continuation): every mode equals a fresh full-sequence log-likelihood computed independently (``score_fresh`` only);
a run mixing lettered and numbered questions returns its records in input order, resumed or not, with the numbers a
run of each kind alone gives; the records' check; the refusals. The real-model tests (SmolLM2-135M, torch and
llama.cpp) compare 40 numbered options with a brute-force full-sequence reference at the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fakes import FakeBackend
from test_sequence import fresh_loglik

from scorer import Scorer
from scorer.backends.base import Backend
from scorer.core.errors import InputError, ValidationError
from scorer.formats.records import check_record, validate_records
from scorer.formats.rows import MAX_OPTIONS, Decision, Option, codes
from scorer.formats.signature import readout_of
from scorer.prompting.demos import Demos, demo_of, prompt_for
from scorer.prompting.layouts import STATE_MAJOR_DEMOS_CODES_VERSION
from scorer.prompting.prompt import CODES_PROMPT_VERSION, render, slots_for
from scorer.scoring.exact import ExactPolicy
from scorer.scoring.file_run import run_score
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import ScoreConfig

MANY = tuple(Option(f"o{i}", f"catalogue item {i}") for i in range(20))
FEW = (Option("yes", "Yes"), Option("no", "No"))


def _rows() -> list[Decision]:
    """Lettered and numbered questions interleaved over two states (so the fast modes share each state)."""
    return [Decision("big1", "State one.", "Which item?", MANY, {}, "m:1"),
            Decision("small1", "State one.", "Is it broken?", FEW, {}, "m:2"),
            Decision("small2", "State two.", "Is it broken?", FEW, {}, "m:3"),
            Decision("big2", "State two.", "Which item?", MANY, {}, "m:4"),
            Decision("small3", "State two.", "Is it late?", FEW, {}, "m:5")]


def _records(decisions: list[Decision], mode: str, backend: Backend | None = None, skip: int = 0,
             slots: str = "letters", layout: str = "state-major", demos: Demos | None = None) -> list[dict[str, Any]]:
    b = backend or FakeBackend()
    items = prepare(b, decisions, with_prefix=mode != "direct", layout=layout, demos=demos, slots=slots)
    return list(score_items(b, items, mode, {"config_sha256": "test"}, skip))


def test_the_numbers_are_padded_so_none_begins_another():
    assert codes(3) == ("1", "2", "3") and codes(17)[:2] == ("01", "02") and codes(17)[-1] == "17"
    assert codes(MAX_OPTIONS)[0] == "001" and codes(MAX_OPTIONS)[-1] == "255" and MAX_OPTIONS == 255
    assert slots_for("letters", 16) == "letters" and slots_for("letters", 17) == "codes"
    assert slots_for("ids", 40) == "ids" and slots_for("sequence", 40) == "sequence"


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_every_mode_equals_a_fresh_full_sequence_log_likelihood(mode):
    b = FakeBackend()
    recs = _records(_rows(), mode, b)
    validate_records(recs)
    assert [r["id"] for r in recs] == [d.id for d in _rows()] and [r["run"]["index"] for r in recs] == list(range(5))
    for d, r in zip(_rows(), recs, strict=True):
        p = render(b.tokenizer, d)
        if len(d.options) <= 16:
            assert r["slots"]["readout"] == "letters" and r["letters"] == ["A", "B"]
            continue
        assert r["slots"]["readout"] == "codes" and r["prompt_version"] == CODES_PROMPT_VERSION
        assert r["letters"] == r["slots"]["texts"] == list(codes(20)) and "\n20. catalogue item 19" in p.text
        assert "Reply with the option's number only." in p.text and readout_of(r) == "codes"
        want = [fresh_loglik(b, p.ids, list(c)) for c in p.continuations]
        assert [b.tokenizer.decode(list(c)) for c in p.continuations] == list(codes(20))
        assert np.allclose(np.concatenate(r["slots"]["token_logprobs"]), np.concatenate(want), atol=1e-9, rtol=0)
        sums = np.array([sum(w) for w in want])
        assert np.allclose(r["option_logits"], sums, atol=1e-9, rtol=0) and r["slots"]["normalisation"] == "sum"
        assert r["choice"] == d.option_ids[int(np.argmax(sums))]


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_a_mixed_run_gives_each_kind_the_numbers_of_a_run_of_its_own_and_resumes(mode):
    whole = _records(_rows(), mode)
    alone = {r["id"]: r for r in _records([d for d in _rows() if len(d.options) > 16], mode)
             + _records([d for d in _rows() if len(d.options) <= 16], mode)}
    for r in whole:
        assert r["probabilities"] == alone[r["id"]]["probabilities"]
    resumed = _records(_rows(), mode, skip=2)
    assert [r["id"] for r in resumed] == [d.id for d in _rows()[2:]]
    assert [r["probabilities"] for r in resumed] == [r["probabilities"] for r in whole[2:]]
    assert [r["run"]["index"] for r in resumed] == [2, 3, 4]


def test_slots_codes_numbers_any_question_and_layouts_and_demonstrations_follow():
    b = FakeBackend()
    recs = _records(_rows()[1:3], "shared", b, slots="codes")
    assert all(r["slots"]["readout"] == "codes" and r["letters"] == ["1", "2"] for r in recs)
    demos = Demos([demo_of(Decision(f"d{i}", f"Demo state {i}.", "Is it broken?", FEW, {"label": "yes"}, "d:1"),
                           "demos.jsonl", i + 1) for i in range(2)], 2, 0)
    for layout in ("state-major", "question-major"):
        recs = _records(_rows()[:2], "shared", b, layout=layout, demos=demos)
        validate_records(recs)
        p = prompt_for(b.tokenizer, _rows()[0], layout, demos, "letters")
        assert p.slots == "codes" and recs[0]["slots"]["readout"] == "codes"
        assert recs[1]["slots"]["readout"] == "letters"
        # the demonstrations of a numbered question are numbered too, and answered by number
        assert "1. Yes" in p.text and "\nA. Yes" not in p.text
        if layout == "state-major":
            assert p.version == STATE_MAJOR_DEMOS_CODES_VERSION
        else:
            assert "Answer with one number, 01 to 20." in p.text


def test_a_demonstration_with_more_options_than_letters_is_refused_for_a_lettered_row():
    demos = Demos([demo_of(Decision("big", "Demo.", "Which item?", MANY, {"label": "o3"}, "d:1"), "demos.jsonl", 1)],
                  1, 0)
    with pytest.raises(ValidationError, match=r"demonstration 'big' has 20 options, more than the 16 letters"):
        prompt_for(FakeBackend().tokenizer, _rows()[1], "state-major", demos, "letters")


def test_the_record_check_holds_the_numbers():
    rec = _records(_rows()[:1], "direct")[0]
    check_record(rec, "r", 1)
    with pytest.raises(InputError, match=r"field 'letters'.*numbered 1, 2"):
        check_record({**rec, "letters": ["A"] * 20}, "r", 1)
    bad = {**rec, "slots": {**rec["slots"], "readout": "letters"}}
    with pytest.raises(InputError, match=r"field 'letters'"):
        check_record(bad, "r", 1)  # 20 options cannot be lettered
    with pytest.raises(InputError, match=r"field 'slots.token_logprobs'"):
        check_record({**rec, "slots": {k: v for k, v in rec["slots"].items() if k != "token_logprobs"}}, "r", 1)


@pytest.mark.parametrize("what", ["--exact", "--permute"])
def test_what_reads_one_answer_position_refuses_a_numbered_question_by_name(tmp_path, what):
    cfg = ScoreConfig(mode="shared", run_parts={"input": "x"}, **({"exact": ExactPolicy()} if what == "--exact"
                                                                    else {"permute": 2}))
    with pytest.raises(ValidationError, match=rf"m:1: row 'big1' has 20 options, read as continuations \(readout "
                                              rf"codes\), which {what} does not combine with yet"):
        run_score(_rows(), FakeBackend(), tmp_path / "out.jsonl", cfg)
    assert run_score(_rows()[1:3], FakeBackend(), tmp_path / "ok.jsonl", cfg) == 2  # lettered rows only: as before


def test_the_api_reads_255_options_and_refuses_256():
    opts = {f"sku{i}": f"item {i}" for i in range(255)}
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        got = s.ask("A ticket.", {"item": {"type": "choice", "question": "Which?", "options": opts}})
        assert len(got["item"].probabilities) == 255 and got["item"].record["letters"][0] == "001"
        with pytest.raises(InputError, match=r"256 options \(expected 2 to 255 options\)"):
            s.ask("A ticket.", {"item": {"type": "choice", "question": "Which?",
                                         "options": {**opts, "one-more": "x"}}})


# --- the real model -----------------------------------------------------------------------------------------------
REAL_MANY = tuple(Option(f"c{i}", name) for i, name in enumerate(
    ["billing", "refunds", "shipping", "returns", "account access", "password reset", "privacy", "legal", "sales",
     "partnerships", "press", "careers", "technical fault", "app crash", "website down", "payment declined",
     "invoice copy", "tax question", "gift cards", "loyalty points", "store hours", "product question", "warranty",
     "repairs", "spare parts", "installation", "delivery delay", "wrong item", "damaged item", "missing item",
     "subscription", "cancellation", "upgrade", "downgrade", "feedback", "complaint", "compliment", "accessibility",
     "security report", "other"]))
REAL_ROWS = [Decision("r1", "I was charged twice for my order, please give me my money back.",
                      "Which department should handle this message?", REAL_MANY, {}, "mem:1"),
             Decision("r2", "The parcel arrived but the mug inside was broken.",
                      "Which department should handle this message?", REAL_MANY, {}, "mem:2")]
CODES_TOL = {"torch": 1e-4, "llamacpp": 0.0}
"""Largest |Δ| between a record's token log-probability and the fresh full-sequence one: the sequence readout's
bounds (tests/scoring/test_sequence.py SEQ_TOL, measured there), which this readout shares."""


def _check_real(backend: Backend, mode: str, seen_by_backend: dict[str, dict[tuple[int, ...], np.ndarray]]) -> None:
    recs = _records(REAL_ROWS, mode, backend)
    validate_records(recs)
    worst = 0.0
    for d, r in zip(REAL_ROWS, recs, strict=True):
        p = render(backend.tokenizer, d)
        assert r["slots"]["readout"] == "codes" and r["letters"][-1] == "40"
        # the fresh passes kept by the tokens they read: the 40 numbers start with 5 distinct digits, so 6 passes
        # per prompt instead of 80, each still a fresh pass over the whole sequence (and shared by both modes)
        seen = seen_by_backend.setdefault(backend.name, {})
        for c, lp in zip(p.continuations, r["slots"]["token_logprobs"], strict=True):
            worst = max(worst, float(np.max(np.abs(np.array(lp) - fresh_loglik(backend, p.ids, list(c), seen)))))
        assert 0.0 < r["allowed_token_mass"] <= 1.0 and abs(sum(r["probabilities"]) - 1.0) < 1e-6
    assert worst <= CODES_TOL[backend.name], worst


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_smollm2_torch_numbers_equal_the_brute_force_full_sequence_reference(smol_torch, fresh_seen, mode):
    _check_real(smol_torch, mode, fresh_seen)


@pytest.mark.slow
@pytest.mark.llamacpp
@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_smollm2_llamacpp_numbers_equal_the_brute_force_full_sequence_reference(smol_llamacpp, fresh_seen, mode):
    _check_real(smol_llamacpp, mode, fresh_seen)
