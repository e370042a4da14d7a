"""The wire confidence (scorer/decision/confidence.py) and how far it is trusted (scorer/evaluation/confidence.py):
the formulas against the values the System One servers document, its bounds and monotonicity, and the automation
table against a brute-force count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorer.decision.confidence import binary_confidence, choice_confidence, expected_level, score_confidence
from scorer.evaluation import metrics
from scorer.evaluation.confidence import automation, summary


def test_the_formulas_give_the_documented_values():
    assert choice_confidence([0.25, 0.25, 0.25, 0.25]) == 0.0 and choice_confidence([1.0, 0.0]) == 1.0
    assert choice_confidence([0.7, 0.2, 0.1]) == pytest.approx((0.7 - 1 / 3) / (1 - 1 / 3))
    assert score_confidence([0.0, 0.95, 0.05]) == pytest.approx(1 - 0.05 / (2 / 3))  # the vendor's example: 0.925
    assert score_confidence([1 / 3] * 3) == pytest.approx(0.0) and score_confidence([0.0, 0.0, 1.0]) == 1.0
    assert score_confidence([0.5, 0.0, 0.0, 0.0, 0.5]) == 0.0  # all the mass far from the mode: clipped at 0
    assert expected_level([0.1, 0.2, 0.7]) == pytest.approx(1.6) and binary_confidence(0.8) == pytest.approx(0.6)
    assert choice_confidence([1.0]) == score_confidence([1.0]) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.001, 1.0), min_size=2, max_size=12))
def test_confidence_is_in_the_unit_interval_and_monotone_in_the_top_probability(raw):
    p = [x / sum(raw) for x in raw]
    c = choice_confidence(p)
    assert 0.0 <= c <= 1.0 and 0.0 <= score_confidence(p) <= 1.0
    top = max(range(len(p)), key=lambda i: p[i])
    more = [x * 0.5 for x in p]
    more[top] += 0.5  # more mass on the top option
    assert choice_confidence(more) >= c - 1e-12


def _table(conf: list[float], correct: list[bool]) -> metrics.Table:
    labels = [metrics.Label(f"r{i}", "yes", "f", f"g{i}", ("yes", "no")) for i in range(len(conf))]
    t = metrics.Table(labels, ["ok"] * len(conf), ["yes" if c else "no" for c in correct],
                      [np.array([0.6, 0.4])] * len(conf), [np.array([0.0, 0.0])] * len(conf), np.zeros(len(conf)),
                      np.zeros(len(conf)))
    t.conf = np.array(conf)
    return t


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=30))
def test_automation_is_the_largest_most_confident_prefix_within_the_error_budget(rows):
    t = _table([c for c, _ in rows], [ok for _, ok in rows])
    order = sorted(range(len(rows)), key=lambda i: -rows[i][0])  # stable, as numpy's stable argsort
    for a in automation(t):
        best = max((k for k in range(1, len(rows) + 1)
                    if sum(not rows[i][1] for i in order[:k]) / k <= a["max_error"] + 1e-12), default=0)
        assert a["rows"] == best


def test_summary_counts_the_high_confidence_answers():
    t = _table([0.95, 0.92, 0.5, 0.1], [True, False, True, False])
    s = summary(t)
    assert s["high"] == {"threshold": 0.9, "rows": 2, "share": 0.5, "accuracy": 0.5}
    assert sum(b["n"] for b in s["reliability"]) == 4 and s["automation"][0]["rows"] == 1
