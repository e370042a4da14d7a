"""The agent example of docs/python-api.md (examples/agent.py) and its measurement (benchmarks/agent_example.py):
the authored ticket set, the rows and tally the measurement derives, the example's printed tally against a recount
from its records (fake backend), its refusals; and the whole measurement end to end on smollm2-135m (slow), its
report's numbers recounted here from the example's records by a rule written again from the thresholds file."""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from fakes import FakeBackend, prior_for

import scorer.backends as backends
from scorer import Scorer, cli
from scorer.api import parse_rows
from scorer.decision.policy import Policy, load_policy
from scorer.formats.echo import state_sha256
from scorer.formats.envelope import KINDS, envelope_problems
from scorer.formats.records import read_records, validate_records

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


EX = _load(ROOT / "examples" / "agent.py", "_test_agent_example")
BENCH = _load(ROOT / "benchmarks" / "agent_example.py", "_test_agent_example_bench")
DOC = orjson.loads(EX.TICKETS.read_bytes())


def test_the_ticket_set_is_authored_labelled_and_split():
    assert "authored" in DOC["about"] and "examples/agent.py" in DOC["about"]
    train, test = DOC["train"], DOC["test"]
    ids = [t["id"] for t in train + test]
    assert len(train) == len(test) == 24 and len(set(ids)) == 48  # no ticket in both splits
    assert {t["text"] for t in train}.isdisjoint(t["text"] for t in test)
    for split in (train, test):
        assert Counter(t["labels"]["team"] for t in split) == dict.fromkeys(EX.TEAMS, 6)
        for t in split:
            assert set(t["labels"]) == set(EX.QUESTIONS) and t["text"].strip()
            assert t["labels"]["refund"] in ("yes", "no") and t["labels"]["escalate"] in ("yes", "no")
        assert 5 <= Counter(t["labels"]["refund"] for t in split)["yes"] <= 12
        assert 5 <= Counter(t["labels"]["escalate"] for t in split)["yes"] <= 12


def test_the_measurements_rows_are_asks_rows_with_labels_and_the_ticket_as_group():
    rows = BENCH.split_rows(DOC["train"], EX.QUESTIONS)
    decisions, _ = parse_rows(rows)  # valid rows, ids unique
    assert len(decisions) == 72 and rows[0]["id"] == "tr01/team" and rows[1]["id"] == "tr01/refund"
    for r in rows:
        ticket, name = r["id"].split("/")
        t = next(t for t in DOC["train"] if t["id"] == ticket)
        assert r["label"] == t["labels"][name] and r["group"] == ticket and r["state"] == t["text"]
    with Scorer(backend=FakeBackend(), mode="shared") as s:  # the rows are what ask scores, so one signature each
        asked = s.ask(DOC["train"][0]["text"], EX.QUESTIONS, id="tr01")
        many = s.decide_many(rows[:3])
    assert [r["signature"] for r in asked.records] == [d.record["signature"] for d in many]


def test_the_printed_tally_reads_back():
    counts = {"decisions": 24, "acted": 15, "abstained": 9, "right_acted": 13, "right_acting": 17, "right_raw": 11}
    text = "te01 team=billing refund=human escalate=no\n" + EX.TALLY.format(name="team", **counts) + "\n" + \
        EX.TALLY.format(name="all", **{**counts, "decisions": 72}) + "\nteam: acted on 3/4, something else\n"
    got = BENCH.parse_tally(text, EX.TALLY)
    assert got == {"team": counts, "all": {**counts, "decisions": 72}}
    bad = EX.TALLY.format(name="team", **counts).replace("/24", "/23", 1)  # the repeated counts must agree
    assert BENCH.parse_tally(bad, EX.TALLY) == {}


def _fake_thresholds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A thresholds file fitted by `semif calibrate thresholds` on the fake backend's records of the training split."""
    rows, raw, out = tmp_path / "train-rows.jsonl", tmp_path / "train-raw.jsonl", tmp_path / "T.json"
    rows.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in BENCH.split_rows(DOC["train"], EX.QUESTIONS)))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(rows), "--output", str(raw), "--mode", "shared"]) == 0
    assert cli.main(["calibrate", "thresholds", str(raw), "--labels", str(rows), "--precision", "0.5", "--min-accepted",
                     "2", "--output", str(out)]) == 0
    return out


def test_the_examples_printed_tally_equals_a_recount_from_its_records(tmp_path, monkeypatch, capsys):
    policy_file = _fake_thresholds(tmp_path, monkeypatch)
    monkeypatch.setattr(backends, "load_backend", lambda cfg: FakeBackend())  # what the example's Scorer loads
    records = tmp_path / "test.jsonl"
    out = io.StringIO()
    with redirect_stdout(out):
        assert EX.main(["--policy", str(policy_file), "--records", str(records)]) == 0
    lines = out.getvalue().splitlines()
    assert [ln.split()[0] for ln in lines[:24]] == [t["id"] for t in DOC["test"]]
    recs = read_records(records)
    validate_records(recs)
    assert all(r["echo"]["state_sha256"] == state_sha256(next(t["text"] for t in DOC["test"]
                                                                if r["id"].startswith(t["id"] + "/")))
               for r in recs)  # each record names the ticket it answered
    labels = {f"{t['id']}/{q}": t["labels"][q] for t in DOC["test"] for q in EX.QUESTIONS}
    want = BENCH.tally_records(recs, labels, load_policy(policy_file), list(EX.QUESTIONS))
    assert BENCH.parse_tally(out.getvalue(), EX.TALLY) == want
    assert want["all"]["decisions"] == 72 and want["all"]["acted"] + want["all"]["abstained"] == 72
    for line in lines[:24]:  # what it acts on per ticket: an option id where the policy is confident, else human
        fields = dict(f.split("=") for f in line.split()[1:])
        assert list(fields) == list(EX.QUESTIONS) and fields["team"] in (*EX.TEAMS, EX.HUMAN)
    with redirect_stdout(io.StringIO()):  # the records are never overwritten, and that is said before any scoring
        monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("the model was loaded"))
        assert EX.main(["--policy", str(policy_file), "--records", str(records)]) == 2
        assert EX.main(["--policy", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "exists; records are never overwritten" in err and "none.json: file not found" in err
    assert "Traceback" not in err


def test_the_agent_and_the_recount_agree_on_a_calibrated_run():
    """The example's tally (from its typed answers) and the measurement's (from the records and Policy.verdict) are
    two ways to one count; with a calibration the acting readout is the calibrated one in both."""
    cal = prior_for(FakeBackend(), EX.QUESTIONS["refund"].question)  # covers one question; the rest go raw
    policy = Policy(margin=0.01)
    with Scorer(backend=FakeBackend(), mode="shared", calibration=cal, on_uncovered="raw") as s:
        done = list(EX.agent(s, DOC["test"], policy))
    recs = [r for _, a, _ in done for r in a.records]
    assert any(r["calibrated"]["applied"] for r in recs) and any(r["calibrated"].get("uncovered") for r in recs)
    labels = {f"{t['id']}/{q}": t["labels"][q] for t in DOC["test"] for q in EX.QUESTIONS}
    assert EX.tally(done) == BENCH.tally_records(recs, labels, policy, list(EX.QUESTIONS))


def test_the_report_kind_is_listed():
    assert KINDS["agent-example"] == BENCH.FORMAT


# --- end to end on the real model --------------------------------------------------------------------------------
def _recount(records: list[dict[str, Any]], thresholds: dict[str, Any], labels: dict[str, str]) -> dict[str, int]:
    """Acted on and right among acted over all questions, by the thresholds file's rule read from the file itself."""
    acted = right = 0
    for rec in records:
        r = rec.get("calibrated", rec)
        entry = thresholds["thresholds"].get(rec["signature"])
        t = entry["threshold"] if entry is not None else thresholds["fallback"]["threshold"]
        act = (not r["tie"] and rec["allowed_token_mass"] >= thresholds["min_allowed_token_mass"]
               and t is not None and r["margin"] >= t)
        acted += act
        right += act and r["choice"] == labels[rec["id"]]
    return {"acted": acted, "right_acted": right}


@pytest.mark.slow
def test_the_measurement_runs_end_to_end_on_smollm2(tmp_path):
    out_dir, report_path = tmp_path / "run", tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "agent_example.py"), "--model", "smollm2-135m",
                           "--out-dir", str(out_dir), "--output", str(report_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    report = orjson.loads(report_path.read_bytes())
    assert not envelope_problems(report) and report["kind"] == "agent-example"
    assert [s["command"].split()[:2] for s in report["steps"]] == [
        ["semif", "score"], ["semif", "calibrate"], ["semif", "calibrate"], ["semif", "calibrate"],
        ["semif", "calibrate"], ["examples/agent.py", "--model"], ["examples/agent.py", "--model"]]
    labels = {f"{t['id']}/{q}": t["labels"][q] for t in DOC["test"] for q in EX.QUESTIONS}
    train_ids = {r["id"].split("/")[0] for r in read_records(out_dir / "train-raw.jsonl")}
    assert train_ids == {t["id"] for t in DOC["train"]}  # the fits saw the training tickets only
    for lane in BENCH.LANES:
        recs = read_records(out_dir / f"test-{lane}.jsonl")
        assert sorted(r["id"] for r in recs) == sorted(labels)
        assert all(("calibrated" in r) == (lane == "calibrated") and r["echo"]["level"] == "digest" for r in recs)
        thresholds = orjson.loads((out_dir / f"thresholds-{lane}.json").read_bytes())
        load_policy(out_dir / f"thresholds-{lane}.json")
        printed = BENCH.parse_tally((out_dir / f"example-{lane}.txt").read_text(), EX.TALLY)
        got = report["lanes"][lane]["test"]["all"]
        assert {k: printed["all"][k] for k in ("acted", "right_acted")} == _recount(recs, thresholds, labels)
        assert {k: got[k] for k in printed["all"]} == printed["all"]
        assert got["right_raw"] == sum(r["choice"] == labels[r["id"]] for r in recs)
        assert got["right_acting"] == sum(r.get("calibrated", r)["choice"] == labels[r["id"]] for r in recs)
        assert got["decisions"] == 72 and got["acted"] + got["abstained"] == 72
    assert orjson.loads((out_dir / "bias.json").read_bytes())["kind"] == "bias"
    assert "acted on" in done.stdout
