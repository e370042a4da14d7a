"""The site build (build.py): inputs validated, pages self-contained and deterministic, traces inert text.

The browser checks live in test_site_browser.py; these need no browser and no model. The helpers
(``make_data_dir``, ``hostile_trace``…) live in site_helpers.py, shared with the browser tests.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest
from site_helpers import (
    DOC_PAGES,
    FAKE,
    ROOT,
    build,
    data_file,
    embedded_json,
    hostile_trace,
    inline_blocks,
    make_data_dir,
    shape_report,
    trace_mod,
    tree_bytes,
)

from scorer.site import render, schemas, svg
from scorer.site import reports as site_reports
from scorer.site.formatting import fmt_value


# --- tests ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("site")
    data = make_data_dir(tmp)
    out = tmp / "site"
    build.build(data, out, docs_dir=ROOT / "docs")
    return data, out


def test_fixture_trace_verifies() -> None:
    assert FAKE.is_file(), "tests/fixtures/trace-fake.json is missing (python tests/fixtures/build_trace_fake.py)"
    assert trace_mod.verify(trace_mod.load(FAKE)) == []


def test_build_writes_pages_traces_and_checksums(built: tuple[Path, Path]) -> None:
    data, out = built
    for page in ("index.html", "demo/index.html", "traces/index.html", "traces/SHA256SUMS"):
        assert (out / page).is_file(), page
    sums = dict(line.split("  ")[::-1] for line in (out / "traces/SHA256SUMS").read_text().splitlines())
    assert set(sums) == {"trace-fake.json", "trace-hostile.json"}
    for name, digest in sums.items():
        raw = (data / "traces" / name).read_bytes()
        assert (out / "traces" / name).read_bytes() == raw  # byte for byte
        assert hashlib.sha256(raw).hexdigest() == digest
        # the replay's data file: the same trace (compact text: same values, so it verifies the same)
        slug, payload = data_file((out / "traces" / name.replace(".json", ".js")).read_text())
        assert slug == name[:-5] and json.loads(payload["text"]) == json.loads(raw)
        assert trace_mod.verify(json.loads(payload["text"])) == []
        assert payload["view"]["verdict"] and payload["view"]["numbers"]["rows"] and payload["view"]["headline"]
    demo = (out / "demo/index.html").read_text()
    meta = embedded_json(demo, "semif-index")
    assert [m["slug"] for m in meta] == ["trace-fake", "trace-hostile"]
    # the page loads the replay's code, which loads the first trace's data once the page is painted, others when
    # picked
    assert re.findall(r'<script src="([^"]+)"', demo) == ["../assets/replay.js"]
    # loaded on demand with the checker: the code that computes a verdict in the page (for a trace from disk)
    assert (out / "assets/verdict.js").read_bytes() == (ROOT / "scorer/site/assets/replay/verdict.js").read_bytes()
    check = (out / "assets/check.js").read_text()
    schemas = json.loads(check.split("window.SemifSchemas = ", 1)[1].rstrip().rstrip(";"))
    assert schemas == {f: trace_mod.schema(f) for f in trace_mod.FORMATS}
    assert (out / "results/shape-small-fake-fake.json").is_file()


def test_index_has_headlines_results_and_charts(built: tuple[Path, Path]) -> None:
    _, out = built
    index = (out / "index.html").read_text()
    summary = json.loads(FAKE.read_bytes())["summary"]
    assert f"{summary['wall_ratio']:.2f}×" in index
    assert 'href="demo/index.html#trace=trace-fake"' in index
    # shape benchmark: one bar per pass, with its drift; the unknown kind as a generic table
    chart = re.search(r'<svg class="chart".*?</svg>', index, flags=re.S)
    assert chart and chart.group(0).count('class="chart-bar"') == 3
    assert "max |Δp| 1.500e-05" in chart.group(0) and "55.25" in chart.group(0)
    assert "A kind the site does not know &lt;b&gt;" in index
    # tables live on each report's own page (the index keeps its charts and a link)
    assert "<td>x&lt;y</td>" not in index and 'href="results/mystery.html"' in index
    assert "<td>x&lt;y</td>" in (out / "results/mystery.html").read_text()


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_quant_ladder_charts(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    rungs = [{"name": "F32", "bytes": 540_000_000, "decisions_per_s": 4.0, "max_abs_dp": 0.0, "changed_choices": 0},
             {"name": "Q8_0", "bytes": 145_000_000, "decisions_per_s": 9.5, "max_abs_dp": 0.004, "changed_choices": 1}]
    (data / "results" / "quant-smollm2.json").write_bytes(orjson.dumps({"kind": "quant", "rungs": rungs}))
    _, reps = build.build(data, tmp_path / "site")
    (ladder,) = reps
    assert len(ladder.charts) == 2 and "Q8_0 (145 MB)" in ladder.charts[0] and "1 flip<" in ladder.charts[1]
    assert ">9.5<" in ladder.charts[0] and ">0.004<" in ladder.charts[1]


def test_a_quant_report_without_rungs_stops_the_build(tmp_path: Path) -> None:
    """Each kind is read by its own keys, never by trying other spellings: a quant report with no ``rungs``
    is a bad report."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    (data / "results" / "quant-other.json").write_bytes(orjson.dumps({"kind": "quant", "ladder": [{"ftype": "F32"}]}))
    with pytest.raises(build.BuildError, match=r"results/quant-other\.json: a quant report needs 'rungs'"):
        build.build(data, tmp_path / "site")


PAGES = ("index.html", "demo/index.html", "traces/index.html", "results/mystery.html", *DOC_PAGES)


def test_pages_are_self_contained(built: tuple[Path, Path]) -> None:
    _, out = built
    for page in PAGES:
        html = (out / page).read_text()
        tags = tags_of(html)
        names = {t for t, _ in tags}
        assert not names & {"img", "iframe", "object", "embed", "audio", "video", "source", "base"}, page
        # one link: an empty data: icon, so the browser does not go looking for /favicon.ico
        assert [a for t, a in tags if t == "link"] == [{"rel": "icon", "href": "data:,"}], page
        # the only fetched files are the replay's own scripts, from this site (relative URLs)
        srcs = [a.get("src") for t, a in tags if "src" in a or "srcset" in a]
        assert all(t == "script" for t, a in tags if "src" in a), page
        assert all(re.fullmatch(r"\.\./(assets|traces)/[a-z0-9._-]+\.js", s or "") for s in srcs), (page, srcs)
        assert srcs == [] or page == "demo/index.html", page
        assert not [a for _, a in tags if "style" in a], page  # styles only from the hashed <style> element
        assert not [(t, a) for t, a in tags if any(k.startswith("on") for k in a)], page  # no inline handlers
        hrefs = [a["href"] or "" for t, a in tags if "href" in a and t != "link"]
        assert hrefs and all(not re.match(r"[a-z][a-z0-9+.-]*:", h) for h in hrefs), (page, hrefs)  # relative only
        css = "".join(inline_blocks(html, "style"))
        assert "url(" not in css and "@import" not in css, page
        # outside the embedded data and the code shown as text (the docs' commands), the only absolute URL is the SVG
        # namespace (an identifier, never fetched)
        code = re.sub(r'<script type="application/json".*?</script>|<pre>.*?</pre>|<code>.*?</code>', "", html,
                      flags=re.S)
        assert set(re.findall(r"https?://[^\s\"'<>)]+", code)) <= {"http://www.w3.org/2000/svg"}, page


def test_csp_allows_exactly_the_site_code(built: tuple[Path, Path]) -> None:
    """No inline script anywhere; the replay's scripts come from the site itself ('self'), other pages run none;
    the one inline stylesheet is allowed by its hash."""
    _, out = built
    for page in PAGES:
        html = (out / page).read_text()
        csp = next(a["content"] or "" for t, a in tags_of(html)
                   if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
        assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp

        def digest(text: str) -> str:
            return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

        assert inline_blocks(html, "script") == []
        styles = inline_blocks(html, "style")
        assert len(styles) == 1
        script_src = re.search(r"script-src ([^;]*)", csp).group(1).split()
        assert script_src == (["'self'"] if page == "demo/index.html" else ["'none'"]), page
        assert re.search(r"style-src ([^;]*)", csp).group(1).split() == [digest(styles[0])]


def test_hostile_text_cannot_break_out(built: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = built
    demo = (out / "demo/index.html").read_text()
    scripts = [a for t, a in tags_of(demo) if t == "script"]
    # exactly our own elements: the index (inert JSON) and the page's code
    assert [(a.get("type"), a.get("src")) for a in scripts] == [("application/json", None),
                                                                (None, "../assets/replay.js")]
    assert demo.count("</script>") == 2
    assert "<script>alert" not in demo and "\\u003cscript\\u003ealert(1)" in demo  # the picker's index
    # the hostile trace's data file: one assignment of JSON literals, no markup-significant character raw
    js = (out / "traces/trace-hostile.js").read_text()
    slug, payload = data_file(js)
    assert slug == "trace-hostile" and "<" not in js.split("\n", 1)[1] and "\u2028" not in js
    assert json.loads(payload["text"])["inputs"]["criteria"][1]["question"].startswith("</script>")
    for page in ("index.html", "traces/index.html"):
        html = (out / page).read_text()
        assert {t for t, _ in tags_of(html)}.isdisjoint({"script", "img", "i"}), page
        assert "&lt;i&gt;fake&lt;/i&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html, page
    # rendered server-side when it is the first trace: still text
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "traces" / "trace-fake.json").unlink()
    trace_mod.write(data / "traces" / "trace-hostile.json", hostile_trace())
    build.build(data, tmp_path / "site")
    first = (tmp_path / "site" / "demo/index.html").read_text()
    assert {t for t, _ in tags_of(first)}.isdisjoint({"img", "i"}) and "<script>alert" not in first
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in first


def test_script_json_escapes_everything_that_could_end_the_element() -> None:
    value = {"a": "</script><!--<script>&\u2028\u2029", "b": [1.5, None, True]}
    text = str(render.script_json(value))
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == value


def test_build_is_deterministic(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    build.build(data, tmp_path / "a")
    build.build(data, tmp_path / "b")
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")


def test_real_data_dir_builds_byte_identically(tmp_path: Path) -> None:
    traces, reports = build.build(ROOT / "data", tmp_path / "a")
    build.build(ROOT / "data", tmp_path / "b")
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    docs = {p: json.loads(p.read_bytes()) for p in (ROOT / "data").rglob("*.json")}
    n_traces = sum(1 for d in docs.values() if isinstance(d, dict) and d.get("format") in trace_mod.FORMATS)
    rebuilt = {d["inputs"]["recomputed_from"]["sha256"] for d in docs.values()
               if isinstance(d, dict) and "recomputed_from" in (d.get("inputs") or {})}  # shown as the rebuilt one
    n_reports = sum(1 for p, d in docs.items()
                    if p.relative_to(ROOT / "data").parts[0] == "results" and d.get("format") != trace_mod.TRACE_FORMAT
                    and hashlib.sha256(p.read_bytes()).hexdigest() not in rebuilt)
    assert (len(traces), len(reports)) == (n_traces, n_reports)


def test_rebuild_replaces_a_previous_build_and_refuses_other_dirs(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    out = tmp_path / "site"
    build.build(data, out)
    (out / "stale.html").write_text("old")
    build.build(data, out)
    assert not (out / "stale.html").exists()
    other = tmp_path / "precious"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(build.BuildError, match="not a previous site build"):
        build.build(data, other)
    assert (other / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("case", ["not-json", "tampered", "wrong-format", "not-a-trace-in-traces", "nan"])
def test_bad_trace_stops_the_build_naming_the_file(tmp_path: Path, case: str) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    bad = data / "traces" / "bad.json"
    doc = json.loads(FAKE.read_bytes())
    if case == "not-json":
        bad.write_text('{"format": "semif-trace-v1", ')
        match = r"traces/bad\.json: invalid JSON"
    elif case == "tampered":
        doc["runs"][1]["tokens"][3]["t"] += 0.5  # a hand-edited timestamp: checksums no longer match
        bad.write_bytes(orjson.dumps(doc))
        match = r"traces/bad\.json: trace failed verification: .*checksums"
    elif case == "wrong-format":
        doc["format"] = "semif-trace-v9"
        bad.write_bytes(orjson.dumps(doc))
        match = r"traces/bad\.json: trace format 'semif-trace-v9' is not supported"
    elif case == "not-a-trace-in-traces":
        bad.write_text('{"hello": 1}')
        match = r"traces/bad\.json: files under traces/ must be traces"
    else:
        bad.write_text('{"format": "semif-trace-v1", "x": NaN}')
        match = r"traces/bad\.json: non-standard JSON constant NaN"
    out = tmp_path / "site"
    with pytest.raises(build.BuildError, match=match):
        build.build(data, out)
    assert not out.exists()  # nothing written when any input is bad


@pytest.mark.parametrize("content,match", [
    (b"[1, 2]", r"results/r\.json: a result report must be a JSON object, found list"),
    (b"{}", r"results/r\.json: empty report"),
    # no kind: never guessed from the file name or other keys (docs: a bad report stops the build)
    (b'{"schema": "semif-bench-v1", "passes": {"direct": {"decisions_per_s": 1.0}}}',
     r"results/r\.json: no 'kind' field \(expected the report envelope of scorer/formats/envelope\.py"),
    (b'{"kind": "", "format": "x"}', r"results/r\.json: 'kind' is '' \(expected the report envelope"),
    (b'{"kind": "bench", "workload": {"name": "shape"}}', r"results/r\.json: a bench report needs 'passes'"),
    (b'{"kind": "bench", "passes": {"direct": {"decisions_per_s": "fast"}}}',
     r"results/r\.json: passes\.direct\.decisions_per_s: 'fast' \(expected a finite number\)"),
    (b'{"kind": "calibration", "methods": []}', r"results/r\.json: a calibration report needs 'raw'"),
    (b'{"kind": "confidence", "rows": []}', r"results/r\.json: a confidence report needs 'rows'"),
    (b'{"kind": "busy", "results": []}', r"results/r\.json: a busy report needs 'results'"),
    (b'{"kind": "busy", "results": [{"lane": "semif torch direct", "load": "spin", "slowdown": "slow"}]}',
     r"results/r\.json: results\[0\]\.slowdown: 'slow' \(expected a finite number or null\)"),
    (b'{"kind": "confidence", "rows": [{"reliability": []}]}',
     r"results/r\.json: rows\[0\] needs 'reliability', 'automation'"),
    (b'{"kind": "llamacpp-batch-probe", "results": []}',
     r"results/r\.json: a llamacpp-batch-probe report needs 'results'"),
    (b'{"kind": "llamacpp-batch-probe", "results": [{"variant": "canonical", "modes": {"serial": {"max_abs_dp": 0}, '
     b'"shared": {}}}]}',
     r"results/r\.json: results\[0\]\.modes\.shared\.max_abs_dp: None \(expected a finite number\)"),
    (b'{"kind": "decision-latency", "results": []}', r"results/r\.json: a decision-latency report needs 'results'"),
    (b'{"kind": "decision-latency", "results": [{"model": "m", "lane": "semif-torch", "size": 0, "cache": "warm"}]}',
     r"results/r\.json: results\[0\]\.size: 0 \(expected a number of questions >= 1\)"),
    (b'{"kind": "decision-latency", "results": [{"model": "m", "lane": "l", "size": 4, "cache": "hot"}]}',
     r"results/r\.json: results\[0\]\.cache: 'hot'"),
    (b'{"kind": "label-free-selection", "sets": {}}',
     r"results/r\.json: a label-free-selection report needs 'sets'"),
    (b'{"kind": "label-free-selection", "sets": {"single": {"none": {"balanced_accuracy": 0.5}, "picked": {}}}}',
     r"results/r\.json: sets\.single\.picked\.balanced_accuracy: expected a finite number"),
    (b'{"kind": "calibration", "raw": {}, "methods": [{"method": "raw \xc2\xb7 plain"}], '
     b'"best_label_free": {"method": "gone"}}',
     r"results/r\.json: best_label_free\.method: 'gone' \(expected the name of one of methods\[\]\.method\)"),
])
def test_bad_report_stops_the_build_naming_the_file(tmp_path: Path, content: bytes, match: str) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    (data / "results" / "r.json").write_bytes(content)
    with pytest.raises(build.BuildError, match=match):
        build.build(data, tmp_path / "site")


def test_cli_reports_errors_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "traces" / "broken.json").write_text("{")
    assert build.main(["--data", str(data), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("build.py: error: traces/broken.json: invalid JSON")
    (data / "traces" / "broken.json").unlink()
    assert build.main(["--data", str(data), "--out", str(tmp_path / "site")]) == 0
    assert "from 1 trace(s) and 0 report(s)" in capsys.readouterr().out


def test_schema_uses_only_keywords_the_page_validates() -> None:
    loaded = schemas.load_trace_schemas()
    assert set(loaded) == set(trace_mod.FORMATS)
    for schema in loaded.values():
        assert schemas.schema_keywords(schema) <= schemas.JS_SCHEMA_KEYWORDS | schemas.ANNOTATION_KEYWORDS
    schema = loaded["semif-trace-v1"]
    weird = copy.deepcopy(schema)
    weird["properties"]["runs"]["unevaluatedItems"] = False
    assert "unevaluatedItems" in schemas.schema_keywords(weird) - schemas.JS_SCHEMA_KEYWORDS


def test_build_needs_no_torch(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, hostile=False)
    code = ("import sys, build; from pathlib import Path; "
            f"build.build(Path({str(data)!r}), Path({str(tmp_path / 'site')!r})); "
            "bad = [m for m in ('torch', 'transformers', 'llama_cpp') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_published_traces_come_first(tmp_path: Path) -> None:
    """A trace kept beside results (e.g. a GPU run) is listed, but the replay opens on one under traces/."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results" / "aaa").mkdir(parents=True)
    trace_mod.write(data / "results" / "aaa" / "a-side-trace.json", hostile_trace())
    traces, _ = build.discover(data)
    assert [t.rel for t in traces] == ["traces/trace-fake.json", "results/aaa/a-side-trace.json"]


@pytest.mark.parametrize(("name", "charts"), [
    ("eval-q15-torch-authored.json", 3), ("calibrate-q15-torch-authored.json", 2),
    ("order-q05-torch-authored.json", 1), ("route-q05-llamacpp-to-q15-torch-authored.json", 1),
    ("calibration-q15-torch-authored.json", 5)])
def test_quality_reports_get_their_charts(tmp_path: Path, name: str, charts: int) -> None:
    """The committed quality reports render as charts (plus their tables), with the numbers from the file."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    (data / "results" / name).write_bytes((ROOT / "data" / "results" / name).read_bytes())
    _, found = build.discover(data)
    (rep,) = found
    assert len(rep.charts) == charts
    assert all(str(c).startswith('<svg class="chart"') for c in rep.charts)
    obj = json.loads((ROOT / "data" / "results" / name).read_text())
    if name.startswith("route"):
        assert f"{obj['table'][0]['accuracy']['value']:.4g}" in str(rep.charts[0])
    if name.startswith("order"):
        assert f">{obj['plain']['flips']}<" in str(rep.charts[0])


def test_reliability_chart_places_bins_by_confidence_and_accuracy() -> None:
    chart = str(svg.svg_reliability([("x<y", [{"n": 4, "confidence": 0.5, "accuracy": 1.0},
                                               {"n": 0, "confidence": None, "accuracy": None}])], "t"))
    assert chart.count("<circle") == 2  # one bin point + the legend; the empty bin is skipped
    assert 'cx="130.0" cy="34.0"' in chart  # (0.5, 1.0) on a 192-px plot with 34-px padding
    assert "x&lt;y" in chart and "x<y" not in chart


def test_index_groups_reports_by_family_in_reading_order(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, hostile=False)
    for name in ("route-a.json", "eval-a.json", "drift-a.json", "calibrate-a.json"):
        kind = name.split("-")[0]
        (data / "results" / name).write_bytes(orjson.dumps({"kind": kind, "rows": [{"x": 1}]}))
    _, found = build.discover(data)
    sections = site_reports.report_sections(found)
    assert [s["title"] for s in sections] == [
        "Fast paths (shape benchmark)", "Drift of the fast paths against fresh scoring", "Decision quality",
        "Confidence calibration (temperature scaling)", "Two-path routing", "Other: mystery"]
    assert sum(len(s["reports"]) for s in sections) == len(found)
    out = tmp_path / "site"
    build.build(data, out)
    html = (out / "index.html").read_text()
    assert html.index('id="s-shape"') < html.index('id="s-drift"') < html.index('id="s-route"')
    assert 'href="#s-eval"' in html


def test_featured_trace_opens_the_replay_and_a_wrong_name_stops_the_build(tmp_path):
    """traces/FEATURED names the showcase (chosen by name, never by result): it comes first whatever its name."""
    import shutil

    import build

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    data = tmp_path / "data"
    (data / "traces").mkdir(parents=True)
    shutil.copy(fixtures / "trace-fake.json", data / "traces" / "a-first-by-name.json")
    shutil.copy(fixtures / "trace-v2-fake.json", data / "traces" / "z-showcase.json")
    traces, _ = build.discover(data)
    assert traces[0].rel == "traces/a-first-by-name.json"
    (data / "traces" / "FEATURED").write_text("# the showcase\nz-showcase.json\n")
    traces, _ = build.discover(data)
    assert [t.rel for t in traces] == ["traces/z-showcase.json", "traces/a-first-by-name.json"]
    (data / "traces" / "FEATURED").write_text("missing.json\n")
    with pytest.raises(build.BuildError, match=r"FEATURED: 'missing\.json' is not a file"):
        build.discover(data)


def test_a_report_is_drawn_by_its_kind_never_by_its_file_name(tmp_path: Path) -> None:
    """A file named like one kind but carrying another is drawn as the kind it says; a kind this build does not
    know gets its tables and a note saying so (not a guess)."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    (data / "results" / "eval-looks-like-eval.json").write_bytes(orjson.dumps(shape_report()))
    (data / "results" / "shape-looks-like-shape.json").write_bytes(orjson.dumps(
        {"kind": "mystery", "passes": shape_report()["passes"]}))
    _, found = build.build(data, tmp_path / "site")
    by_name = {r.rel.rsplit("/", 1)[-1]: r for r in found}
    bench, mystery = by_name["eval-looks-like-eval.json"], by_name["shape-looks-like-shape.json"]
    assert (bench.kind, bench.family, len(bench.charts)) == ("bench", "shape", 1)
    assert (mystery.kind, mystery.family, mystery.charts) == ("mystery", "mystery", [])
    page = (tmp_path / "site" / "results" / "shape-looks-like-shape.html").read_text()
    assert "This build does not know reports of kind &#39;mystery&#39;" in page
    assert "does not know" not in (tmp_path / "site" / "results" / "eval-looks-like-eval.html").read_text()


def _chart_texts(chart: str, cls: str) -> list[str]:
    return re.findall(rf'class="{cls}">(?:<title>[^<]*</title>)?([^<]*)</text>', chart)


def test_calibration_report_charts_draw_the_reports_own_numbers(tmp_path: Path) -> None:
    """Issue 11, item 8: ROC AUC per family, balanced accuracy per method against raw, reliability before and
    after; every number drawn is one the report holds, each chart has axis words and a caption."""
    name = "calibration-q15-torch-authored.json"
    obj = json.loads((ROOT / "data" / "results" / name).read_bytes())
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    (data / "results" / name).write_bytes((ROOT / "data" / "results" / name).read_bytes())
    _, (rep,) = build.discover(data)
    headline, auc, methods, rel_lf, rel_fit = (str(c) for c in rep.charts)
    raw = obj["raw"]
    # the headline (the index page's chart): raw, best label-free, best with labels
    blocks = [raw, obj["best_label_free"], obj["best_with_labels_or_folds"]]
    assert _chart_texts(headline, "chart-value") == [fmt_value(b["balanced_accuracy"]["value"]) for b in blocks]
    assert obj["best_label_free"]["method"] in headline and obj["best_with_labels_or_folds"]["method"] in headline
    # ROC AUC: one bar per family, its value, and the family's balanced accuracy raw and after the best label-free
    assert _chart_texts(auc, "chart-label") == list(raw["auc_per_family"])
    assert _chart_texts(auc, "chart-value") == [fmt_value(v) for v in raw["auc_per_family"].values()]
    best = next(m for m in obj["methods"] if m["method"] == obj["best_label_free"]["method"])
    fam = next(iter(raw["per_family"]))
    assert (_chart_texts(auc, "chart-note")[0] == f"balanced accuracy: raw {fmt_value(raw['per_family'][fam])} → "
                                                   f"calibrated {fmt_value(best['per_family'][fam])}")
    assert "ROC AUC of the raw scores" in auc and f"mean {fmt_value(raw['mean_auc'])}" in auc
    # methods: every plain-order method's balanced accuracy, and the raw readout as the dashed reference
    plain = [m for m in obj["methods"] if m["orderings"] == ["plain"]]
    assert _chart_texts(methods, "chart-value") == [fmt_value(m["balanced_accuracy"]["value"]) for m in plain]
    assert f"raw {fmt_value(raw['balanced_accuracy']['value'])}</text>" in methods
    assert f"{plain[1]['changed_choices']} changed" in _chart_texts(methods, "chart-note")[1]
    assert f"The {len(obj['methods']) - len(plain)} methods on other option orders" in methods
    # reliability: raw and calibrated points where the bins have rows, the methods named in the captions
    for chart, block in ((rel_lf, "best_label_free"), (rel_fit, "best_with_labels_or_folds")):
        method = next(m for m in obj["methods"] if m["method"] == obj[block]["method"])
        bins = [b for b in raw["reliability"] + method["reliability"] if b["n"]]
        assert chart.count("<circle") == len(bins) + 2  # every non-empty bin, and the two legend dots
        assert ">confidence<" in chart and ">accuracy<" in chart and escape_text(method["method"]) in chart
    for chart in rep.charts:
        assert re.search(r'</svg><p class="small muted">[^<]+</p>$', str(chart)), "a one-line caption under each"


def escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;")


def test_bar_chart_reference_line_sits_at_its_value() -> None:
    chart = str(svg.svg_bars([("a", 1.0, ""), ("b", 0.5, "")], "unit", "t", label_w=300, ref=("raw", 0.25)))
    assert 'viewBox="0 0 630 ' in chart  # the label column grew, the plot kept its 260 px
    assert '<line x1="365.00" y1="22" x2="365.00"' in chart  # 300 + 0.25 / 1.0 × 260
    assert ">raw 0.25</text>" in chart
    assert str(svg.svg_bars([("a", 1.0, "")], "unit", "t")).startswith('<svg class="chart" viewBox="0 0 480 ')


def test_a_report_rebuilt_from_its_records_is_shown_once_as_the_rebuilt_one(tmp_path: Path) -> None:
    """benchmarks/engines.py --recompute: the rebuilt report cites the run's own by sha256 (inputs.recomputed_from);
    the site shows the rebuilt one only; a report citing another by any other role hides nothing."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    run = orjson.dumps({"kind": "drift", "rows": [{"x": 1}]})
    (data / "results" / "drift-run.json").write_bytes(run)
    cite = {"path": "drift-run.json", "sha256": hashlib.sha256(run).hexdigest()}
    rebuilt = {"kind": "drift", "inputs": {"recomputed_from": cite}, "rows": [{"x": 2}]}
    (data / "results" / "drift-new.json").write_bytes(orjson.dumps(rebuilt))
    (data / "results" / "drift-reads.json").write_bytes(orjson.dumps({"kind": "drift", "inputs": {"run": cite},
                                                                      "rows": [{"x": 3}]}))
    _, found = build.discover(data)
    assert sorted(r.rel for r in found) == ["results/drift-new.json", "results/drift-reads.json"]


def test_index_draws_each_sections_newest_report_and_lists_the_others(tmp_path: Path) -> None:
    """One chart per section on the index (the newest report's), every other report one line with its links."""
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    (data / "results").mkdir()
    for name, created in (("route-old.json", "2026-11-01T00:00:00Z"), ("route-new.json", "2026-12-01T00:00:00Z"),
                          ("route-mid.json", "2026-11-15T00:00:00Z")):
        (data / "results" / name).write_bytes(orjson.dumps({"kind": "route", "created_utc": created,
                                                            "rows": [{"x": 1}]}))
    _, found = build.discover(data)
    (section,) = site_reports.report_sections(found)
    assert section["lead"].rel == "results/route-new.json"
    assert [r.rel for r in section["rest"]] == ["results/route-mid.json", "results/route-old.json"]
    out = tmp_path / "site"
    build.build(data, out)
    html = (out / "index.html").read_text()
    assert html.count('<article class="card" id="r-') == 1 and "newest of 3" in html
    for r in found:
        assert f'id="r-{r.slug}"' in html and f'href="results/{r.slug}.html"' in html
        assert f'href="results/{r.slug}.json" download' in html
