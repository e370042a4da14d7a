"""The replay's pure JavaScript (templates/replay/*.js), unit-tested in Node's built-in test runner
(``node --test tests/js/``), run from here so ``make test`` runs it; and the wording the page writes checked
against the wording build.py writes in Python for the same numbers.

Node is required (``scripts/install.sh --browser`` needs it for the browser tools too): without it these
tests fail, never skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scorer.site.formatting import fmt_seconds  # noqa: E402
from scorer.site.lanes import readable_error  # noqa: E402
from scorer.site.render import REPLAY_SCRIPTS  # noqa: E402

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
    """What the page loads (build.py's list) is every file under templates/replay/, each with its tests."""
    modules = sorted(p.name for p in (ROOT / "templates" / "replay").glob("*.js"))
    assert sorted(n.removeprefix("replay/") for n in REPLAY_SCRIPTS if n.startswith("replay/")) == modules
    for name in modules:
        stem = name.removesuffix(".js")
        assert (JS_TESTS / f"{stem}.test.js").is_file(), f"templates/replay/{name} has no tests/js/{stem}.test.js"


def test_the_page_writes_seconds_and_errors_as_the_build_does() -> None:
    """fmtS (replay) and fmt_seconds (build), readableError and readable_error: the same words for the same input,
    so a number the build wrote and the page rewrites while playing never changes its form."""
    seconds = [0, 1e-5, 0.004999, 0.00999, 0.01, 0.0104, 0.4994, 0.9996, 1, 1.005, 2.5, 59.999, 123.456]
    errors = ["Unterminated string starting at at char 41", "Expecting value", "starting at at charm"]
    code = ("const F = require(process.argv[1]); const x = JSON.parse(process.argv[2]);"
            "process.stdout.write(JSON.stringify([x.s.map(F.fmtS), x.e.map(F.readableError)]));")
    run = subprocess.run([_node(), "-e", code, str(ROOT / "templates" / "replay" / "format.js"),
                          json.dumps({"s": seconds, "e": errors})], capture_output=True, text=True, timeout=60,
                         check=True)
    js_seconds, js_errors = json.loads(run.stdout)
    assert js_seconds == [fmt_seconds(s) for s in seconds]
    assert js_errors == [readable_error(e) for e in errors]
