"""The hand-written metrics (scorer/evaluation/metrics.py) and the temperature fit (scorer/calibration/temperature.py)
against
scikit-learn 1.9.1 and SciPy 1.17.1 (test-only dependencies, the ``dev`` extra), on random labelled runs.

Every row here has a valid record (the missing/invalid/tie conventions are SemIf's own, tested by hand in
tests/evaluation/test_metrics.py). Random probabilities never sit exactly on an ECE bin edge.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import optimize, special, stats
from sklearn import calibration as skcal
from sklearn import metrics as skm

from scorer.calibration import temperature as calibrate
from scorer.evaluation import metrics
from scorer.evaluation.metrics import Label

SEEDS = [1, 2, 3, 4, 5]
CLASSES = ("a", "b", "c", "d")


def _run(seed: int, n: int = 120, k: int = 4, families: int = 1) -> tuple[metrics.Table, dict[str, np.ndarray]]:
    """``n`` rows over ``k`` options with random logits, labels and families, aligned like a real run. Also
    the arrays scikit-learn gets: label and predicted class indices, probabilities, families."""
    rng = np.random.default_rng(seed)
    ids = CLASSES[:k]
    y = rng.integers(0, k, n)
    z = rng.normal(0.0, 1.5, (n, k))
    z[np.arange(n), y] += rng.normal(0.8, 1.0, n)  # better than chance, not perfect
    p = special.softmax(z, axis=1)
    fam = rng.integers(0, families, n)
    labels = [Label(f"r{i}", ids[y[i]], f"f{fam[i]}", f"g{i // 3}", ids) for i in range(n)]
    recs = [_record(f"r{i}", ids, p[i], z[i]) for i in range(n)]
    table, unlabelled = metrics.align(labels, recs)
    assert unlabelled == 0 and table.counts()["ties"] == 0
    return table, {"y": y, "pred": p.argmax(axis=1), "p": p, "z": z, "fam": fam}


def _record(rid: str, ids: tuple[str, ...], p: np.ndarray, z: np.ndarray) -> dict[str, Any]:
    top2 = np.sort(p)[::-1][:2]
    return {"id": rid, "option_ids": list(ids), "probabilities": p.tolist(), "option_logits": z.tolist(),
            "choice": ids[int(np.argmax(p))], "margin": float(top2[0] - top2[1]), "timing": {"total_s": 0.1}}


@pytest.mark.parametrize("seed", SEEDS)
def test_accuracy_and_balanced_accuracy(seed: int) -> None:
    t, a = _run(seed)
    assert metrics.accuracy(t) == pytest.approx(skm.accuracy_score(a["y"], a["pred"]), abs=1e-12)
    assert metrics.balanced_accuracy(t) == pytest.approx(skm.balanced_accuracy_score(a["y"], a["pred"]), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_family_balanced_accuracy_and_macro_f1_average_sklearn_per_family(seed: int) -> None:
    t, a = _run(seed, n=150, families=3)
    bal, f1 = [], []
    for f in range(3):
        m = a["fam"] == f
        y, pred = a["y"][m], a["pred"][m]
        bal.append(skm.balanced_accuracy_score(y, pred))
        f1.append(skm.f1_score(y, pred, labels=sorted(set(y)), average="macro", zero_division=0))
    assert metrics.family_balanced_accuracy(t) == pytest.approx(np.mean(bal), abs=1e-12)
    assert metrics.macro_f1(t) == pytest.approx(np.mean(f1), abs=1e-12)
    point = metrics.point_metrics(t)
    assert point["balanced_accuracy"] == pytest.approx(np.mean(bal), abs=1e-12)
    assert point["macro_f1"] == pytest.approx(np.mean(f1), abs=1e-12)


def test_macro_f1_with_a_predicted_class_that_is_never_a_label() -> None:
    # Class "d" is offered and predicted but never the label: it counts only as misses of the true classes.
    t, a = _run(7, n=90)
    keep = a["y"] != 3
    sub = metrics.subset(t, np.flatnonzero(keep))
    y, pred = a["y"][keep], a["pred"][keep]
    assert 3 in set(pred) and 3 not in set(y)
    want = skm.f1_score(y, pred, labels=sorted(set(y)), average="macro", zero_division=0)
    assert metrics.macro_f1(sub) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_nll_and_brier(seed: int) -> None:
    t, a = _run(seed)
    assert metrics.nll(t) == pytest.approx(skm.log_loss(a["y"], a["p"], labels=range(4)), abs=1e-9)
    want = skm.brier_score_loss(a["y"], a["p"], labels=range(4), scale_by_half=False)
    assert metrics.brier(t) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_ece_and_reliability_bins_match_sklearns_calibration_curve(seed: int) -> None:
    t, a = _run(seed, n=300)
    conf, correct = a["p"].max(axis=1), (a["pred"] == a["y"]).astype(int)
    acc, mean_conf = skcal.calibration_curve(correct, conf, n_bins=metrics.ECE_BINS, strategy="uniform")
    used = [r for r in metrics.reliability(t) if r["n"]]
    assert [r["accuracy"] for r in used] == pytest.approx(acc, abs=1e-12)
    assert [r["confidence"] for r in used] == pytest.approx(mean_conf, abs=1e-12)
    assert sum(r["n"] for r in used) == t.n
    want = sum(r["n"] / t.n * abs(x - c) for r, x, c in zip(used, acc, mean_conf, strict=True))
    assert metrics.ece(t) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_roc_auc_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 12, 200) / 12.0  # many ties
    positive = rng.random(200) < 0.35 + 0.4 * scores
    assert metrics.roc_auc(scores, positive) == pytest.approx(skm.roc_auc_score(positive, scores), abs=1e-12)
    assert metrics.roc_auc(scores, np.zeros(200, dtype=bool)) is None


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 1), (3, 3), (4, 11), (15, 2), (40, 61), (0, 30)])
def test_mcnemar_exact_is_scipys_two_sided_binomial_test(b: int, c: int) -> None:
    got = metrics._mcnemar_exact(b, c)
    want = 1.0 if b + c == 0 else stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert got == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_paired_reports_the_mcnemar_p_of_its_discordant_rows() -> None:
    ta, _ = _run(11)
    tb, _ = _run(12)
    tb = metrics.Table(ta.labels, tb.status, tb.choice, tb.probs, tb.logits, tb.seconds, tb.margin)
    out = metrics.paired(ta, tb, reps=20)
    b, c = out["a_only_correct"], out["b_only_correct"]
    assert b == int((ta.correct & ~tb.correct).sum()) and c == int((tb.correct & ~ta.correct).sum())
    assert out["mcnemar_exact_p"] == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


@pytest.mark.parametrize(("seed", "sharpen"), [(1, 1.0), (2, 3.0), (3, 0.3), (4, 1.7)])
def test_temperature_fit_finds_scipys_minimum(seed: int, sharpen: float) -> None:
    _, a = _run(seed, n=200)
    z = a["z"] * sharpen  # over- and under-confident logits
    rows = [z[i, : 2 + i % 3] for i in range(len(z))]  # 2–4 options per row
    y = np.minimum(a["y"], [len(r) - 1 for r in rows])

    def nll(log_t: float) -> float:
        return float(np.mean([-special.log_softmax(r / math.exp(log_t))[k] for r, k in zip(rows, y, strict=True)]))

    ref = optimize.minimize_scalar(nll, bounds=(math.log(calibrate.T_MIN), math.log(calibrate.T_MAX)),
                                   method="bounded", options={"xatol": 1e-10})
    fit = calibrate.fit_temperature(rows, y)
    assert math.log(fit.temperature) == pytest.approx(ref.x, abs=1e-4)
    assert fit.nll_after == pytest.approx(ref.fun, abs=1e-9) and fit.nll_before == pytest.approx(nll(0.0), abs=1e-12)
    assert not fit.at_bound
