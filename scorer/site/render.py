"""Every output file of the site, rendered in memory from the validated traces and reports (so a failure
writes nothing): the pages from the Jinja2 templates, the replay's scripts, each trace's data file."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import jinja2
from markupsafe import Markup

from scorer.core.package_data import package_path
from scorer.site.docs import DocPage
from scorer.site.formatting import fmt_seconds
from scorer.site.inputs import BuildError, ReportFile, TraceFile
from scorer.site.lanes import first_repeat
from scorer.site.live import (
    LIVE_MODULES,
    LIVE_PAGE_PARTS,
    LIVE_PAGE_SCRIPTS,
    engine_files,
    page_config,
    prompt_words,
    showcase,
)
from scorer.site.output import SITE_MARKER
from scorer.site.reports import report_sections
from scorer.site.trace_view import replay_end, trace_view
from scorer.site.verdict import verdict_sentences

TEMPLATES = package_path("scorer.site", "assets")
REPLAY_SCRIPTS = ("details.js", "replay/format.js", "replay/link.js", "replay/prepare.js", "replay/timeline.js",
                  "replay-dom.js", "replay-view.js", "replay-chart.js", "replay.js")
"""The replay's scripts under scorer/site/assets/, concatenated in this order into the one file the page loads
(``assets/replay.js``: no bundler, and it works from ``file://``). The pure parts come before the page code
that uses them (``window.SemifReplay*``): the pure modules under replay/ (unit-tested in Node), then the page's
DOM parts (replay-dom, replay-view, replay-chart: tested in the browser), then the page code itself."""
ON_DEMAND_SCRIPTS = {"assets/verdict.js": "replay/verdict.js"}
"""Pure modules under replay/ that the replay loads only when it needs them (with the checker, once a trace is
opened from disk), as their own files: they are not part of the script before the first paint, whose bytes have a
budget (tests/site/test_site_lighthouse.py). verdict.js computes a trace's headline, verdict and numbers in the page."""


def script_json(obj: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` element: ``<``, ``>``, ``&`` and the JS line
    separators escaped, so no text in the data (``</script>``, ``<!--``) can end the element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, rep in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, rep)
    return Markup(text)


def _asset(name: str) -> str:
    """A CSS/JS file from scorer/site/assets/ (the stylesheet is inlined: it must not be able to end its element)."""
    text = (TEMPLATES / name).read_text("utf-8")
    if name.endswith(".css") and (re.search(r"</(script|style)", text, re.IGNORECASE) or "<!--" in text):
        raise BuildError(f"scorer/site/assets/{name}: contains '</style' or '<!--', which would break inlining")
    return text


def _headline(t: TraceFile) -> dict[str, Any]:
    """A trace's card on the index page: its verdict in words and the numbers a reader looks for first."""
    typed, gens = t.lanes[0], t.lanes[1:]
    return {"slug": t.slug, "label": t.label, "title": (t.obj.get("experiment") or {}).get("title") or "",
            "verdict": verdict_sentences(t), "typed": fmt_seconds(typed.median_s),
            "gens": [{"name": g.name, "time": fmt_seconds(g.median_s),
                      "ratio": "—" if g.ratio is None else f"{g.ratio:.2f}×",
                      "caveat": "" if g.usable else ("capped, no answer" if g.capped_runs else "no usable array")}
                     for g in gens],
            "criteria": len(t.obj["inputs"]["criteria"])}


def _live_csp(styles: list[str]) -> str:
    """The live page's policy: the replay's, plus what the in-browser engine needs: compiling WebAssembly
    ('wasm-unsafe-eval', never 'unsafe-eval'), its worker and its wasm as blob: URLs made in the page, and
    reading a model from an address the visitor types (https, or a loopback http server); under ``file://`` the
    engine's worker reads its wasm from a data: URL (a page-made blob: URL is not readable there)."""
    return (_csp(styles, scripts=True).replace("script-src 'self'", "script-src 'self' 'wasm-unsafe-eval' blob:")
            .replace("; img-src", "; worker-src blob:; connect-src 'self' blob: data: https: http://127.0.0.1:* "
                     "http://localhost:*; img-src"))


def _csp(styles: list[str], scripts: bool) -> str:
    """A Content-Security-Policy: the page's own inline stylesheet (by hash), scripts only from this site
    (the replay's code and data files; ``'self'`` also matches sibling files under ``file://`` in Chromium),
    or none at all; no other request of any kind, and injected markup could not run even if it got in."""

    def h(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    style_src = " ".join(h(s) for s in styles)
    script_src = "'self'" if scripts else "'none'"
    return (f"default-src 'none'; script-src {script_src}; style-src {style_src}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def trace_data_js(t: TraceFile) -> bytes:
    """``traces/<slug>.js``: the replay's data for one trace, as a script the page can load from ``file://``.

    It holds what this build writes about the trace (verdict, numbers) and the trace's JSON text (compact:
    the same values, so the same checksums, as the file beside it), as JS literals that no trace text can
    break out of."""
    text = json.dumps(t.obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    payload = script_json({"view": trace_view(t), "text": text})
    return (f"/* SemIf replay data for traces/{t.slug}.json (written by build.py) */\n"
            f"(window.SemifTraces = window.SemifTraces || {{}})[{script_json(t.slug)}] = {payload};\n").encode()


def _speeds() -> list[dict[str, str]]:
    """The replay's speed choices (the same list as SPEEDS in scorer/site/assets/replay/timeline.js)."""
    out = []
    for s in (4, 2, 1, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01):
        label = "real time" if s == 1 else f"{s:g}× faster" if s > 1 else f"{round(1 / s)}× slower"
        out.append({"value": f"{s:g}", "label": label})
    return out


def render_site(traces: list[TraceFile], reports: list[ReportFile],
                schemas: dict[str, dict[str, Any]], docs: list[DocPage] | None = None) -> dict[str, bytes]:
    """Every output file (relative path → bytes), rendered in memory so a failure writes nothing; ``docs`` (rendered
    by :func:`scorer.site.docs.render_docs`) become the Docs section, ``docs/<slug>.html``."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["script_json"] = script_json
    css = _asset("site.css")
    index_meta = [{"slug": t.slug, "label": t.label, "file": f"{t.slug}.json", "js": f"{t.slug}.js",
                   "sha256": t.sha256, "bytes": len(t.raw), "source": t.rel} for t in traces]
    # The headline cards: published traces, timing controls (random weights) apart.
    shown = [t for t in traces if t.rel.startswith("traces/") and not t.control] or \
        [t for t in traces if not t.control]
    common = {"css": Markup(css), "traces": traces, "reports": reports, "sections": report_sections(reports),
              "headlines": [_headline(t) for t in shown], "controls": [t for t in traces if t.control],
              "docs": docs or []}
    static_csp = _csp([css], scripts=False)
    first = traces[0] if traces else None
    files: dict[str, bytes] = {}
    files["index.html"] = env.get_template("index.html.j2").render(root="", csp=static_csp, **common).encode()
    files["demo/index.html"] = env.get_template("demo.html.j2").render(
        root="../", csp=_csp([css], scripts=True), index_meta=index_meta, first=first,
        view=trace_view(first) if first else None, speeds=_speeds(),
        lanes=[{"key": x.key, "name": x.name, "ttft": fmt_seconds(x.run.get("ttft_s"))}
               for x in (first.lanes if first else [])],
        repeats=sorted({r["repeat"] for r in first.obj["runs"] if not r["warmup"]}) if first else [],
        t_end=replay_end(first.obj, first_repeat(first.obj)) if first else 0.0,
        **common).encode()
    files["traces/index.html"] = env.get_template("traces.html.j2").render(root="../", csp=static_csp,
                                                                           **common).encode()
    files["assets/replay.js"] = "\n".join(_asset(name) for name in REPLAY_SCRIPTS).encode()
    for out, name in ON_DEMAND_SCRIPTS.items():
        files[out] = _asset(name).encode()
    engine = engine_files()
    words = prompt_words()
    files["live/index.html"] = env.get_template("live.html.j2").render(
        root="../", csp=_live_csp([css]), wllama=engine.config(), prompt=words, showcase=showcase(),
        config=page_config(engine), **common).encode()
    files["assets/live.js"] = "\n".join(_asset(name) for name in LIVE_PAGE_SCRIPTS).encode()
    files["assets/live-modules.js"] = "\n".join(_asset(name) for name in LIVE_MODULES + LIVE_PAGE_PARTS).encode()
    files.update(engine.files)
    files["assets/check.js"] = (_asset("validate.js") + "\nwindow.SemifSchemas = " + str(script_json(schemas))
                                + ";\n").encode()
    sums = []
    for t in traces:
        files[f"traces/{t.slug}.json"] = t.raw
        files[f"traces/{t.slug}.js"] = trace_data_js(t)
        sums.append(f"{t.sha256}  {t.slug}.json\n")
    files["traces/SHA256SUMS"] = "".join(sums).encode()
    report_page = env.get_template("report.html.j2")
    for r in reports:
        files[f"results/{r.slug}.json"] = r.raw
        files[f"results/{r.slug}.html"] = report_page.render(root="../", csp=static_csp, report=r,
                                                             **common).encode()
    doc_page = env.get_template("docs.html.j2")
    for d in docs or []:
        files[f"docs/{d.slug}.html"] = doc_page.render(root="../", csp=static_csp, doc=d, **common).encode()
    files[SITE_MARKER] = b"semif site build output; build.py empties this directory on each build\n"
    return files
