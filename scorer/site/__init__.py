"""The static SemIf site, built from traces and result reports (the entry is ``semif site build``; ``python build.py``
in a checkout is the same).

Reads every trace (``*.json`` with ``"format"`` ``semif-trace-v1`` or ``semif-trace-v2``) anywhere under the
data directory and every result report (``*.json`` under ``results/``), validates them all before writing
anything (a bad file stops the build with a message that names it), and renders the Jinja2 templates in
``scorer/site/assets/`` into the output directory:

* ``index.html`` — what SemIf is, each showcase trace's verdict in words, results charts, links;
* ``demo/index.html`` — the replay, its first trace rendered server-side (headline, verdict, numbers, lanes, rows);
* ``traces/`` — every trace byte for byte, its sha256, a listing page, and per trace a JS data file
  (``<slug>.js``: the verdict and numbers written here, and the trace's JSON text) that the replay loads
  with a ``<script>`` element: the first one at load, the others when picked, so ``file://`` works too;
* ``assets/`` — the replay's scripts, and (loaded on demand, once a trace is opened from disk) the in-page
  checker with the trace schemas and the code that computes a trace's headline, verdict and numbers in the page;
* ``live/index.html`` and ``assets/live.js`` — the live page (the typed lane in the visitor's browser), with the
  vendored in-browser engine under ``assets/wllama/`` (:mod:`~scorer.site.live`);
* ``results/`` — every report byte for byte, and a page per report with its charts and all its tables;
* ``docs/`` — with a docs folder, its Markdown pages rendered (:mod:`~scorer.site.docs`), links resolved to the site.

Pages make no request outside the site, carry no inline script (their CSP allows scripts from the site
only, and the one inline stylesheet by hash), and the output is deterministic: the same inputs give
byte-identical files. Building needs neither torch nor a model: a trace is plain data.

The modules, in the order a build uses them: :mod:`~scorer.site.discover` (find and validate inputs, with
:mod:`~scorer.site.files`, :mod:`~scorer.site.schemas`, :mod:`~scorer.site.labels`, :mod:`~scorer.site.lanes`),
:mod:`~scorer.site.reports` (a report's kind → its view, drawn by :mod:`~scorer.site.charts` with
:mod:`~scorer.site.svg`), :mod:`~scorer.site.verdict` and :mod:`~scorer.site.trace_view` (what the replay
says about a trace), :mod:`~scorer.site.docs` (the Docs section's Markdown pages), :mod:`~scorer.site.render`
(the output files) and :mod:`~scorer.site.output` (writing them).
"""

from __future__ import annotations

import sys
from pathlib import Path

from scorer.site import live as live_page
from scorer.site.discover import discover
from scorer.site.docs import load_docs, render_docs
from scorer.site.inputs import BuildError, ReportFile, TraceFile
from scorer.site.output import write_site
from scorer.site.render import render_site
from scorer.site.schemas import load_trace_schemas
from scorer.site.verdict import workload_context

__all__ = ["BuildError", "build"]


def build(data_dir: Path, out_dir: Path, prog: str = "semif site build",
          docs_dir: Path | None = None) -> tuple[list[TraceFile], list[ReportFile]]:
    """Validate everything under ``data_dir`` (and the Markdown pages of ``docs_dir``, when given), then render and
    write the site to ``out_dir``; raise :class:`BuildError` (naming the file) before writing anything when an input
    is bad."""
    traces, reports = discover(data_dir)
    for t in traces:
        t.workload = workload_context(t, reports, data_dir)
    docs = load_docs(docs_dir) if docs_dir is not None else []
    render_docs(docs, data_dir, traces, reports)
    schemas = load_trace_schemas()
    files = render_site(traces, reports, schemas, docs)
    write_site(files, out_dir)
    if not live_page.PACKAGE.is_dir():
        print(f"{prog}: warning: {live_page.PACKAGE} is not installed (npm ci): the live page says this build has no "
              "in-browser engine", file=sys.stderr)
    return traces, reports
