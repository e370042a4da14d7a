"""The replay's verdict in real Chromium (issue 25, item 5): the headline sentence above the lanes, in the first
screen at 1280 px and on a phone (390 × 844), with the full paragraph below the lanes; a trace opened from disk
gets the headline, verdict, numbers and token account that the build's page shows for the same trace, computed in
the page from the trace itself (assets/verdict.js); and the page's computation equals the build's view on every
committed trace under data/. Fixtures: site_helpers.py (the site built from the fake traces)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import site_helpers as sb
from site_helpers import ROOT, build, data_file, demo_url, wait_until

pytestmark = sb.BROWSER_MARKS
www, site, server, browser, open_page = sb.www, sb.site, sb.server, sb.browser, sb.open_page

SIZES = [(1280, 800), (390, 844)]
FIXTURE_TRACES = ["trace-fake", "trace-hostile", "trace-v1-capped", "trace-v1-cut", "trace-v2", "trace-v2-free-valid"]
# What a reader sees of the verdict: the headline, the paragraph, the numbers table, the token account, the basis.
SHOWN = """() => Object.fromEntries(["headline", "verdict", "account", "basis"].map(id =>
    [id, document.getElementById(id).textContent])
    .concat([["numbers", document.getElementById("numbers").innerText]]))"""


def box(page: Any, selector: str) -> dict[str, float]:
    return page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                           "return {x: r.x, y: r.y, bottom: r.bottom, right: r.right}; }")


def lane_boxes(page: Any) -> list[dict[str, float]]:
    return page.eval_on_selector_all(".lane", "els => els.map(e => { const r = e.getBoundingClientRect(); "
                                              "return {y: r.y, bottom: r.bottom}; })")


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("trace", ["trace-fake", "trace-v2", "trace-v1-capped"])
def test_the_headline_is_above_the_lanes_in_the_first_screen(open_page: Any, site: Path, width: int, height: int,
                                                             trace: str) -> None:
    """trace-fake is the one the build renders into the page; the others are rebuilt by the page's script."""
    page, log = open_page(demo_url(site, f"#trace={trace}&t=0"), width, height, reduced_motion="reduce")
    assert page.evaluate("scrollY") == 0
    head, lanes = box(page, "#headline"), lane_boxes(page)
    assert head["y"] >= 0 and head["bottom"] <= height and head["right"] <= width, head
    assert head["bottom"] <= min(b["y"] for b in lanes), (head, lanes)
    assert max(b["bottom"] for b in lanes) <= height, lanes  # the headline does not push the lanes off the screen
    assert box(page, "#verdict")["y"] >= max(b["bottom"] for b in lanes)  # the paragraph stays below them
    _, payload = data_file((site / "traces" / f"{trace}.js").read_text())
    text = page.text_content("#headline")
    assert text == payload["view"]["headline"] and text.startswith("Typed: ") and text.endswith(".")
    assert log.errors == []


@pytest.mark.parametrize("trace", FIXTURE_TRACES)
def test_a_trace_opened_from_disk_reads_as_the_builds_page_for_it(open_page: Any, site: Path, trace: str) -> None:
    page, log = open_page(demo_url(site, f"#trace={trace}&t=0"), reduced_motion="reduce")
    built = page.evaluate(SHOWN)
    assert built["headline"] and built["verdict"] and built["numbers"], built  # (a v1 trace has no token account)
    page.set_input_files("#file-input", str(site / "traces" / f"{trace}.json"))
    wait_until(page, "window.semifReplay.state().local === true")
    assert page.evaluate(SHOWN) == built
    assert "its verdict and numbers were computed here" in page.text_content("#file-msg")
    assert log.errors == []


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[build.TraceFile]]:
    """The site built from the committed data/ and docs/ (as published: the header names the Docs too), and its
    traces."""
    out = tmp_path_factory.mktemp("committed") / "site"
    traces, _ = build.build(ROOT / "data", out, docs_dir=ROOT / "docs")
    assert traces
    return out, traces


def test_every_committed_traces_headline_is_in_a_phones_first_screen(
        open_page: Any, committed: tuple[Path, list[build.TraceFile]]) -> None:
    out, traces = committed
    page, log = open_page(demo_url(out), 390, 844, reduced_motion="reduce")
    for t in traces:
        page.evaluate("slug => window.semifReplay.select(slug)", t.slug)
        head, lanes = box(page, "#headline"), lane_boxes(page)
        assert page.evaluate("scrollY") == 0 and head["bottom"] <= 844, (t.rel, head)
        assert head["bottom"] <= min(b["y"] for b in lanes), (t.rel, head, lanes)
    assert log.errors == []


def test_the_page_computes_the_builds_view_on_every_committed_trace(
        open_page: Any, committed: tuple[Path, list[build.TraceFile]]) -> None:
    """The page's verdict.js on each committed trace's own text, against what build.py wrote for it. The one input
    that is not in the trace, the whole-workload sentence the build takes from a committed calibration report, is
    handed over from the build's view."""
    out, traces = committed
    page, log = open_page(demo_url(out), reduced_motion="reduce")
    page.evaluate("window.semifReplay.loadChecker()")
    for t in traces:
        got = page.evaluate("""async (slug) => {
            await window.semifReplay.select(slug);
            const data = window.SemifTraces[slug];
            const note = data.view.verdict.filter(v => v.name === "On the whole workload:")[0];
            const workload = note ? note.text : "";
            return {build: data.view, page: window.SemifReplayVerdict.view(JSON.parse(data.text), workload)};
        }""", t.slug)
        assert got["page"] == {k: v for k, v in got["build"].items() if k not in ("slug", "label")}, t.rel
    assert log.errors == []
