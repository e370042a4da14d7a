"""``semif versus`` on the fake backend: inputs, timelines, strict judging of the generated array, agreement."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fakes import FakeBackend, FakeTokenizer

from scorer import trace
from scorer.errors import InputError, ValidationError
from scorer.runs.score import prepare, score_items
from scorer.runs.versus import (
    ARRAY_PROMPT_VERSION,
    DEFAULT_INPUT,
    VersusConfig,
    answer_candidates,
    array_messages,
    decisions_for,
    default_max_new_tokens,
    load_input,
    run_versus,
    string_value_starts,
    token_texts,
    trace_name,
)

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from build_trace_fake import MERGES, SlowFakeBackend

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
    assert trace_name("a b", "/m/x/model.gguf", "llamacpp", "cpu") == "versus-a-b-model.gguf-llamacpp-cpu.json"


# --- the experiment on the fake backend --------------------------------------------------------------
def test_timeline_is_monotonic_and_ttft_within_total(small):
    script = json.dumps([c or "no" for c in _direct_choices(small)])
    doc = _run(small, script)
    assert trace.verify(doc) == []
    assert [(r["path"], r["warmup"], r["repeat"]) for r in doc["runs"]] == [
        ("typed", True, 0), ("generated", True, 0), ("typed", False, 0), ("generated", False, 0),
        ("typed", False, 1), ("generated", False, 1)]
    prev_end = 0.0
    for run in doc["runs"]:
        ts = [e["t"] for e in run["events"]]
        assert ts == sorted(ts) and ts[0] > 0
        assert run["start_s"] >= prev_end
        prev_end = run["start_s"] + run["total_s"]
        if run["path"] == "generated":
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
    gen = trace.measured(doc, "generated")[0]
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
    assert s["agreement"]["disagree"] >= 1 and s["generated_valid_runs"] == 2
    assert s["output_tokens_avoided"] == gen["output_tokens"]
    assert s["wall_ratio"] == pytest.approx(s["generated_median_s"] / s["typed_median_s"], rel=1e-4)


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
    gen = trace.measured(doc, "generated")[0]
    assert not gen["complete"] and error in gen["error"]
    assert gen["agreement"] == [None, None, None]
    assert doc["summary"]["generated_valid_runs"] == 0
    assert doc["summary"]["agreement"]["missing"] == 3
    if gen["valid"]:
        assert gen["parsed"] == ["yes", "no"]  # recorded as it is, not padded
    else:
        assert gen["parsed"] is None


def test_token_limit_stops_generation(small):
    doc = _run(small, '["yes","no","no"]', repeats=1, warmup=0, max_new_tokens=4)
    gen = trace.measured(doc, "generated")[0]
    assert gen["stop_reason"] == "max_new_tokens" and gen["output_tokens"] == 4
    assert not any(t["stop"] for t in gen["tokens"]) and not gen["valid"]
    assert trace.verify(doc) == []
    assert doc["summary"]["generated_limit_runs"] == 1
    assert doc["summary"]["generated_all_answers_median_s"] is None  # the 3rd value never started
    assert any("max_new_tokens = 4" in n for n in doc["notes"])


def test_rambling_past_the_last_criterion_is_a_failure_but_its_answers_are_timed(small):
    doc = _run(small, '["yes","no","no","no","no"]', repeats=1, warmup=0)
    gen = trace.measured(doc, "generated")[0]
    assert gen["valid"] and not gen["complete"] and gen["error"] == "5 values for 3 criteria"
    third = next(t for t in gen["tokens"] if t["answer_index"] == 2)
    assert doc["summary"]["generated_all_answers_median_s"] == third["t"] < gen["total_s"]


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


# --- a real short run --------------------------------------------------------------------------------
@pytest.mark.slow
def test_real_short_run_smollm2(smol_torch, tmp_path: Path):
    inp = load_input(_write(tmp_path, SMALL))
    doc = run_versus(smol_torch, inp, VersusConfig(repeats=1, warmup=0, max_new_tokens=12, top_k=3))
    assert trace.verify(doc) == []
    assert doc["model"]["key"] == "smollm2-135m" and doc["model"]["backend"] == "torch"
    assert doc["checks"]["typed_vs_direct"]["choices_equal"]
    gen = trace.measured(doc, "generated")[0]
    assert 1 <= gen["output_tokens"] <= 12 and 0 < gen["ttft_s"] <= gen["total_s"]
    typed = trace.measured(doc, "typed")[0]
    assert len(typed["decisions"]) == 3 and all(len(d["top_k"]) == 3 for d in typed["decisions"])
    out = tmp_path / "t.json"
    trace.write(out, doc)
    assert trace.verify(trace.load(out)) == []


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
