"""The live page's trace writer (scorer/site/assets/live/trace.js, trace-summary.js), run in Node against the Python
side.

A live run's download must be a ``semif-trace-v2`` that ``semif trace verify`` accepts, and verify recomputes
the summary and the checksums byte for byte, so the page must compute both exactly as Python does:

* on every committed v2 trace and fixture, the page's summary is ``compute_summary_v2``'s and its checksums are
  the ones the trace records (canonical JSON as orjson writes it: number layout, key order, string escapes);
* numbers are laid out as orjson lays them out, and trace names are ``scorer.trace.format``'s (a name that is not
  file-safe keeps its safe base plus 8 hex of its sha256);
* the recorded browser-made trace (``tests/fixtures/trace-v2-browser.json``, made by the live page) verifies,
  and verify refuses a null grammar time anywhere else.

The end-to-end run (a real model in Chromium, the download verified and replayed) is tests/site/test_live_browser.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_live_prompt import ROOT, node_eval

from scorer import trace

TRACES = sorted([*(ROOT / "data" / "traces").glob("*.json"), *(ROOT / "tests" / "fixtures").glob("trace-v2*.json")])
BROWSER = ROOT / "tests" / "fixtures" / "trace-v2-browser.json"
# The page's modules in Node; a whole float (Python's 12.0, which JSON.parse reads as 12) travels as {"$f": 12}.
LIVE_JS = json.dumps(str(ROOT / "scorer" / "site" / "assets" / "live"))
PRE = (f"const TR = require(path.join({LIVE_JS}, 'trace.js'));"
       f"const SM = require(path.join({LIVE_JS}, 'trace-summary.js'));"
       "const revive = (k, v) => v !== null && typeof v === 'object' && !Array.isArray(v)"
       " && Object.keys(v).length === 1 && '$f' in v ? new SM.PyFloat(v.$f) : v;")


def marked(obj: Any) -> Any:
    """``obj`` with every whole float as ``{"$f": x}`` (JSON cannot tell 12.0 from 12; canonical JSON can)."""
    if isinstance(obj, float) and obj.is_integer():
        return {"$f": obj}
    if isinstance(obj, dict):
        return {k: marked(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [marked(v) for v in obj]
    return obj


@pytest.mark.parametrize("path", [p for p in TRACES if orjson.loads(p.read_bytes())["format"] == "semif-trace-v2"],
                         ids=lambda p: p.name)
def test_summary_and_checksums_are_pythons(path: Path, tmp_path: Path) -> None:
    doc = trace.load(path)
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(marked(doc)))
    got = node_eval(PRE + """
    const doc = JSON.parse(require('node:fs').readFileSync(process.argv[1], 'utf8'), revive);
    process.stdout.write(JSON.stringify({summary: TR.canonical(SM.summary(doc)), checksums: TR.checksums(doc)}));
    """, str(src))
    assert got["summary"] == trace.canonical(doc["summary"]).decode()
    assert got["checksums"] == doc["checksums"]


def test_numbers_are_laid_out_as_orjson_does() -> None:
    xs = [0.5, 1e-5, 1e-6, 1.5e-7, 3.2e-6, 0.000123, 2.5e-10, 123456789012345.6, 9.999999e15, 1e16, 1.2345e17, 1e21,
          0.1 + 0.2, 12.0, 0.0, -3.5e-6, 1 / 3]
    got = node_eval(PRE + "process.stdout.write(JSON.stringify(JSON.parse(process.argv[1]).map((x) => "
                    "TR.floatText(x))));", json.dumps(xs))
    assert got == [orjson.dumps(x).decode() for x in xs]
    ints = [0, 7, -3, 2**53 - 1]
    got = node_eval(PRE + "process.stdout.write(JSON.stringify(TR.canonical(JSON.parse(process.argv[1]))));",
                    json.dumps({"b": ints, "a": "é\n\u2028\"", "c": [None, True]}))
    assert got == trace.canonical({"b": ints, "a": "é\n\u2028\"", "c": [None, True]}).decode()


def test_trace_names_are_pythons() -> None:
    names = [["live", "smollm2-135m-instruct-q8_0.gguf", "llamacpp-wasm", "cpu"],
             ["live", "my model (copy).gguf", "llamacpp-wasm", "cpu"], ["a/b", "HuggingFaceTB/SmolLM2", "x y", "cpu~"],
             ["ß", "--", "props ", "cpu"]]
    got = node_eval(PRE + "process.stdout.write(JSON.stringify(JSON.parse(process.argv[1]).map((n) => "
                    "TR.experimentId(n[0], n[1], n[2], n[3], '2026-12-01T22:05:11Z'))));", json.dumps(names))
    assert got == [trace.experiment_id(*n, "2026-12-01T22:05:11Z") for n in names]


def test_the_browser_made_trace_verifies_and_its_nulls_are_allowed_only_there() -> None:
    doc = trace.load(BROWSER)
    assert trace.verify(doc) == []
    assert doc["machine"]["browser"]["threads"] >= 1 and doc["prompts"]["constrained"]["compile_s"] is None
    assert [r["grammar_s"] for r in doc["runs"] if r["path"] == "constrained"] == [None]
    assert doc["summary"]["constrained"]["grammar_s_median"] is None
    plain = orjson.loads(orjson.dumps(doc))
    del plain["machine"]["browser"]
    trace.finalize(plain)
    problems = trace.verify(plain)
    assert any("compile_s is null (not measured), which only a browser-made trace" in p for p in problems)
    assert any("grammar_s is null (not measured), which only a browser-made trace" in p for p in problems)
