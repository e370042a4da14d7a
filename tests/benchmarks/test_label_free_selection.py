"""benchmarks/label_free_selection.py: the rule picks per kind the method with the best mean vote (ties to the method
listed first, the cheaper), leaving a family out picks from the others alone, and the committed selection reports are
what the rule makes of their committed studies' records (re-run here, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import label_free_selection as sel
from scorer.calibration.label_free import METHODS

ROOT = Path(__file__).resolve().parents[2]


def _votes(**by_group: dict[str, float]) -> dict[sel.Group, dict[str, float]]:
    return {("s", g, "choice"): {m: v.get(m, 0.0) for m in METHODS} for g, v in by_group.items()}


def test_the_best_mean_wins_and_a_tie_goes_to_the_cheaper():
    votes = _votes(a={"none": 0.5, "domain": 0.9}, b={"none": 0.5, "domain": 0.3})
    assert sel.pick(votes, list(votes), METHODS) == "domain"  # mean 0.6 against 0.5
    assert sel.pick(votes, list(votes), ("none", "rotations")) == "none"  # among the candidates only
    tie = _votes(a={"none": 0.6, "rotations": 0.6})
    assert sel.pick(tie, list(tie), METHODS) == "none"


def test_leaving_a_family_out_picks_from_the_others_alone():
    votes = _votes(a={"none": 0.9, "rotations": 0.1}, b={"rotations": 0.8}, c={"rotations": 0.7})
    assert sel.pick(votes, [("s", "b", "choice"), ("s", "c", "choice")], METHODS) == "rotations"
    assert sel.pick(votes, [("s", "a", "choice")], METHODS) == "none"


SELECTIONS = sorted(p.name for p in (ROOT / "data" / "results").glob("label-free-selection-*.json"))


@pytest.mark.parametrize("name", SELECTIONS)
def test_every_committed_selection_is_what_the_rule_makes_of_its_study(name, tmp_path):
    committed = json.loads((ROOT / "data" / "results" / name).read_text(encoding="utf-8"))
    out = tmp_path / name
    others = [f"--study-for={kind}={ROOT / path}" for kind, path in (committed.get("studies_for") or {}).items()]
    norm = ["--study-norm", committed["study_norm"]] if committed.get("study_norm") else []
    assert sel.main(["--study", str(ROOT / committed["study"]), *others, *norm, "--output", str(out)]) == 0
    again = json.loads(out.read_text(encoding="utf-8"))
    assert again["method"] == committed["method"] and again["picked"] == committed["picked"]
    assert again["sets"] == committed["sets"] and again["votes"] == committed["votes"]
