"""benchmarks/busy.py without a model: the workload it sends, the background job (bounded, killed), the arithmetic of
slowdowns and comparisons, and a whole run on fake lanes whose report carries the envelope and is drawn by the site."""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

import pytest

from benchmarks import busy
from scorer.formats.envelope import KINDS, envelope_problems
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.reports import _KINDS

ROWS = busy.ROWS


def test_systemone_requests_group_rows_by_state_with_their_questions():
    rows = busy.load_rows(ROWS, None)
    reqs = busy.systemone_requests(rows, "m")
    assert len(reqs) == 2 and sum(len(r["questions"]) for r in reqs) == len(rows) == 42
    q = reqs[0]["questions"]["q01"]
    assert q == {"type": "noul", "instructions": rows[0]["question"]}
    assert reqs[0]["state"] == json.dumps(rows[0]["state"], ensure_ascii=False) and reqs[0]["model"] == "m"
    choice = busy.systemone_requests([{"state": "s", "question": "which?", "options": [
        {"id": "a", "description": "A"}, {"id": "b", "description": "B"}, {"id": "c", "description": "C"}]}], "m")
    assert choice[0]["questions"]["q01"] == {"type": "choice", "instructions": "which?",
                                             "criteria": {"a": "A", "b": "B", "c": "C"}}


def test_fresh_states_differ_per_run_and_keep_the_rest():
    rows = busy.load_rows(ROWS, 3)
    a, b = busy.fresh_rows(rows, "n1"), busy.fresh_rows(rows, "n2")
    assert a[0]["state"]["run"] == "n1" and b[0]["state"]["run"] == "n2"
    assert {k: v for k, v in a[0]["state"].items() if k != "run"} == rows[0]["state"]
    assert a[0]["question"] == rows[0]["question"] and a[0]["id"] == rows[0]["id"]
    assert busy.fresh_state("text", "n") == "[run n]\ntext"


def test_answers_are_checked():
    body = {"questions": {"q01": {"type": "noul"}, "q02": {"type": "choice"}}}
    assert busy.systemone_problems({"answers": {"q01": {"type": "noul"}, "q02": {"type": "choice"}}}, body) == []
    assert busy.systemone_problems({"answers": {"q01": {"type": "noul"}}}, body) == ["q02: no choice answer"]
    assert busy.systemone_problems({}, body) == ["no 'answers' object"]


def test_slowdown_spread_and_round_order():
    assert busy.slowdown([1.0, 1.2, 1.1], [2.2, 2.4, 2.0]) == 2.0
    assert busy.slowdown([], [1.0]) is None and busy.slowdown([1.0], []) is None
    assert busy.spread([1.0, 1.5]) == 1.5 and busy.spread([1.0]) is None
    assert busy.conditions_in_round(["spin", "matmul"], 0) == ["quiet", "spin", "matmul"]
    assert busy.conditions_in_round(["spin", "matmul"], 1) == ["matmul", "spin", "quiet"]


def _runs(lane: str, quiet: list[float], loaded: list[float], load: str = "spin") -> list[dict[str, Any]]:
    out = [{"lane": lane, "condition": "quiet", "wall_s": w, "problems": [], "busy_cores_before": 0.1,
            "lane_cpu_s": 2 * w, "background_share": None} for w in quiet]
    out += [{"lane": lane, "condition": load, "wall_s": w, "problems": [], "busy_cores_before": None,
             "lane_cpu_s": w, "background_share": 0.9} for w in loaded]
    return out


def test_summary_and_comparisons():
    lanes = [busy.Lane("semif llamacpp shared · passive", "semif", "llamacpp", "shared", "passive", "default"),
             busy.Lane("semif llamacpp shared · library", "semif", "llamacpp", "shared", "library", "default"),
             busy.Lane("typed-gguf serve", "typed-gguf", "llamacpp", "serve", None, "its own")]
    runs = (_runs(lanes[0].name, [1.0, 1.02], [1.3, 1.4]) + _runs(lanes[1].name, [1.0, 0.98], [3.0, 3.2])
            + _runs(lanes[2].name, [2.0, 2.0], [2.6, 2.8]))
    res = busy.summarize(lanes, runs, ["spin"], max_busy=0.3)
    assert [r["slowdown"] for r in res] == [round(1.35 / 1.01, 3), round(3.1 / 0.99, 3), 1.35]
    assert all(r["quiet"] and r["valid"] for r in res) and res[0]["background_share"] == 0.9
    comps = {c["lane"]: c for c in busy.comparisons(res)}
    passive = comps[lanes[0].name]
    assert passive["peer_slowdown"] == 1.35 and passive["within_peer"] is True and passive["within_ceiling"] is True
    assert passive["quiet_vs_library"] == round(1.01 / 0.99, 3) and passive["library_slowdown"] == res[1]["slowdown"]
    library = comps[lanes[1].name]
    assert library["within_peer"] is False and library["within_ceiling"] is False
    assert library["quiet_vs_library"] is None
    noisy = busy.summarize(lanes[:1], [{**r, "busy_cores_before": 1.0} if r["condition"] == "quiet" else r
                                       for r in runs], ["spin"], max_busy=0.3)
    assert noisy[0]["quiet"] is False


def test_the_background_job_is_bounded_measured_and_killed():
    job = busy.BackgroundJob("spin", cores=1, max_s=60)
    job.start()
    try:
        time.sleep(0.6)
        assert job.running() == 1
        cpu = busy.group_cpu_s(job.pgids())
        assert cpu is not None and cpu > 0.05
    finally:
        job.stop()
    assert job.running() == 0 and job.procs == []
    short = busy.BackgroundJob("matmul", cores=2, max_s=0.5)
    short.start()
    try:
        deadline = time.monotonic() + 30
        while short.running() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert short.running() == 0  # ended by itself at its bound
    finally:
        short.stop()
    with pytest.raises(ValueError, match="unknown background job"):
        busy.BackgroundJob("sleep").start()


def test_arguments_are_checked():
    with pytest.raises(SystemExit):
        busy.parse_args(["--output", "x.json", "--modes", "direct,fast"])
    with pytest.raises(SystemExit):
        busy.parse_args(["--output", "x.json", "--threads", "0"])
    a = busy.parse_args(["--output", "x.json", "--threads", "default,auto,2", "--loads", "spin,matmul"])
    assert a.threads == ["default", "auto", "2"] and a.loads == ["spin", "matmul"]
    names = [ln.name for ln in busy.lanes_for(a)]
    assert len(names) == 2 * 3 * 2 * 3 + 1 and names[-1] == "typed-gguf serve"


def test_a_run_on_fake_lanes_writes_an_enveloped_report_the_site_draws(tmp_path, monkeypatch):
    """main() end to end with the lanes replaced by fakes (a lane that takes longer while the job runs)."""
    from scorer.models import store

    monkeypatch.setattr(store, "gguf_for", lambda ref, progress=True: (tmp_path / "m.gguf", "ab" * 32))
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)

    def fake_lane(slow: float):
        @contextlib.contextmanager
        def ctx(lane, args, work, *rest):
            def run(rows):
                assert all("run" in r["state"] for r in rows)  # every run scores fresh states
                time.sleep(0.01)
                return {"wall_s": 0.01 * (slow if _LOADED[0] else 1.0), "decisions": len(rows), "problems": []}

            lane.info = {"command": "fake", "home": str(work)}
            lane.run = run
            yield lane
        return ctx

    _LOADED = [False]
    real_background = busy.background

    @contextlib.contextmanager
    def background(kind, cores, max_s, warmup_s):
        _LOADED[0] = kind is not None
        with real_background(kind, cores, 5.0, 0.0) as job:
            yield job
        _LOADED[0] = False

    monkeypatch.setattr(busy, "background", background)
    monkeypatch.setattr(busy, "worker_lane", fake_lane(1.2))
    monkeypatch.setattr(busy, "serve_lane", fake_lane(1.3))
    monkeypatch.setattr(busy, "typed_gguf_lane", fake_lane(1.25))
    out = tmp_path / "busy.json"
    rc = busy.main(["--model", "smollm2-135m", "--backends", "llamacpp", "--modes", "shared,serve",
                    "--policies", "passive", "--repeats", "2", "--max-busy", "99", "--output", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert envelope_problems(doc) == [] and doc["kind"] == "busy" and KINDS["busy"] == busy.FORMAT
    assert [r["slowdown"] for r in doc["results"]] == [1.2, 1.3, 1.25]
    comps = {c["lane"]: c for c in doc["comparisons"]}
    assert comps["semif llamacpp shared · passive"]["within_peer"] is True
    assert comps["semif llamacpp serve · passive"]["within_peer"] is False
    assert len(doc["runs"]) == 3 * 2 * 2 and doc["settings"]["rows"] == 42
    assert doc["machine"]["threading"]["wait_policy"]["source"]  # the report's machine block says how threads wait
    rep = ReportFile(rel="results/busy.json", slug="busy", raw=out.read_bytes(), sha256="x", obj=doc, kind="busy")
    draw = _KINDS["busy"].draw
    assert draw is not None
    draw("results/busy.json", rep)
    assert len(rep.charts) == 1 and "ceiling" in str(rep.charts[0]) and rep.tables[0]["rows"]
    with pytest.raises(BuildError, match=r"results\[0\] needs 'lane' and 'load'"):
        draw("results/bad.json", ReportFile(rel="r", slug="r", raw=b"", sha256="x", kind="busy",
                                            obj={"results": [{"slowdown": 1.0}]}))


def test_the_benchmark_refuses_a_wait_policy_it_would_not_control(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with pytest.raises(SystemExit, match="OMP_WAIT_POLICY is set"):
        busy.main(["--output", str(tmp_path / "b.json")])


def test_home_pgids_reads_environments(tmp_path):
    proc = tmp_path / "proc"
    for pid, env, pgrp in ((10, b"A=1\0TYPED_GGUF_HOME=/h\0", 10), (11, b"TYPED_GGUF_HOME=/h\0", 11),
                           (12, b"TYPED_GGUF_HOME=/other\0", 12)):
        d = proc / str(pid)
        d.mkdir(parents=True)
        (d / "environ").write_bytes(env)
        (d / "stat").write_text(f"{pid} (python) S 1 {pgrp} {pgrp} 0 -1 0 0 0 0 0 7 3 0 0")
    assert busy.home_pgids("/h", proc) == [10, 11]
    assert busy.group_cpu_s([10, 11], proc) == pytest.approx(20 / os.sysconf("SC_CLK_TCK"))
