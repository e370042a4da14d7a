"""Two-path routing: the margin policy escalates exactly the rows under the threshold, routed records
take the reference decision and pay both paths' time, and the report reads across thresholds."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from scorer import cli
from scorer.evaluation import route_report as ev
from scorer.formats.records import SCORE_KIND

IDS = ["yes", "no"]


def _rec(rid: str, p_yes: float, t: float, label: str) -> dict:
    """A whole semif-record-v1 record (every command validates the records it reads)."""
    p = np.array([p_yes, 1 - p_yes])
    return {"schema": "semif-record-v1", "id": rid, "option_ids": IDS, "letters": ["A", "B"],
            "probabilities": [float(x) for x in p], "option_logits": [float(x) for x in np.log(p)],
            "choice": IDS[int(np.argmax(p))], "margin": float(abs(p[0] - p[1])), "tie": False, "tied_option_ids": [],
            "allowed_token_mass": 0.9, "full_vocab_argmax": {"token_id": 1, "text": "A", "is_slot": True},
            "score_kind": SCORE_KIND, "input_tokens": 12, "prompt_version": "semif-direct-v1",
            "prompt_template": "chat", "prompt_sha256": "0" * 64, "tokens_sha256": "1" * 64, "mode": "direct",
            "kernel": "fake.fresh",
            "prefix_tokens": None, "suffix_tokens": None, "cache_hit": None, "prefix_sha256": None, "escalated": False,
            "timing": {"total_s": t, "encode_s": 0.0, "forward_s": t},
            "model": {"key": "fake", "source": "fake", "dtype": "float32", "device": "cpu", "backend": "fake",
                      "versions": {}},
            "extra": {"label": label, "family": "f", "group": rid}, "run": {"config_sha256": "x", "index": 0}}


# fast margins: .9 .5 .3 .1 .0999 .05; the fast path is right on the two most confident rows only
FAST = [_rec("a", 0.95, 1.0, "yes"), _rec("b", 0.75, 1.0, "yes"), _rec("c", 0.35, 1.0, "yes"),
        _rec("d", 0.55, 1.0, "no"), _rec("e", 0.45005, 1.0, "yes"), _rec("f", 0.525, 1.0, "no")]
REF = [_rec(r["id"], 0.9 if r["extra"]["label"] == "yes" else 0.1, 4.0, r["extra"]["label"]) for r in FAST]


@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.0999, 0.1, 0.3, 0.5, 0.9, 1.0, 1.01])
def test_escalates_exactly_the_rows_under_the_threshold(threshold):
    routed = ev.route_records(FAST, REF, threshold)
    expect = {r["id"] for r in FAST if r["margin"] < threshold}
    assert {r["id"] for r in routed if r["escalated"]} == expect
    for r in routed:
        assert r["route"]["path"] == ("reference" if r["id"] in expect else "fast")
        src = {x["id"]: x for x in (REF if r["id"] in expect else FAST)}[r["id"]]
        assert r["choice"] == src["choice"] and r["probabilities"] == src["probabilities"]
        assert r["timing"]["total_s"] == pytest.approx(5.0 if r["id"] in expect else 1.0)


def test_margin_equal_to_threshold_stays_on_the_fast_path():
    routed = ev.route_records(FAST, REF, FAST[1]["margin"])
    assert not next(r for r in routed if r["id"] == "b")["escalated"]


def test_missing_fast_record_is_escalated_and_missing_both_is_dropped():
    routed = ev.route_records(FAST[1:], REF[:-1], 0.0)
    by = {r["id"]: r for r in routed}
    assert by["a"]["escalated"] and by["a"]["timing"]["total_s"] == 4.0 and by["a"]["route"]["fast_margin"] is None
    assert not by["f"]["escalated"]
    assert [r["id"] for r in ev.route_records(FAST[:2], REF[:1], 2.0)] == ["a"]


def test_route_report_and_cli(tmp_path, capsys):
    fast, ref = tmp_path / "fast.jsonl", tmp_path / "ref.jsonl"
    fast.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in FAST))
    ref.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in REF))
    out, routed = tmp_path / "route.json", tmp_path / "routed.jsonl"
    assert cli.main(["route", "--fast", str(fast), "--reference", str(ref), "--thresholds", "0,0.1,0.3,1.01",
                     "--output", str(out), "--reps", "20", "--apply", "0.3", "--routed-output", str(routed)]) == 0
    doc = orjson.loads(out.read_bytes())
    rows = {r["policy"]: r for r in doc["table"]}
    assert rows["fast only"]["accuracy"]["value"] == pytest.approx(2 / 6)
    assert rows["reference only"]["accuracy"]["value"] == 1.0
    assert rows["fast only"]["time_s"] == 6.0 and rows["reference only"]["time_s"] == 24.0
    assert rows["margin<0"]["escalated"] == 0 and rows["margin<0"]["accuracy"]["value"] == pytest.approx(2 / 6)
    # under .1: e (.0999) and f (.05) escalate, both were wrong on the fast path
    assert rows["margin<0.1"]["escalated"] == 2 and rows["margin<0.1"]["accuracy"]["value"] == pytest.approx(4 / 6)
    assert rows["margin<0.1"]["time_s"] == pytest.approx(6 + 8)
    assert rows["margin<0.3"]["escalated_share"] == pytest.approx(3 / 6)
    assert rows["margin<0.3"]["accuracy"]["value"] == pytest.approx(5 / 6)
    assert rows["margin<1.01"]["accuracy"]["value"] == 1.0 and rows["margin<1.01"]["time_s"] == pytest.approx(30)
    assert rows["margin<1.01"]["time_vs_reference"] == pytest.approx(30 / 24)
    lines = [orjson.loads(x) for x in routed.read_bytes().splitlines()]
    assert [x["escalated"] for x in lines] == [False, False, False, True, True, True]
    assert "margin<0.1" in capsys.readouterr().out


def test_route_cli_rejects_bad_thresholds(tmp_path):
    f = tmp_path / "f.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in FAST))
    assert cli.main(["route", "--fast", str(f), "--reference", str(f), "--thresholds", "0,x"]) == 2
    assert cli.main(["route", "--fast", str(f), "--reference", str(f), "--thresholds", "-0.1"]) == 2


@pytest.mark.parametrize(("layout", "with_demos"), [("state-major", False), ("question-major", True)])
def test_live_routing_scores_only_escalated_rows_on_the_accurate_engine(tmp_path, monkeypatch, layout, with_demos):
    """`semif score --fast SPEC --accurate SPEC --escalate-below M`, the one live-routing interface, over fakes: only
    the decisions under the margin go to the accurate engine, rendered in the fast run's layout with its
    demonstrations; records stay in input order."""
    from pathlib import Path

    from fakes import FakeBackend

    from scorer.formats.records import read_records, validate_records
    from scorer.formats.rows import load_decisions
    from scorer.prompting.demos import load_demos
    from scorer.scoring.modes import prepare, score_items

    root = Path(__file__).resolve().parents[2]
    authored = root / "data" / "eval" / "authored.jsonl"
    rows = load_decisions(authored)[:12]
    inp = tmp_path / "rows.jsonl"
    inp.write_bytes(b"".join(authored.read_bytes().splitlines(keepends=True)[:12]))
    demos_file = root / "scorer" / "data" / "demos" / "decisions.jsonl"
    demos = load_demos(demos_file) if with_demos else None
    fast, ref = FakeBackend(), FakeBackend(bias={"B": 4.0})
    plain = list(score_items(FakeBackend(), prepare(FakeBackend(), rows, with_prefix=False, layout=layout,
                                                    demos=demos), "direct", {"x": 1}))
    threshold = float(np.median([r["margin"] for r in plain]))
    expect = [r["id"] for r in plain if r["margin"] < threshold]
    assert 0 < len(expect) < len(rows)
    monkeypatch.setattr(cli, "load_backend", lambda cfg: {"fast": fast, "ref": ref}[cfg.model])
    out = tmp_path / "routed.jsonl"
    args = ["score", "--input", str(inp), "--output", str(out), "--layout", layout,
            "--fast", "backend=torch,model=fast", "--accurate", "backend=torch,model=ref",
            "--escalate-below", repr(threshold)] + (["--demos", str(demos_file)] if with_demos else [])
    assert cli.main(args) == 0
    recs = read_records(out)
    validate_records(recs)
    assert [r["id"] for r in recs] == [d.id for d in rows]
    assert [r["run"]["index"] for r in recs] == list(range(len(rows)))
    assert [r["id"] for r in recs if r["escalated"]] == expect
    assert ref.calls["fresh"] == len(expect) and fast.calls["fresh"] == len(rows)
    assert {r["layout"] for r in recs} == {layout}  # the accurate engine renders the fast run's layout
    assert all(bool(r.get("demos")) == with_demos for r in recs)
    for r, p in zip(recs, plain, strict=True):
        if r["escalated"]:
            assert r["choice"] == r["option_ids"][1]  # the reference leans on B by construction
            assert r["route"]["fast_margin"] == p["margin"] and r["route"]["decided_by"] == "accurate"
            assert r["prompt_sha256"] == p["prompt_sha256"]
        else:
            assert r["probabilities"] == p["probabilities"] and r["route"]["decided_by"] == "fast"
