"""The replay page in a real browser (Playwright driving Debian's Chromium; never ``playwright install``).

The site is built from a temporary data directory (the fake v1 trace first, a hostile copy of it, a capped v1
trace, the two v2 fixtures, two reports), then loaded from ``file://`` and from a local HTTP server on a
sub-path. Screenshots of key frames go to ``test-output/site/``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import site_helpers as sh
from site_helpers import (
    FAKE,
    FAKE_DOC,
    FAKE_INVALID,
    HOSTILE,
    ROOT,
    SHOTS,
    build,
    cell,
    demo_url,
    lane,
    measured_run,
    state,
    trace_mod,
    wait_until,
)

pytestmark = sh.BROWSER_MARKS
www, site, server, browser, open_page = sh.www, sh.site, sh.server, sh.browser, sh.open_page




# --- loading ----------------------------------------------------------------------------------------------
def test_file_url_pages_load_without_errors_or_requests(open_page: Any, site: Path) -> None:
    for rel in ("demo/index.html", "index.html", "traces/index.html", "results/mystery.html", *sh.DOC_PAGES):
        page, log = open_page((site / rel).as_uri())
        page.wait_for_timeout(300)
        assert log.errors == [], rel
        own = [(site / rel).as_uri()]
        if rel == "demo/index.html":  # and the replay's code and (once painted) the first trace's data, only
            own += [(site / "assets" / "replay.js").as_uri(), (site / "traces" / "trace-fake.js").as_uri()]
        assert log.requests == own, rel



# The paint report held back as on a busy machine, where it comes seconds after the load event: the trace's
# data must wait for it (a timer once fetched it 1.5 s after load, ahead of the paint Lighthouse measured).
HOLD_PAINT = """
(() => {
  const Real = window.PerformanceObserver;
  window.__heldPaint = [];
  window.PerformanceObserver = class extends Real {
    constructor(cb) {
      super(list => cb(list, this));
      this.__cb = cb;
    }
    observe(options) {
      if (options && options.type === "paint") {
        window.__heldPaint.push(this.__cb);
        return;
      }
      return super.observe(options);
    }
  };
  window.PerformanceObserver.supportedEntryTypes = Real.supportedEntryTypes;
  window.__releasePaint = () => window.__heldPaint.forEach(cb => cb({
    getEntries: () => [{ name: "first-contentful-paint", startTime: performance.now() }] }));
})();
"""


def test_the_trace_data_waits_for_the_paint_report_however_late(browser: Any, site: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.add_init_script(HOLD_PAINT)
        log = sh.Log(page)
        page.goto(demo_url(site))
        page.wait_for_timeout(3000)  # twice the old timer, after the load event
        assert page.evaluate("document.readyState") == "complete"
        assert not [u for u in log.requests if "/traces/" in u], log.requests
        assert page.evaluate("window.semifReplay === undefined")
        page.evaluate("window.__releasePaint()")
        wait_until(page, "window.semifReplay !== undefined")
        assert [u for u in log.requests if "/traces/" in u] == [(site / "traces" / "trace-fake.js").as_uri()]
        assert log.errors == []
    finally:
        context.close()


def test_http_sub_path_serves_only_its_own_files(open_page: Any, server: tuple[str, list[str]], site: Path) -> None:
    base, asked = server
    asked.clear()
    page, log = open_page(f"{base}/project/demo/index.html#trace=trace-fake")
    page.wait_for_timeout(300)
    assert log.errors == []
    assert log.requests == [f"{base}/project/{p}" for p in ("demo/index.html", "assets/replay.js",
                                                             "traces/trace-fake.js")]
    assert state(page)["trace"] == "trace-fake"
    # the relative links resolve under the sub-path
    href = page.get_attribute("#download", "href")
    resp = page.request.get(f"{base}/project/demo/{href}")
    assert resp.status == 200 and resp.body() == (site / "traces" / "trace-fake.json").read_bytes()
    # another trace's data file is fetched when that trace is picked, once
    page.evaluate("window.semifReplay.select('trace-v2')")
    page.evaluate("window.semifReplay.select('trace-fake')")
    page.evaluate("window.semifReplay.select('trace-v2')")
    assert log.requests[3:] == [f"{base}/project/traces/trace-v2.js"]
    page.click("nav >> text=Overview")
    page.wait_for_load_state()
    assert page.url == f"{base}/project/index.html" and log.errors == []
    assert all(p.startswith("/project/") for p in asked), asked  # nothing outside the site, no /favicon.ico


# --- replay -----------------------------------------------------------------------------------------------
def test_replay_plays_to_its_final_state(open_page: Any, site: Path) -> None:
    page, log = open_page(demo_url(site, "#trace=trace-fake&r=0&t=0"))
    page.evaluate("window.semifReplay.setSpeed(1); window.semifReplay.play()")
    page.wait_for_selector("#replay[data-state=ended]", timeout=30_000)
    gen = measured_run(FAKE_DOC, "generated", 0)
    s = state(page)
    assert s["ended"] and not s["playing"] and math.isclose(s["t"], s["tEnd"])
    assert (s["tokensShown"], s["tokensTotal"]) == (len(gen["tokens"]), len(gen["tokens"]))
    assert s["decisionsShown"] == s["decisionsTotal"] == len(FAKE_DOC["inputs"]["criteria"])
    assert s["answersShown"] == len(gen["parsed"])
    # each row: the generated value, judged against the label once the array is finished
    for c, v in zip(FAKE_DOC["inputs"]["criteria"], gen["parsed"], strict=True):
        assert page.text_content(cell(c["id"], "free")) == v + (" ✓ right" if v == c["label"] else " ✗ wrong")
    assert page.text_content(lane("free", ".verdict")) == "valid: 21 values"
    assert page.locator(".crit .choice").count() == 21
    assert log.errors == []


def test_seek_shows_exactly_the_tokens_and_decisions_up_to_that_time(open_page: Any, site: Path) -> None:
    page, _ = open_page(demo_url(site, "#trace=trace-fake&r=1&t=0"))
    gen, typed = measured_run(FAKE_DOC, "generated", 1), measured_run(FAKE_DOC, "typed", 1)
    times = sorted({t["t"] for t in gen["tokens"]} | {d["t_available"] for d in typed["decisions"]})
    for t in times:
        for at in (t, math.nextafter(t, -math.inf)):
            s = page.evaluate("t => window.semifReplay.seek(t)", at)
            shown = [x for x in gen["tokens"] if x["t"] <= at]
            assert s["tokensShown"] == len(shown) == page.locator(lane("free", ".tok")).count(), at
            text = "".join("end of turn" if x["stop"] else x["text"] for x in shown)
            assert page.text_content(lane("free", ".toks")) == text, at
            assert s["decisionsShown"] == sum(1 for d in typed["decisions"] if d["t_available"] <= at), at
            assert page.locator(".crit .choice").count() == s["decisionsShown"]
    # the typed decisions land pass by pass: every decision of a pass at the same instant; a decision
    # escalated by the exact policy lands later, one by one, when its fresh re-score finished
    passes = sorted({d["t_available"] for d in typed["decisions"] if not d["escalated"]})
    assert len(passes) == typed["tokens"]["passes"]
    escalated = [d for d in typed["decisions"] if d["escalated"]]
    assert all(d["t_available"] > passes[-1] for d in escalated)


def test_share_link_restores_trace_repeat_and_time(open_page: Any, site: Path) -> None:
    page, _ = open_page(demo_url(site))
    page.evaluate("window.semifReplay.select('trace-fake', 2)")
    before = page.evaluate("window.semifReplay.seek(0.9)")
    url = page.evaluate("window.semifReplay.shareUrl()")
    assert url == page.input_value("#share-url") and "#trace=trace-fake&r=2&t=0.9" in url
    again, log = open_page(url)
    after = state(again)
    assert (after["trace"], after["repeat"], after["t"], after["playing"]) == ("trace-fake", 2, 0.9, False)
    assert (after["tokensShown"], after["decisionsShown"]) == (before["tokensShown"], before["decisionsShown"])
    assert log.errors == []


def test_a_trace_opened_from_disk_replays(open_page: Any, site: Path, tmp_path: Path) -> None:
    page, log = open_page(demo_url(site, "#trace=trace-fake&t=0"))
    page.set_input_files("#file-input", str(FAKE_INVALID))
    wait_until(page, "window.semifReplay.state().local === true")
    s = page.evaluate("window.semifReplay.seek(1e9)")
    doc = json.loads(FAKE_INVALID.read_bytes())
    gen = measured_run(doc, "generated", 0)
    assert s["tokensShown"] == len(gen["tokens"]) and s["decisionsShown"] == 21
    assert page.text_content(lane("free", ".verdict")) == "invalid: 20 values for 21 criteria"
    # an incomplete array cannot be matched to its criteria: every value reads "unparsed" (not "missing")
    assert page.locator(".gv .v.unparsed").count() == 21
    assert set(page.locator(".gv .v").all_text_contents()) == {"unparsed"}
    # its headline, verdict and numbers computed in the page (test_site_verdict_browser.py: equal to the build's)
    assert "free: no usable array after " in page.text_content("#headline")
    assert "wrote no usable array (20 values for 21 criteria) in all 3 runs" in page.text_content("#verdict")
    assert page.locator("#numbers tbody tr").count() >= 6
    assert "schema and checksums OK" in page.text_content("#file-msg")
    assert hashlib.sha256(FAKE_INVALID.read_bytes()).hexdigest() in page.text_content("#trace-meta")
    assert log.errors == []


def _drop(page: Any, name: str, text: str) -> None:
    page.evaluate("""([name, text]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([text], name, {type: "application/json"}));
        for (const type of ["dragenter", "dragover", "drop"]) {
            document.body.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
        }
    }""", [name, text])


def test_drag_and_drop_checks_the_trace_in_the_page(open_page: Any, site: Path) -> None:
    page, log = open_page(demo_url(site, "#trace=trace-fake&t=0"))
    doc = json.loads(FAKE.read_bytes())
    doc["runs"][3]["tokens"][2]["t"] += 0.25  # hand-edited: the schema still holds, the checksums do not
    _drop(page, "edited.json", json.dumps(doc))
    page.wait_for_selector("#file-msg:not([hidden])")
    msg = page.text_content("#file-msg")
    assert "edited.json was not opened" in msg and "runs_sha256" in msg
    assert state(page)["local"] is False
    del doc["checksums"]
    _drop(page, "schema.json", json.dumps(doc))
    wait_until(page, "document.getElementById('file-msg').textContent.includes('schema.json')")
    assert "missing required field 'checksums'" in page.text_content("#file-msg")
    _drop(page, "junk.json", "{not json")
    wait_until(page, "document.getElementById('file-msg').textContent.includes('junk.json')")
    assert "not valid JSON" in page.text_content("#file-msg")
    _drop(page, "good.json", FAKE.read_text())
    wait_until(page, "window.semifReplay.state().local === true")
    assert page.evaluate("window.semifReplay.state().checks.ok") is True
    assert log.errors == []


def test_hostile_trace_renders_as_inert_text(open_page: Any, site: Path) -> None:
    page, log = open_page(demo_url(site, "#trace=trace-hostile&t=0"))
    scripts = page.locator("script").count()
    page.evaluate("window.semifReplay.seek(1e9)")
    page.evaluate("window.semifReplay.play()")  # from the start again, through every frame
    page.wait_for_selector("#replay[data-state=ended]", timeout=60_000)
    page.evaluate("window.semifReplay.openDetails()")
    page.locator("#details details").evaluate_all("els => els.forEach(e => e.open = true)")
    assert page.evaluate("window.__pwned") is None and log.dialogs == []
    assert page.locator("script").count() == scripts and page.locator("img").count() == 0
    assert page.locator("#criteria i, .toks script, #details i, #trace-meta i").count() == 0
    assert page.text_content(".crit[data-id=c01] .q").startswith(HOSTILE)
    assert page.text_content(".crit[data-id=c02] .q").startswith("</script><script>window.__pwned=2</script>")
    assert page.text_content(lane("free", ".toks")).startswith(HOSTILE)
    assert HOSTILE in page.text_content("#notes") and HOSTILE in page.text_content("#details")
    assert "<i>fake</i>" in page.text_content("#trace-select")
    assert page.text_content(lane("free", ".verdict")).startswith("invalid: not a JSON value")
    assert log.errors == [] and sorted(log.requests) == sorted(
        [demo_url(site).split("#")[0]] + [(site / p).as_uri() for p in
                                          ("assets/replay.js", "traces/trace-hostile.js")])


def test_a_build_without_traces_still_opens_one_from_disk(open_page: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    build.build(data, tmp_path / "site")
    page, log = open_page(demo_url(tmp_path / "site"))
    assert page.get_attribute("#replay", "data-state") == "empty"
    assert page.is_disabled("#play") and "Open a trace file" in page.text_content("#file-msg")
    page.set_input_files("#file-input", str(FAKE))
    wait_until(page, "window.semifReplay.state() && window.semifReplay.state().local === true")
    assert not page.is_disabled("#play")
    assert page.evaluate("window.semifReplay.seek(1e9)")["decisionsShown"] == 21
    assert log.errors == []


# --- looks, keyboard, motion ------------------------------------------------------------------------------
@pytest.mark.parametrize("width,height,name", [(1280, 900, "desktop"), (375, 812, "phone")])
def test_key_frames_screenshots_and_phone_layout(open_page: Any, site: Path, width: int, height: int,
                                                 name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page, log = open_page(demo_url(site, "#trace=trace-fake&r=0&t=0"), width, height)
    gen, typed = measured_run(FAKE_DOC, "generated", 0), measured_run(FAKE_DOC, "typed", 0)
    frames = {"start": 0.0, "first-token": gen["ttft_s"],
              "first-decisions": min(d["t_available"] for d in typed["decisions"]),
              "typed-done": typed["total_s"], "end": 1e9}
    for frame, t in frames.items():
        page.evaluate("t => window.semifReplay.seek(t)", t)
        page.locator(".lanes").scroll_into_view_if_needed()
        path = SHOTS / f"{name}-{frame}.png"
        page.screenshot(path=str(path))
        assert path.stat().st_size > 5000
        assert page.evaluate("document.documentElement.scrollWidth") <= width, frame  # no sideways scrolling
    page.screenshot(path=str(SHOTS / f"{name}-full.png"), full_page=True)
    index, _ = open_page((site / "index.html").as_uri(), width, height)
    index.screenshot(path=str(SHOTS / f"{name}-index.png"), full_page=True)
    assert index.evaluate("document.documentElement.scrollWidth") <= width
    assert log.errors == []


def test_the_replay_is_usable_by_keyboard(open_page: Any, site: Path) -> None:
    page, _ = open_page(demo_url(site, "#trace=trace-fake&r=0&t=0"))
    t_end = state(page)["tEnd"]
    page.click("h1")  # focus on the page, not on a control
    page.keyboard.press("Space")
    assert state(page)["playing"] is True
    page.keyboard.press("Space")
    assert state(page)["playing"] is False
    page.keyboard.press("Home")
    assert state(page)["t"] == 0
    page.keyboard.press("ArrowRight")
    assert math.isclose(state(page)["t"], t_end / 100)
    page.keyboard.press("Shift+ArrowRight")
    assert math.isclose(state(page)["t"], t_end / 100 + t_end / 10)
    before = state(page)["t"]
    page.keyboard.press(".")  # the next moment something changes
    nxt = state(page)["t"]
    marks = sorted({x["t"] for x in measured_run(FAKE_DOC, "generated", 0)["tokens"]})
    assert nxt > before and nxt <= min(m for m in marks if m > before)
    page.keyboard.press("End")
    assert state(page)["ended"] is True
    speed = state(page)["speed"]
    page.keyboard.press("-")
    assert state(page)["speed"] < speed
    # every control is reachable with Tab and works from the keyboard
    page.click("h1")
    seen = []
    for _ in range(30):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("document.activeElement.id"))
    for control in ("trace-select", "repeat-select", "download", "share", "file-input", "play", "restart",
                    "scrubber", "speed"):
        assert control in seen, (control, seen)
    page.focus("#play")
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    assert state(page)["playing"] is True
    page.focus("#scrubber")
    page.keyboard.press("End")  # the range input's own keys seek too
    assert state(page)["t"] == t_end


def test_reduced_motion_does_not_autoplay(open_page: Any, site: Path) -> None:
    page, _ = open_page(demo_url(site, "#trace=trace-fake"), reduced_motion="reduce")
    page.wait_for_timeout(400)
    s = state(page)
    assert (s["playing"], s["t"]) == (False, 0)
    plain, _ = open_page(demo_url(site, "#trace=trace-fake"))
    wait_until(plain, "window.semifReplay.state().t > 0")  # without the preference, the replay starts by itself
    assert state(plain)["playing"] is True


# --- the in-page checks agree with the Python ones ---------------------------------------------------------
def test_in_page_canonical_json_and_sha256_match_orjson(open_page: Any, site: Path) -> None:
    page, _ = open_page(demo_url(site, "#t=0"))
    assert page.evaluate("window.semifReplay.loadChecker()") is True
    rng = random.Random(7)
    floats = [0.0, -0.0, 1.0, -2.0, 0.1, 1e-5, 9.99e-6, 1e-6, 1.5e-10, 5e-324, 1e15, 9999999999999998.0, 1e16,
              1.2345678901234567e17, 1e21, 1e22, 1.7976931348623157e308, 123.456, 0.30000000000000004]
    floats += [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 20) for _ in range(300)]
    doc = {"z": floats, "a": [0, -7, 2**53 + 1, 2**62, True, False, None],
           "é": "é\u2028\u2029\x00\x1f\"\\/<script>😀", "\U0001f600": 1, "\uffff": 2, "b": {"y": [], "x": {}}}
    for text in (json.dumps(doc), orjson.dumps(doc).decode(), json.dumps(doc, indent=2, ensure_ascii=False)):
        got = page.evaluate("t => window.SemifCheck.canonical(t)", text)
        assert got == trace_mod.canonical(json.loads(text)).decode()
    for s in ("", "abc", "x" * 55, "x" * 56, "y" * 64, "é😀" * 300, FAKE.read_text()):
        assert page.evaluate("s => window.SemifCheck.sha256Text(s)", s) == hashlib.sha256(s.encode()).hexdigest()
    assert page.evaluate("t => window.SemifCheck.verifyChecksums(t)", FAKE.read_text()) == []


def test_in_page_schema_check_agrees_with_jsonschema(open_page: Any, site: Path) -> None:
    import jsonschema

    page, _ = open_page(demo_url(site, "#t=0"))
    assert page.evaluate("window.semifReplay.loadChecker()") is True
    validator = jsonschema.Draft202012Validator(trace_mod.schema())

    def mutate(fn: Any) -> dict[str, Any]:
        doc = json.loads(FAKE.read_bytes())
        fn(doc)
        return doc

    # case: (edit, where it is wrong); both checkers must flag it, and only along the path to that place
    cases = {
        "original": (mutate(lambda d: None), None),
        "no events": (mutate(lambda d: d["runs"][0].pop("events")), ["runs", 0, "events"]),
        "negative time": (mutate(lambda d: d["runs"][1]["tokens"][0].update(t=-1)), ["runs", 1, "tokens", 0, "t"]),
        "extra field": (mutate(lambda d: d.update(extra=1)), ["extra"]),
        "bad hash": (mutate(lambda d: d["inputs"].update(sha256="xyz")), ["inputs", "sha256"]),
        "bad const": (mutate(lambda d: d["experiment"].update(kind="other")), ["experiment", "kind"]),
        "bad enum": (mutate(lambda d: d["runs"][1].update(stop_reason="eos")), ["runs", 1, "stop_reason"]),
        "too few items": (mutate(lambda d: d["runs"][0]["decisions"][0].update(probabilities=[0.5])),
                          ["runs", 0, "decisions", 0, "probabilities"]),
        "neither run shape": (mutate(lambda d: d["runs"][1].update(path="typed")), ["runs", 1]),
        "not an integer": (mutate(lambda d: d["machine"].update(cores=1.5)), ["machine", "cores"]),
        "bad label": (mutate(lambda d: d["inputs"]["criteria"][0].update(label="maybe")),
                      ["inputs", "criteria", 0, "label"]),
        "null ratio (valid)": (mutate(lambda d: d["summary"].update(wall_ratio=None)), None),
        "state as object (valid)": (mutate(lambda d: d["inputs"].update(state={"k": "v"})), None),
        "empty state": (mutate(lambda d: d["inputs"].update(state="")), ["inputs", "state"]),
    }
    for name, (doc, where) in cases.items():
        in_page = page.evaluate("d => window.SemifCheck.validate(window.SemifSchemas[d.format], d)", doc)
        python = list(validator.iter_errors(doc))
        _agree(name, where, in_page, python)
    # and the v2 schema (three lanes, labels, calibration, verdicts)
    v2_validator = jsonschema.Draft202012Validator(trace_mod.schema("semif-trace-v2"))
    v2 = json.loads((ROOT / "tests" / "fixtures" / "trace-v2-fake.json").read_bytes())

    def mutate2(fn: Any) -> dict[str, Any]:
        doc = json.loads(json.dumps(v2))
        fn(doc)
        return doc

    cases2 = {
        "original": (mutate2(lambda d: None), None),
        "generated path in v2": (mutate2(lambda d: d["runs"][1].update(path="generated")), ["runs", 1, "path"]),
        "bad verdict type": (mutate2(lambda d: d["runs"][1].update(verdict=3)), ["runs", 1, "verdict"]),
        "calibrated not an object": (mutate2(lambda d: d["runs"][0]["decisions"][0].update(calibrated=[1])),
                                     ["runs", 0, "decisions", 0, "calibrated"]),
        "no calibration block": (mutate2(lambda d: d.pop("calibration")), ["calibration"]),
        "masked not a bool": (mutate2(lambda d: d["runs"][2]["tokens"][0].update(masked="yes")),
                              ["runs", 2, "tokens", 0, "masked"]),
    }
    for name, (doc, where) in cases2.items():
        in_page = page.evaluate("d => window.SemifCheck.validate(window.SemifSchemas[d.format], d)", doc)
        python = list(v2_validator.iter_errors(doc))
        _agree(name, where, in_page, python)


def _page_path(error: str) -> list[str | int]:
    """``$.runs[1].tokens[0].t: must be ≥ 0`` → ``["runs", 1, "tokens", 0, "t"]``."""
    where = error.split(": ", 1)[0]
    assert where.startswith("$"), error
    return [int(i) if i else k for k, i in re.findall(r"\.([^.\[]+)|\[(\d+)\]", where[1:])]


def _agree(name: str, where: list[str | int] | None, in_page: list[str], python: list[Any]) -> None:
    """Both checkers accept the original and reject every edit, each error lying on the path to the edited
    place (the error's path and the edit's are one a prefix of the other: a oneOf reports at the run, a missing
    field at its parent)."""
    assert bool(in_page) == bool(python) == (where is not None), (name, in_page, [e.message for e in python])
    if where is None:
        return
    paths = [_page_path(e) for e in in_page] + [list(e.absolute_path) for e in python]
    for path in paths:
        n = min(len(path), len(where))
        assert path[:n] == where[:n], (name, where, in_page, [(list(e.absolute_path), e.message) for e in python])
