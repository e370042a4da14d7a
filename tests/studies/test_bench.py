"""`semif bench`, with fakes: the report's numbers follow from the records (tokens, analytic bound,
state latency), exact passes are judged against fresh, and the drift report is chosen honestly."""

from __future__ import annotations

import orjson
import pytest
from fakes import FakeBackend, NearTieBackend, decision_rows, write_rows

from scorer import cli
from scorer.core.errors import InputError
from scorer.formats.envelope import envelope_problems
from scorer.scoring.drift import default_report_path, measure
from scorer.scoring.modes import prepare
from scorer.studies import bench


def test_state_latency_is_time_between_completed_states():
    rows = decision_rows(3, 2)
    done = [0.5, 1.0, 1.2, 3.0, 3.1, 3.3]
    assert bench.state_latencies(rows, done) == pytest.approx([1.0, 2.0, 0.3])


def test_report_numbers_follow_from_the_records(tmp_path):
    rows = decision_rows(3, 5)
    fb = NearTieBackend()
    out = bench.run_bench(fb, rows, ["serial", "shared"], ["shared"], repeats=2, safety=2.0, probe_rows=5,
                          drift_dir=tmp_path)
    p = out["passes"]
    assert list(p) == ["direct", "serial", "shared", "shared+exact"]
    items = prepare(fb, rows)
    fresh_tokens = sum(len(it.prompt.ids) for it in items)
    # The fast modes prefill each distinct state prefix once, less what the radix prefix cache already holds:
    # the longest common prefix with a state prefilled before it (the instructions every row shares).
    groups = list(dict.fromkeys(tuple(it.prefix) for it in items))

    def lcp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    prefilled = sum(len(g) - max((lcp(g, h) for h in groups[:i]), default=0) for i, g in enumerate(groups))
    fast_tokens = prefilled + sum(len(it.prompt.ids) - len(it.prefix) for it in items)
    assert p["direct"]["tokens_processed"] == fresh_tokens
    assert p["shared"]["tokens_processed"] == fast_tokens == p["serial"]["tokens_processed"]
    assert p["shared"]["analytic_bound"] == pytest.approx(fresh_tokens / fast_tokens)
    sp = p["direct"]["wall_s"] / p["shared"]["wall_s"]
    assert p["shared"]["fraction_of_bound"] == pytest.approx(sp / p["shared"]["analytic_bound"], rel=1e-3)
    assert p["direct"]["repeats"] == 1 and p["shared"]["repeats"] == 2 and p["shared"]["repeats_identical"]
    assert p["shared"]["states"] == 3 and p["shared"]["kernel"] == "fake.packed"
    assert p["shared"]["vs_fresh"]["n_flips"] > 0  # the near-tie workload flips on the fast path …
    ex = p["shared+exact"]
    assert ex["vs_fresh"]["n_flips"] == 0 and ex["escalated"] > 0  # … and not under --exact
    assert ex["escalated_share"] == pytest.approx(ex["escalated"] / len(rows))
    assert set(ex["escalated_changed_choice"]) >= {f["id"] for f in p["shared"]["vs_fresh"]["flips"]}
    assert ex["tokens_processed"] > p["shared"]["tokens_processed"]
    assert ex["throughput_vs_fast"] == pytest.approx(p["shared"]["wall_s"] / ex["wall_s"], rel=1e-3)
    assert ex["bound_source"].startswith("probe (no drift report")
    t = bench.targets(p)
    assert t["shared_exact_flips"] == 0 and t["shared_fraction_of_bound"] == p["shared"]["fraction_of_bound"]


def test_exact_pass_needs_its_fast_pass():
    with pytest.raises(InputError, match="without the plain"):
        bench.run_bench(FakeBackend(), decision_rows(2, 2), ["direct"], ["shared"], repeats=1)


def test_drift_report_is_used_only_when_held_out_and_matching(tmp_path):
    fb = NearTieBackend()
    rows, held = decision_rows(2, 4), decision_rows(2, 4, "h")
    path = default_report_path(fb, "shared", tmp_path)
    rep = measure(fb, rows, ["shared"], 4096, 2.0, {"path": "mem"})["shared"]
    path.write_bytes(orjson.dumps(rep))
    ids = {d.id for d in rows}
    got, why = bench._report_for(fb, "shared", "auto", tmp_path, ids, 4096)
    assert got is None and "rows of this very workload" in why
    rep = measure(fb, held, ["shared"], 4096, 2.0, {"path": "mem"})["shared"]
    path.write_bytes(orjson.dumps(rep))
    assert bench._report_for(fb, "shared", "auto", tmp_path, ids, 4096)[0] == path
    got, why = bench._report_for(fb, "shared", "auto", tmp_path, ids, 64)
    assert got is None and "max_batch_tokens" in why
    with pytest.raises(InputError):
        bench._report_for(fb, "shared", "report", tmp_path, ids, 64)
    assert bench._report_for(fb, "shared", "probe", tmp_path, ids, 4096)[0] is None


def test_suffix_table_counts_tokens_per_criterion():
    fb = FakeBackend()
    rows = decision_rows(2, 3)
    t = bench.suffix_table(fb, rows)
    assert set(t["by_criterion"]) == {r.question for r in rows}
    for q, e in t["by_criterion"].items():
        assert e["question_tokens"] == len(" " + q)  # character tokenizer
        assert e["suffix_tokens_min"] <= e["suffix_tokens_max"]
        assert e["template_overhead_tokens"] == e["suffix_tokens_min"] - e["question_tokens"]


def test_cli_bench_writes_a_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: NearTieBackend())
    inp = write_rows(tmp_path, decision_rows(2, 4))
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "shape", "--input", str(inp), "--output", str(out), "--repeats", "1",
                     "--drift-dir", str(tmp_path), "--exact-safety", "2"]) == 0
    rep = orjson.loads(out.read_bytes())
    assert (rep["kind"], rep["format"]) == ("bench", "semif-bench-v2") and not envelope_problems(rep)
    assert rep["workload"]["rows"] == 8 and rep["workload"]["states"] == 2
    assert rep["inputs"]["workload"] == {"path": str(inp), "sha256": rep["workload"]["sha256"]}
    assert set(rep["load_average"]) == {"before", "after"}
    assert {"cpu", "cores"} <= set(rep["machine"]) and "numpy" in rep["versions"]
    assert set(rep["passes"]) == {"direct", "serial", "shared", "serial+exact", "shared+exact"}
    assert rep["passes"]["serial+exact"]["vs_fresh"]["n_flips"] == 0
    text = capsys.readouterr().out
    assert "shared+exact" in text and "%bound" in text
    assert cli.main(["bench", "shape", "--input", str(inp), "--output", str(out)]) == 2  # never overwritten


def test_phases_account_for_the_wall_time():
    fb = NearTieBackend()
    rows = decision_rows(2, 3)
    for mode in ("direct", "serial", "shared"):
        p = bench.timed_pass(fb, rows, mode, 4096)
        ph = bench.phases(p)
        assert sum(ph.values()) == pytest.approx(p.wall_s, abs=1e-5)
        if mode == "shared":
            assert ph["prefill_s"] == pytest.approx(2 * 0.001)  # the fake's prefill time, once per state
        assert all(v >= 0 for k, v in ph.items() if k != "other_s")
