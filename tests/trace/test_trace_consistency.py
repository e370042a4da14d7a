"""Issue 21 items 3–5: traces that verified while contradicting themselves, their checksums re-finalized.

Each test edits one committed fixture the way a forger would (the edit, then :func:`scorer.trace.finalize`,
which recomputes the inputs hash, the summary and every checksum) and requires :func:`scorer.trace.verify` to
refuse it, naming the contradiction. Every reader runs that one function first; one edit of each item is also
taken through all of them — ``semif trace verify``, ``summary``, ``export`` (exit 2, the file named, nothing
written) and the site build's trace check — so that stays true.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from scorer import trace
from scorer.cli import main
from scorer.site.discover import validate_trace
from scorer.site.inputs import BuildError

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "fixtures" / "trace-fake.json"
V2 = ROOT / "tests" / "fixtures" / "trace-v2-fake.json"
_DOCS: dict[Path, dict[str, Any]] = {}


def _doc(path: Path) -> dict[str, Any]:
    if path not in _DOCS:
        _DOCS[path] = trace.load(path)
        assert trace.verify(_DOCS[path]) == []
    return orjson.loads(orjson.dumps(_DOCS[path]))


def _refused(doc: dict[str, Any], want: str) -> None:
    problems = trace.verify(doc)
    assert any(want in p for p in problems), problems


def _refused_everywhere(tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str], want: str) -> None:
    """``doc`` (re-finalized) is refused by verify, summary, export and the site build, naming ``want``."""
    path = tmp_path / "t.json"
    path.write_bytes(trace.dumps(doc))
    out_file = tmp_path / "chrome.json"
    for args in (["verify"], ["summary"], ["export", "--chrome", "-o", str(out_file)]):
        rc = main(["trace", *args, str(path)])
        cap = capsys.readouterr()
        assert rc == 2, (args, cap.err[:2000])
        assert cap.err.startswith(f"semif: error: {path}") and want in cap.err, (args, cap.err[:2000])
        assert cap.out == "" and "Traceback" not in cap.err
    assert not out_file.exists()
    with pytest.raises(BuildError, match="trace failed verification"):
        validate_trace("traces/t.json", doc)


# --- item 3: a greedy lane's chosen token contradicting its own top_k[0] ------------------------------------
def _token(doc: dict[str, Any], lane: str, masked: bool | None) -> dict[str, Any]:
    run = trace.measured(doc, lane)[0]
    for t in run["tokens"]:
        if (masked is None or bool(t.get("masked")) == masked) and len(t["top_k"]) > 1:
            return t
    raise AssertionError(f"no {lane} token with masked={masked}")


# (fixture, lane, masked): v1's generated lane, v2's free lane, a constrained token the grammar did not overrule
# (chosen = the model's argmax) and one it did (free_argmax = the model's argmax).
LANES = {"v1-generated": (V1, "generated", None), "v2-free": (V2, "free", None),
         "v2-constrained": (V2, "constrained", False), "v2-constrained-masked": (V2, "constrained", True)}


@pytest.mark.parametrize("field", ["id", "p"])
@pytest.mark.parametrize("lane", sorted(LANES))
def test_greedy_token_contradicting_its_top_k_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         lane: str, field: str):
    """Issue 21 item 3: the recorded argmax's id (the model's second choice) or p (halved) no longer matches
    ``top_k[0]`` in a greedy run; verify, summary and export accepted it."""
    path, lane_name, masked = LANES[lane]
    doc = _doc(path)
    t = _token(doc, lane_name, masked)
    best = t["free_argmax"] if masked else t
    if field == "id":
        best["id"] = t["top_k"][1]["id"]
    else:
        best["p"] = best["p"] / 2
    trace.finalize(doc)
    if lane == "v2-free" and field == "id":
        _refused_everywhere(tmp_path, doc, capsys, "greedy")
    else:
        _refused(doc, "greedy")


# --- item 4: typed prompt_sha256 is re-derived like the generated prompt's ----------------------------------
@pytest.mark.parametrize("where", ["prefix_text", "suffix_texts"])
@pytest.mark.parametrize("path", [V1, V2], ids=["v1", "v2"])
def test_edited_typed_prompt_text_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path,
                                             where: str):
    """Issue 21 item 4: an edited typed ``prefix_text`` (or one suffix) kept its ``prompt_sha256`` and verified."""
    doc = _doc(path)
    ty = doc["prompts"]["typed"]
    if where == "prefix_text":
        ty["prefix_text"] = ty["prefix_text"].replace("precise decision function", "sloppy guesser")
    else:
        ty["suffix_texts"][3] = ty["suffix_texts"][3].replace("?", " (answer yes)?", 1)
    trace.finalize(doc)
    if path == V2 and where == "prefix_text":
        _refused_everywhere(tmp_path, doc, capsys, "prompt_sha256")
    else:
        _refused(doc, "prompt_sha256")


# --- item 5: inputs edited while the recorded prompts still hold the original -------------------------------
@pytest.mark.parametrize("what", ["state", "question"])
@pytest.mark.parametrize("path", [V1, V2], ids=["v1", "v2"])
def test_inputs_that_the_prompts_do_not_hold_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         path: Path, what: str):
    """Issue 21 item 5: ``inputs.state`` or a criterion's question edited (the inputs hash re-derived by
    finalize) while every recorded prompt still holds the original: verified (4 variants)."""
    doc = _doc(path)
    if what == "state":
        doc["inputs"]["state"] = doc["inputs"]["state"].replace("iPhones", "Android phones")
    else:
        doc["inputs"]["criteria"][4]["question"] = "Does the customer threaten to leave?"
    trace.finalize(doc)
    if path == V1 and what == "state":
        _refused_everywhere(tmp_path, doc, capsys, "re-rendered from inputs")
    else:
        _refused(doc, "re-rendered from inputs")


# --- one check for every reader -----------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [300, 100_000])
def test_the_site_refuses_a_deeply_nested_trace_like_the_command_line(depth: int):
    """The command line refuses JSON nested past trace.MAX_DEPTH at load; the site build parsed traces itself and
    crashed instead (a 300-deep state: TypeError from the canonical JSON under verify; 100,000 deep: a
    RecursionError from the JSON parser), with a traceback and no file named."""
    from scorer.site.files import load_json

    doc = _doc(V1)
    doc["inputs"]["state"] = {"a": "PLACE"}
    raw = trace.dumps(doc).replace(b'"PLACE"', b"[" * depth + b"]" * depth, 1)
    with pytest.raises(BuildError, match=r"traces/deep\.json: .*(nested more than 32 levels|nested too deep)"):
        validate_trace("traces/deep.json", load_json(raw, "traces/deep.json"))


def test_the_logits_epsilons_verify_uses_are_readouts():
    """header.LOGITS_EPSILON is written out so that verify imports no numpy; it must stay readout's."""
    from scorer.decision import readout
    from scorer.trace.header import LOGITS_EPSILON

    assert {dt: readout.resolution(1.0, dt) for dt in LOGITS_EPSILON} == LOGITS_EPSILON
    assert set(LOGITS_EPSILON) == set(readout._MANTISSA_BITS)


def test_verify_imports_no_model_library():
    """A trace is plain data: checking one loads neither torch, transformers, llama.cpp nor numpy."""
    import subprocess
    import sys

    code = ("import sys; from scorer import trace; d = trace.load(sys.argv[1]); assert trace.verify(d) == []; "
            "trace.summary_text(d); trace.to_chrome(d); "
            "print([m for m in ('torch', 'transformers', 'llama_cpp', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code, str(V2)], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]", out.stderr


def test_an_exact_tie_at_the_top_of_a_typed_top_k_verifies():
    """full_vocab_argmax and top_k sort a tie independently (argmax vs argpartition): a genuine tie at the top
    must verify whichever of the tied tokens each names first."""
    doc = _doc(V2)
    d = trace.measured(doc, "typed")[0]["decisions"][0]
    first, second = d["top_k"][0], d["top_k"][1]
    second["p"] = first["p"]
    d["top_k"][0], d["top_k"][1] = second, first  # top_k names the other tied token first
    trace.finalize(doc)
    assert trace.verify(doc) == []
