"""``semif versus`` on the fake backend: inputs, timelines, strict judging of the generated arrays, the
grammar-constrained lane, calibration and labels, agreement."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from fakes import MERGES, FakeBackend, FakeTokenizer, SlowFakeBackend, fake_vocab

from scorer import trace
from scorer.core.errors import InputError, ValidationError
from scorer.prompting.grammar import ArrayGrammar
from scorer.prompting.prompt import ARRAY_PROMPT_VERSION
from scorer.scoring.generation import (
    answer_candidates,
    array_messages,
    default_max_new_tokens,
    token_texts,
)
from scorer.scoring.modes import prepare, score_items
from scorer.studies.versus import (
    DEFAULT_INPUT,
    VersusConfig,
    decisions_for,
    load_input,
    run_versus,
)
from scorer.trace import trace_name
from scorer.trace.answers import string_value_starts

SMALL = {"id": "mini", "state": "Order 17: paid, shipped 2024-05-02, customer asked for a refund.",
         "criteria": [{"id": "a", "question": "Is the order paid?", "label": "yes"},
                      {"id": "b", "question": "Has it shipped?", "label": "yes"},
                      {"id": "c", "question": "Is the customer angry?"}]}


def _write(tmp_path: Path, obj: object, name: str = "in.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


@pytest.fixture
def small(tmp_path: Path):
    return load_input(_write(tmp_path, SMALL))


def _direct_choices(inp) -> list[str | None]:
    be = FakeBackend(FakeTokenizer(merges=MERGES))
    items = prepare(be, decisions_for(inp), with_prefix=False)
    return [r["choice"] for r in score_items(be, items, "direct", {"config_sha256": "t"})]


def _run(inp, script: str, **cfg):
    be = SlowFakeBackend(FakeTokenizer(merges=MERGES), script=script, step_s=0.002, prefill_s=0.01, pass_s=0.005)
    return run_versus(be, inp, VersusConfig(**{"repeats": 2, "warmup": 1, **cfg}))


# --- input files -------------------------------------------------------------------------------------
def test_default_input_loads():
    inp = load_input(DEFAULT_INPUT)
    assert inp.id == "ticket-21" and len(inp.criteria) == 21
    assert {c.label for c in inp.criteria} == {"yes", "no"}


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda o: o.pop("state"), "state"),
    (lambda o: o.update(state="  "), "state"),
    (lambda o: o.update(criteria=[]), "criteria"),
    (lambda o: o["criteria"][1].update(id="a"), "criteria[1].id"),
    (lambda o: o["criteria"][0].update(label="Yes"), "criteria[0].label"),
    (lambda o: o["criteria"][2].update(questoin="typo"), "criteria[2]"),
    (lambda o: o["criteria"][2].pop("question"), "criteria[2].question"),
    (lambda o: o.update(extra=1), None),
])
def test_input_errors_name_the_field(tmp_path: Path, mutate, field):
    obj = json.loads(json.dumps(SMALL))
    mutate(obj)
    with pytest.raises(InputError) as exc:
        load_input(_write(tmp_path, obj))
    assert exc.value.field == field
    assert str(tmp_path / "in.json") in str(exc.value)


def test_input_not_json_or_missing(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(InputError, match="invalid JSON"):
        load_input(bad)
    with pytest.raises(InputError, match="file not found"):
        load_input(tmp_path / "absent.json")


# --- prompt and helpers ------------------------------------------------------------------------------
def test_array_prompt_numbers_the_criteria_and_states_the_count(small):
    msgs = array_messages(small)
    user = msgs[1]["content"]
    assert user.startswith("State:\nOrder 17")
    assert "1. Is the order paid?\n2. Has it shipped?\n3. Is the customer angry?" in user
    assert "exactly 3 strings" in user
    assert "JSON array" in msgs[0]["content"]
    assert default_max_new_tokens(21) == 100


def test_token_texts_are_multibyte_safe():
    class Bytes:
        """Byte-level tokenizer: each id is one UTF-8 byte."""

        def decode(self, ids):
            return bytes(ids).decode("utf-8", errors="replace")

    ids = list("[\"né\",\"€\"]".encode())
    texts = token_texts(Bytes(), ids)  # type: ignore[arg-type]
    assert "".join(texts) == "[\"né\",\"€\"]"
    assert all("\ufffd" not in t for t in texts)
    assert texts[ids.index(0xC3)] == ""  # first byte of é: pending until completed
    assert texts[ids.index(0xC3) + 1] == "é"


def test_string_value_starts_ignores_escapes_and_nesting():
    text = '["yes", "n\\"o", {"k": "v"}, "no"'
    starts = string_value_starts(text)
    assert [text[s] for s in starts] == ["y", "n", "n"]


def test_answer_candidates_distinguish_yes_and_no():
    tok = FakeTokenizer(merges=MERGES)
    y, n = answer_candidates(tok, "")
    assert tok.decode([y]) == "yes" and tok.decode([n]) == "no"
    # '"' then the letter: first tokens are the same quote, so no single token decides
    assert answer_candidates(FakeTokenizer(), '"') is None


def test_trace_name_is_safe():
    assert trace_name("ticket-21", "qwen2.5-0.5b", "torch", "cpu") == "versus-ticket-21-qwen2.5-0.5b-torch-cpu.json"
    name = trace_name("a b", "/m/x/model.gguf", "llamacpp", "cpu")
    assert re.fullmatch(r"versus-a-b-[0-9a-f]{8}-model\.gguf-[0-9a-f]{8}-llamacpp-cpu\.json", name), name


def test_trace_name_tells_apart_names_the_shortening_would_merge():
    """``props``, ``props `` and ``props~`` once all became ``props``: an edit of ``inputs.id`` re-finalized
    by a forger then verified (found by the trace fuzz)."""
    ids = ["props", "props ", "props~", "a b", "a-b", "a/b"]
    assert len({trace_name(i, "m", "torch", "cpu") for i in ids}) == len(ids)
    keys = ["HuggingFaceTB/SmolLM2-135M-Instruct", "Other/SmolLM2-135M-Instruct", "/m/x/model.gguf", "/n/model.gguf"]
    assert len({trace_name("t", k, "torch", "cpu") for k in keys}) == len(keys)


# --- the experiment on the fake backend --------------------------------------------------------------
def test_timeline_is_monotonic_and_ttft_within_total(small):
    script = json.dumps([c or "no" for c in _direct_choices(small)])
    doc = _run(small, script)
    assert trace.verify(doc) == []
    assert [(r["path"], r["warmup"], r["repeat"]) for r in doc["runs"]] == [
        ("typed", True, 0), ("free", True, 0), ("constrained", True, 0),
        ("typed", False, 0), ("free", False, 0), ("constrained", False, 0),
        ("typed", False, 1), ("free", False, 1), ("constrained", False, 1)]
    prev_end = 0.0
    for run in doc["runs"]:
        ts = [e["t"] for e in run["events"]]
        assert ts == sorted(ts) and ts[0] > 0
        assert run["start_s"] >= prev_end
        prev_end = run["start_s"] + run["total_s"]
        if run["path"] != "typed":
            tt = [t["t"] for t in run["tokens"]]
            assert tt == sorted(tt)
            assert 0 < run["ttft_s"] <= run["total_s"]
            assert run["ttft_s"] == run["tokens"][0]["t"]
            assert tt[-1] - tt[0] >= 0.002 * (len(tt) - 1)  # the decode steps' sleeps are inside the clock
        else:
            enc, pre, suf, avail = ts
            assert pre - enc >= 0.01  # the prefill's sleep is between encoded and prefill_done
            assert all(pre <= d["t_available"] <= suf <= avail for d in run["decisions"])


def test_typed_choices_match_direct_mode(small):
    doc = _run(small, '["yes","yes","no"]')
    want = _direct_choices(small)
    for run in doc["runs"]:
        if run["path"] == "typed":
            assert [d["choice"] for d in run["decisions"]] == want
            assert [d["criterion_id"] for d in run["decisions"]] == ["a", "b", "c"]
    chk = doc["checks"]["typed_vs_direct"]
    assert chk["choices_equal"] and chk["max_abs_dp"] < 1e-9


def test_valid_array_agreement_and_answer_evidence(small):
    typed = _direct_choices(small)
    flipped = ["no" if c == "yes" else "yes" for c in typed[:1]] + [c or "no" for c in typed[1:]]
    doc = _run(small, json.dumps(flipped, separators=(",", ":")))
    gen = trace.measured(doc, "free")[0]
    assert gen["valid"] and gen["complete"] and gen["error"] is None
    assert gen["parsed"] == flipped and gen["stop_reason"] == "end_of_turn"
    assert gen["tokens"][-1]["stop"] and gen["tokens"][-1]["text"] == "<|im_end|>"
    assert gen["text"] == json.dumps(flipped, separators=(",", ":"))
    want = [None if c is None else g == c for g, c in zip(flipped, typed, strict=True)]
    assert gen["agreement"] == want and gen["agreement"][0] is False
    answers = [t for t in gen["tokens"] if t["answer_index"] is not None]
    assert [t["answer_index"] for t in answers] == [0, 1, 2]
    for t, value in zip(answers, flipped, strict=True):
        assert t["text"] == value  # the fake's merges make "yes"/"no" single tokens
        # the script forces the chosen token, so its side of the yes/no pair dominates
        assert t["yes_no"][value] > 0.99
    s = doc["summary"]
    assert s["free"]["agreement"]["disagree"] >= 1 and s["free"]["complete_runs"] == 2
    assert s["free"]["tokens"]["output_median"] == gen["output_tokens"]
    assert s["free"]["wall_ratio"] == pytest.approx(s["free"]["median_s"] / s["typed"]["median_s"], rel=1e-4)
    # a valid script is what the grammar admits too: the constrained lane writes the same, never overruled
    con = trace.measured(doc, "constrained")[0]
    assert con["text"] == gen["text"] and con["masked_tokens"] == 0 and con["agreement"] == gen["agreement"]
    assert all(t["masked"] is False and t["free_argmax"] is None for t in con["tokens"])
    assert all(t["masked"] is None for t in gen["tokens"]) and gen["masked_tokens"] is None


@pytest.mark.parametrize(("script", "error"), [
    ('["yes","no"', "not a JSON value"),                  # never closed
    ('["yes","no"]', "2 values for 3 criteria"),           # too short
    ('["Yes","no","no"]', 'value 1 is "Yes"'),             # not lowercase: never repaired
    ('```json\n["yes","no","no"]\n```', "not a JSON value"),
    ('{"a":"yes"}', "not an array"),
])
def test_broken_generated_array_is_a_failure(small, script, error):
    doc = _run(small, script, repeats=1, warmup=0)
    assert trace.verify(doc) == []
    gen = trace.measured(doc, "free")[0]
    assert not gen["complete"] and error in gen["error"]
    assert gen["agreement"] == [None, None, None] and gen["correct"] == [None, None, None]
    assert gen["verdict"] == f"invalid: {gen['error']}" and not gen["capped"]
    s = doc["summary"]
    assert s["free"]["complete_runs"] == 0 and s["free"]["agreement"]["missing"] == 3
    assert s["labels"]["free_correct"] == 0
    if gen["valid"]:
        assert gen["parsed"] == ["yes", "no"]  # recorded as it is, not padded
    else:
        assert gen["parsed"] is None
    # the same model under the grammar: valid by construction, what it was refused is on record
    con = trace.measured(doc, "constrained")[0]
    assert con["complete"] and con["verdict"] == "valid: 3 values" and not con["capped"]
    assert con["masked_tokens"] >= 1 and s["constrained"]["complete_runs"] == 1
    for t in con["tokens"]:
        if t["masked"]:
            assert t["free_argmax"]["id"] != t["id"] and t["top_k"][0]["id"] == t["free_argmax"]["id"]


def test_token_limit_stops_generation(small):
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0, max_new_tokens=4)
    gen = trace.measured(doc, "free")[0]
    assert gen["stop_reason"] == "max_new_tokens" and gen["output_tokens"] == 4 and gen["capped"]
    assert gen["verdict"] == "capped: stopped at the 4-token limit before a complete array"
    assert not any(t["stop"] for t in gen["tokens"]) and not gen["valid"]
    assert trace.verify(doc) == []
    s = doc["summary"]["free"]
    assert s["capped_runs"] == 1 and s["invalid_runs"] == 1
    assert s["all_answers_median_s"] is None  # the 3rd value never started
    assert any("stopped at the 4-token limit" in n for n in doc["notes"])
    # --max-new-tokens is the free lane's limit only: the constrained lane's comes from its grammar
    con = trace.measured(doc, "constrained")[0]
    assert doc["protocol"]["constrained_max_new_tokens"] == len('["yes", "yes", "yes"]') + 1
    assert con["complete"] and not con["capped"]
    assert "capped" in doc["summary"]["token_account"]["line"]


def test_rambling_past_the_last_criterion_is_a_failure_but_its_answers_are_timed(small):
    doc = _run(small, '["yes","no","no","no","no"]', repeats=1, warmup=0)
    gen = trace.measured(doc, "free")[0]
    assert gen["valid"] and not gen["complete"] and gen["error"] == "5 values for 3 criteria"
    third = next(t for t in gen["tokens"] if t["answer_index"] == 2)
    assert doc["summary"]["free"]["all_answers_median_s"] == third["t"] < gen["total_s"]
    # the grammar closes the array after the third value: the model wanted '","' there and was overruled
    con = trace.measured(doc, "constrained")[0]
    assert con["parsed"] == ["yes", "no", "no"] and con["masked_tokens"] >= 1
    closing = next(t for t in con["tokens"] if t["masked"])
    assert closing["text"] == '"]' and closing["free_argmax"]["text"] == '","'


def test_trace_records_what_differs_and_the_prompts(small):
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0)
    assert doc["prompts"]["generated"]["version"] == ARRAY_PROMPT_VERSION
    assert doc["prompts"]["typed"]["version"] == "semif-direct-v1"
    assert len(doc["differences"]) >= 3 and doc["notes"]
    ty = doc["prompts"]["typed"]
    assert all(i == ty["prefix_tokens"] + s for i, s in zip(ty["input_tokens"], ty["suffix_tokens"], strict=True))
    assert doc["inputs"]["sha256"] == trace.inputs_digest(doc["inputs"])
    assert doc["machine"]["cores"] >= 1 and doc["versions"]["semif"]


def test_exact_policy_rescores_low_margin_decisions_fresh(small):
    # The fake has no drift, so the bound is safety x 2 x float32 epsilon: a huge safety escalates all.
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0, exact_safety=1e7)
    assert trace.verify(doc) == []
    typed = trace.measured(doc, "typed")[0]
    assert typed["escalated"] == 3 and all(d["escalated"] for d in typed["decisions"])
    suffix_done = typed["events"][2]["t"]
    assert all(d["t_available"] >= suffix_done for d in typed["decisions"])
    assert typed["tokens"]["escalated"] == sum(doc["prompts"]["typed"]["input_tokens"])
    be = FakeBackend(FakeTokenizer(merges=MERGES))
    items = prepare(be, decisions_for(small), with_prefix=False)
    fresh = list(score_items(be, items, "direct", {"config_sha256": "t"}))
    assert [d["probabilities"] for d in typed["decisions"]] == [r["probabilities"] for r in fresh]
    # the default safety escalates nothing on a drift-free kernel, and --no-exact records the policy off
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0)
    assert doc["protocol"]["exact"]["source"] == "probe" and trace.measured(doc, "typed")[0]["escalated"] == 0
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0, exact=False)
    assert doc["protocol"]["exact"] == {"enabled": False}


def test_protocol_arguments_are_checked(small):
    with pytest.raises(ValidationError, match="repeats"):
        _run(small, "[]", repeats=0)


def test_context_overflow_is_refused(small):
    be = FakeBackend(FakeTokenizer(merges=MERGES), n_ctx=200)
    with pytest.raises(ValidationError, match="context"):
        run_versus(be, small, VersusConfig(repeats=1, warmup=0))


# --- command line (refusals happen before any model loads) -------------------------------------------
def test_cli_refuses_existing_output_and_bad_input(tmp_path: Path, capsys):
    from scorer.cli import main

    existing = tmp_path / "t.json"
    existing.write_text("{}")
    assert main(["versus", "--output", str(existing), "--model", "smollm2-135m"]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    bad = _write(tmp_path, {"id": "x", "state": "s", "criteria": [{"id": "a"}]}, "bad.json")
    assert main(["versus", "--input", str(bad), "--output", str(tmp_path / "new.json")]) == 2
    assert "criteria[0].question" in capsys.readouterr().err


def test_cli_prints_progress_per_lane_and_repeat(tmp_path: Path, monkeypatch, capsys):
    """A line as each lane's run starts and one as it ends, numbered among all the runs, warm-ups first; then the
    direct-mode check; the trace's summary alone on stdout."""
    from scorer import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "load_backend", lambda cfg: SlowFakeBackend(
        FakeTokenizer(merges=MERGES), script='["yes","no","no"]'))
    out = tmp_path / "t.json"
    argv = ["versus", "--input", str(_write(tmp_path, SMALL)), "--output", str(out), "--model", "smollm2-135m",
            "--repeats", "2", "--warmup", "1"]
    assert cli.main(argv) == 0 and out.is_file()
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("[semif] versus ")]
    assert lines[0] == ("[semif] versus mini: 3 criteria; 1 warm-up and 2 measured run(s) of each lane (typed, free, "
                        "constrained): 9 runs, after the untimed set-up (prompts, grammar, exact policy)")
    steps = [re.fullmatch(r"\[semif\] versus run (\d)/9 \(\d+ s\) (\w+) +(warm-up 1/1|repeat [12]/2): (.*)", ln)
             for ln in lines[1:-1]]
    assert all(steps), lines
    got = [(int(m[1]), m[2], m[3], "done" if m[4].startswith("done in ") else m[4]) for m in steps if m]
    doing = {"typed": "scoring every criterion…", "free": "generating the array…",
             "constrained": "generating the array under the grammar…"}
    want = []
    for k, kind in enumerate(["warm-up 1/1", "repeat 1/2", "repeat 2/2"]):
        for j, path in enumerate(("typed", "free", "constrained")):
            want += [(3 * k + j + 1, path, kind, doing[path]), (3 * k + j + 1, path, kind, "done")]
    assert got == want
    gen_done = [m[4] for m in steps if m and m[2] != "typed" and m[4].startswith("done in ")]
    assert all(re.fullmatch(r"done in [\d.]+ s, first token at [\d.]+ s, \d+ tokens, (valid|invalid|capped).*", x)
               for x in gen_done), gen_done
    assert lines[-1] == "[semif] versus all runs done; checking the typed choices against direct mode (untimed)…"
    assert "[semif] versus" not in captured.out


def test_a_mismatched_default_drift_report_falls_back_to_a_probe(small, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    auto = tmp_path / "data" / "results" / "drift-fake-fake-shared.json"
    auto.parent.mkdir(parents=True)
    auto.write_text('{"schema": "not a drift report"}')
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0)
    ex = doc["protocol"]["exact"]
    assert ex["source"] == "probe" and "not used" in ex["report_skipped"]
    with pytest.raises(InputError):  # a report the user names must match
        _run(small, '["yes","no","no"]', repeats=1, warmup=0, drift_report=auto)


# --- the constrained lane's grammar and engine -----------------------------------------------------
def test_array_grammar_text_bound_and_words():
    g = ArrayGrammar((("yes", "no"), ("yes", "no"), ("a", "bb")))
    assert g.gbnf() == ('root ::= "[" v0 sep v0 sep v1 "]"\nsep ::= "," " "?\n'
                        'v0 ::= "\\"yes\\"" | "\\"no\\""\nv1 ::= "\\"a\\"" | "\\"bb\\""\n')
    assert g.longest_chars() == len('["yes", "yes", "bb"]') and g.max_new_tokens() == g.longest_chars() + 1
    assert "exactly one JSON array of 3 strings" in g.rule()
    with pytest.raises(ValueError):
        ArrayGrammar(())


def test_llguidance_constraint_allows_only_the_grammar_then_a_stop():
    be = FakeBackend(FakeTokenizer(merges=MERGES))
    tok = be.tokenizer
    con = be.grammar(ArrayGrammar((("yes", "no"),)).gbnf()).start()
    logits = np.zeros(len(fake_vocab(tok)) + 7, dtype=np.float32)  # padding rows past the vocabulary
    logits[-1] = 50.0  # a padding row is never allowed
    logits[tok.encode("x")[0]] = 40.0
    logits[tok.encode('["')[0]] = 10.0
    tid, masked = con.pick(logits)
    assert tok.decode([tid]) == '["' and masked
    con.advance(tid)
    logits[tok.encode("no")[0]] = 60.0
    tid, masked = con.pick(logits)
    assert tok.decode([tid]) == "no" and not masked
    con.advance(tid)
    with pytest.raises(ValidationError, match="refused"):
        con.advance(tok.encode("x")[0])


# --- labels and calibration ----------------------------------------------------------------------------
class _Halve:
    """A calibration test double: moves half of each decision's probability to option 2."""

    def check(self, decisions, model):
        assert [d.id for d in decisions] == ["a", "b", "c"] and model["key"] == "fake"

    def provenance(self):
        return {"method": "test", "file": None, "file_sha256": None, "rows_used": 5, "detail": {}}

    def apply(self, record):
        if record["id"] == "c":
            return None  # not covered
        p = record["probabilities"]
        return [p[0] / 2, p[1] + p[0] / 2]


def test_labels_and_calibration_are_recorded_and_verified(small):
    doc = run_versus(SlowFakeBackend(FakeTokenizer(merges=MERGES), script='["yes","yes","no"]'), small,
                     VersusConfig(repeats=1, warmup=0), calibration=_Halve())
    assert trace.verify(doc) == []
    assert doc["calibration"]["calibrated_decisions"] == 2 and doc["calibration"]["method"] == "test"
    decs = trace.measured(doc, "typed")[0]["decisions"]
    assert [d["label"] for d in decs] == ["yes", "yes", None]
    for d in decs[:2]:
        cal = d["calibrated"]
        assert cal["probabilities"] == pytest.approx([d["probabilities"][0] / 2, 1 - d["probabilities"][0] / 2])
        assert cal["choice"] == ("yes" if cal["probabilities"][0] > 0.5 else "no")
        assert d["correct"] == (d["choice"] == "yes") and cal["correct"] == (cal["choice"] == "yes")
    assert decs[2]["calibrated"] is None and decs[2]["correct"] is None
    lab = doc["summary"]["labels"]
    assert lab["labelled"] == 2 and lab["typed_calibrated_correct"] == sum(d["calibrated"]["correct"] for d in decs[:2])
    free = trace.measured(doc, "free")[0]
    assert free["correct"] == [True, True, None] and lab["free_correct"] == 2
    # a calibrated choice edited by hand (checksums redone) is caught
    bad = json.loads(json.dumps(doc))
    c0 = trace.measured(bad, "typed")[0]["decisions"][0]["calibrated"]
    c0["choice"] = "no" if c0["choice"] == "yes" else "yes"
    bad["checksums"] = trace.checksums(bad)
    assert any("calibrated.choice" in p for p in trace.verify(bad))


def test_a_calibration_that_returns_garbage_is_refused(small):
    class Bad(_Halve):
        def apply(self, record):
            return [0.9, 0.9]

    with pytest.raises(ValidationError, match="calibration returned"):
        run_versus(FakeBackend(FakeTokenizer(merges=MERGES)), small, VersusConfig(repeats=1, warmup=0),
                   calibration=Bad())


def test_cli_calibration_file_errors(tmp_path: Path, capsys):
    from scorer.cli import main

    out = str(tmp_path / "t.json")
    assert main(["versus", "--calibration", str(tmp_path / "absent.json"), "--output", out]) == 2
    assert "absent.json: file not found" in capsys.readouterr().err
    bad = _write(tmp_path, {"method": "prior"}, "prior.json")
    assert main(["versus", "--calibration", str(bad), "--output", out]) == 2
    err = capsys.readouterr().err
    assert "prior.json" in err and "Traceback" not in err


def _prior_file(tmp_path: Path, inp, states: int = 8) -> Path:
    """A real ``semif calibrate prior`` file for the fake model: the criteria of ``inp`` scored on other states."""
    from scorer.calibration import fit_prior
    from scorer.calibration.core import write_calibration
    from scorer.formats.rows import Decision

    be = FakeBackend(FakeTokenizer(merges=MERGES))
    rows = [Decision(f"s{k}-{c.id}", f"Order {k}: state number {k}.", c.question, d.options, {}, "")
            for k in range(states) for c, d in zip(inp.criteria, decisions_for(inp), strict=True)]
    recs = list(score_items(be, prepare(be, rows, with_prefix=False), "direct", {"config_sha256": "t"}))
    cal = fit_prior(recs, [r["signature"] for r in recs], min_rows=states)
    out = tmp_path / "prior.json"
    write_calibration(cal, out)
    return out


def test_versus_applies_a_real_prior_file(small, tmp_path: Path):
    from scorer.calibration import load_calibration
    from scorer.studies.versus import load_calibrator

    prior = _prior_file(tmp_path, small)
    doc = run_versus(SlowFakeBackend(FakeTokenizer(merges=MERGES), script='["yes","yes","no"]'), small,
                     VersusConfig(repeats=1, warmup=0), calibration=load_calibrator(str(prior)))
    assert trace.verify(doc) == []
    cal = doc["calibration"]
    assert cal["method"] == "prior" and cal["rows_used"] == 3 * 8 and cal["calibrated_decisions"] == 3
    assert cal["file_sha256"] == hashlib.sha256(prior.read_bytes()).hexdigest()
    # the numbers are semif score's: the same file applied to the same record gives the same probabilities
    loaded = load_calibration(prior)
    be = FakeBackend(FakeTokenizer(merges=MERGES))
    recs = list(score_items(be, prepare(be, decisions_for(small), with_prefix=False), "direct",
                            {"config_sha256": "t"}))
    for d, rec in zip(trace.measured(doc, "typed")[0]["decisions"], recs, strict=True):
        want = loaded.apply(rec)["calibrated"]["probabilities"]
        assert d["calibrated"]["probabilities"] == pytest.approx(want, abs=1e-9)
        assert d["probabilities"] == pytest.approx(rec["probabilities"], abs=1e-9)  # raw untouched


def test_a_prior_file_for_other_questions_is_refused_before_any_run(small, tmp_path: Path):
    from scorer.studies.versus import VersusInput, load_calibrator

    other = VersusInput("other", small.state, tuple(c for c in small.criteria[:2]))
    prior = _prior_file(tmp_path, other)
    be = SlowFakeBackend(FakeTokenizer(merges=MERGES), script='["yes","yes","no"]')
    with pytest.raises(InputError, match="no calibration for signature"):
        run_versus(be, small, VersusConfig(repeats=1, warmup=0), calibration=load_calibrator(str(prior)))
    assert be.calls["prefill"] == be.calls["fan_out"] == be.calls["fresh"] == 0  # refused before any scoring
