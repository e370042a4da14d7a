"""Abstention policies (scorer.decision.policy) and `semif calibrate thresholds` (scorer.calibration.thresholds):
margins on the acting readout, the mass floor, ties, per-signature thresholds chosen out of fold."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend

from scorer import Policy, Scorer, YesNo, cli
from scorer.calibration.thresholds import Row, choose, fit
from scorer.core.errors import InputError, SemifError
from scorer.decision.policy import ANY_MARGIN, load_policy, policy_of
from scorer.formats.records import read_records

STATE = "I was charged twice and want my money back."


def _rec(margin: float, *, tie: bool = False, mass: float = 0.9, sig: str = "s" * 64,
         calibrated: dict | None = None) -> dict:
    p = (1 + margin) / 2
    rec = {"id": "r", "signature": sig, "option_ids": ["yes", "no"], "probabilities": [p, 1 - p],
           "choice": None if tie else "yes", "margin": 0.0 if tie else margin, "tie": tie,
           "allowed_token_mass": mass}
    if calibrated is not None:
        rec["calibrated"] = calibrated
    return rec


def test_margin_policy_ties_and_the_mass_floor():
    pol = Policy(margin=0.2, min_allowed_token_mass=0.5)
    assert pol.verdict(_rec(0.3)).confident and not pol.verdict(_rec(0.1)).confident
    assert "0.1000 < 0.2" in pol.verdict(_rec(0.1)).reason
    assert not pol.verdict(_rec(0.9, tie=True)).confident and "tie" in pol.verdict(_rec(0.9, tie=True)).reason
    low = pol.verdict(_rec(0.9, mass=0.3))
    assert not low.confident and "allowed_token_mass 0.300 < floor 0.5" in low.reason
    assert ANY_MARGIN.verdict(_rec(0.0)).confident and not ANY_MARGIN.verdict(_rec(0.0, tie=True)).confident


def test_the_policy_reads_the_calibrated_margin_when_there_is_one():
    cal = {"choice": "no", "margin": 0.05, "tie": False, "probabilities": [0.475, 0.525]}
    rec = _rec(0.8, calibrated=cal)
    assert not Policy(margin=0.1).verdict(rec).confident  # raw margin 0.8, calibrated 0.05
    with Scorer(backend=FakeBackend(), mode="shared") as s:
        d = s.decide(STATE, "Refund?", ["yes", "no"])
    strict, lax = Policy(margin=1.0), Policy(margin=0.0)
    assert d.final_choice_or("human", strict) == "human" and d.final_choice_or("human", lax) == d.final_choice
    assert d.confident(lax) and not d.confident(strict) and d.final_choice_or() == d.final_choice
    a = d.answer
    assert a.final_choice_or(None, strict) is None and a.confident(lax) == d.confident(lax)
    with pytest.raises(SemifError, match=r"^policy: 0.2 is not a scorer.decision.policy.Policy"):
        a.confident(0.2)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"margin": 1.5}, "margin"), ({"margin": float("nan")}, "margin"), ({"margin": "0.2"}, "margin"),
    ({"margin": True}, "margin"), ({"min_allowed_token_mass": -0.1}, "min_allowed_token_mass"),
    ({"thresholds": {"a": 2.0}}, "thresholds.a"), ({"thresholds": [0.1]}, "thresholds"),
    ({"fallback": -1}, "fallback"),
])
def test_bad_policies_name_their_field(kwargs, field):
    with pytest.raises(SemifError) as exc:
        Policy(**kwargs)
    assert str(exc.value).startswith(f"{field}: ")


def test_threshold_policy_per_signature_fallback_and_never():
    pol = Policy(thresholds={"a" * 64: 0.3, "b" * 64: None}, fallback=0.6, precision=0.9)
    assert pol.verdict(_rec(0.35, sig="a" * 64)).confident
    assert not pol.verdict(_rec(0.25, sig="a" * 64)).confident
    never = pol.verdict(_rec(0.99, sig="b" * 64))
    assert not never.confident and "no margin reached precision 0.9" in never.reason
    assert not pol.verdict(_rec(0.5, sig="c" * 64)).confident and pol.verdict(_rec(0.7, sig="c" * 64)).confident
    assert "fallback" in pol.verdict(_rec(0.7, sig="c" * 64)).reason
    assert not Policy(thresholds={}).verdict(_rec(0.99)).confident  # no fallback: unknown signatures abstain


def _rows(pairs: list[tuple[float, bool]], sig: str = "s", group: str = "g") -> list[Row]:
    return [Row(sig, m, True, ok, f"{group}{i}") for i, (m, ok) in enumerate(pairs)]


def test_choose_takes_the_smallest_margin_that_reaches_the_precision():
    rows = _rows([(0.9, True), (0.8, True), (0.7, True), (0.6, False), (0.5, True), (0.4, False), (0.3, False)])
    assert choose(rows, 0.75, 1) == 0.5  # 4 of 5 accepted right at 0.5; 4 of 6 at 0.4
    assert choose(rows, 1.0, 1) == 0.7 and choose(rows, 1.0, 4) is None  # min_accepted 4: 0.7 accepts 3
    assert choose(rows, 0.0, 1) == 0.3
    tied = _rows([(0.5, True), (0.5, False), (0.4, True)])
    assert choose(tied, 0.9, 1) is None  # both 0.5 rows come together: 1 of 2
    ineligible = [Row("s", 0.99, False, False, "g"), *_rows([(0.5, True)])]
    assert choose(ineligible, 1.0, 1) == 0.5  # a tie or a low-mass row is never accepted, whatever its margin
    th, fb = fit(_rows([(0.9, True), (0.2, False)], "a") + _rows([(0.8, False), (0.7, True)], "b"), 1.0, 1)
    assert th == {"a": 0.9, "b": None} and fb == 0.9


def _labelled_run(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    rows = [{"id": f"{q}-{i}", "state": f"ticket {i}: {'refund please' if i % 2 else 'where is my parcel'}",
             "question": q, "type": "yesno", "label": "yes" if i % 2 else "no", "group": f"g{i % 6}"}
            for q in ("Is a refund asked for?", "Does the customer want money back?") for i in range(24)]
    inp, out = tmp_path / "labelled.jsonl", tmp_path / "run.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend(bias={"A": 0.3}))
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared"]) == 0
    return inp, out


def test_calibrate_thresholds_writes_a_policy_judged_out_of_fold(tmp_path, monkeypatch):
    inp, run = _labelled_run(tmp_path, monkeypatch)
    t = tmp_path / "T.json"
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli.main(["calibrate", "thresholds", str(run), "--labels", str(inp), "--precision", "0.6",
                         "--min-accepted", "2", "--folds", "3", "--output", str(t)]) == 0
    assert "out of fold (3 group-disjoint folds)" in buf.getvalue()
    doc = orjson.loads(t.read_bytes())
    assert doc["kind"] == "abstain-thresholds" and doc["format"] == "semif-thresholds-v1"
    assert doc["inputs"]["labels"]["sha256"] and len(doc["thresholds"]) == 2
    oof = doc["out_of_fold"]
    assert oof["folds"] == 3 and sum(f["held_out_rows"] for f in oof["per_fold"]) == 48
    assert oof["acted"] == sum(f["acted"] for f in oof["per_fold"])
    recs = read_records(run)
    pol = load_policy(t)
    labels = {r["id"]: r["label"] for r in map(orjson.loads, inp.read_bytes().splitlines())}
    for sig, entry in doc["thresholds"].items():  # in sample, every listed threshold reaches the precision
        mine = [r for r in recs if r["signature"] == sig]
        acted = [r for r in mine if pol.verdict(r).confident]
        assert entry["in_sample_acted"] == len(acted)
        if entry["threshold"] is not None:
            assert sum(r["choice"] == labels[r["id"]] for r in acted) >= 0.6 * len(acted) and len(acted) >= 2
    assert cli.main(["calibrate", "thresholds", str(run), "--labels", str(inp), "--precision", "0.6",
                     "--output", str(t)]) == 2  # never overwritten
    assert policy_of(str(t)).thresholds == pol.thresholds and policy_of("0.25").margin == 0.25
    with Scorer(backend=FakeBackend(bias={"A": 0.3}), mode="shared") as s:
        a = s.ask("ticket 1: refund please", {"r": YesNo("Is a refund asked for?")})["r"]
    assert a.confident(pol) == pol.verdict(a.record).confident


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--precision", "1.2"], "from 0 to 1"), (["--precision", "0.9", "--min-accepted", "0"], "integer >= 1"),
    (["--precision", "0.9", "--min-mass", "nan"], "from 0 to 1"),
])
def test_calibrate_thresholds_refuses_bad_options(tmp_path, monkeypatch, capsys, extra, fragment):
    inp, run = _labelled_run(tmp_path, monkeypatch)
    capsys.readouterr()
    assert cli.main(["calibrate", "thresholds", str(run), "--labels", str(inp), *extra, "--output",
                     str(tmp_path / "T.json")]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.splitlines()) == 1 and not (tmp_path / "T.json").exists()


@pytest.mark.parametrize(("content", "field"), [
    (b"{", None), (b'{"kind": "prior"}', "kind"),
    (b'{"kind": "abstain-thresholds", "format": "x"}', "format"),
    (b'{"kind": "abstain-thresholds", "format": "semif-thresholds-v1", "thresholds": []}', "thresholds"),
    (b'{"kind": "abstain-thresholds", "format": "semif-thresholds-v1", "thresholds": {"a": {"threshold": 3}}}',
     "thresholds.a.threshold"),
    (b'{"kind": "abstain-thresholds", "format": "semif-thresholds-v1", "thresholds": {}, "fallback": {}}',
     "fallback.threshold"),
])
def test_bad_threshold_files_name_file_and_field(tmp_path, content, field):
    p = tmp_path / "T.json"
    p.write_bytes(content)
    with pytest.raises(InputError) as exc:
        load_policy(p)
    assert exc.value.path == str(p) and exc.value.field == field


# --- one escalation rule (issue #37) --------------------------------------------------------------------------------
def _one(margin: float, tie: bool = False, calibrated: dict | None = None) -> dict:
    r = {"margin": margin, "tie": tie, "allowed_token_mass": 0.9, "signature": "s" * 64}
    if calibrated is not None:
        r["calibrated"] = calibrated
    return r


@pytest.mark.parametrize("rec", [_one(0.3), _one(0.05), _one(0.0, tie=True), _one(0.3, calibrated={"margin": 0.02,
                                                                                                        "tie": False}),
                                 _one(0.01, calibrated={"margin": 0.5, "tie": False})])
@pytest.mark.parametrize("threshold", [0.0, 0.1, 0.2])
@pytest.mark.parametrize("readout", ["acting", "raw"])
def test_abstention_live_routing_and_offline_routing_share_one_rule(rec, threshold, readout):
    from scorer.decision.policy import escalates, readout_of
    from scorer.evaluation.route_report import route_records

    verdict = Policy(margin=threshold, readout=readout).verdict(rec)
    assert verdict.confident == (not escalates(rec, threshold, readout))
    judged = readout_of(rec, readout)
    assert escalates(rec, threshold, readout) == (judged["tie"] or judged["margin"] < threshold)
    if readout == "raw":  # semif route on two runs judges the raw margin by the same rule
        fast = [{**rec, "id": "a", "choice": "x", "timing": {"total_s": 1.0}}]
        ref = [{**rec, "id": "a", "choice": "y", "timing": {"total_s": 2.0}}]
        assert route_records(fast, ref, threshold)[0]["escalated"] == escalates(rec, threshold, "raw")
    assert escalates(None, threshold, readout)  # what the fast path did not produce is escalated


def test_a_policy_readout_that_is_not_acting_or_raw_is_refused():
    with pytest.raises(SemifError, match="readout: 'calibrated' is not one of acting, raw"):
        Policy(readout="calibrated")
