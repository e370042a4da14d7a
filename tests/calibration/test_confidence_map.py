"""The confidence curve (scorer/calibration/confidence_map.py): ``σ(a + b·x)`` with ``b ≥ 0``, fitted by maximum
likelihood (it finds the curve that made the rows), flat at the rows' accuracy when peakedness says nothing,
monotone and inside (0, 1), and cross-fitted without each row's group."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scorer.calibration.confidence_map import KINDS, ConfidenceMap, cross_fitted, cross_fitted_by_kind, fit, fit_by_kind


def test_the_fit_finds_the_curve_the_rows_were_drawn_from():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, 20000)
    truth = ConfidenceMap(-1.0, 3.0)
    y = rng.uniform(0, 1, len(x)) < np.array([truth(v) for v in x])
    got = fit(x.tolist(), y.tolist())
    assert got.a == pytest.approx(-1.0, abs=0.1) and got.b == pytest.approx(3.0, abs=0.2)


def test_peakedness_that_says_nothing_or_the_wrong_thing_gives_the_rows_accuracy():
    x = [0.1, 0.2, 0.8, 0.9, 0.15, 0.85]
    y = [True, True, False, False, True, False]  # the surer, the more often wrong
    got = fit(x, y)
    assert got.b == 0.0 and got(0.0) == pytest.approx(0.5) and got(1.0) == pytest.approx(0.5)


def test_rows_that_separate_still_give_a_finite_curve():
    got = fit([0.0, 0.1, 0.9, 1.0], [False, False, True, True])
    assert math.isfinite(got.a) and math.isfinite(got.b) and got(1.0) > 0.9 > 0.1 > got(0.0)


def test_the_curve_is_monotone_and_inside_zero_one_even_far_out():
    m = ConfidenceMap(-0.23, 3.03)
    values = [m(x) for x in np.linspace(0, 1, 51)]
    assert values == sorted(values) and all(0.0 < v < 1.0 for v in values)
    assert 0.0 <= ConfidenceMap(-800.0, 0.0)(0.5) < 1e-300  # no overflow either way
    assert ConfidenceMap(800.0, 1.0)(1.0) == 1.0


@pytest.mark.parametrize("a,b", [(0.0, -0.1), (math.nan, 1.0), (0.0, math.inf)])
def test_a_curve_must_be_finite_and_rising(a, b):
    with pytest.raises(ValueError, match=r"finite a and b >= 0"):
        ConfidenceMap(a, b)


def test_each_row_is_judged_by_the_curve_fitted_without_its_group():
    x = [0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6]
    y = [False, True, False, True, True, True, False, False]
    groups = ["g1", "g1", "g2", "g2", "g3", "g3", "g4", "g4"]
    got = cross_fitted(x, y, groups)
    rest = [i for i, g in enumerate(groups) if g != "g2"]
    without_g2 = fit([x[i] for i in rest], [y[i] for i in rest])
    assert got[2] == without_g2(0.2) and got[3] == without_g2(0.8)
    assert got[0] != fit(x, y)(0.1)  # not the curve fitted on every row


@pytest.mark.parametrize("x,y", [([0.5], [True]), ([0.1, 0.2], [True])])
def test_a_fit_needs_two_rows_and_one_outcome_each(x, y):
    with pytest.raises(ValueError, match=r"two or more rows"):
        fit(x, y)


def test_each_kind_gets_the_curve_its_own_rows_make():
    rng = np.random.default_rng(11)
    truth = {"choice": ConfidenceMap(-1.0, 3.0), "score": ConfidenceMap(0.5, 1.0), "yesno": ConfidenceMap(0.0, 4.0)}
    kinds = [k for k in KINDS for _ in range(8000)]
    x = rng.uniform(0, 1, len(kinds))
    y = rng.uniform(0, 1, len(kinds)) < np.array([truth[k](v) for k, v in zip(kinds, x, strict=True)])
    got = fit_by_kind(x.tolist(), y.tolist(), kinds)
    for k in KINDS:
        assert got.for_kind(k).a == pytest.approx(truth[k].a, abs=0.15)
        assert got.for_kind(k).b == pytest.approx(truth[k].b, abs=0.3)
    with pytest.raises(ValueError, match="unknown kind of question 'ids'"):
        got.for_kind("ids")


def test_a_kind_is_cross_fitted_without_the_rows_group_and_without_the_other_kinds():
    x = [0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.5, 0.95, 0.05, 0.5]
    y = [False, True, False, True, True, True, False, False, True, True, False, False]
    groups = ["g1", "g1", "g2", "g2", "g3", "g3", "g1", "g2", "g3", "g1", "g2", "g3"]
    kinds = ["choice"] * 6 + ["yesno"] * 6
    got = cross_fitted_by_kind(x, y, groups, kinds)
    choice_rest = [i for i in range(6) if groups[i] != "g2"]
    assert got[2] == fit([x[i] for i in choice_rest], [y[i] for i in choice_rest])(0.2)
    yesno_rest = [i for i in range(6, 12) if groups[i] != "g1"]
    assert got[6] == fit([x[i] for i in yesno_rest], [y[i] for i in yesno_rest])(0.4)
    with pytest.raises(ValueError, match="one peakedness, outcome, group and kind per row"):
        cross_fitted_by_kind(x, y, groups, kinds[:-1])
