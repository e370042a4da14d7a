"""benchmarks/decision_latency.py's own logic, on fakes (no model, no server): the workload, the requests and the
grammar made from it, how answers are judged, the statistics, and the report's shape (drawn by the site)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import decision_latency as dl
from scorer.formats.envelope import envelope_problems
from scorer.site.inputs import ReportFile
from scorer.site.latency_charts import draw_decision_latency


@pytest.fixture(scope="module")
def pool() -> list[dl.Question]:
    _state, criteria = dl.load_state_file()
    return dl.question_pool(criteria)


def test_the_workload_interleaves_64_questions_of_three_types(pool: list[dl.Question]) -> None:
    _state, criteria = dl.load_state_file()
    assert len(pool) == 64 and [q.name for q in pool] == [f"q{i:02d}" for i in range(1, 65)]
    assert [q.type for q in pool[:6]] == ["noul", "choice", "score"] * 2
    assert dl.mix(pool) == {"noul": 21, "choice": 22, "score": 21}
    assert dl.mix(dl.questions_for(pool, 4)) == {"noul": 2, "choice": 1, "score": 1}
    assert dl.mix(dl.questions_for(pool, 16)) == {"noul": 6, "choice": 5, "score": 5}
    # the noul questions are the shape criteria verbatim, in order
    assert [(q.source, q.text) for q in pool if q.type == "noul"] == [(c["id"], c["question"]) for c in criteria]
    for q in pool:
        if q.type != "noul":
            assert 2 <= len(q.options) <= 16 and len(set(q.options)) == len(q.options), q  # SemIf: A-P letters
    assert len({q.text for q in pool}) == 64
    with pytest.raises(SystemExit, match="1 to 64"):
        dl.questions_for(pool, 65)


def test_the_state_is_the_same_text_for_every_lane_and_a_cold_one_differs_from_its_start() -> None:
    state, _ = dl.load_state_file()
    assert json.loads(state)["primary_ticket"] == "T-8228" and 1000 < len(state) < 3000
    cold = dl.cold_state(state, "00ab")
    assert cold.endswith(state) and not cold.startswith(state[:1]) and cold != dl.cold_state(state, "00ac")


def test_the_system_one_request_is_the_sdks_own_shape(pool: list[dl.Question]) -> None:
    from typesafe_sdk._schemas.models import SystemOneRequest

    body = dl.systemone_body("m", "a state", pool)
    SystemOneRequest.model_validate(body, strict=True)
    assert body["questions"]["q01"] == {"type": "noul", "instructions": pool[0].text}
    assert body["questions"]["q02"]["criteria"] == {"Free": None, "Basic": None, "Pro": None, "Enterprise": None}
    assert body["questions"]["q03"]["criteria"] == ["low", "normal", "high", "urgent"]


def _answer(q: dl.Question, pick: int = 0) -> dict[str, Any]:
    if q.type == "noul":
        return {"type": "noul", "noul": 0.7}
    if q.type == "choice":
        p = {o: (1.0 if i == pick else 0.0) for i, o in enumerate(q.options)}
        return {"type": "choice", "choice": q.options[pick], "confidence": 1.0, "probabilities": p}
    n = len(q.options)
    return {"type": "score", "score": 1.0, "confidence": 0.5, "legend": {str(i): t for i, t in enumerate(q.options)},
            "probabilities": {str(i): 1.0 / n for i in range(n)}}


def test_system_one_answers_are_judged_by_the_sdk_model_and_against_the_questions(pool: list[dl.Question]) -> None:
    qs = dl.questions_for(pool, 4)
    good = {"model": "m", "answers": {q.name: _answer(q) for q in qs}, "usage": {"input_tokens": 9, "output_tokens": 0}}
    assert dl.systemone_problems(good, qs) == []
    missing = {**good, "answers": {q.name: _answer(q) for q in qs[:3]}}
    assert dl.systemone_problems(missing, qs) == ["answers missing ['q04'], extra []"]
    wrong = json.loads(json.dumps(good))
    wrong["answers"]["q02"]["choice"] = "Platinum"
    wrong["answers"]["q01"] = _answer(qs[1])
    assert dl.systemone_problems(wrong, qs) == ["q01: a 'choice' answer to a noul question",
                                                "q02: choice 'Platinum' is not one of its options"]
    broken = {**good, "usage": {"input_tokens": "9", "output_tokens": 0}}  # strict: a string is not an int
    (problem,) = dl.systemone_problems(broken, qs)
    assert problem.startswith("SystemOneResponse (strict): 1 error(s), first at usage.input_tokens")


def test_the_grammar_forces_one_object_with_a_field_per_question(pool: list[dl.Question]) -> None:
    qs = dl.questions_for(pool, 4)
    g = dl.grammar_for(qs)
    text = g.gbnf()
    assert text.startswith('root ::= "{" "\\"q01\\"" colon v0 sep "\\"q02\\"" colon v1 sep "\\"q03\\"" colon v2 sep '
                           '"\\"q04\\"" colon v0 "}"\n')
    assert 'v0 ::= "\\"yes\\"" | "\\"no\\""' in text and 'v2 ::= "\\"0\\"" | "\\"1\\"" | "\\"2\\"" | "\\"3\\""' in text
    longest = json.dumps({q.name: max(q.answer_values(), key=len) for q in qs})  # ": " and ", ": the widest spelling
    assert g.longest_chars() == len(longest) and g.max_new_tokens() == len(longest) + 1
    assert g.problems(longest) == [] and g.problems(longest.replace(" ", "")) == []
    assert g.problems('{"q01": "yes"}')[0].startswith("fields ['q01']… are not the questions in order")
    assert g.problems('{"q01": "maybe", "q02": "Pro", "q03": "3", "q04": "no"}') == \
        ["q01: 'maybe' is not one of ['yes', 'no']"]
    assert g.problems("[1]") == ["a JSON list, not an object"] and g.problems("{")[0].startswith("not JSON")
    # every question of the prompt names exactly the values its field may take
    prompt = dl.generation_messages("S", qs)[0]["content"]
    assert prompt.startswith("State:\nS\n\n") and '"0" (low), "1" (normal)' in prompt
    assert all(f"{q.name}: {q.text}" in prompt for q in qs)


def test_percentiles_are_nearest_rank() -> None:
    xs = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert dl.percentile(xs, 50) == 3.0 and dl.percentile(xs, 95) == 5.0 and dl.percentile(xs, 0) == 1.0
    assert dl.percentile([7.0], 95) == 7.0 and dl.percentile(list(map(float, range(1, 21))), 95) == 19.0
    with pytest.raises(ValueError):
        dl.percentile([], 50)


def _row(latency: float, load: float = 0.5, status: int = 200, problems: list[str] | None = None,
         cached: int | None = None) -> dict[str, Any]:
    return {"latency_s": latency, "status": status, "problems": problems or [], "cached_tokens": cached,
            "load_before": [load, load, load]}


def test_a_cell_summarises_answered_requests_and_is_quiet_only_when_every_request_was() -> None:
    rows = [_row(1.0, cached=400), _row(3.0, cached=400), _row(2.0, load=1.4, cached=400),
            _row(9.0, status=503, problems=["HTTP 503"])]
    c = dl.summarize(rows, 4, 1.5)
    assert (c["requests"], c["answered"], c["valid"]) == (4, 3, 3)
    assert (c["latency_p50_s"], c["latency_p95_s"], c["latency_mean_s"]) == (2.0, 3.0, 2.0)
    assert c["decisions_per_s"] == round(4 * 3 / 6.0, 3) and c["cached_tokens"] == [400, 400, 400]
    assert c["quiet"] is True and c["load_max"] == 1.4 and c["problems"] == ["HTTP 503"]
    assert dl.summarize([*rows, _row(1.0, load=1.6)], 4, 1.5)["quiet"] is False
    none = dl.summarize([_row(1.0, status=500, problems=["x"])], 1, 1.5)
    assert none["latency_p50_s"] is None and none["decisions_per_s"] is None and none["cached_tokens"] is None


def test_the_size_ratio_is_the_largest_sizes_p50_over_the_smallest() -> None:
    def cell(lane: str, size: int, p50: float | None, quiet: bool = True) -> dict[str, Any]:
        return {"model": "m", "lane": lane, "cache": "warm", "size": size, "latency_p50_s": p50, "quiet": quiet}

    cells = [cell("semif-llamacpp", 1, 0.5), cell("semif-llamacpp", 16, 1.0), cell("semif-llamacpp", 64, 2.0),
             cell("typed-gguf", 1, 1.0, quiet=False), cell("typed-gguf", 64, 64.0), cell("llama-server", 1, 1.0)]
    out = {r["lane"]: r for r in dl.ratios(cells, [1, 16, 64])}
    assert out["semif-llamacpp"] == {"model": "m", "lane": "semif-llamacpp", "cache": "warm", "from_size": 1,
                                     "to_size": 64, "size_ratio": 64.0, "p50_ratio": 4.0, "quiet": True}
    assert out["typed-gguf"]["p50_ratio"] == 64.0 and out["typed-gguf"]["quiet"] is False
    assert out["llama-server"]["p50_ratio"] is None  # its 64-question cell is missing
    assert dl.ratios(cells, [4]) == []


def test_rounds_rotate_and_the_load_wait_is_bounded() -> None:
    assert dl.rotated(["a", "b", "c"], 0) == ["a", "b", "c"] and dl.rotated(["a", "b", "c"], 4) == ["b", "c", "a"]
    loads = iter([3.0, 2.0, 1.2])
    slept: list[float] = []
    load, waited = dl.wait_quiet(1.5, 60, sleep=slept.append, loadavg=lambda: (next(loads), 0.0, 0.0))
    assert load[0] == 1.2 and waited == 4.0 and slept == [2.0, 2.0]
    load, waited = dl.wait_quiet(1.5, 3, sleep=slept.append, loadavg=lambda: (5.0, 0.0, 0.0))
    assert load[0] == 5.0 and waited == 3.0  # gave up: measured anyway, and the cell will say not quiet


def test_typed_gguf_gets_a_registry_of_the_gguf_where_it_lies(tmp_path: Path) -> None:
    home = dl.typed_gguf_home(tmp_path / "h", {"m": Path("/models/m.gguf")}, "m")
    reg = json.loads((home / "registry.json").read_text())
    assert reg == {"schema": "typed_gguf.registry/v1", "current": "m",
                   "aliases": {"m": {"alias": "m", "path": "/models/m.gguf"}}}


def test_arguments() -> None:
    a = dl.parse_args(["--models", "smollm2-135m", "--backends", "torch", "--sizes", "1,4", "--output", "x.json",
                       "--semif-flags", "--preset accurate-qwen2.5-1.5b"])
    assert a.models == ["smollm2-135m"] and a.backends == ["torch"] and a.sizes == [1, 4]
    assert a.tools == list(dl.TOOLS) and a.semif_flags == ["--preset", "accurate-qwen2.5-1.5b"] and a.max_load == 1.5
    for bad in (["--backends", "vllm"], ["--tools", "lm-eval"], ["--repeats", "0"]):
        with pytest.raises(SystemExit):
            dl.parse_args([*bad, "--output", "x.json"])


def test_a_run_on_fake_lanes_writes_a_report_the_site_draws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scorer.models import store

    @contextlib.contextmanager
    def lanes(model: str, backends: Any, tools: Any, args: Any, work: Path, gguf: Path
              ) -> Iterator[tuple[list[dl.Lane], list[dict[str, Any]]]]:
        out = [dl.Lane("semif-torch", "semif", "torch", info={"command": "semif serve"}),
               dl.Lane("llama-server", "llama-server", "llamacpp", info={"version": "b1"})]
        yield out, [{"model": model, "lane": "typed-gguf", "error": "no runtime"}]

    asked: list[tuple[str, int, bool]] = []

    def ask(client: Any, lane: dl.Lane, state: str, qs: Any, grammar: Any) -> dict[str, Any]:
        asked.append((lane.name, len(qs), state.startswith("[request ")))
        slow = 1.0 if lane.tool == "semif" else float(len(qs))
        return {"latency_s": slow * (2 if state.startswith("[request ") else 1), "status": 200, "problems": [],
                "cached_tokens": None}

    monkeypatch.setattr(dl, "start_lanes", lanes)
    monkeypatch.setattr(dl, "ask", ask)
    monkeypatch.setattr(dl, "wait_quiet", lambda *a, **k: ([0.2, 0.2, 0.2], 0.0))
    monkeypatch.setattr(store, "gguf_for", lambda ref: (tmp_path / "m.gguf", "ab" * 32))
    out = tmp_path / "r.json"
    code = dl.main(["--models", "smollm2-135m", "--sizes", "1,4", "--repeats", "2", "--output", str(out)])
    assert code == 1  # a lane did not start: said by the exit status too
    # primed once per lane and size, then per round: every lane cold then warm, rotated
    assert asked[:2] == [("semif-torch", 1, False), ("llama-server", 1, False)]
    assert asked[2:6] == [("semif-torch", 1, True), ("semif-torch", 1, False),
                          ("llama-server", 1, True), ("llama-server", 1, False)]
    assert asked[6:10] == [("llama-server", 1, True), ("llama-server", 1, False),
                           ("semif-torch", 1, True), ("semif-torch", 1, False)]
    rep = json.loads(out.read_text())
    assert envelope_problems(rep) == [] and rep["kind"] == "decision-latency"
    assert rep["inputs"]["gguf.smollm2-135m"]["sha256"] == "ab" * 32 and rep["quiet"] is True
    assert rep["failed_lanes"] == [{"model": "smollm2-135m", "lane": "typed-gguf", "error": "no runtime"}]
    assert len(rep["results"]) == 2 * 2 * 2 and len(rep["requests"]) == 2 * 2 * 2 * 2
    ratio = {(r["lane"], r["cache"]): r["p50_ratio"] for r in rep["ratios"]}
    assert ratio == {("semif-torch", "cold"): 1.0, ("semif-torch", "warm"): 1.0,
                     ("llama-server", "cold"): 4.0, ("llama-server", "warm"): 4.0}
    assert rep["workload"]["mix"] == {"1": {"noul": 1, "choice": 0, "score": 0},
                                      "4": {"noul": 2, "choice": 1, "score": 1}}
    report = ReportFile("results/r.json", "r", out.read_bytes(), "", rep, "decision-latency")
    draw_decision_latency("results/r.json", report)
    assert len(report.charts) == 2  # cold and warm
    assert "llama-server 4.0×" in str(report.charts[0]) and "semif-torch · 4 q" in str(report.charts[1])
    with pytest.raises(SystemExit, match="exists"):
        dl.main(["--models", "smollm2-135m", "--sizes", "1", "--output", str(out)])


def test_a_lane_that_answers_nothing_is_a_failed_lane() -> None:
    rows = [{"model": "m", "lane": "typed-gguf", "status": "RemoteProtocolError: closed", "problems": ["no answer"]},
            {"model": "m", "lane": "typed-gguf", "status": 500, "problems": ["HTTP 500"]},
            {"model": "m", "lane": "semif-torch", "status": 200, "problems": []},
            {"model": "m", "lane": "semif-torch", "status": 500, "problems": ["HTTP 500"]}]
    failed = dl.silent_lanes(rows)
    assert [(f["model"], f["lane"]) for f in failed] == [("m", "typed-gguf")]
    assert "none of its 2 timed requests" in failed[0]["error"] and "RemoteProtocolError" in failed[0]["error"]
