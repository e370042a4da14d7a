"""Temperature scaling: the fit recovers a known temperature, minimises NLL, folds are group-disjoint,
and no path ever changes the argmax."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scorer.calibration import temperature as calibrate
from scorer.evaluation import metrics
from scorer.evaluation.metrics import Label


def _sample(n: int, true_t: float, seed: int = 3, k: int = 3) -> tuple[list[np.ndarray], np.ndarray]:
    """Logits and labels drawn from softmax(logits / true_t): the right temperature is true_t."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 3.0, (n, k))
    y = np.array([rng.choice(k, p=calibrate.scale(row, true_t)) for row in z])
    return list(z), y


@pytest.mark.parametrize("true_t", [0.5, 1.0, 4.0])
def test_fit_recovers_a_known_temperature(true_t):
    z, y = _sample(4000, true_t)
    fit = calibrate.fit_temperature(z, y)
    assert fit.temperature == pytest.approx(true_t, rel=0.1)
    assert not fit.at_bound and fit.rows == 4000
    assert fit.nll_after <= fit.nll_before + 1e-12


def test_fit_is_the_nll_minimum():
    z, y = _sample(500, 2.0, seed=11)
    fit = calibrate.fit_temperature(z, y)
    mat, yy = calibrate._matrix(z, y)
    for t in (fit.temperature * 1.01, fit.temperature / 1.01, 1.0):
        assert calibrate._mean_nll(mat, yy, t) >= fit.nll_after - 1e-12


def test_separable_data_runs_to_the_lower_bound():
    z = [np.array([5.0, 0.0]), np.array([0.0, 4.0])]
    fit = calibrate.fit_temperature(z, np.array([0, 1]))
    assert fit.at_bound and fit.temperature == pytest.approx(calibrate.T_MIN)


def test_ragged_option_counts():
    z = [np.array([2.0, 0.0]), np.array([0.0, 1.0, 0.5, -1.0]), np.array([1.0, 1.5, 0.0])]
    y = np.array([1, 1, 0])
    fit = calibrate.fit_temperature(z, y)
    direct = np.mean([-math.log(calibrate.scale(r, fit.temperature)[i]) for r, i in zip(z, y, strict=True)])
    assert fit.nll_after == pytest.approx(direct)


def _table(n_groups: int = 10, seed: int = 5) -> metrics.Table:
    rng = np.random.default_rng(seed)
    labels, recs = [], []
    for g in range(n_groups):
        for v in range(3):
            rid = f"g{g}-{v}"
            z = rng.normal(0, 4, 3)
            p = calibrate.scale(z, 1.0)
            labels.append(Label(rid, ["a", "b", "c"][rng.integers(3)], "f", f"g{g}", ("a", "b", "c")))
            recs.append({"id": rid, "option_ids": ["a", "b", "c"], "probabilities": list(p), "option_logits": list(z),
                         "choice": ["a", "b", "c"][int(np.argmax(z))], "timing": {"total_s": 0.1}})
    return metrics.align(labels, recs)[0]


def test_group_folds_are_deterministic_balanced_and_disjoint():
    groups = [f"g{i}" for i in range(23) for _ in range(3)]
    a = calibrate.group_folds(groups, 5)
    assert a == calibrate.group_folds(list(reversed(groups)), 5)
    sizes = np.bincount(list(a.values()))
    assert sizes.max() - sizes.min() <= 1 and len(a) == 23


def test_out_of_fold_keeps_argmax_and_reports_before_after():
    t = _table()
    oof = calibrate.out_of_fold(t, 5, reps=50)
    assert oof["argmax_unchanged"] is True
    assert oof["before"]["accuracy"]["value"] == oof["after"]["accuracy"]["value"]
    assert len(oof["per_fold"]) == 5
    held = [g for f in oof["per_fold"] for g in f["groups"]]
    assert sorted(held) == sorted({lb.group for lb in t.labels})  # every group held out exactly once
    # Overconfident logits (std 4 on random labels): out-of-fold T > 1 and NLL improves.
    assert all(f["temperature"] > 1 for f in oof["per_fold"])
    assert oof["after"]["nll"]["value"] < oof["before"]["nll"]["value"]


@pytest.mark.parametrize("t", [0.01, 0.3, 1.0, 7.0, 100.0])
def test_scaled_table_never_changes_argmax(t):
    tab = _table(seed=9)
    s = calibrate.scaled_table(tab, t)
    for a, b in zip(tab.probs, s.probs, strict=True):
        assert int(np.argmax(a)) == int(np.argmax(b))
    assert np.array_equal(tab.correct, s.correct)


def _record(z: list[float], choice: str | None) -> dict:
    p = calibrate.scale(np.array(z), 1.0)
    return {"schema": "semif-record-v1", "id": "r", "option_ids": ["x", "y", "z"], "probabilities": list(p),
            "option_logits": z, "choice": choice, "margin": 0.0, "tie": choice is None,
            "score_kind": "uncalibrated conditional option score", "temperature": None}


@pytest.mark.parametrize("t", [0.05, 0.5, 2.0, 50.0])
def test_apply_temperature_keeps_choice_and_records_t(t):
    r = _record([1.0, 3.0, -2.0], "y")
    out = calibrate.apply_temperature(r, t)
    assert out["choice"] == "y" and out["temperature"] == t
    assert out["option_logits"] == r["option_logits"]
    assert sum(out["probabilities"]) == pytest.approx(1.0)
    assert int(np.argmax(out["probabilities"])) == 1
    assert out["score_kind"].startswith("temperature-scaled")
    p = sorted(out["probabilities"], reverse=True)
    assert out["margin"] == pytest.approx(p[0] - p[1])
    with pytest.raises(ValueError, match="already"):
        calibrate.apply_temperature(out, t)


def test_apply_temperature_keeps_a_tie_and_refuses_bad_t():
    r = _record([2.0, 2.0, 0.0], None)
    out = calibrate.apply_temperature(r, 3.0)
    assert out["choice"] is None and out["tie"] is True
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            calibrate.apply_temperature(r, bad)
