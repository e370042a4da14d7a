"""The replay's pure JavaScript (scorer/site/assets/replay/*.js), unit-tested in Node's built-in test runner
(``node --test tests/js/``), run from here so ``make test`` runs it; and the wording the page writes checked
against the wording build.py writes in Python for the same numbers, and for the same traces (the verdict a trace
opened from disk gets in the page).

Node is required (``scripts/install.sh --browser`` needs it for the browser tools too): without it these
tests fail, never skip.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scorer.site.discover import discover  # noqa: E402
from scorer.site.formatting import fmt_seconds  # noqa: E402
from scorer.site.inputs import TraceFile  # noqa: E402
from scorer.site.labels import is_control  # noqa: E402
from scorer.site.lanes import readable_error, trace_lanes  # noqa: E402
from scorer.site.render import ON_DEMAND_SCRIPTS, REPLAY_SCRIPTS  # noqa: E402
from scorer.site.trace_view import trace_view  # noqa: E402
from scorer.site.verdict import workload_context  # noqa: E402

JS_TESTS = ROOT / "tests" / "js"


def _node() -> str:
    node = shutil.which("node")
    assert node, "node not found on PATH: the replay's unit tests (tests/js/) need Node.js >= 18"
    return node


def test_node_unit_tests_of_the_replay_pass() -> None:
    files = sorted(p.name for p in JS_TESTS.glob("*.test.js"))
    assert files, "no tests/js/*.test.js"
    run = subprocess.run([_node(), "--test", "--test-reporter=tap", str(JS_TESTS)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail) (\d+)$", run.stdout, flags=re.M)}
    assert counts.get("fail") == 0 and counts.get("pass") == counts.get("tests", -1) >= 25, counts


def test_every_replay_module_is_built_into_the_page_and_unit_tested() -> None:
    """What the page loads (build.py's lists: before the first paint, and on demand) is every file under
    scorer/site/assets/replay/, each with its tests."""
    modules = sorted(p.name for p in (ROOT / "scorer" / "site" / "assets" / "replay").glob("*.js"))
    loaded = [*REPLAY_SCRIPTS, *ON_DEMAND_SCRIPTS.values()]
    assert sorted(n.removeprefix("replay/") for n in loaded if n.startswith("replay/")) == modules
    for name in modules:
        stem = name.removesuffix(".js")
        assert (JS_TESTS / f"{stem}.test.js").is_file(), \
            f"scorer/site/assets/replay/{name} has no tests/js/{stem}.test.js"


def test_the_page_writes_seconds_and_errors_as_the_build_does() -> None:
    """fmtS (replay) and fmt_seconds (build), readableError and readable_error: the same words for the same input,
    so a number the build wrote and the page rewrites while playing never changes its form."""
    # the ties (12.5 ms, 0.125 ms, 2.125 s: exactly halfway in binary) are written as Python writes them (to even)
    seconds = [0, 1e-5, 0.004999, 0.00999, 0.01, 0.0104, 0.4994, 0.9996, 1, 1.005, 2.5, 59.999, 123.456,
               0.0125, 0.0135, 0.000125, 0.000375, 2.125, 2.375, 0.0625]
    errors = ["Unterminated string starting at at char 41", "Expecting value", "starting at at charm"]
    code = ("const F = require(process.argv[1]); const x = JSON.parse(process.argv[2]);"
            "process.stdout.write(JSON.stringify([x.s.map(F.fmtS), x.e.map(F.readableError)]));")
    run = subprocess.run([_node(), "-e", code, str(ROOT / "scorer" / "site" / "assets" / "replay" / "format.js"),
                          json.dumps({"s": seconds, "e": errors})], capture_output=True, text=True, timeout=60,
                         check=True)
    js_seconds, js_errors = json.loads(run.stdout)
    assert js_seconds == [fmt_seconds(s) for s in seconds]
    assert js_errors == [readable_error(e) for e in errors]


# --- the verdict the page computes (scorer/site/assets/replay/verdict.js) is the one build.py writes ------------------
def _variants(tmp: Path) -> list[tuple[str, dict[str, Any], str]]:
    """``(name, trace, workload)``: the fixture traces (valid, invalid, capped, cut, v2 with calibration and a
    grammar, hostile text) and, edited in memory (these views are computed from data, never verified), a timing
    control, a tied typed choice, medians on exact rounding ties and a whole-workload sentence."""
    from site_helpers import FAKE_INVALID, make_data_dir

    traces, _ = discover(make_data_dir(tmp, more=True))
    out = [(t.slug, t.obj, "") for t in traces]
    out.append(("fake-invalid", json.loads(FAKE_INVALID.read_bytes()), ""))
    v2 = next(t.obj for t in traces if t.slug == "trace-v2")
    control = copy.deepcopy(v2)
    control["model"]["key"] = "qwen2.5-0.5b-arch-random"
    tie = copy.deepcopy(v2)
    first = next(r for r in tie["runs"] if r["path"] == "typed" and not r["warmup"])
    first["decisions"][0]["choice"] = None
    ties = copy.deepcopy(v2)
    ties["summary"]["typed"]["median_s"] = 0.0125
    ties["summary"]["free"].update(median_s=2.125, wall_ratio=170.0, ttft_median_s=0.000125)
    ties["summary"]["constrained"].update(wall_ratio=0.125, masked_tokens_median=12.5)
    ties["summary"]["constrained"]["tokens"]["output_median"] = 104.5
    out += [("control", control, ""), ("tie", tie, ""), ("rounding-ties", ties, ""),
            ("workload", v2, "the same calibration is right on 0.812 of all 42 decisions of rows.jsonl.")]
    return out


@pytest.mark.slow  # verifies every committed trace (a few MB) before comparing: ~20 s on this machine
def test_the_page_computes_the_verdict_build_py_writes(tmp_path: Path) -> None:
    """verdict.js in Node against build.py's view (headline, verdict, numbers with the token account, lanes),
    on every committed trace under data/ (with the whole-workload sentence the build adds from its reports) and
    on every variant above: the same words and digits, so a trace opened from disk reads as the build's page."""
    traces, reports = discover(ROOT / "data")
    assert traces, "no committed traces under data/"
    cases = []
    for t in traces:
        t.workload = workload_context(t, reports, ROOT / "data")
        cases.append((t.rel, t.obj, t.workload, trace_view(t)))
    for name, doc, workload in _variants(tmp_path):
        t = TraceFile(name, name, b"", "", doc, "", trace_lanes(doc), is_control(doc), workload)
        cases.append((name, doc, workload, trace_view(t)))
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{"trace": doc, "workload": workload} for _, doc, workload, _ in cases]))
    code = ("const V = require(process.argv[1]); const fs = require('fs');"
            "const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));"
            "process.stdout.write(JSON.stringify(cases.map(c => V.view(c.trace, c.workload))));")
    verdict_js = ROOT / "scorer" / "site" / "assets" / "replay" / "verdict.js"
    run = subprocess.run([_node(), "-e", code, str(verdict_js), str(path)],
                         capture_output=True, text=True, timeout=60, check=True)
    in_page = json.loads(run.stdout)
    assert len(in_page) == len(cases)
    for (name, _, _, build_view), page_view in zip(cases, in_page, strict=True):
        assert set(page_view) == set(build_view) - {"slug", "label"}, name
        for key in page_view:
            assert page_view[key] == build_view[key], (name, key)
    kinds = {c[0]: c[3] for c in cases}
    assert kinds["control"]["control"] and kinds["control"]["headline"].startswith("Timing control")
    assert any(v["name"] == "On the whole workload:" for v in kinds["workload"]["verdict"])
    assert "12 ms" in kinds["rounding-ties"]["headline"] and "2.12 s" in kinds["rounding-ties"]["headline"]
