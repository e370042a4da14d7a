"""`semif serve --batch-window-ms`: one-row requests scored together across clients (scorer/serving/queue.py).

With the fake backend (its logits are a pure function of the token ids, so packing is exact) batched answers
equal unbatched ones field for field, bar the prefix bookkeeping and timings of the group they were in; on the
real SmolLM2-135M within the packed pass's stated tolerance (tests/scoring/test_modes_real.py: |Δp| <= 1e-4)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import orjson
import pytest
from fakes import FakeBackend
from serve_helpers import ROOT, GatedBackend, live, workload_rows

from scorer import Scorer, cli
from scorer.core.checks import OptionError
from scorer.formats.records import validate_records
from scorer.serving.queue import DEFAULT_BATCH_WINDOW_MS, RowJob, ScoringQueue, check_batch_window
from scorer.serving.service import build_app

GROUP_BOOKKEEPING = ("timing", "prefix_tokens", "suffix_tokens", "cache_hit", "cache", "prefix_sha256", "batch",
                     "run")
"""What a record's group decides (how much prefix it shared, its timings): not the answer."""
TOL = 1e-4
"""The packed pass's stated tolerance on the real model (tests/scoring/test_modes_real.py)."""


def _answer(rec: dict[str, Any]) -> dict[str, Any]:
    """The record without its group bookkeeping, with the run it names."""
    return {**{k: v for k, v in rec.items() if k not in GROUP_BOOKKEEPING},
            "run": {"config_sha256": rec["run"]["config_sha256"], "index": rec["run"]["index"]}}


def _alone(backend: Any, rows: list[dict[str, Any]], **kw: Any) -> dict[str, dict[str, Any]]:
    """Each row scored by itself, as the service scores it without batching."""
    with Scorer(backend=backend, slots="letters", mode="shared", **kw) as s:
        return {r["id"]: s.decide_row(r, "body").record for r in rows}


def _wait_queued(url: str, n: int) -> None:
    deadline = time.monotonic() + 30
    while httpx.get(f"{url}/healthz").json()["queued"] < n:
        assert time.monotonic() < deadline, f"{n} requests never queued"
        time.sleep(0.02)


def _behind_a_busy_worker(backend: GatedBackend, url: str, first: dict[str, Any],
                          rows: list[dict[str, Any]]) -> tuple[httpx.Response, list[httpx.Response]]:
    """``first`` holds the worker (its prefill waits on the gate) while ``rows`` queue up, one request each; then
    the gate opens. Returns the answers."""
    with ThreadPoolExecutor(len(rows) + 1) as pool:
        head = pool.submit(httpx.post, f"{url}/v1/decide", json=first, timeout=60)
        assert backend.entered.wait(30)
        rest = [pool.submit(httpx.post, f"{url}/v1/decide", json=r, timeout=60) for r in rows]
        _wait_queued(url, len(rows))
        backend.gate.set()
        return head.result(), [f.result() for f in rest]


def test_requests_queued_together_are_scored_in_one_pass_per_state_with_unbatched_answers():
    rows = workload_rows()
    batch = rows[1:4] + rows[21:24]  # three questions about each of the two states
    want = _alone(FakeBackend(), [rows[0], *batch])
    backend = GatedBackend()
    with Scorer(backend=backend, slots="letters", mode="shared") as s, live(build_app(s, batch_window_ms=1)) as url:
        head, answers = _behind_a_busy_worker(backend, url, rows[0], batch)
        passes = backend.calls["fan_out"]
    assert head.status_code == 200 and all(a.status_code == 200 for a in answers), [a.text for a in answers]
    got = [a.json() for a in answers]
    validate_records([head.json(), *got])
    assert head.json()["batch"] == {"requests": 1, "group_requests": 1, "window_ms": 1.0}
    assert [g["batch"] for g in got] == [{"requests": 6, "group_requests": 3, "window_ms": 1.0}] * 6
    assert passes == 3  # the first request's own pass, then one packed pass per state for the six
    # each state prefilled once: the first one by the head request (the scorer's prefix cache keeps it), the
    # second by the first of its requests to arrive
    assert [g["cache"]["lookup"] for g in got[:3]].count("hit") == 1
    assert sorted(g["cache_hit"] for g in got[:3]) == [True, True, True]
    assert sorted(g["cache_hit"] for g in got[3:]) == [False, True, True]
    for g in got:  # the same answer, naming the same run, as each request scored alone
        assert _answer(g) == _answer(want[g["id"]])
        assert g["run"]["index"] == 0


def test_a_row_that_cannot_be_scored_fails_alone_and_the_others_are_answered():
    ok = {"id": "ok", "state": "a short ticket", "question": "Is it short?",
          "options": [{"id": "yes", "description": "yes"}, {"id": "no", "description": "no"}]}
    rows = [ok, {**ok, "id": "long", "state": "x" * 3000}, {**ok, "id": "ok2", "question": "Is it a ticket?"}]
    want = _alone(FakeBackend(n_ctx=1000), [ok, rows[2]])
    backend = GatedBackend(n_ctx=1000)
    with Scorer(backend=backend, slots="letters", mode="shared") as s, live(build_app(s, batch_window_ms=1)) as url:
        _, (a, long, b) = _behind_a_busy_worker(backend, url, {**ok, "id": "first"}, rows)
    assert long.status_code == 422 and "the model's context holds 1000" in long.json()["error"]
    assert "Traceback" not in long.text
    for r, row in ((a, ok), (b, rows[2])):  # the batch could not be scored together: each was scored alone
        assert r.status_code == 200, r.text
        assert r.json()["batch"] == {"requests": 1, "group_requests": 1, "window_ms": 1.0}
        assert _answer(r.json()) == _answer(want[row["id"]])


def test_a_row_the_calibration_does_not_cover_fails_alone(tmp_path, monkeypatch):
    rows = [orjson.loads(line) for line in (ROOT / "data" / "eval" / "boundary.jsonl").read_bytes().splitlines()]
    inp, raw, prior = tmp_path / "in.jsonl", tmp_path / "raw.jsonl", tmp_path / "prior.json"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(raw), "--mode", "shared"]) == 0
    assert cli.main(["calibrate", "prior", str(raw), "--output", str(prior)]) == 0
    covered = rows[:2]
    want = _alone(FakeBackend(), covered, calibration=prior)
    backend = GatedBackend()
    with Scorer(backend=backend, slots="letters", mode="shared", calibration=prior) as s, \
            live(build_app(s, batch_window_ms=1)) as url:
        _, (a, bad, b) = _behind_a_busy_worker(backend, url, rows[2], [covered[0], workload_rows()[0], covered[1]])
    assert bad.status_code == 422 and "no calibration for signature" in bad.json()["error"]
    for r in (a, b):
        assert r.status_code == 200, r.text
        rec = r.json()
        assert rec["batch"]["requests"] == 2 and rec["calibrated"] == want[rec["id"]]["calibrated"]
        assert _answer(rec) == _answer(want[rec["id"]])


def test_requests_sent_within_the_window_wait_for_each_other():
    rows = workload_rows()[:4]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, \
            live(build_app(s, batch_window_ms=1000)) as url, \
            ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda r: httpx.post(f"{url}/v1/decide", json=r, timeout=60), rows))
        assert httpx.get(f"{url}/v1/models").json()["batch_window_ms"] == 1000
    assert all(a.status_code == 200 for a in answers)
    assert max(a.json()["batch"]["requests"] for a in answers) >= 2  # nothing else held the worker


def test_window_zero_scores_each_request_alone_as_before():
    row = workload_rows()[0]
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, live(build_app(s)) as url:
        rec = httpx.post(f"{url}/v1/decide", json=row).json()
        assert httpx.get(f"{url}/v1/models").json()["batch_window_ms"] == 0
    assert "batch" not in rec and rec["timing"]["group_rows"] == 1
    assert _answer(rec) == _answer(_alone(FakeBackend(), [row])[row["id"]])


def test_bad_rows_are_refused_before_they_queue():
    with Scorer(backend=FakeBackend(), slots="letters", mode="shared") as s, \
            live(build_app(s, batch_window_ms=5)) as url:
        r = httpx.post(f"{url}/v1/decide", json={**workload_rows()[0], "options": []})
        assert r.status_code == 422 and r.json()["field"] == "options" and r.json()["error"].startswith("body: ")
        assert httpx.get(f"{url}/healthz").json()["queued"] == 0


def test_the_queue_runs_plain_jobs_met_while_collecting_after_the_batch():
    order: list[str] = []

    def batch(jobs: list[RowJob]) -> list[Any]:
        order.append(f"batch of {len(jobs)}")
        return [j.decision for j in jobs]

    async def go() -> None:
        q = ScoringQueue(8, window_s=0.5, batch=batch)
        try:
            from scorer.api import _parse_row

            rows = [RowJob(*_parse_row(r, "body", None)) for r in workload_rows()[:2]]
            got = await asyncio.gather(q.submit(rows[0]), q.submit(lambda: order.append("plain") or "done"),
                                       q.submit(rows[1]))
            assert got[1] == "done" and got[0] == rows[0].decision and got[2] == rows[1].decision
        finally:
            q.stop()

    asyncio.run(go())
    assert order == ["batch of 2", "plain"]


def test_the_window_is_checked_against_the_mode():
    assert check_batch_window(None, "shared") == DEFAULT_BATCH_WINDOW_MS
    assert check_batch_window(None, "serial") == 0 and check_batch_window(0, "direct") == 0
    with pytest.raises(OptionError, match="5 ms needs mode shared, not serial"):
        check_batch_window(5, "serial")
    with pytest.raises(OptionError, match="batch_window_ms: -1 is not a finite number >= 0"):
        check_batch_window(-1, "shared")
    with pytest.raises(OptionError, match="is more than 1000 ms"):
        check_batch_window(1500, "shared")
    with Scorer(backend=FakeBackend(), slots="letters", mode="direct") as s, \
            pytest.raises(OptionError, match="needs mode shared"):
        build_app(s, batch_window_ms=5)


def test_semif_serve_refuses_a_bad_window_before_the_model_loads(monkeypatch, capsys):
    import scorer.backends as backends

    monkeypatch.setattr(backends, "load_backend", lambda cfg: pytest.fail("model loaded"))
    assert cli.main(["serve", "--mode", "serial", "--batch-window-ms", "5"]) == 2
    assert "batch_window_ms: 5 ms needs mode shared" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["serve", "--batch-window-ms", "-2"])
    assert e.value.code == 2 and "-2 is not a finite number >= 0" in capsys.readouterr().err


@pytest.mark.slow
def test_batched_answers_on_smollm2_equal_unbatched_within_the_packed_tolerance(smol_torch):
    rows = workload_rows()
    batch = rows[1:4] + rows[21:24]
    want = _alone(smol_torch, batch)
    # nothing can hold the real backend's worker, so a long window gathers the requests sent at once
    with Scorer(backend=smol_torch, slots="letters", mode="shared") as s, \
            live(build_app(s, batch_window_ms=1000)) as url, \
            ThreadPoolExecutor(len(batch)) as pool:
        answers = list(pool.map(lambda r: httpx.post(f"{url}/v1/decide", json=r, timeout=600), batch))
    got = [a.json() for a in answers]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    validate_records(got)
    assert max(g["batch"]["requests"] for g in got) >= 2
    for g in got:
        w = want[g["id"]]
        assert g["prompt_sha256"] == w["prompt_sha256"] and g["tokens_sha256"] == w["tokens_sha256"]
        assert g["run"]["config_sha256"] == w["run"]["config_sha256"]
        assert g["probabilities"] == pytest.approx(w["probabilities"], abs=TOL)
        if w["margin"] > 2 * TOL:
            assert g["choice"] == w["choice"]


def test_the_batching_benchmark_compares_windows_row_by_row():
    """benchmarks/serve_batching.py's agreement and before/after table (its runs need a model: not here)."""
    import importlib.util
    import sys

    path = ROOT / "benchmarks" / "serve_batching.py"
    spec = importlib.util.spec_from_file_location("_bench_serve_batching", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    ref = {"a": [0.5, 0.5], "b": [0.9, 0.1]}
    assert mod._agreement(ref, {"a": [0.5, 0.5], "b": [0.2, 0.8]}) == {
        "rows_compared": 2, "max_abs_dp": pytest.approx(0.7), "choices_differing": 1}
    runs = [[{"requests_per_s": 2.0, "latency_p50_s": 1, "latency_p95_s": 2, "batch_requests_mean": 1.0}],
            [{"requests_per_s": 5.0, "latency_p50_s": 1, "latency_p95_s": 2, "batch_requests_mean": 3.5}]]
    table = mod._table([0.0, 5.0], runs, [4])
    assert table[0]["clients"] == 4 and table[0]["window_5ms"]["speedup"] == 2.5
    assert table[0]["window_0ms"]["speedup"] == 1.0


def test_layout_auto_is_not_batched_since_it_chooses_per_request() -> None:
    """auto over a batch would choose from other clients' rows: its default window is 0, an explicit one refused."""
    from scorer.core.checks import OptionError
    from scorer.serving.queue import DEFAULT_BATCH_WINDOW_MS, check_batch_window

    assert check_batch_window(None, "shared", "auto") == 0.0
    assert check_batch_window(None, "shared", "question-major") == DEFAULT_BATCH_WINDOW_MS
    with pytest.raises(OptionError, match="needs a fixed layout, not auto"):
        check_batch_window(5, "shared", "auto")
