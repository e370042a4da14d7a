"""``slots="auto"``: a yes/no or choice question read as ``json`` reads it (the answer asked for as JSON, each quoted
id scored after the prefilled ``{"answer":``), a score question by letters (numbers past 16 options, for a choice
question too).

Unit tests on the fake backend: the per-question resolution, a mixed run equal row for row to a ``json`` run and
a ``letters`` run of the same rows (the independent paths), the default (letters) and the refusals naming ``slots``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from fakes import FakeBackend, row_of

from scorer import Scorer
from scorer.core.checks import SLOTS, OptionError, check_slots_backend
from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import JSON_PROMPT_VERSION, PROMPT_VERSION, slots_for
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import DEFAULT_SLOTS, ScorerOptions, default_slots

YES_NO = (Option("yes", "Yes"), Option("no", "No"))
TEAMS = (Option("billing", "Billing"), Option("tech", "Technical support"), Option("legal", "Legal"))
STATES = ["I was charged twice, refund me.", "My router keeps dropping the connection."]


LEVELS = (Option("low", "Can wait"), Option("medium", "Today"), Option("high", "Now"))


def _rows() -> list[Decision]:
    out = []
    for i, s in enumerate(STATES):
        out += [Decision(f"s{i}-refund", s, "Does the customer ask for a refund?", YES_NO, {"type": "yesno"}),
                Decision(f"s{i}-team", s, "Which team should answer?", TEAMS, {}),
                Decision(f"s{i}-swapped", s, "Is the customer angry?", YES_NO[::-1], {}),
                Decision(f"s{i}-urgency", s, "How urgent is it?", LEVELS, {}, type="score")]
    return out


def test_auto_reads_yes_no_and_choice_as_json_and_score_by_letters() -> None:
    assert "auto" in SLOTS
    assert slots_for("auto", 2, ["yes", "no"]) == "json"
    assert slots_for("auto", 2, ["no", "yes"], "score") == "json"  # yes and no are a yes/no question to the model
    assert slots_for("auto", 3, ["yes", "no", "unknown"]) == "json"
    assert slots_for("auto", 3, ["billing", "tech", "legal"], "choice") == "json"
    assert slots_for("auto", 16, [f"o{i}" for i in range(16)]) == "json"
    assert slots_for("auto", 17, [f"o{i}" for i in range(17)]) == "codes"  # numbered past the letters, as before
    assert slots_for("auto", 3, ["low", "medium", "high"], "score") == "letters"
    assert slots_for("auto", 17, [f"l{i}" for i in range(17)], "score") == "codes"
    assert slots_for("letters", 2, ["yes", "no"]) == "letters"  # the other slots as asked


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
        ref = letters[d.id] if d.type == "score" else js[d.id]
        got = auto[d.id]
        assert got["prompt_version"] == ref["prompt_version"]
        assert got["slots"]["readout"] == ref["slots"]["readout"]
        assert got["signature"] == ref["signature"]
        np.testing.assert_array_equal(got["probabilities"], ref["probabilities"])
    assert auto["s0-refund"]["prompt_version"] == JSON_PROMPT_VERSION
    assert auto["s0-refund"]["slots"]["normalisation"] == "sum"  # score_items' default, as auto's runs have it
    assert auto["s0-team"]["prompt_version"] == JSON_PROMPT_VERSION
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
    assert readouts == {"refund": "json", "team": "json", "urgency": "letters"}
    assert got["refund"].record["slots"]["normalisation"] == "sum"  # auto's default, json answers included
    assert 0.0 <= got["refund"].p_yes <= 1.0


def test_auto_with_a_calibration_file_or_the_openai_backend_is_refused_naming_slots(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="slots"):
        check_slots_backend("auto", "openai")
    from scorer.scoring.options import checked_config_parts

    class Cal:
        source: ClassVar[dict[str, str]] = {"sha256": "x"}

    with pytest.raises(OptionError, match="slots: auto reads each question in one of two prompts"):
        checked_config_parts({}, _rows(), {}, "direct", 4096, calibration=Cal(), slots="auto")  # type: ignore[arg-type]


def test_rows_keep_their_row_form() -> None:
    # the fixture rows are valid input rows (the API validates what the faces send)
    s = Scorer(backend=FakeBackend(), slots="auto")
    recs = s.decide_many([row_of(d) for d in _rows()])
    assert [r.record["slots"]["readout"] for r in recs] == ["json", "json", "json", "letters"] * 2
