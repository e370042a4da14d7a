"""Drift reports and the --exact policy, with fakes: flips vs ties, the derived bound, zero flips on a
workload built with near-ties, drift-report identity checks, resume under --exact."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from fakes import NearTieBackend, decision_rows, write_rows

from scorer import cli
from scorer.core.errors import InputError, ValidationError
from scorer.formats.envelope import envelope_problems
from scorer.formats.records import read_records, validate_records
from scorer.scoring import drift
from scorer.scoring.drift import compare, exact_bound, measure
from scorer.scoring.exact import ExactPolicy
from scorer.scoring.file_run import run_score
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import ScoreConfig


def _run(backend, rows, mode, policy=None, budget=4096):
    items = prepare(backend, rows, with_prefix=mode != "direct")
    if policy is not None:
        policy.calibrate(backend, items, mode, budget)
    recs = score_items(backend, items, mode, {"config_sha256": "t"}, 0, budget)
    return list(policy.apply(backend, items, mode, recs) if policy is not None else recs)


def _rec(id_, probs, tie=False):
    ids = ["a", "b"]
    choice = None if tie else ids[int(np.argmax(probs))]
    return {"id": id_, "probabilities": probs, "option_logits": list(np.log(probs)), "choice": choice,
            "margin": abs(probs[0] - probs[1]), "tie": tie, "tied_option_ids": ids if tie else []}


# --- compare and the bound ----------------------------------------------------------------------------------------
def test_compare_lists_flips_by_id_and_ties_apart():
    fresh = [_rec("r1", [0.6, 0.4]), _rec("r2", [0.51, 0.49]), _rec("r3", [0.5, 0.5], tie=True),
             _rec("r4", [0.7, 0.3])]
    fast = [_rec("r1", [0.6, 0.4]), _rec("r2", [0.49, 0.51]), _rec("r3", [0.52, 0.48]), _rec("r4", [0.69, 0.31])]
    s = compare(fresh, fast)
    assert [f["id"] for f in s["flips"]] == ["r2"]
    assert [t["id"] for t in s["ties"]] == ["r3"] and s["ties"][0]["fresh_tie"] and not s["ties"][0]["fast_tie"]
    assert s["max_abs_dp"] == pytest.approx(0.02)
    assert s["mean_abs_dp"] == pytest.approx((0 + 0.02 + 0.02 + 0.01) / 4)
    assert s["worst_rows"][0]["id"] in ("r2", "r3")
    with pytest.raises(ValidationError):
        compare(fresh, fast[::-1])


def test_bound_is_twice_the_measured_drift_times_safety_floored_at_epsilon():
    assert exact_bound(0.01, "float32", 3.0) == pytest.approx(0.06)
    assert exact_bound(0.0, "float32", 2.0) == pytest.approx(4 * 2.0 ** -23)
    assert exact_bound(0.0, "bfloat16", 1.0) == pytest.approx(2 * 2.0 ** -7)
    with pytest.raises(ValidationError):
        exact_bound(0.01, "float32", 0.5)


# --- --exact on near-ties ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_without_exact_near_ties_flip(mode):
    rows = decision_rows()
    s = compare(_run(NearTieBackend(), rows, "direct"), _run(NearTieBackend(), rows, mode))
    assert len(s["flips"]) >= 3  # the workload really has near-ties that the fast path flips


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_exact_with_a_probe_gives_zero_flips(mode):
    rows = decision_rows()
    fresh = _run(NearTieBackend(), rows, "direct")
    fb = NearTieBackend()
    pol = ExactPolicy(safety=2.0, probe_rows=8)
    recs = _run(fb, rows, mode, pol)
    validate_records(recs)
    s = compare(fresh, recs)
    assert s["flips"] == [] and s["ties"] == []
    esc = [r for r in recs if r["escalated"]]
    assert 0 < len(esc) < len(rows) / 2 + 4  # near-ties (about half the rows) go fresh, clear rows do not
    assert all(r["margin"] >= pol.bound for r in recs if not r["escalated"])
    for r, f in zip(recs, fresh, strict=True):
        assert r["exact"]["bound"] == pol.bound and r["exact"]["source"] == "probe"
        if r["escalated"]:
            assert r["probabilities"] == f["probabilities"]  # the fresh path's numbers
            assert r["kernel"] == "fake.fresh" and r["fast_path"]["margin"] < pol.bound
            assert r["fast_path"]["kernel"] != "fake.fresh"
            assert r["timing"]["total_s"] >= r["fast_path"]["timing"]["total_s"]
    # probed rows that escalate reuse the probe's fresh logits: fresh calls = probe + re-scored rows
    rescored = sum(r["exact"]["fresh_from"] == "rescore" for r in esc)
    assert fb.calls["fresh"] == 8 + rescored
    assert pol.escalated == len(esc)


def test_exact_with_a_held_out_drift_report(tmp_path):
    held_out, rows = decision_rows(3, 8, "h"), decision_rows()
    fb = NearTieBackend()
    rep = measure(fb, held_out, ["shared"], 4096, 2.0, {"path": "mem"})["shared"]
    path = tmp_path / "drift.json"
    path.write_bytes(orjson.dumps(rep))
    assert rep["summary"]["flips"]  # the held-out rows drift too
    pol = ExactPolicy(safety=2.0, report=path)
    recs = _run(NearTieBackend(), rows, "shared", pol)
    assert compare(_run(NearTieBackend(), rows, "direct"), recs)["flips"] == []
    assert pol.probe_s == 0.0 and recs[0]["exact"]["source"] == "drift-report"
    assert pol.bound == pytest.approx(2.0 * 2 * rep["summary"]["max_abs_dp"])


def test_drift_report_of_another_configuration_is_refused(tmp_path):
    fb = NearTieBackend()
    rep = measure(fb, decision_rows(1, 4, "h"), ["serial"], 4096, 2.0, {"path": "mem"})["serial"]
    path = tmp_path / "drift.json"
    path.write_bytes(orjson.dumps(rep))
    items = prepare(fb, decision_rows(1, 4))
    with pytest.raises(InputError, match=r"identity\.mode"):
        ExactPolicy(report=path).calibrate(fb, items, "shared", 4096)
    rep["identity"]["model"]["dtype"] = "bfloat16"
    path.write_bytes(orjson.dumps(rep))
    with pytest.raises(InputError, match=r"identity\.model\.dtype"):
        ExactPolicy(report=path).calibrate(fb, items, "serial", 4096)
    path.write_text("{}")
    with pytest.raises(InputError, match="not a drift report"):
        ExactPolicy(report=path).calibrate(fb, items, "serial", 4096)


def test_exact_refuses_direct_mode():
    fb = NearTieBackend()
    with pytest.raises(ValidationError, match="fast modes"):
        ExactPolicy().calibrate(fb, prepare(fb, decision_rows(1, 2), with_prefix=False), "direct", 4096)


def test_an_escalated_tie_stays_a_tie():
    rows = decision_rows(4, 6)
    fb = NearTieBackend(tie_every=5)
    recs = _run(fb, rows, "shared", ExactPolicy(safety=2.0, probe_rows=4))
    ties = [r for r in recs if r["tie"] or r.get("fast_path", {}).get("tie")]
    assert ties, "the workload has exact ties"
    for r in ties:
        assert r["escalated"] and r["fast_path"]["tie"]
        assert r["choice"] is None and sorted(r["tied_option_ids"]) == ["no", "yes"]
    validate_records(recs)


# --- run_score / CLI: resume under --exact ----------------------------------------------------------------------------
_VOLATILE = ("timing", "run", "exact", "fast_path", "cache")  # cache: what the process's earlier rows left cached


def _stable(r):
    out = {k: v for k, v in r.items() if k not in _VOLATILE}
    out["exact_bound"] = r["exact"]["bound"]
    out["fast_choice"] = r.get("fast_path", {}).get("choice")
    return out


def _cfg(parts, exact, resume=False):
    return ScoreConfig(mode="shared", run_parts=parts, resume=resume, exact=exact)


def test_resume_under_exact_equals_an_uninterrupted_run(tmp_path):
    rows = decision_rows(4, 6)
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    parts = {"input_sha256": "x"}
    run_score(rows, NearTieBackend(), full, _cfg(parts, ExactPolicy(safety=2.0, probe_rows=4)))
    seen = {"n": 0}

    def stop(_r):
        seen["n"] += 1
        if seen["n"] == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_score(rows, NearTieBackend(), part, _cfg(parts, ExactPolicy(safety=2.0, probe_rows=4)), on_record=stop)
    with part.open("ab") as f:
        f.write(b'{"schema":"semif-rec')  # torn line
    run_score(rows, NearTieBackend(), part, _cfg(parts, ExactPolicy(safety=2.0, probe_rows=4), resume=True))
    a, b = read_records(full), read_records(part)
    assert [_stable(r) for r in a] == [_stable(r) for r in b]
    assert any(r["escalated"] for r in b[10:])
    with pytest.raises(InputError, match="config_sha256"):  # another safety is another configuration
        run_score(rows, NearTieBackend(), part, _cfg(parts, ExactPolicy(safety=3.0, probe_rows=4), resume=True))
    with pytest.raises(InputError, match="config_sha256"):  # and so is no --exact at all
        run_score(rows, NearTieBackend(), part, _cfg(parts, None, resume=True))


def test_cli_score_exact_and_drift(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: NearTieBackend())
    inp = write_rows(tmp_path, decision_rows(3, 6))
    h = write_rows(tmp_path, decision_rows(2, 6, "h"), "held.jsonl")
    assert cli.main(["drift", "--input", str(h), "--modes", "shared", "--results-dir", str(tmp_path),
                     "--exact-safety", "2"]) == 0
    rep_path = tmp_path / "drift-fake-fake-shared.json"
    rep = orjson.loads(rep_path.read_bytes())
    assert (rep["kind"], rep["format"]) == ("drift", "semif-drift-v2") and not envelope_problems(rep)
    assert rep["input"]["rows"] == 12 and rep["inputs"]["input"]["sha256"] == rep["input"]["sha256"]
    assert "max |Δp|" in capsys.readouterr().out
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared", "--exact",
                     "--drift-report", str(rep_path), "--exact-safety", "2"]) == 0
    recs = read_records(out)
    validate_records(recs)
    assert all(r["exact"]["drift_report_sha256"] for r in recs)
    assert "re-scored fresh" in capsys.readouterr().err
    # a report without --exact, and an existing report without --force, are refused with exit 2
    assert cli.main(["score", "--input", str(inp), "--output", str(tmp_path / "p.jsonl"), "--mode", "shared",
                     "--drift-report", str(rep_path)]) == 2
    assert cli.main(["drift", "--input", str(h), "--modes", "shared", "--results-dir", str(tmp_path)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_drift_rows_slice_is_checked():
    assert drift.parse_rows("3:5", 10, "f") == (3, 5)
    assert drift.parse_rows(":4", 10, "f") == (0, 4)
    assert drift.parse_rows("7:", 10, "f") == (7, 10)
    for bad in ("5:3", "0:11", "x", "3"):
        with pytest.raises(InputError):
            drift.parse_rows(bad, 10, "f")
