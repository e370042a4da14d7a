"""``slots="auto"``: a yes/no question read as ``json`` reads it (the answer asked for as JSON, each quoted id scored
after the prefilled ``{"answer":``), every other question by letters (numbers past 16 options) — and for weights
measured so (qwen2.5-1.5b), a choice question as ``json`` too (``auto:choice=json``), a score question by letters.

Unit tests on the fake backend: the per-question resolution, a mixed run equal row for row to a ``json`` run and
a ``letters`` run of the same rows (the independent paths), auto per weights (the fake under catalogued weights), the
default (letters) and the refusals naming ``slots``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from fakes import FakeBackend, WeighedFake, row_of

from scorer import Scorer
from scorer.calibration.label_free_defaults import DEFAULTS, auto_slots
from scorer.core.checks import AUTO_CHOICE_JSON, SLOTS, OptionError, check_slots, check_slots_backend
from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import JSON_PROMPT_VERSION, PROMPT_VERSION, slots_for
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import DEFAULT_SLOTS, ScorerOptions, default_slots

YES_NO = (Option("yes", "Yes"), Option("no", "No"))
TEAMS = (Option("billing", "Billing"), Option("tech", "Technical support"), Option("legal", "Legal"))
LEVELS = (Option("low", "Can wait"), Option("medium", "Today"), Option("high", "Now"))
STATES = ["I was charged twice, refund me.", "My router keeps dropping the connection."]


def _rows() -> list[Decision]:
    out = []
    for i, s in enumerate(STATES):
        out += [Decision(f"s{i}-refund", s, "Does the customer ask for a refund?", YES_NO, {"type": "yesno"}),
                Decision(f"s{i}-team", s, "Which team should answer?", TEAMS, {}),
                Decision(f"s{i}-swapped", s, "Is the customer angry?", YES_NO[::-1], {}),
                Decision(f"s{i}-urgency", s, "How urgent is it?", LEVELS, {}, type="score")]
    return out


def test_auto_reads_yes_no_as_json_and_the_rest_by_letters() -> None:
    assert "auto" in SLOTS
    assert slots_for("auto", 2, ["yes", "no"]) == "json"
    assert slots_for("auto", 2, ["no", "yes"]) == "json"
    assert slots_for("auto", 3, ["yes", "no", "unknown"]) == "letters"
    assert slots_for("auto", 2, ["Yes", "No"]) == "letters"  # ids are compared exactly: the words SemIf scores
    assert slots_for("auto", 17, [f"o{i}" for i in range(17)]) == "codes"
    assert slots_for("auto", 3, ["billing", "tech", "legal"], "choice") == "letters"
    assert slots_for("letters", 2, ["yes", "no"]) == "letters"  # the other slots as asked


def test_auto_choice_json_reads_choice_questions_as_json_and_score_questions_by_letters() -> None:
    assert AUTO_CHOICE_JSON not in SLOTS and check_slots(AUTO_CHOICE_JSON) == AUTO_CHOICE_JSON  # not a --slots choice
    assert slots_for(AUTO_CHOICE_JSON, 2, ["no", "yes"], "score") == "json"  # yes and no are a yes/no question
    assert slots_for(AUTO_CHOICE_JSON, 3, ["yes", "no", "unknown"]) == "json"
    assert slots_for(AUTO_CHOICE_JSON, 3, ["billing", "tech", "legal"], "choice") == "json"
    assert slots_for(AUTO_CHOICE_JSON, 16, [f"o{i}" for i in range(16)]) == "json"
    assert slots_for(AUTO_CHOICE_JSON, 17, [f"o{i}" for i in range(17)]) == "codes"  # numbered, as measured to 255
    assert slots_for(AUTO_CHOICE_JSON, 3, ["low", "medium", "high"], "score") == "letters"
    assert slots_for(AUTO_CHOICE_JSON, 17, [f"l{i}" for i in range(17)], "score") == "codes"


def test_auto_follows_the_weights() -> None:
    """Only weights whose study found choice questions right more often as JSON answers read them so: qwen2.5-1.5b,
    not qwen2.5-0.5b (letters there) nor weights nothing was measured on."""
    choice_json = {m.model for m in DEFAULTS if m.slots == "auto" and m.choice == "json"}
    assert choice_json == {"qwen2.5-1.5b"}
    by_model = {m.model: m.gguf_sha256 for m in DEFAULTS}
    assert auto_slots({"gguf_sha256": by_model["qwen2.5-1.5b"]}) == AUTO_CHOICE_JSON
    assert auto_slots({"gguf_sha256": by_model["qwen2.5-0.5b"]}) == "auto"
    assert auto_slots({"gguf_sha256": None}) == auto_slots({}) == "auto"

    def readouts(backend: FakeBackend, slots: str = "auto") -> tuple[dict[str, str], dict]:
        with Scorer(backend=backend, slots=slots) as sc:
            recs = [r.record for r in sc.decide_many([row_of(d) for d in _rows()[:4]])]
        return {r["id"]: r["slots"]["readout"] for r in recs}, recs[1]  # the team question's record

    got, first = readouts(WeighedFake(by_model["qwen2.5-1.5b"]))
    assert got == {"s0-refund": "json", "s0-team": "json", "s0-swapped": "json", "s0-urgency": "letters"}
    named, named_first = readouts(WeighedFake(by_model["qwen2.5-1.5b"]), AUTO_CHOICE_JSON)
    assert named == got and named_first["run"]["config_sha256"] == first["run"]["config_sha256"]
    assert named_first["calibrated"]["label_free"] == first["calibrated"]["label_free"]  # auto's measured default
    assert readouts(WeighedFake(by_model["qwen2.5-0.5b"]))[0] == {
        "s0-refund": "json", "s0-team": "letters", "s0-swapped": "json", "s0-urgency": "letters"}
    assert readouts(FakeBackend())[0]["s0-team"] == "letters"


@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_a_mixed_run_equals_the_json_and_letters_runs_row_for_row(mode: str) -> None:
    rows = _rows()
    b = FakeBackend()
    run = {"config_sha256": "test"}

    def records(slots: str) -> dict[str, dict]:
        items = prepare(b, rows, with_prefix=mode != "direct", slots=slots)
        return {r["id"]: r for r in score_items(b, items, mode, run)}

    auto, js, letters = records("auto"), records("json"), records("letters")
    for d in rows:
        ref = js[d.id] if {o.id for o in d.options} == {"yes", "no"} else letters[d.id]
        got = auto[d.id]
        assert got["prompt_version"] == ref["prompt_version"]
        assert got["slots"]["readout"] == ref["slots"]["readout"]
        assert got["signature"] == ref["signature"]
        np.testing.assert_array_equal(got["probabilities"], ref["probabilities"])
    assert auto["s0-refund"]["prompt_version"] == JSON_PROMPT_VERSION
    assert auto["s0-refund"]["slots"]["normalisation"] == "sum"  # score_items' default, as auto's runs have it
    assert auto["s0-team"]["prompt_version"] == PROMPT_VERSION
    assert auto["s0-urgency"]["prompt_version"] == PROMPT_VERSION


def test_the_default_is_auto_where_it_can_apply_and_letters_where_it_cannot() -> None:
    assert DEFAULT_SLOTS == "auto" and ScorerOptions.slots is None  # None: a preset may fill it
    assert Scorer(backend=FakeBackend()).slots == "auto"
    assert Scorer("smollm2-135m", "llamacpp").slots == "auto"
    assert Scorer("smollm2-135m", "torch", slots="letters").slots == "letters"
    assert Scorer("smollm2-135m", "openai", base_url="http://127.0.0.1:9").slots == "letters"

    class OnePosition(FakeBackend):
        scores_continuations = False

    assert Scorer(backend=OnePosition()).slots == "letters"
    # With a calibration file (its signatures name one prompt version) a scorer not told its slots reads letters:
    # tests/api/test_api.py's prior-file test holds its records equal to `semif score --calibration`'s.
    assert default_slots(True, calibration=True) == "letters" == default_slots(False, calibration=False)


def test_ask_answers_every_type_under_auto() -> None:
    s = Scorer(backend=FakeBackend(), slots="auto")
    got = s.ask(STATES[0], {"refund": {"type": "yesno", "question": "Refund?"},
                            "team": {"type": "choice", "question": "Team?", "options": {"billing": "Billing",
                                                                                        "tech": "Tech"}},
                            "urgency": {"type": "score", "question": "Urgency?", "options": ["low", "high"]}})
    readouts = {r["id"].split("/")[-1]: r["slots"]["readout"] for r in got.records}
    assert sorted(readouts.values()) == ["json", "letters", "letters"]
    assert got["refund"].record["slots"]["normalisation"] == "sum"  # auto's default, json answers included
    assert 0.0 <= got["refund"].p_yes <= 1.0


def test_auto_with_a_calibration_file_or_the_openai_backend_is_refused_naming_slots(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="slots"):
        check_slots_backend("auto", "openai")
    with pytest.raises(OptionError, match="slots"):
        check_slots_backend(AUTO_CHOICE_JSON, "openai")
    from scorer.scoring.options import checked_config_parts

    class Cal:
        source: ClassVar[dict[str, str]] = {"sha256": "x"}

    with pytest.raises(OptionError, match="slots: auto reads each question in one of two prompts"):
        checked_config_parts({}, _rows(), {}, "direct", 4096, calibration=Cal(), slots="auto")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="slots: auto reads each question in one of two prompts"):
        checked_config_parts({}, _rows(), {}, "direct", 4096, calibration=Cal(),  # type: ignore[arg-type]
                             slots=AUTO_CHOICE_JSON)


def test_rows_keep_their_row_form() -> None:
    # the fixture rows are valid input rows (the API validates what the faces send)
    s = Scorer(backend=FakeBackend(), slots="auto")
    recs = s.decide_many([row_of(d) for d in _rows()])
    assert [r.record["slots"]["readout"] for r in recs] == ["json", "letters", "json", "letters"] * 2
