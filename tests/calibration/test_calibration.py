"""Calibration logic with fakes: decision signatures, prior estimators, the NLL offset fit, lookup levels,
the calibrated block, calibration files (and their refusal), skew, and the committed v1 records."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from fakes import FakeBackend

from scorer.calibration import bias as bias_mod
from scorer.calibration import prior as prior_mod
from scorer.calibration.batch import mix_warnings
from scorer.calibration.core import Calibration, Entry, choice_of, load_calibration, write_calibration
from scorer.calibration.evaluate import out_of_fold
from scorer.core.errors import InputError
from scorer.evaluation import metrics
from scorer.evaluation.before_after import before_after
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import Decision, Option, load_decisions
from scorer.formats.signature import decision_signature, model_identity, record_signatures, signature_of
from scorer.scoring.file_run import run_score
from scorer.scoring.options import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "data" / "results" / "runs"
YN = (Option("yes", "Yes"), Option("no", "No"))


def rows(n: int, question: str = "Is it so?", options: tuple[Option, ...] = YN, family: str | None = "f",
         start: int = 0) -> list[Decision]:
    extra = {} if family is None else {"family": family}
    return [Decision(f"r{i}", f"case number {i}", question, options, dict(extra), f"mem:{i}")
            for i in range(start, start + n)]


def score(tmp_path: Path, decisions: list[Decision], name: str, backend: Any = None, **kw: Any) -> list[dict]:
    out = tmp_path / f"{name}.jsonl"
    run_score(decisions, backend or FakeBackend(), out,
              ScoreConfig(mode=kw.pop("mode", "direct"), run_parts={"input": name}, **kw))
    return read_records(out)


def sigs(recs: list[dict]) -> list[str]:
    return [r["signature"] for r in recs]


# --- signatures ---------------------------------------------------------------------------------------------------
MODEL = {"key": "qwen2.5-1.5b", "source": "store", "gguf_sha256": "ab" * 32, "revision": None, "dtype": "float32",
         "device": "cpu", "backend": "torch", "threads": 1, "versions": {"torch": "x"}}


def test_signature_is_stable_and_sensitive_to_what_matters():
    base = decision_signature("semif-direct-v1", "Is it so?", [("yes", "Yes"), ("no", "No")], MODEL)
    # pinned: a change of this value orphans every calibration file ever written
    assert base == "e5ee24e6c9103c94f58b8b2d6c34eaab42d6357b738a60c3c224e4aabb437849"
    assert base == decision_signature("semif-direct-v1", "Is it so?", [("yes", "Yes"), ("no", "No")],
                                      {**MODEL, "key": "path.gguf", "device": "cuda", "threads": 8, "versions": {}})
    assert len(base) == 64
    yn = [("yes", "Yes"), ("no", "No")]
    changed = [
        decision_signature("semif-direct-v2", "Is it so?", yn, MODEL),
        decision_signature("semif-direct-v1", "Is it so ?", yn, MODEL),
        decision_signature("semif-direct-v1", "Is it so?", yn[::-1], MODEL),
        decision_signature("semif-direct-v1", "Is it so?", [("yes", "Yes."), ("no", "No")], MODEL),
        decision_signature("semif-direct-v1", "Is it so?", yn, {**MODEL, "dtype": "bfloat16"}),
        decision_signature("semif-direct-v1", "Is it so?", yn, {**MODEL, "backend": "llamacpp"}),
        decision_signature("semif-direct-v1", "Is it so?", yn, {**MODEL, "gguf_sha256": "cd" * 32}),
        decision_signature("semif-direct-v1", "Is it so?", yn, MODEL, "permute-2"),
    ]
    assert len({base, *changed}) == len(changed) + 1
    hub = {"key": "Org/Name", "source": "hub", "revision": "1" * 40, "dtype": "bfloat16", "backend": "torch"}
    assert model_identity(hub)["hub"] == "Org/Name" and model_identity(MODEL)["hub"] is None


def test_new_records_carry_their_signature_and_validate(tmp_path):
    d = rows(3) + rows(2, question="Another?", start=3)
    recs = score(tmp_path, d, "plain")
    validate_records(recs)
    assert all(r["schema"] == "semif-record-v2" for r in recs)
    assert len(set(sigs(recs)[:3])) == 1 and sigs(recs)[0] != sigs(recs)[3]
    assert recs[0]["signature"] == signature_of(d[0], recs[0]["prompt_version"], recs[0]["model"])
    shared = score(tmp_path, d, "shared", mode="shared")
    assert sigs(shared) == sigs(recs)  # the mode is not part of the signature
    perm = score(tmp_path, d, "perm", permute=2)
    validate_records(perm)
    assert perm[0]["signature"] == signature_of(d[0], perm[0]["prompt_version"], perm[0]["model"], "permute-2")


def test_v1_records_need_their_rows(tmp_path):
    path = RUNS / "q15-torch-boundary.jsonl"
    recs = read_records(path)
    assert recs[0]["schema"] == "semif-record-v1" and "signature" not in recs[0]
    validate_records(recs)  # old records still validate, against record-v1.json
    with pytest.raises(InputError, match=r"signature.*--input"):
        record_signatures(recs, None, str(path))
    s = record_signatures(recs, load_decisions(ROOT / "data" / "eval" / "boundary.jsonl"), str(path))
    assert len(set(s)) == 1
    wrong = load_decisions(ROOT / "data" / "eval" / "perturbed-reverse-boundary.jsonl")
    with pytest.raises(InputError, match="option_ids"):
        record_signatures(recs, wrong, str(path))


# --- prior estimators ---------------------------------------------------------------------------------------------
def test_estimators_hand_computed():
    p = np.array([[0.8, 0.2], [0.4, 0.6]])
    z = np.log(p)
    assert np.exp(prior_mod.estimate(z, "mean")) == pytest.approx([0.6, 0.4])
    g = np.sqrt(p.prod(axis=0))  # geometric mean per option, renormalised
    assert np.exp(prior_mod.estimate(z, "geometric")) == pytest.approx(g / g.sum())
    b = prior_mod.estimate(z, "balanced")
    q = np.exp(z - b)
    q /= q.sum(axis=1, keepdims=True)
    assert q.mean(axis=0) == pytest.approx([0.5, 0.5], abs=1e-9)
    # shifting every logit of a row by a constant changes nothing
    assert prior_mod.estimate(z + np.array([[3.0], [-7.0]]), "mean") == pytest.approx(prior_mod.estimate(z, "mean"))
    with pytest.raises(ValueError, match="unknown estimator"):
        prior_mod.estimate(z, "median")


@pytest.mark.parametrize("estimator", ["geometric", "mean", "balanced"])
def test_prior_recovers_an_injected_bias_and_restores_choices(tmp_path, estimator):
    d = rows(400)
    clean = score(tmp_path, d, "clean")
    biased = score(tmp_path, d, "biased", FakeBackend(bias={"A": 2.0}))
    truth = [r["choice"] for r in clean]
    raw_agree = np.mean([r["choice"] == t for r, t in zip(biased, truth, strict=True)])
    cal_b = prior_mod.fit_prior(biased, sigs(biased), estimator)
    cal_c = prior_mod.fit_prior(clean, sigs(clean), estimator)
    (eb,), (ec,) = cal_b.entries, cal_c.entries
    # the recovered bias: the offset of "yes" (letter A) against "no" grows by the injected 2.0
    shift = (eb.offsets["yes"] - eb.offsets["no"]) - (ec.offsets["yes"] - ec.offsets["no"])
    fixed = list(cal_b.apply_all(biased))
    agree = np.mean([choice_of(r) == t for r, t in zip(fixed, truth, strict=True)])
    if estimator == "geometric":
        assert shift == pytest.approx(2.0, abs=1e-4)
    else:  # probability space saturates: it sees less than the whole logit shift
        assert 1.0 < shift < 2.0
    assert raw_agree < 0.6 and agree > (0.95 if estimator == "geometric" else 0.8)
    if estimator == "geometric":  # exact: centring removes an additive bias completely
        again = list(cal_c.apply_all(clean))
        for a, b in zip(fixed, again, strict=True):
            assert a["calibrated"]["probabilities"] == pytest.approx(b["calibrated"]["probabilities"], abs=1e-5)


def test_skewed_batch_degrades_as_predicted_and_a_stored_prior_does_not(tmp_path):
    d = rows(600)
    clean = score(tmp_path, d, "clean")
    biased = score(tmp_path, d, "biased", FakeBackend(bias={"A": 1.5}))
    truth = {r["id"]: r["choice"] for r in clean}
    yes = [r for r in biased if truth[r["id"]] == "yes"]
    no = [r for r in biased if truth[r["id"]] == "no"]
    balanced = yes[:100] + no[:100]
    skewed = yes[100:280] + no[100:120]  # 90 % "yes"

    def acc(cal: Calibration, recs: list[dict]) -> float:
        return float(np.mean([choice_of(r) == truth[r["id"]] for r in cal.apply_all(recs)]))

    stored = prior_mod.fit_prior(balanced, sigs(balanced))
    in_run_bal = acc(prior_mod.fit_prior(balanced, sigs(balanced)), balanced)
    in_run_skew = acc(prior_mod.fit_prior(skewed, sigs(skewed)), skewed)
    # The in-run prior of a 90/10 batch absorbs the real class mix: it moves towards "yes" and pushes
    # the majority's borderline rows to "no" — worse than on a balanced batch. The stored prior does not.
    assert in_run_skew < in_run_bal - 0.1
    assert acc(stored, skewed) > in_run_bal - 0.05
    # ...and under the stored prior the batch's calibrated mix shows the skew: the warning fires
    warn = mix_warnings(list(stored.apply_all(skewed)))
    assert len(warn) == 1 and "'yes'" in warn[0]
    assert mix_warnings(list(stored.apply_all(balanced))) == []


def test_min_rows_and_family_fallback(tmp_path):
    d = rows(10, "Big?") + rows(3, "Small?", start=10) + rows(6, "Other small?", start=13)
    recs = score(tmp_path, d, "r")
    cal = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8)
    assert [e.level for e in cal.entries] == ["signature"]
    assert sorted(s.rows for s in cal.uncalibrated) == [3, 6]
    assert "3 rows < --min-rows 8" in {s.reason for s in cal.uncalibrated}
    out = list(cal.apply_all(recs))
    small = next(r for r in out if r["id"] == "r10")["calibrated"]
    assert small["applied"] is False and small["choice"] == out[10]["choice"] and small["level"] is None
    fb = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8, fallback="family")
    assert [e.level for e in fb.entries] == ["signature", "family"]
    assert fb.entries[1].rows == 19  # every row of the family with these options
    assert next(r for r in fb.apply_all(recs) if r["id"] == "r10")["calibrated"]["level"] == "family"


# --- the NLL offset fit -------------------------------------------------------------------------------------------
def _synthetic(n: int, true_b: np.ndarray, a: float, seed: int = 1) -> tuple[list, list, list]:
    rng = np.random.default_rng(seed)
    z, y, ix = [], [], []
    for _ in range(n):
        k = int(rng.integers(2, 5))
        zz = rng.normal(0, 2, k)
        idx = rng.choice(len(true_b), k, replace=False)
        p = np.exp(a * zz - true_b[idx])
        z.append(zz)
        ix.append(idx)
        y.append(int(rng.choice(k, p=p / p.sum())))
    return z, y, ix


def _objective(z, y, ix, w, l2, a, b) -> float:
    tot = 0.0
    for zz, yy, idx, ww in zip(z, y, ix, w, strict=True):
        u = a * zz - b[idx]
        tot += ww * (math.log(np.exp(u - u.max()).sum()) + u.max() - u[yy])
    return tot / sum(w) + l2 * float(b @ b)


@pytest.mark.parametrize("temperature", [False, True])
def test_offset_fit_is_the_regularised_nll_minimum(temperature):
    true_b = np.array([1.0, -0.5, 0.3, 0.0, 0.7, -1.0])
    z, y, ix = _synthetic(300, true_b, 0.7)
    w = list(np.random.default_rng(2).uniform(0.5, 2.0, 300))
    fit = bias_mod.fit_offsets(z, y, ix, 6, l2=0.01, temperature=temperature, weights=w)
    assert fit.objective == pytest.approx(_objective(z, y, ix, w, 0.01, fit.a, fit.offsets), rel=1e-12)
    # first-order optimality: no coordinate step lowers the objective
    for j in range(6):
        for h in (1e-4, -1e-4):
            b = fit.offsets.copy()
            b[j] += h
            assert _objective(z, y, ix, w, 0.01, fit.a, b) >= fit.objective - 1e-12
    if temperature:
        for h in (1e-4, -1e-4):
            assert _objective(z, y, ix, w, 0.01, fit.a + h, fit.offsets) >= fit.objective - 1e-12
    assert fit.objective <= fit.nll_before


def test_offset_fit_recovers_known_offsets_and_temperature():
    true_b = np.array([1.0, -0.5, 0.3, 0.0])
    z, y, ix = _synthetic(6000, true_b, 0.5, seed=7)
    fit = bias_mod.fit_offsets(z, y, ix, 4, l2=0.0, temperature=True)
    b = fit.offsets - fit.offsets.mean()
    assert b == pytest.approx(true_b - true_b.mean(), abs=0.12)
    assert 1 / fit.a == pytest.approx(2.0, rel=0.1)


def _labelled(tmp_path: Path, bias: float = 1.5) -> tuple[list[dict], dict[str, str], list[metrics.Label]]:
    """Fake records of two families whose labels are the unbiased choices (so a bias fit can find them)."""
    fam_a = [Decision(f"a{i}-{q}", f"state {i}", f"Question {q}?", YN, {"family": "fa", "group": f"a{i}"}, "m")
             for i in range(30) for q in range(2)]
    fam_b = [Decision(f"b{i}", f"thing {i}", "Choose?", (Option("x", "X"), Option("y", "Y"), Option("z", "Z")),
                      {"family": "fb", "group": f"b{i}"}, "m") for i in range(40)]
    d = fam_a + fam_b
    clean = score(tmp_path, d, "clean-l")
    biased = score(tmp_path, d, "biased-l", FakeBackend(bias={"A": bias}))
    gold = {r["id"]: r["choice"] for r in clean}
    labels = [metrics.Label(x.id, gold[x.id], x.extra["family"], x.extra["group"], tuple(x.option_ids)) for x in d]
    return biased, gold, labels


def test_bias_fit_levels_lookup_and_out_of_fold(tmp_path):
    recs, gold, labels = _labelled(tmp_path)
    s = sigs(recs)
    cal = bias_mod.fit_bias(recs, s, gold, min_rows=8)
    levels = sorted(e.level for e in cal.entries)
    assert levels == ["family", "family", "global", "signature", "signature", "signature"]
    fa = next(e for e in cal.entries if e.family == "fa")
    assert fa.offsets["yes"] - fa.offsets["no"] > 1.0  # the letter-A bias is found
    held, folds = out_of_fold(recs, s, labels, lambda r, ss: bias_mod.fit_bias(r, ss, gold, 8), 5)
    assert len(folds) == 5 and len(held) == len(recs)
    for f in folds:  # group-disjoint: no held-out group was in its fold's training rows
        assert f["held_out_rows"] + f["train_rows"] == len(recs)
    ev = before_after(labels, recs, held, reps=30)
    assert ev["beats_uncalibrated"] is True and ev["after"]["metrics"]["balanced_accuracy"]["value"] > 0.9
    # a new question of family fa falls back to the family entry; a new family to the global one
    new = rows(2, "A new question?", family="fa") + rows(1, "New family?", family="zz", start=2)
    got = [cal.apply(r)["calibrated"]["level"] for r in score(tmp_path, new, "new")]
    assert got == ["family", "family", "global"]


def test_a_fit_that_does_not_help_is_reported(tmp_path):
    recs, _, labels = _labelled(tmp_path, bias=0.0)
    rng = np.random.default_rng(0)
    noise = {lb.id: str(rng.choice(lb.option_ids)) for lb in labels}  # labels unrelated to the logits
    labels = [metrics.Label(lb.id, noise[lb.id], lb.family, lb.group, lb.option_ids) for lb in labels]
    held, _ = out_of_fold(recs, sigs(recs), labels, lambda r, s: bias_mod.fit_bias(r, s, noise, 8, l2=0.0), 5)
    ev = before_after(labels, recs, held, reps=20)
    assert ev["after"]["metrics"]["nll"]["value"] > ev["before"]["metrics"]["nll"]["value"] - 0.05
    assert isinstance(ev["beats_uncalibrated"], bool)


# --- the calibrated block -----------------------------------------------------------------------------------------
def test_apply_keeps_raw_fields_and_adds_a_valid_block(tmp_path):
    recs = score(tmp_path, rows(12), "r")
    cal = prior_mod.fit_prior(recs, sigs(recs))
    for raw, new in zip(recs, cal.apply_all(recs), strict=True):
        assert {k: v for k, v in new.items() if k != "calibrated"} == raw
        c = new["calibrated"]
        assert c["applied"] and c["level"] == "signature" and c["rows"] == 12 and c["method"] == "prior"
        z = np.asarray(raw["option_logits"]) - np.asarray(c["offsets"])
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        assert c["probabilities"] == pytest.approx(list(p))
        assert c["choice"] == raw["option_ids"][int(np.argmax(p))]
        assert choice_of(new) == c["choice"] and choice_of(raw) == raw["choice"]
    validate_records(list(cal.apply_all(recs)))


def test_calibrated_tie_is_reported_not_resolved(tmp_path):
    (rec,) = score(tmp_path, rows(1), "one")
    z = rec["option_logits"]
    ident = model_identity(rec["model"])
    from scorer.formats.signature import identity_sha256

    m = identity_sha256(ident)
    cal = Calibration("prior", "mean", {m: ident}, [Entry("signature", m, "plain", {"yes": z[0], "no": z[1]}, 1.0, 1,
                                                         rec["signature"], None, ("yes", "no"))])
    c = cal.apply(rec)["calibrated"]
    assert c["tie"] is True and c["choice"] is None and c["tied_option_ids"] == ["yes", "no"]
    # a single-row in-run prior is exactly this: the row divided by itself
    c1 = prior_mod.fit_prior([rec], [rec["signature"]], "mean", 1).apply(rec)["calibrated"]
    assert c1["tie"] is True and c1["choice"] is None


# --- files: round trip, refusal, bad files ------------------------------------------------------------------------
def test_file_round_trip_and_refusals(tmp_path):
    recs = score(tmp_path, rows(10), "r")
    cal = prior_mod.fit_prior(recs, sigs(recs))
    path = tmp_path / "prior.json"
    sha = write_calibration(cal, path)
    loaded = load_calibration(path)
    assert loaded.source == {"kind": "file", "path": str(path), "sha256": sha}
    a, b = cal.apply(recs[0])["calibrated"], loaded.apply(recs[0])["calibrated"]
    assert a["probabilities"] == b["probabilities"] and b["source"]["sha256"] == sha
    with pytest.raises(Exception, match="exists"):
        write_calibration(cal, path)
    # another model: refused, naming the file and both models
    class Other(FakeBackend):
        def model_info(self) -> dict[str, Any]:
            return {**super().model_info(), "gguf_sha256": "ee" * 32}

    other = score(tmp_path, rows(2), "other", Other())
    with pytest.raises(InputError, match=r"prior\.json.*no calibration for model"):
        loaded.apply(other[0])
    # another question: refused, naming the file and the signature
    q = score(tmp_path, rows(2, "Something else?"), "q")
    with pytest.raises(InputError, match=rf"prior\.json.*no calibration for signature {q[0]['signature']}"):
        loaded.apply(q[0])


def _bad(tmp_path: Path, doc: Any, raw: bytes | None = None) -> Path:
    p = tmp_path / "bad.json"
    p.write_bytes(raw if raw is not None else orjson.dumps(doc))
    return p


def test_bad_calibration_files_are_clear_errors(tmp_path):
    recs = score(tmp_path, rows(10), "r")
    good = prior_mod.fit_prior(recs, sigs(recs)).to_json()
    entry = good["entries"][0]
    cases = [
        (None, b'{"schema": "semif-calibration-v1", "entries": [', "invalid JSON"),
        (None, orjson.dumps(good).replace(b'"offsets":{"yes":', b'"offsets":{"yes":NaN,"x":'), "invalid JSON"),
        ({**good, "schema": "semif-calibration-v0"}, None, "field 'schema'"),
        ({**good, "method": "magic"}, None, "field 'method'"),
        ({**good, "entries": [{**entry, "temperature": 0}]}, None, "entries[0].temperature"),
        ({**good, "entries": [{**entry, "offsets": {"yes": "1", "no": 0}}]}, None, "entries[0].offsets.yes"),
        ({**good, "entries": [{**entry, "level": "planet"}]}, None, "entries[0].level"),
        ({**good, "models": {"0" * 64: {}}}, None, "models"),
        ([1, 2], None, "a JSON list"),
    ]
    for doc, raw, frag in cases:
        with pytest.raises(InputError, match=re.escape(frag)):
            load_calibration(_bad(tmp_path, doc, raw))
    with pytest.raises(InputError, match="file not found"):
        load_calibration(tmp_path / "nope.json")


# --- the committed v1 records: the published numbers --------------------------------------------------------------
def test_committed_boundary_records_reach_the_published_prior_number():
    path = RUNS / "q15-torch-boundary.jsonl"
    labels_path = ROOT / "data" / "eval" / "boundary.jsonl"
    recs = read_records(path)
    s = record_signatures(recs, load_decisions(labels_path), str(path))
    cal = prior_mod.fit_prior(recs, s, "mean")
    labels = metrics.labels_from_decisions(str(labels_path))
    ev = before_after(labels, recs, list(cal.apply_all(recs, s)), reps=20)
    assert ev["before"]["metrics"]["balanced_accuracy"]["value"] == pytest.approx(0.5417, abs=1e-4)
    assert ev["after"]["metrics"]["balanced_accuracy"]["value"] == pytest.approx(0.875)
    (auc,) = ev["before"]["auc_per_family"]
    assert auc["auc"] > 0.9  # ranks well, decides badly

