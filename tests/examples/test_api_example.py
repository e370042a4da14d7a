"""The Python examples of docs/python-api.md, run verbatim against smollm2-135m (slow), the README's quickstart on the
default model (slow: its decisions must be right), and the API's records against `semif score` on the real model."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "docs" / "python-api.md"
ROWS_FILE = ROOT / "data" / "workloads" / "shape-small.jsonl"
_BLOCK = re.compile(r"```python\n(from scorer import Scorer\n.*?)```", re.S)


def _example() -> tuple[Path, str]:
    """The first ```python block starting ``from scorer import Scorer`` in docs/python-api.md: the test runs what
    users read, so the two cannot drift apart."""
    doc = API_PAGE
    m = _BLOCK.search(doc.read_text())
    if m is None:
        raise AssertionError("no ```python block starting 'from scorer import Scorer' in docs/python-api.md")
    return doc, m.group(1)


_AGENT = re.compile(r"```python\n(from pathlib import Path\nimport orjson\n"
                    r"from scorer import Choice, Scorer, YesNo\n.*?)```", re.S)


def test_the_documented_agent_is_examples_agent_py():
    """docs/python-api.md's first example asks what examples/agent.py asks (the file benchmarks/agent_example.py
    measures), so the numbers its report holds are this code's; its model part is not run here (qwen files)."""
    spec = importlib.util.spec_from_file_location("readme_agent", ROOT / "examples" / "agent.py")
    assert spec is not None and spec.loader is not None
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    m = _AGENT.search(API_PAGE.read_text())
    assert m is not None, "no agent block (from pathlib import Path / import orjson / from scorer import …)"
    code = m.group(1)
    tree = ast.parse(code)
    head = code[:code.index("fitted =")]  # the data and the questions; no model load
    env: dict[str, object] = {"__name__": "__example__"}
    exec(compile(head, str(API_PAGE), "exec"), env)
    assert env["TEAMS"] == agent.TEAMS
    assert repr(env["QUESTIONS"]) == repr(agent.QUESTIONS)
    assert [t["id"] for t in env["tickets"]] == [t["id"] for t in orjson.loads(agent.TICKETS.read_bytes())["test"]]
    assert sum(isinstance(n, ast.stmt) for n in ast.walk(tree)) <= 16  # an agent in about ten lines


def test_the_example_is_valid_python():
    doc, code = _example()
    ast.parse(code, str(doc))


@pytest.mark.slow
def test_the_decide_example_runs_on_smollm2():
    doc, code = _example()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {"__name__": "__example__"})
    lines = out.getvalue().splitlines()
    assert [ln.split()[0] for ln in lines] == ["t1", "t2"]
    for ln in lines:
        _, route, probs = ln.split(" ", 2)
        assert route in ("refunds", "human", "general")
        p = ast.literal_eval(probs)
        assert list(p) == ["yes", "no"] and abs(sum(p.values()) - 1.0) < 1e-5


_ASK = re.compile(r"```python\n(from scorer import Choice, Policy, Score, Scorer, YesNo\n.*?)```", re.S)
_QUICKSTART = re.compile(r"```python\n(from scorer import Scorer, Choice, YesNo, Score\n.*?)```", re.S)


@pytest.mark.slow
def test_the_ask_example_runs_on_smollm2():
    m = _ASK.search(API_PAGE.read_text())
    assert m is not None, "no ask example in docs/python-api.md"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(m.group(1), str(API_PAGE), "exec"), {"__name__": "__example__"})
    (line,) = out.getvalue().splitlines()
    tid, route, p_yes, expected = line.split()
    assert tid == "t1" and route in ("billing", "tech", "access", "human")
    assert 0.0 <= float(p_yes) <= 1.0 and 0.0 <= float(expected) <= 3.0


@pytest.mark.slow
def test_the_readme_quickstart_decides_right_on_the_default_model():
    """The README's Python quickstart, verbatim, on the model it names (qwen2.5-1.5b): a newcomer's first run routes the
    double charge to billing and hears the refund it asks for."""
    m = _QUICKSTART.search((ROOT / "README.md").read_text())
    assert m is not None, "no quickstart in README.md"
    out, ns = io.StringIO(), {"__name__": "__example__"}
    with contextlib.redirect_stdout(out):
        exec(compile(m.group(1), "README.md", "exec"), ns)
    first, second = out.getvalue().splitlines()
    team, probs = first.split(" ", 1)
    assert team == "billing" and ast.literal_eval(probs)["billing"] > 0.5
    p_yes, expected = (float(x) for x in second.split())
    assert p_yes > 0.5 and 0.0 <= expected <= 2.0
    corrected = {name for name, answer in ns["a"].items() if "calibrated" in answer.record}
    assert corrected == {"team", "urgency"}  # the default corrects choice and score questions here, not yes/no ones
    for name in corrected:  # the default's label-free correction, chosen for these weights, is what acts
        chosen = ns["a"][name].record["calibrated"]["label_free"]["chosen"]
        assert chosen["by"] == "auto" and chosen["measured"]["model"] == "qwen2.5-1.5b"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_api_records_equal_semif_score_on_smollm2(tmp_path, monkeypatch, smol_torch, mode):
    from scorer import Scorer, cli
    from scorer.formats.records import read_records

    rows = [orjson.loads(line) for line in ROWS_FILE.read_bytes().splitlines()][:12]
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: smol_torch)
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", mode]) == 0
    want = read_records(out)
    with Scorer(backend=smol_torch, mode=mode, slots="letters") as s:  # semif score's readout
        got = [d.record for d in s.decide_many(rows)]
    for g, w in zip(got, want, strict=True):
        assert g["prompt_sha256"] == w["prompt_sha256"] and g["tokens_sha256"] == w["tokens_sha256"]
        assert g["choice"] == w["choice"] and g["run"]["config_sha256"] == w["run"]["config_sha256"]
        assert g["probabilities"] == pytest.approx(w["probabilities"], abs=1e-6)
