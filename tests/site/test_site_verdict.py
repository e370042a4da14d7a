"""What the replay says in words (issue 12, item 5), written by build.py from the trace: the verdict sentence,
the numbers with their caveats, the picker's names, and the demo page as it reads without JavaScript.

No browser: these check the build's output; test_site_replay.py checks the page in Chromium.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from site_helpers import FAKE, FAKE_INVALID, FIXTURES, ROOT, build, capped_trace, make_data_dir, trace_mod

from scorer.site import labels, lanes, trace_view, verdict
from scorer.site.formatting import fmt_seconds

V2 = FIXTURES / "trace-v2-fake.json"
V2_FREE_VALID = FIXTURES / "trace-v2-fake-free-valid.json"


def trace_file(doc: dict[str, Any], rel: str = "traces/x.json") -> build.TraceFile:
    return build.TraceFile(rel, "x", b"", "", doc, labels.trace_label(doc), lanes.trace_lanes(doc),
                           labels.is_control(doc))


def sentences(doc: dict[str, Any]) -> dict[str, str]:
    return {v["lane"]: f"{v['name']} {v['text']}" for v in verdict.verdict_sentences(trace_file(doc))}


def numbers(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {r["label"]: r["cells"] for r in trace_view.numbers_table(trace_file(doc))["rows"]}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_bytes())


def test_verdict_of_a_v1_trace_with_a_valid_array() -> None:
    doc = load(FAKE)
    s, typed = sentences(doc), [d for r in doc["runs"] if r["path"] == "typed" and not r["warmup"]
                                for d in r["decisions"]][:21]
    yes = sum(d["choice"] == "yes" for d in typed)
    assert s["typed"] == (f"Typed decisions answered no to {21 - yes} and yes to {yes} in "
                          f"{fmt_seconds(doc['summary']['typed_median_s'])}, with no output tokens; "
                          f"{doc['summary']['labels']['typed_correct']} of 21 match the labels.")
    assert s["free"].startswith("Free generation wrote a valid array (")
    assert f"{doc['summary']['wall_ratio']:.2f}× the typed time" in s["free"]
    assert f"{doc['summary']['labels']['generated_correct']} of 21 match the labels" in s["free"]
    assert f"agrees with the typed decisions on {doc['summary']['agreement']['agree']} of 21" in s["free"]
    assert s["basis"].strip() == "(Times are medians of 3 runs per lane; answers and matches are the first run's.)"


def test_the_headline_is_one_sentence_for_the_whole_trace() -> None:
    doc = load(FAKE)
    s = doc["summary"]
    assert verdict.headline(trace_file(doc)) == (
        f"Typed: {s['labels']['typed_correct']} of 21 right in {fmt_seconds(s['typed_median_s'])}, no output "
        f"tokens; free: {s['labels']['generated_correct']} of 21 right in {fmt_seconds(s['generated_median_s'])} "
        f"({s['wall_ratio']:.2f}× as long).")
    assert "; free: no usable array after " in verdict.headline(trace_file(load(FAKE_INVALID)))
    capped = verdict.headline(trace_file(capped_trace()))
    assert "; free: no answer, hit its 12-token limit at " in capped
    v2 = load(V2)
    head = verdict.headline(trace_file(v2))
    assert head.count("; ") == 2 and "; constrained: " in head and head.endswith(".")
    if v2["summary"]["labels"].get("typed_calibrated_correct") is not None:
        assert head.startswith(f"Typed: {v2['summary']['labels']['typed_calibrated_correct']} of ")
        assert " right (calibrated) in " in head
    unlabelled = load(FAKE)
    for c in unlabelled["inputs"]["criteria"]:
        c.pop("label", None)
    assert verdict.headline(trace_file(unlabelled)).startswith("Typed: all 21 criteria in ")
    control = load(V2)
    control["model"]["key"] = "x-random"
    assert verdict.headline(trace_file(control)).startswith(verdict.CONTROL_LEAD + "Typed: ")


def test_verdict_names_an_incomplete_array_and_counts_none_of_it() -> None:
    s = sentences(load(FAKE_INVALID))
    assert "wrote no usable array (20 values for 21 criteria) in all 3 runs, so none of its values count" in s["free"]
    cells = numbers(load(FAKE_INVALID))
    assert cells["match the labels (first run)"][1] == {"text": "—", "note": "no usable array", "warn": True}


def test_verdict_of_a_capped_run_says_its_time_is_a_failed_runs() -> None:
    doc = capped_trace()
    s = sentences(doc)
    ratio = doc["summary"]["wall_ratio"]
    assert s["free"] == ("Free generation never finished its array: the model did not end its turn and was stopped at "
                         "the 12-token limit in all 3 runs, so none of its values count, and its "
                         f"{fmt_seconds(doc['summary']['generated_median_s'])} ({ratio:.2f}× the typed time) is the "
                         "time of a failed, capped run.")
    cells = numbers(doc)
    # the caveat sits next to every number the capped run distorts
    assert cells["÷ typed time"][1] == {"text": f"{ratio:.2f}×", "note": "vs a capped run", "warn": True}
    assert cells["wall time (median of 3)"][1]["note"] == "capped at 12 tokens, no answer"
    assert cells["output tokens (median)"][1] == {"text": "12", "note": "the limit", "warn": True}
    assert cells["valid arrays"][1] == {"text": "0 of 3", "note": "3 capped", "warn": True}


def test_verdict_of_a_v2_trace_has_three_lanes_and_the_calibration() -> None:
    doc = load(V2)
    s, lab = sentences(doc), doc["summary"]["labels"]
    run0 = next(r for r in doc["runs"] if r["path"] == "typed" and not r["warmup"])
    cal_yes = sum(d["calibrated"]["choice"] == "yes" for d in run0["decisions"])
    raw_yes = sum(d["choice"] == "yes" for d in run0["decisions"])
    assert s["typed"] == (f"Typed decisions answered no to {21 - cal_yes} and yes to {cal_yes} after calibration "
                          f"(raw: no to {21 - raw_yes} and yes to {raw_yes}) in "
                          f"{fmt_seconds(doc['summary']['typed']['median_s'])}, with no output tokens; "
                          f"{lab['typed_calibrated_correct']} of 21 match the labels ({lab['typed_correct']} before "
                          "calibration).")
    assert "never finished its array" in s["free"] and "100-token limit in all 3 runs" in s["free"]
    con = doc["summary"]["constrained"]
    assert s["constrained"] == (
        f"Constrained generation wrote a valid array (no to all 21) in {fmt_seconds(con['median_s'])}, "
        f"{con['wall_ratio']:.2f}× the typed time; {lab['constrained_correct']} of 21 match the labels, and it "
        f"agrees with the typed decisions on {con['agreement']['agree']} of 21; the grammar overruled the model on "
        f"{int(con['masked_tokens_median'])} tokens.")
    cells = numbers(doc)
    assert cells["match the labels (first run)"][0]["note"] == f"calibrated; {lab['typed_correct']} raw"
    assert [c["text"] for c in cells["tokens the grammar overruled"]] == ["—", "—", "2"]
    view = trace_view.numbers_table(trace_file(doc))
    assert view["columns"] == ["Typed decisions", "Free generation", "Constrained generation"]
    assert view["account"] == doc["summary"]["token_account"]["line"]


def test_verdict_says_a_timing_control_is_one() -> None:
    gpu = ROOT / "data" / "results" / "gpu-h200" / "versus-random-qwen2.5-0.5b-arch-torch-cuda-bf16.json"
    if not gpu.is_file():
        pytest.skip("the committed GPU timing trace is not in this checkout")
    t = trace_file(load(gpu), "results/gpu-h200/x.json")
    assert t.control and t.label == "qwen2.5-0.5b, random weights · torch bf16 · H200"
    assert verdict.verdict_sentences(t)[0]["name"] == "Timing control:"


@pytest.mark.parametrize(("values", "words"), [
    (["yes"] * 21, "yes to all 21"), (["no"] * 12 + ["yes"] * 9, "no to 12 and yes to 9"),
    (["yes", "no", None, None], "no to 1, yes to 1 and a tie on 2"), (["no"], "no to the one criterion")])
def test_answers_in_words(values: list[str | None], words: str) -> None:
    assert verdict.answers(values) == words


def test_picker_names_are_short_and_distinct(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    for src in (V2, V2_FREE_VALID):
        (data / "traces" / src.name).write_bytes(src.read_bytes())
    real = sorted((ROOT / "data").rglob("*.json"))
    for p in real:
        doc = json.loads(p.read_bytes())
        if isinstance(doc, dict) and doc.get("format") in trace_mod.FORMATS:
            (data / "traces" / f"real-{p.name}").write_bytes(p.read_bytes())
    traces, _ = build.discover(data)
    labels = [t.label for t in traces]
    assert len(set(labels)) == len(labels), labels
    assert all(len(x) <= 64 for x in labels), labels
    assert any(x.startswith("fake · fake fp32 · CPU") for x in labels)


@pytest.mark.parametrize(("section", "key", "values", "suffixes"), [
    # the same showcase on the same day on an AMD and an Intel machine: the CPU's short name, before the date
    ("machine", "cpu", ("AMD EPYC", "Intel(R) Xeon(R) Processor"), ("AMD EPYC", "Intel Xeon")),
    # a native and an AVX2-only build of llama.cpp, same model, machine and day: the vector set their system_info
    # names, never the file's name (which made the picker's names 98 characters)
    ("model", "llama", ({"system_info": "CPU : AVX = 1 | AVX2 = 1 | FMA = 1 | AVX512 = 1 | AVX512_VNNI = 1"},
                        {"system_info": "CPU : AVX = 1 | AVX2 = 1 | FMA = 1 | AVX512_VNNI = 0"}), ("AVX-512", "AVX2")),
    # two runs of one day told apart only by when they ran: the hour
    ("experiment", "created_utc", ("2026-12-06T17:14:52Z", "2026-12-06T18:19:50Z"), ("17:14", "18:19")),
], ids=["cpu", "kernels", "hour"])
def test_traces_that_match_are_told_apart_by_the_first_detail_that_differs(
        section: str, key: str, values: tuple[Any, Any], suffixes: tuple[str, str]) -> None:
    docs = []
    for value in values:
        doc = load(V2)
        doc[section] = {**doc[section], key: value}
        docs.append(trace_file(doc))
    labels.distinct_labels(docs)
    base = labels.trace_label(load(V2))
    assert [t.label for t in docs] == [f"{base} · {x}" for x in suffixes]


class _Count(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.n += 1


def elements(html: str) -> int:
    c = _Count()
    c.feed(html)
    return c.n


def test_index_page_dom_stays_small(tmp_path: Path) -> None:
    """The index listed every report's tables: 24,123 elements for the committed data. Tables now live on
    each report's page, and the index draws one chart per section (1,038 elements with 88 reports)."""
    build.build(ROOT / "data", tmp_path / "site")
    n = elements((tmp_path / "site" / "index.html").read_text())
    assert n < 1600, n
    for page in ("demo/index.html", "traces/index.html"):
        assert elements((tmp_path / "site" / page).read_text()) < 800, page


def test_demo_page_reads_without_javascript(tmp_path: Path) -> None:
    """Verdict, numbers, lanes and every criterion with its label are in the HTML for the first trace."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "traces" / "trace-fake.json").unlink()
    (data / "traces" / "a-v2.json").write_bytes(V2.read_bytes())
    (data / "traces" / "trace-fake.json").write_bytes(FAKE.read_bytes())
    traces, _ = build.build(data, tmp_path / "site")
    html = (tmp_path / "site" / "demo" / "index.html").read_text()
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)).replace("&#39;", "'")
    first = traces[0]
    assert first.slug == "a-v2"
    for v in verdict.verdict_sentences(first):
        assert v["text"] in text
    # the headline first, above the lanes; the paragraph below them
    assert verdict.headline(first) in text
    assert html.index('id="headline"') < html.index('id="lanes"') < html.index('id="verdict"')
    for row in trace_view.numbers_table(first)["rows"]:
        assert row["label"] in text
    for lane in ("Typed decisions", "Free generation", "Constrained generation"):
        assert f">{lane}</h2>" in html
    doc = load(V2)
    for c in doc["inputs"]["criteria"]:
        assert f'data-id="{c["id"]}"' in html and c["question"] in text and f"label: {c['label']}" in text
    assert not re.search(r"\b(on the (left|right)|left:|right:)", text, flags=re.IGNORECASE)
    assert json.loads(re.search(r'id="semif-index">(.*?)</script>', html).group(1))[0]["js"] == "a-v2.js"


def test_a_calibrated_state_is_shown_with_its_whole_workload(tmp_path: Path) -> None:
    """One state's right/wrong count is put beside the whole workload's accuracy under the same calibration,
    from a committed calibration report on the same model whose labelled rows hold that state."""
    trace = json.loads(V2.read_bytes())
    data = tmp_path / "data"
    (data / "traces").mkdir(parents=True)
    (data / "results").mkdir()
    (data / "traces" / "t.json").write_bytes(V2.read_bytes())
    rows = tmp_path / "workload.jsonl"
    rows.write_text(json.dumps({"id": "s1-c1", "state": trace["inputs"]["state"]}) + "\n"
                    + json.dumps({"id": "s2-c1", "state": "another state"}) + "\n")
    model = {k: trace["model"].get(k) for k in ("gguf_sha256", "backend", "dtype")}
    report = {"kind": "calibration", "run": {"model": model}, "labels": {"path": "workload.jsonl"}, "rows": 42,
              "raw": {"balanced_accuracy": 0.5, "auc_per_family": {}},
              "methods": [{"method": "raw · plain", "accuracy": {"value": 0.5}},
                          {"method": verdict.STORED_PRIOR, "accuracy": {"value": 0.8125},
                           "balanced_accuracy": {"value": 0.8}}],
              "best_label_free": {"method": verdict.STORED_PRIOR}}
    (data / "results" / "calibration-x.json").write_text(json.dumps(report))
    traces, reports = build.discover(data)
    text = verdict.workload_context(traces[0], reports, data)
    assert "0.812" in text and "42 decisions of workload.jsonl" in text and "raw readout 0.500" in text
    traces[0].workload = text
    assert {"lane": "note", "name": "On the whole workload:", "text": text} in verdict.verdict_sentences(traces[0])
    report["run"]["model"] = {**model, "backend": "other"}  # another model's report is never borrowed
    (data / "results" / "calibration-x.json").write_text(json.dumps(report))
    traces, reports = build.discover(data)
    assert verdict.workload_context(traces[0], reports, data) == ""
