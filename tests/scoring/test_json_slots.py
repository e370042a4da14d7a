"""``--slots json``: the answer asked for as a JSON object, each option scored as its quoted id after the prefilled
``{"answer":``.

Unit tests on the fake backend (a character tokenizer): the prompt's shape (two user turns in each layout, the cue, the
prefill, demonstrations answered in JSON), that every mode equals a fresh full-sequence log-likelihood of the quoted
ids, the per-token default and ``--sequence-norm sum``, ids that ``sequence`` must refuse (``d1``/``d10``) read as
disjoint answers, the records, signatures and run hashes of their own, and the command line. The real-model checks
(SmolLM2-135M, torch and llama.cpp, against the same independent path) are ``tests/scoring/test_sequence.py``'s,
parametrized over ``sequence`` and ``json``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import httpx
import numpy as np
import orjson
import pytest
from fakes import (
    MULTI_TOKEN_OPTIONS,
    MULTI_TOKEN_STATES,
    FakeBackend,
    FakeTokenizer,
    fresh_loglik,
    multi_token_demos,
    multi_token_rows,
    row_of,
)

from scorer import Scorer, cli
from scorer.core.checks import check_sequence_norm
from scorer.core.errors import InputError
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import Decision, Option
from scorer.formats.signature import readout_of, signature_readout
from scorer.prompting import layouts
from scorer.prompting.demos import Demos, prompt_for
from scorer.prompting.prompt import JSON_PREFILL, JSON_PROMPT_VERSION, JSON_SYSTEM, render, sha256_text
from scorer.scoring.modes import prepare, score_items

OPTIONS, STATES = MULTI_TOKEN_OPTIONS, MULTI_TOKEN_STATES
_decisions = multi_token_rows
_demos = multi_token_demos


def _records(decisions: list[Decision], mode: str = "direct", norm: str | None = None, layout: str = "state-major",
             demos: Demos | None = None, backend: FakeBackend | None = None) -> list[dict[str, Any]]:
    b = backend or FakeBackend()
    items = prepare(b, decisions, with_prefix=mode != "direct", layout=layout, demos=demos, slots="json")
    return list(score_items(b, items, mode, {"config_sha256": "test"},
                            sequence_norm=check_sequence_norm(norm, "json")))


def test_the_state_then_the_question_and_a_json_cue_then_the_prefilled_answer():
    d = _decisions(1)[0]
    p = render(FakeTokenizer(), d, "json")
    want_msgs = [{"role": "system", "content": JSON_SYSTEM},
                 {"role": "user", "content": f"State:\n{d.state}"},
                 {"role": "user", "content": "Question: Question 0?\nOptions:\n- refund: the customer asks for money "
                                             "back\n- other: anything else\n- spam: not a customer\n\n"
                                             'Answer with JSON: {"answer": "<exactly one option id>"}'}]
    assert p.text == FakeTokenizer().render_chat(want_msgs) + JSON_PREFILL
    assert p.version == JSON_PROMPT_VERSION and p.slots == "json" and p.slot_texts == ("refund", "other", "spam")
    assert [FakeTokenizer().decode(list(c)) for c in p.continuations] == [' "refund"', ' "other"', ' "spam"']
    # the shared head is the system turn and the state's turn: every question about the state reuses it
    assert p.prefix_text.endswith(f"State:\n{d.state}")


def test_a_yes_no_question_keeps_its_dotted_options_and_a_cue_that_names_them():
    d = replace(_decisions(1)[0], options=(Option("yes", "the customer asks for money back"), Option("no", "not so")))
    p = render(FakeTokenizer(), d, "json")
    assert ("Options:\nyes. the customer asks for money back\nno. not so\n\n"
            'Answer with JSON: {"answer": "<one of yes, no>"}') in p.text
    assert p.version == JSON_PROMPT_VERSION and "- yes:" not in p.text
    assert [FakeTokenizer().decode(list(c)) for c in p.continuations] == [' "yes"', ' "no"']


def test_question_major_puts_the_question_first_and_both_layouts_show_demonstrations_as_json_turns():
    d = _decisions(1)[0]
    demos = _demos(1)
    p = prompt_for(FakeTokenizer(), d, "question-major", demos, "json")
    assert p.version == layouts.QUESTION_MAJOR_JSON_VERSION and p.prefix_text.endswith("- spam: not a customer")
    assert p.text.index("Question: Question 0?") < p.text.index(f"State:\n{d.state}")
    shown = demos.by_id[p.demo_ids[0]].shown
    answer = json.dumps({"answer": shown.decision.option_ids[shown.label_index]})
    assert f"<|im_start|>assistant\n{answer}<|im_end|>" in p.text  # the demonstration's answer, in the answer's shape
    assert p.text.index(answer) < p.text.index(f"State:\n{d.state}")  # before the row's own turns
    s = prompt_for(FakeTokenizer(), d, "state-major", demos, "json")
    assert s.version == JSON_PROMPT_VERSION and s.text.index(answer) < s.text.index(f"State:\n{d.state}")


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
@pytest.mark.parametrize(("layout", "k"), [("state-major", 0), ("question-major", 0), ("state-major", 2),
                                           ("question-major", 2)])
def test_every_mode_and_layout_equal_a_fresh_full_sequence_log_likelihood_per_token(mode, layout, k):
    decisions = _decisions()
    b = FakeBackend()
    demos = _demos(k) if k else None
    recs = _records(decisions, mode, layout=layout, demos=demos, backend=b)
    validate_records(recs)
    for d, r in zip(decisions, recs, strict=True):
        p = prompt_for(b.tokenizer, d, layout, demos, "json")
        assert r["prompt_sha256"] == sha256_text(p.text) and r["slots"]["readout"] == "json"
        assert r["slots"]["texts"] == ["refund", "other", "spam"] and r["slots"]["normalisation"] == "mean"
        want = [fresh_loglik(b, p.ids, list(c), last=cls) for c, cls in zip(p.continuations, p.closers, strict=True)]
        assert np.allclose(np.concatenate(r["slots"]["token_logprobs"]), np.concatenate(want), atol=1e-9, rtol=0)
        means = np.array([sum(w) / len(w) for w in want])
        assert np.allclose(r["option_logits"], means, atol=1e-9, rtol=0)
        assert np.allclose(r["probabilities"], np.exp(means - means.max()) / np.exp(means - means.max()).sum())
        assert r["choice"] == d.option_ids[int(np.argmax(means))]


def test_sum_is_asked_for_by_name_and_names_its_own_signature():
    d = _decisions(1)
    mean, total = _records(d)[0], _records(d, norm="sum")[0]
    assert total["slots"]["normalisation"] == "sum"
    assert np.allclose(total["option_logits"], [sum(x) for x in total["slots"]["token_logprobs"]], atol=1e-9)
    assert readout_of(mean) == "json-close-mean" and readout_of(total) == "json-close-sum"
    assert mean["signature"] != total["signature"]
    assert signature_readout(1, "json") == "json-close-mean" != signature_readout(1, "sequence", "mean")
    older = {**mean, "slots": {k: v for k, v in mean["slots"].items() if k != "closing"}}
    assert readout_of(older) == "json-mean"  # a record from before the closing class keeps its own readout


MERGED = ['"}', '",', '"x']  # a BPE vocabulary's tokens that begin with the closing quote (qwen2.5 has 424)


def test_the_closing_quote_is_read_as_every_token_that_begins_with_it():
    tok = FakeTokenizer(merges=MERGED)
    b = FakeBackend(tokenizer=tok)
    d = _decisions(2)
    recs = _records(d, backend=b)
    validate_records(recs)
    quote = tok.encode('"')[0]
    cls = tuple(sorted([quote, *(tok.encode(m)[0] for m in MERGED)]))
    for dec, r in zip(d, recs, strict=True):
        p = prompt_for(tok, dec, "state-major", None, "json")
        assert p.closers == (cls,) * 3 and all(c[-1] == quote for c in p.continuations)
        assert [c["begins"] for c in r["slots"]["closing"]] == ['"'] * 3
        assert [c["tokens"] for c in r["slots"]["closing"]] == [4] * 3
        z = b.score_fresh(p.ids + list(p.continuations[0][:-1])).astype(np.float64)
        lp = z - (z.max() + np.log(np.exp(z - z.max()).sum()))
        want = float(np.log(np.exp(lp[list(cls)]).sum()))
        assert r["slots"]["token_logprobs"][0][-1] == pytest.approx(want, abs=1e-9) and want > lp[quote]
        mass = sum(np.exp(sum(lps)) for lps in r["slots"]["token_logprobs"])
        assert r["allowed_token_mass"] == pytest.approx(mass, rel=1e-9)


def test_an_id_that_another_continues_with_a_closing_token_is_refused():
    tok = FakeTokenizer(merges=MERGED)
    d = _decisions(1, (Option("a", "first"), Option('a"x', "second")))  # ' "a"x"' continues ' "a' with '"x'
    with pytest.raises(InputError, match=r"options\[1\]\.id"):
        render(tok, d[0], "json")


def test_a_record_with_closing_classes_under_another_readout_or_of_another_length_is_refused():
    rec = _records(_decisions(1))[0]
    validate_records([rec])
    for slots in ({**rec["slots"], "closing": rec["slots"]["closing"][:2]},
                  {**rec["slots"], "closing": [{**rec["slots"]["closing"][0], "tokens": 0}] * 3}):
        with pytest.raises(InputError, match=r"slots\.closing"):
            validate_records([{**rec, "slots": slots}])


def test_ids_that_begin_one_another_are_disjoint_once_quoted():
    opts = (Option("d1", "the first"), Option("d10", "the tenth"))
    d = _decisions(1, opts)
    with pytest.raises(InputError, match="begin"):  # as bare continuations, d1's tokens begin d10's
        render(FakeTokenizer(), d[0], "sequence")
    rec = _records(d)[0]
    validate_records([rec])
    assert [FakeTokenizer().decode(c) for c in rec["slots"]["token_ids"]] == [' "d1"', ' "d10"']


def test_json_records_differ_from_sequence_records_in_version_readout_and_run():
    opts = [{"id": o.id, "description": o.description} for o in OPTIONS]
    s = Scorer(backend=FakeBackend(), slots="sequence", sequence_norm="mean").decide(STATES[0], "Question 0?", opts)
    j = Scorer(backend=FakeBackend(), slots="json").decide(STATES[0], "Question 0?", opts)
    assert j.record["prompt_version"] == JSON_PROMPT_VERSION != s.record["prompt_version"]
    assert j.record["signature"] != s.record["signature"]
    assert j.record["run"]["config_sha256"] != s.record["run"]["config_sha256"]


def test_the_command_line_scores_json_and_refuses_what_it_does_not_combine_with(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    inp = tmp_path / "rows.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(row_of(d)) + b"\n" for d in _decisions(3)))
    out = tmp_path / "out.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--slots", "json", "--mode", "shared"]) == 0
    recs = read_records(out)
    assert [r["slots"]["readout"] for r in recs] == ["json"] * 3 and recs[0]["slots"]["normalisation"] == "mean"
    capsys.readouterr()
    bad = tmp_path / "bad.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(bad), "--slots", "json", "--permute", "2"]) == 2
    err = capsys.readouterr().err
    assert "permute: does not combine with slots json" in err and "Traceback" not in err and not bad.exists()


def test_a_system_one_server_reading_json_answers_as_scorer_ask_does():
    from serve_helpers import live

    from scorer.serving.service import build_app

    questions = {"team": {"type": "choice", "instructions": "Which team should handle this ticket?",
                          "criteria": {"billing": "payments, refunds", "tech": None, "d1": "a", "d10": "b"}},
                 "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}
    # json lists the options under their ids: the model reads each name already, so the descriptions come as they are
    ask = {"team": {"type": "choice", "question": "Which team should handle this ticket?", "options": [
        {"id": "billing", "description": "payments, refunds"}, {"id": "tech", "description": "tech"},
        {"id": "d1", "description": "a"}, {"id": "d10", "description": "b"}]},
        "refund": {"type": "yesno", "question": "Does the customer ask for a refund?"}}
    with Scorer(backend=FakeBackend(), slots="json", mode="shared") as s, live(build_app(s)) as url:
        body = {"model": "jev-latest", "state": STATES[0], "questions": questions}
        got = httpx.post(f"{url}/v1/systemone", json=body, timeout=60)
        want = s.ask(STATES[0], ask)
    assert got.status_code == 200, got.text
    answers = got.json()["answers"]
    assert answers["team"]["probabilities"] == pytest.approx(dict(want["team"].probabilities), abs=1e-12)
    assert answers["refund"]["noul"] == pytest.approx(want["refund"].probabilities["yes"], abs=1e-12)
    assert want["team"].record["slots"]["readout"] == "json"


@pytest.mark.parametrize("slots", ["json", "sequence"])
def test_past_sixteen_options_a_readout_by_id_numbers_them_in_its_record(slots):
    opts = [{"id": f"{chr(97 + i)}x", "description": f"item {i}"} for i in range(20)]
    rec = Scorer(backend=FakeBackend(), mode="shared", slots=slots).decide(STATES[0], "Which?", opts).record
    assert rec["letters"] == [f"{i:02d}" for i in range(1, 21)] and len(rec["probabilities"]) == 20
    validate_records([rec])  # one entry per option: a record the check reads back
    with pytest.raises(InputError, match="field 'letters'"):
        validate_records([{**rec, "letters": list("ABCDEFGHIJKLMNOP")}])
