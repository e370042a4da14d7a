"""Metrics on hand-computed examples: accuracy, balanced accuracy, macro-F1, NLL, Brier, ECE, risk–coverage,
missing/invalid/tie conventions, group bootstrap determinism and paired comparison."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from scorer.core.errors import InputError
from scorer.evaluation import metrics
from scorer.evaluation.metrics import Label


def rec(rid: str, ids: list[str], probs: list[float], choice: str | bool | None = True,
        total_s: float = 1.0) -> dict[str, Any]:
    """A minimal record: ``choice=True`` means the argmax."""
    p = np.asarray(probs, dtype=float)
    ch = ids[int(np.argmax(p))] if choice is True else choice
    top2 = np.sort(p)[::-1][:2]
    return {"schema": "semif-record-v1", "id": rid, "option_ids": ids, "probabilities": list(p),
            "option_logits": list(np.log(np.maximum(p, 1e-300))), "choice": ch, "margin": float(top2[0] - top2[1]),
            "timing": {"total_s": total_s}, "extra": {}}


YN = ("yes", "no")


def lab(rid: str, label: str, family: str = "f", group: str | None = None, ids: tuple[str, ...] = YN) -> Label:
    return Label(rid, label, family, group or rid, ids)


def test_hand_computed_small_example():
    labels = [lab("a", "yes"), lab("b", "no"), lab("c", "yes"), lab("d", "no")]
    recs = [rec("a", ["yes", "no"], [0.9, 0.1]),   # right, conf .9
            rec("b", ["yes", "no"], [0.6, 0.4]),   # wrong, conf .6
            rec("c", ["yes", "no"], [0.3, 0.7]),   # wrong, conf .7
            rec("d", ["yes", "no"], [0.2, 0.8])]   # right, conf .8
    t, unl = metrics.align(labels, recs)
    assert unl == 0
    assert metrics.accuracy(t) == 0.5
    # recall(yes) = 1/2, recall(no) = 1/2
    assert metrics.balanced_accuracy(t) == pytest.approx(0.5)
    # yes: tp1 fp1 fn1 -> F1 .5; no: tp1 fp1 fn1 -> .5
    assert metrics.macro_f1(t) == pytest.approx(0.5)
    assert metrics.nll(t) == pytest.approx(-(math.log(.9) + math.log(.4) + math.log(.3) + math.log(.8)) / 4)
    briers = [2 * 0.1**2, 2 * 0.6**2, 2 * 0.7**2, 2 * 0.2**2]
    assert metrics.brier(t) == pytest.approx(sum(briers) / 4)
    # bins: .6 -> (.5,.6] acc 0; .7 -> (.6,.7] acc 0; .8 -> (.7,.8] acc 1; .9 -> (.8,.9] acc 1
    assert metrics.ece(t) == pytest.approx((0.6 + 0.7 + 0.2 + 0.1) / 4)
    rel = metrics.reliability(t)
    assert [r["n"] for r in rel] == [0, 0, 0, 0, 0, 1, 1, 1, 1, 0]
    assert rel[5]["confidence"] == pytest.approx(0.6) and rel[5]["accuracy"] == 0.0
    assert rel[0]["accuracy"] is None and rel[0]["gap"] is None


def test_bin_edges_are_right_closed():
    labels = [lab(str(i), "yes") for i in range(3)]
    recs = [rec("0", ["yes", "no"], [0.7, 0.3]), rec("1", ["yes", "no"], [0.5, 0.5], choice="yes"),
            rec("2", ["yes", "no"], [1.0, 0.0])]
    t, _ = metrics.align(labels, recs)
    assert [r["n"] for r in metrics.reliability(t)] == [0, 0, 0, 0, 1, 0, 1, 0, 0, 1]


def test_perfectly_calibrated_fake_has_zero_ece():
    # 10 rows at confidence .8, 8 right; 10 at .6, 6 right: ECE 0.
    labels, recs = [], []
    for i in range(10):
        labels.append(lab(f"h{i}", "yes" if i < 8 else "no"))
        recs.append(rec(f"h{i}", ["yes", "no"], [0.8, 0.2]))
    for i in range(10):
        labels.append(lab(f"m{i}", "no" if i < 6 else "yes"))
        recs.append(rec(f"m{i}", ["yes", "no"], [0.4, 0.6]))
    t, _ = metrics.align(labels, recs)
    assert metrics.accuracy(t) == pytest.approx(0.7)
    assert metrics.ece(t) == pytest.approx(0.0, abs=1e-12)


def test_badly_calibrated_fake():
    # confidence .99 everywhere, half right: ECE .49; NLL and Brier hand-computed.
    labels = [lab(str(i), "yes" if i % 2 == 0 else "no") for i in range(10)]
    recs = [rec(str(i), ["yes", "no"], [0.99, 0.01]) for i in range(10)]
    t, _ = metrics.align(labels, recs)
    assert metrics.ece(t) == pytest.approx(0.49)
    assert metrics.nll(t) == pytest.approx(-(math.log(0.99) + math.log(0.01)) / 2)
    assert metrics.brier(t) == pytest.approx((2 * 0.01**2 + 2 * 0.99**2) / 2)
    rel = metrics.reliability(t)
    assert rel[9]["n"] == 10 and rel[9]["gap"] == pytest.approx(0.5 - 0.99)


def test_three_class_brier_and_macro_f1_with_unlabelled_class_prediction():
    ids = ("a", "b", "c")
    labels = [lab("1", "a", ids=ids), lab("2", "a", ids=ids), lab("3", "b", ids=ids), lab("4", "b", ids=ids)]
    recs = [rec("1", list(ids), [0.5, 0.3, 0.2]),    # a right
            rec("2", list(ids), [0.1, 0.2, 0.7]),    # predicts c (never a label): miss of a
            rec("3", list(ids), [0.6, 0.3, 0.1]),    # predicts a: fp a, miss b
            rec("4", list(ids), [0.2, 0.5, 0.3])]    # b right
    t, _ = metrics.align(labels, recs)
    assert metrics.brier(t) == pytest.approx((0.25 + 0.09 + 0.04 + 0.81 + 0.04 + 0.49 + 0.36 + 0.49 + 0.01
                                              + 0.04 + 0.25 + 0.09) / 4)
    # a: tp1 fp1 fn1 -> 2/4; b: tp1 fp0 fn1 -> 2/3; c is not a label class.
    assert metrics.macro_f1(t) == pytest.approx((0.5 + 2 / 3) / 2)


def test_family_balanced_accuracy_averages_families_equally():
    labels = [lab("r1", "yes", "rule"), lab("r2", "yes", "rule"), lab("r3", "no", "rule"),
              lab("e1", "yes", "ev")]
    recs = [rec("r1", ["yes", "no"], [0.9, 0.1]), rec("r2", ["yes", "no"], [0.1, 0.9]),
            rec("r3", ["yes", "no"], [0.1, 0.9]), rec("e1", ["yes", "no"], [0.1, 0.9])]
    t, _ = metrics.align(labels, recs)
    # rule: recall yes 1/2, no 1/1 -> .75; ev: recall yes 0 -> 0; mean .375
    assert metrics.family_balanced_accuracy(t) == pytest.approx(0.375)
    # ignoring families: yes 1/3, no 1/1 -> 2/3
    assert metrics.balanced_accuracy(t) == pytest.approx(2 / 3)


def test_missing_invalid_and_tie_count_as_wrong():
    labels = [lab("ok", "yes"), lab("gone", "yes"), lab("bad", "yes"), lab("tie", "yes"), lab("sum", "no")]
    recs = [rec("ok", ["yes", "no"], [0.9, 0.1]),
            rec("bad", ["yes", "maybe"], [0.9, 0.1]),
            rec("tie", ["yes", "no"], [0.5, 0.5], choice=None),
            rec("sum", ["yes", "no"], [0.5, 0.2]),
            rec("stray", ["yes", "no"], [0.5, 0.5])]
    t, unl = metrics.align(labels, recs)
    assert unl == 1
    assert t.counts() == {"rows": 5, "scored": 2, "missing": 1, "invalid": 2, "ties": 1}
    assert t.status[0] == "ok" and t.status[1] == "missing" and t.status[3] == "tie"
    assert t.status[2].startswith("invalid") and t.status[4].startswith("invalid")
    assert list(t.correct) == [True, False, False, False, False]
    floor = -math.log(metrics.FLOOR_P)
    assert metrics.nll(t) == pytest.approx((-math.log(0.9) + 3 * floor - math.log(0.5)) / 5)
    assert metrics.brier(t) == pytest.approx((2 * 0.01 + 2 + 2 + 0.5 + 2) / 5)
    assert list(t.conf) == [0.9, 1.0, 1.0, 0.5, 1.0]


def test_alignment_is_by_option_id():
    labels = [Label("x", "b", "f", "x", ("a", "b", "c"))]
    t, _ = metrics.align(labels, [rec("x", ["c", "b", "a"], [0.2, 0.7, 0.1])])
    assert list(t.probs[0]) == pytest.approx([0.1, 0.7, 0.2])
    assert t.correct[0] and t.p_label[0] == pytest.approx(0.7)


def test_duplicate_record_is_an_error():
    with pytest.raises(InputError, match="duplicate"):
        metrics.align([lab("a", "yes")], [rec("a", ["yes", "no"], [.6, .4]), rec("a", ["yes", "no"], [.6, .4])])


def test_risk_coverage_hand_computed():
    labels = [lab(str(i), "yes") for i in range(8)]
    confs = [0.95, 0.9, 0.85, 0.8, 0.7, 0.65, 0.6, 0.55]
    right = [True, True, False, True, True, False, False, True]
    recs = [rec(str(i), ["yes", "no"], [c, 1 - c] if r else [1 - c, c])
            for i, (c, r) in enumerate(zip(confs, right, strict=True))]
    t, _ = metrics.align(labels, recs)
    rc = metrics.risk_coverage(t)
    assert [r["rows"] for r in rc] == [2, 4, 6, 8]
    assert [r["accuracy"] for r in rc] == pytest.approx([1.0, 0.75, 4 / 6, 5 / 8])
    assert rc[1]["min_confidence"] == pytest.approx(0.8) and rc[1]["risk"] == pytest.approx(0.25)


def _grouped(n_groups: int = 12) -> metrics.Table:
    labels, recs = [], []
    rng = np.random.default_rng(7)
    for g in range(n_groups):
        for v in range(3):
            rid = f"g{g}-{v}"
            p = float(rng.uniform(0.5, 1.0))
            labels.append(lab(rid, "yes" if (g + v) % 2 else "no", family=f"fam{g % 3}", group=f"g{g}"))
            recs.append(rec(rid, ["yes", "no"], [p, 1 - p] if rng.uniform() < 0.5 else [1 - p, p]))
    return metrics.align(labels, recs)[0]


def test_bootstrap_is_deterministic_and_resamples_whole_groups():
    t = _grouped()
    a, b = metrics.bootstrap(t, reps=200), metrics.bootstrap(t, reps=200)
    assert a == b
    c = metrics.bootstrap(t, reps=200, seed=1)
    assert c != a
    for k, v in a.items():
        assert v["ci_lo"] <= v["ci_hi"], k
    assert a["accuracy"]["value"] == metrics.accuracy(t)
    draws = metrics.bootstrap_draws(t.labels, reps=50)
    for idx in draws:
        assert len(idx) == t.n  # equal-size groups: every replicate has N rows
        groups = [t.labels[i].group for i in idx]
        for g in set(groups):
            assert groups.count(g) % 3 == 0  # a group comes whole, as often as it was drawn
    again = metrics.bootstrap_draws(t.labels, reps=50)
    assert all(np.array_equal(x, y) for x, y in zip(draws, again, strict=True))


def test_paired_comparison_flips_and_mcnemar():
    labels = [lab(str(i), "yes", group=f"g{i // 2}") for i in range(6)]
    a_recs = [rec(str(i), ["yes", "no"], [0.8, 0.2]) for i in range(6)]
    b_recs = [rec(str(i), ["yes", "no"], [0.3, 0.7] if i < 3 else [0.8, 0.2]) for i in range(6)]
    ta, tb = metrics.align(labels, a_recs)[0], metrics.align(labels, b_recs)[0]
    p = metrics.paired(ta, tb, reps=100)
    assert p["flips"] == 3 and p["flipped_ids"] == ["0", "1", "2"]
    assert p["a_only_correct"] == 3 and p["b_only_correct"] == 0
    assert p["mcnemar_exact_p"] == pytest.approx(0.25)  # 2 * (1/2)^3
    assert p["deltas"]["accuracy"]["delta"] == pytest.approx(-0.5)
    assert p["mean_total_variation"] == pytest.approx(0.25)  # .5 on half the rows
    assert metrics.paired(ta, ta, reps=50)["deltas"]["nll"]["ci_lo"] == 0.0


def test_labels_from_decisions_checks_the_label(tmp_path):
    f = tmp_path / "rows.jsonl"
    f.write_text('{"id":"a","state":"s","question":"q?","options":[{"id":"yes","description":"Yes"},'
                 '{"id":"no","description":"No"}],"label":"maybe"}\n')
    with pytest.raises(InputError, match="maybe"):
        metrics.labels_from_decisions(str(f))


def test_labels_from_data_files(data_dir):
    labs = metrics.labels_from_decisions(str(data_dir / "eval" / "authored.jsonl"))
    assert len(labs) == 136 and {lb.family for lb in labs} == {"evidence", "rule", "routing", "missing"}
    bnd = metrics.labels_from_decisions(str(data_dir / "eval" / "boundary.jsonl"))
    assert len(bnd) == 24 and {lb.family for lb in bnd} == {"boundary"}


def test_evaluate_report_shape():
    rep = metrics.evaluate(_grouped(), reps=50)
    assert set(rep["metrics"]) == set(metrics.HEADLINE)
    assert [f["family"] for f in rep["per_family"]] == ["fam0", "fam1", "fam2"]
    assert len(rep["reliability"]) == metrics.ECE_BINS and len(rep["risk_coverage"]) == 4
    assert rep["chance_accuracy"] == pytest.approx(0.5)


def test_macro_f1_is_averaged_within_then_across_families():
    # family r (yes/no): yes tp1 fn1, no tp1 fp1 -> F1 2/3 and 2/3; family k: one row per class, 3 classes,
    # 2 right and one predicted as another label class: a F1 1, b tp0 fn1 -> 0, c tp1 fp1 -> 2/3.
    ids = ("a", "b", "c")
    labels = [lab("r1", "yes", "r"), lab("r2", "yes", "r"), lab("r3", "no", "r"),
              Label("k1", "a", "k", "k1", ids), Label("k2", "b", "k", "k2", ids), Label("k3", "c", "k", "k3", ids)]
    recs = [rec("r1", ["yes", "no"], [0.9, 0.1]), rec("r2", ["yes", "no"], [0.2, 0.8]),
            rec("r3", ["yes", "no"], [0.3, 0.7]),
            rec("k1", list(ids), [0.8, 0.1, 0.1]), rec("k2", list(ids), [0.1, 0.2, 0.7]),
            rec("k3", list(ids), [0.1, 0.1, 0.8])]
    t, _ = metrics.align(labels, recs)
    fam_r = (2 / 3 + 2 / 3) / 2
    fam_k = (1 + 0 + 2 / 3) / 3
    assert metrics.macro_f1(t) == pytest.approx((fam_r + fam_k) / 2)
    per = {f["family"]: f["macro_f1"] for f in metrics.per_family(t)}
    assert per == pytest.approx({"k": fam_k, "r": fam_r})


# --- ROC AUC per family ------------------------------------------------------------------------------------------
def _pairwise_auc(s: list[float], pos: list[bool]) -> float:
    """Brute force: share of (positive, negative) pairs ordered right, ties one half."""
    p = [a for a, y in zip(s, pos, strict=True) if y]
    n = [a for a, y in zip(s, pos, strict=True) if not y]
    return sum((a > b) + 0.5 * (a == b) for a in p for b in n) / (len(p) * len(n))


def test_roc_auc_hand_computed_and_ties():
    assert metrics.roc_auc(np.array([0.9, 0.8, 0.3, 0.1]), np.array([1, 1, 0, 0])) == 1.0
    assert metrics.roc_auc(np.array([0.1, 0.8, 0.3, 0.9]), np.array([1, 1, 0, 0])) == 0.25  # 1 of 4 pairs
    # one tie between a positive and a negative counts one half: (1 + 1 + 0.5 + 1) / 4
    assert metrics.roc_auc(np.array([0.9, 0.4, 0.4, 0.1]), np.array([1, 1, 0, 0])) == pytest.approx(0.875)
    assert metrics.roc_auc(np.array([0.5, 0.6]), np.array([1, 1])) is None
    rng = np.random.default_rng(4)
    for _ in range(20):
        s = np.round(rng.uniform(size=15), 1)  # many ties
        y = rng.uniform(size=15) < 0.4
        if 0 < y.sum() < 15:
            assert metrics.roc_auc(s, y) == pytest.approx(_pairwise_auc(list(s), list(y)))


def test_auc_per_family_ranks_well_decides_badly():
    # every choice is "yes" (balanced accuracy 0.5) but p(yes) orders the rows perfectly: AUC 1
    labels = [lab(f"r{i}", "yes" if i < 4 else "no", group=f"g{i}") for i in range(8)]
    recs = [rec(f"r{i}", list(YN), [0.9 - 0.03 * i, 0.1 + 0.03 * i]) for i in range(8)]
    t, _ = metrics.align(labels, recs)
    assert metrics.family_balanced_accuracy(t) == 0.5
    (fam,) = metrics.auc_per_family(t, reps=50)
    assert fam["auc"] == 1.0 and fam["kind"] == "binary" and fam["classes"] == 2
    assert fam["ci_lo"] <= 1.0 <= fam["ci_hi"] and fam["valid_replicates"] <= 50


def test_auc_one_vs_rest_for_more_options_and_missing_rows():
    ids = ("a", "b", "c")
    labels = [lab("r1", "a", ids=ids), lab("r2", "b", ids=ids), lab("r3", "c", ids=ids), lab("r4", "a", ids=ids)]
    recs = [rec("r1", list(ids), [0.5, 0.3, 0.2]), rec("r2", list(ids), [0.2, 0.5, 0.3]),
            rec("r3", list(ids), [0.6, 0.1, 0.3])]  # r4 missing
    t, _ = metrics.align(labels, recs)
    (fam,) = metrics.auc_per_family(t, reps=20)
    # class a: scores .5 (pos) vs .2,.6 -> 0.5; class b: .5 vs .3,.1 -> 1; class c: .3 vs .2,.3 -> 0.75
    assert fam["auc"] == pytest.approx((0.5 + 1.0 + 0.75) / 3)
    assert fam["kind"].startswith("one-vs-rest") and fam["rows_without_probabilities"] == 1
    assert "auc_per_family" in metrics.evaluate(t, reps=10)
