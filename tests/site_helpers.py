"""Helpers shared by the site tests (no tests here): the fake and hostile traces, a data directory to build
from, HTML probes, and the browser fixtures (Playwright driving Debian's Chromium; never ``playwright install``).

A test module uses the browser fixtures by binding them at module level
(``www, site, server, browser, open_page = sh.www, sh.site, sh.server, sh.browser, sh.open_page``) and
marks itself with ``pytestmark = sh.BROWSER_MARKS``.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_PAGES = tuple(f"docs/{p.stem}.html" for p in sorted((ROOT / "docs").glob("*.md")))
"""The Docs section's pages, as a build with ``docs_dir=ROOT / "docs"`` writes them (every page check covers them)."""
sys.path.insert(0, str(ROOT))

from trace_helpers import edit_inputs  # noqa: E402

import build  # noqa: E402
from scorer import trace as trace_mod  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
FAKE = FIXTURES / "trace-fake.json"
FAKE_INVALID = FIXTURES / "trace-fake-invalid.json"
HOSTILE = '<script>alert(1)</script></script><img src=x onerror="window.__pwned=1"><!-- & -->'


# --- shared helpers ------------------------------------------------------------------------------------
def hostile_trace() -> dict[str, Any]:
    """The fake trace with markup and ``</script>`` in every text a reader sees, re-derived so it verifies."""
    doc = trace_mod.load(FAKE)
    doc["experiment"]["title"] = HOSTILE + " title"
    doc["model"]["key"] = "<i>fake</i>" + HOSTILE
    m, e = doc["model"], doc["experiment"]
    e["id"] = trace_mod.experiment_id(doc["inputs"]["id"], m["key"], m["backend"], m["device"], e["created_utc"])
    doc["notes"].append(HOSTILE)
    doc["differences"].append(HOSTILE)

    def hostile_inputs(inputs: dict[str, Any]) -> None:
        inputs["state"] = HOSTILE + "\n" + inputs["state"]
        inputs["criteria"][0]["question"] = HOSTILE + " " + inputs["criteria"][0]["question"]
        inputs["criteria"][1]["question"] = "</script><script>window.__pwned=2</script>"

    edit_inputs(doc, hostile_inputs)  # the prompts (typed and generated) hold the markup as a rerun would
    typed = {(r["warmup"], r["repeat"]): r for r in doc["runs"] if r["path"] == "typed"}
    n = len(doc["inputs"]["criteria"])
    for run in doc["runs"]:
        if run["path"] != "generated":
            continue
        run["tokens"][0]["text"] = HOSTILE + run["tokens"][0]["text"]
        run["text"] = "".join(t["text"] for t in run["tokens"] if not t["stop"])
        _rejudge(run, typed, n)
    return _finalized(doc)


def capped_trace(limit: int = 12, end_of_turn: bool = False) -> dict[str, Any]:
    """The fake v1 trace as if its generated runs had hit ``max_new_tokens = limit`` inside the array (capped,
    invalid) or, with ``end_of_turn``, had ended their turn there (invalid, not capped); either way the text
    is an unclosed string, which v1 worded "Unterminated string starting at at char …". Re-derived so it
    verifies."""
    doc = trace_mod.load(FAKE)
    if not end_of_turn:
        doc["protocol"]["max_new_tokens"] = doc["prompts"]["generated"]["max_new_tokens"] = limit
    n = len(doc["inputs"]["criteria"])
    typed = {(r["warmup"], r["repeat"]): r for r in doc["runs"] if r["path"] == "typed"}
    for run in doc["runs"]:
        if run["path"] != "generated":
            continue
        stop = run["tokens"][-1]
        run["tokens"] = run["tokens"][:limit - 1 if end_of_turn else limit]
        if end_of_turn:
            run["tokens"].append(dict(stop, i=limit - 1))
        end = run["tokens"][-1]["t"]
        run["events"] = [dict(e, t=min(e["t"], end)) if e["name"] != "done" else dict(e, t=end) for e in run["events"]]
        run.update(total_s=end, output_tokens=limit, decode_steps=limit - 1,
                   stop_reason="end_of_turn" if end_of_turn else "max_new_tokens",
                   text="".join(t["text"] for t in run["tokens"] if not t["stop"]))
        _rejudge(run, typed, n, v1_wording=True)
    return _finalized(doc)


def _rejudge(run: dict[str, Any], typed: dict[tuple[bool, int], dict[str, Any]], n: int, v1_wording: bool = False,
             ) -> None:
    """Re-derive a generated run's judgement and agreement from its (edited) text."""
    valid, complete, parsed, error = trace_mod.parse_array(run["text"], n, v1_wording=v1_wording)
    run.update(valid=valid, complete=complete, parsed=parsed, error=error)
    choices = [d["choice"] for d in typed[(run["warmup"], run["repeat"])]["decisions"]]
    run["agreement"] = trace_mod.agreement(parsed, complete, choices)


def _finalized(doc: dict[str, Any]) -> dict[str, Any]:
    """Summary and checksums recomputed; the edited trace must verify."""
    trace_mod.finalize(doc)
    problems = trace_mod.verify(doc)
    assert not problems, problems
    return doc


def shape_report() -> dict[str, Any]:
    """A shape benchmark report in the shape ``semif bench`` writes (numbers made up for rendering)."""

    def p(mode: str, rate: float, dp: float | None, flips: int) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": mode, "decisions": 42, "wall_s": 42 / rate, "decisions_per_s": rate}
        if dp is not None:
            out.update(speedup_vs_fresh=rate / 10.0, vs_fresh={"max_abs_dp": dp, "n_flips": flips, "n_ties": 0})
        return out

    return {"kind": "bench", "format": "semif-bench-v2", "workload": {"name": "shape", "size": "small", "rows": 42},
            "model": {"key": "fake", "backend": "fake", "dtype": "float32"}, "machine": {"cpu": "Test CPU"},
            "passes": {"direct": p("direct", 10.0, None, 0), "serial": p("serial", 31.5, 2e-6, 0),
                       "shared": p("shared", 55.25, 1.5e-5, 1)}}


def make_data_dir(tmp: Path, hostile: bool = True, reports: bool = True, more: bool = False) -> Path:
    """A data directory: the fake trace (first), optionally the hostile trace, a few result reports and (``more``)
    the capped and cut v1 traces and the two v2 fixtures."""
    data = tmp / "data"
    (data / "traces").mkdir(parents=True)
    (data / "traces" / "trace-fake.json").write_bytes(FAKE.read_bytes())
    if hostile:
        trace_mod.write(data / "traces" / "trace-hostile.json", hostile_trace())
    if more:
        trace_mod.write(data / "traces" / "trace-v1-capped.json", capped_trace())
        trace_mod.write(data / "traces" / "trace-v1-cut.json", capped_trace(end_of_turn=True))
        for name, fixture in (("trace-v2", "trace-v2-fake"), ("trace-v2-free-valid", "trace-v2-fake-free-valid")):
            (data / "traces" / f"{name}.json").write_bytes((FIXTURES / f"{fixture}.json").read_bytes())
    if reports:
        (data / "results").mkdir()
        (data / "results" / "shape-small-fake-fake.json").write_bytes(orjson.dumps(shape_report()))
        (data / "results" / "mystery.json").write_bytes(orjson.dumps(
            {"kind": "mystery", "title": "A kind the site does not know <b>", "rows": [{"a": 1, "b": "x<y"}]}))
    return data


def inline_blocks(html: str, tag: str) -> list[str]:
    """Contents of the inline ``<tag>`` elements (scripts without a type, i.e. the executable ones)."""
    if tag == "script":
        return re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    return re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)


def embedded_json(html: str, element_id: str) -> Any:
    m = re.search(rf'<script type="application/json" id="{re.escape(element_id)}">(.*?)</script>', html, flags=re.S)
    assert m, element_id
    return json.loads(m.group(1))


def data_file(js: str) -> tuple[str, dict[str, Any]]:
    """The slug and the payload (``view`` and ``text``) of a ``traces/<slug>.js`` data file."""
    head = r"/\* [^*]* \*/\n\(window\.SemifTraces = window\.SemifTraces \|\| \{\}\)"
    m = re.fullmatch(head + r"\[(\"[^\"]+\")\] = (.*);\n", js, flags=re.S)
    assert m, js[:200]
    return json.loads(m.group(1)), json.loads(m.group(2))


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- the browser -------------------------------------------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = ROOT / "test-output" / "site"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs Debian's Chromium at /usr/bin/chromium (apt-get install chromium)"),
]


def serve(root: Path, headers: dict[str, str] | None = None) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``root`` quietly, with ``headers`` on every answer (a generator for a
    fixture to ``yield from``: the server stops when the fixture is torn down)."""
    extra = dict(headers or {})

    class Handler(SimpleHTTPRequestHandler):
        def end_headers(self) -> None:
            for k, v in extra.items():
                self.send_header(k, v)
            super().end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# --- fixtures -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def www(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A web root holding the site under a sub-path, as a GitHub Pages project site is served."""
    tmp = tmp_path_factory.mktemp("www")
    build.build(make_data_dir(tmp, more=True), tmp / "www" / "project", docs_dir=ROOT / "docs")
    return tmp / "www"


@pytest.fixture(scope="module")
def site(www: Path) -> Path:
    return www / "project"


@pytest.fixture(scope="module")
def server(www: Path) -> Iterator[tuple[str, list[str]]]:
    """``http://127.0.0.1:PORT`` serving the web root, and the list of every path it was asked for."""
    asked: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            asked.append(self.path)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", asked
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


class Log:
    """What a page did: console errors, uncaught exceptions, dialogs, requests."""

    def __init__(self, page: Any):
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    contexts = []

    def _open(url: str, width: int = 1280, height: int = 900, **ctx: Any) -> tuple[Any, Log]:
        context = browser.new_context(viewport={"width": width, "height": height}, **ctx)
        contexts.append(context)
        page = context.new_page()
        log = Log(page)
        page.goto(url)
        wait_until(page, "window.semifReplay !== undefined || !document.getElementById('replay')")
        return page, log

    yield _open
    for c in contexts:
        c.close()


def wait_until(page: Any, expression: str, timeout_s: float = 20.0) -> None:
    """Poll a JS expression from the test side: the page's CSP (rightly) forbids the eval that
    Playwright's own wait_for_function would use."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


def demo_url(site: Path, fragment: str = "") -> str:
    return (site / "demo" / "index.html").as_uri() + fragment


def lane(key: str, sel: str = "") -> str:
    """A selector inside one lane of the replay (``typed``, ``free`` or ``constrained``)."""
    return f".lane[data-lane={key}] {sel}".strip()


def cell(cid: str, key: str) -> str:
    """The value cell of a generated lane in one criterion's row."""
    return f".crit[data-id={cid}] .gv[data-lane={key}] .v"


def state(page: Any) -> dict[str, Any]:
    return page.evaluate("window.semifReplay.state()")


def measured_run(doc: dict[str, Any], path: str, repeat: int) -> dict[str, Any]:
    return next(r for r in doc["runs"] if r["path"] == path and r["repeat"] == repeat and not r["warmup"])


FAKE_DOC = json.loads(FAKE.read_bytes())
