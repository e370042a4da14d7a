"""``--slots sequence``: each option id scored as a continuation of the ids prompt, from a fork of its state.

Unit tests on the fake backend (a character tokenizer, so every id of more than one character is a multi-token
continuation): every mode equals a fresh full-sequence log-likelihood computed independently (one fresh pass per
prefix of each option, through ``score_fresh`` only), both normalisations, the refusals (ids that are not disjoint
continuations, the openai backend, the options it does not combine with, each naming its field, exit 2), the record
check of the ``slots`` block, run hashes and signatures, the radix cache, calibration, and the faces (API, command
line, service, ``semif prompt``). The real-model tests (SmolLM2-135M, torch and llama.cpp) are at the end.
"""

from __future__ import annotations

import math
from typing import Any

import httpx
import numpy as np
import orjson
import pytest
from fake_engine import FakeEngine, engine_backend
from fakes import (
    MULTI_TOKEN_OPTIONS,
    MULTI_TOKEN_STATES,
    FakeBackend,
    FakeTokenizer,
    fake_prompt_json,
    fresh_loglik,
    multi_token_demos,
    multi_token_rows,
    row_of,
)

from scorer import Scorer, cli
from scorer.backends.base import Backend
from scorer.core.checks import OptionError
from scorer.core.errors import InputError
from scorer.formats.records import check_record, read_records, validate_records
from scorer.formats.rows import Decision, Option
from scorer.formats.signature import readout_of
from scorer.prompting.demos import Demos, demo_of, prompt_for
from scorer.prompting.prompt import IDS_PROMPT_VERSION, messages_for, render, sha256_text
from scorer.scoring.file_run import run_score
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import ScoreConfig, checked_config_parts

OPTIONS, STATES = MULTI_TOKEN_OPTIONS, MULTI_TOKEN_STATES
_decisions = multi_token_rows
_demos = multi_token_demos


def _records(decisions: list[Decision], mode: str = "direct", norm: str | None = None,
             backend: Backend | None = None, layout: str = "state-major",
             demos: Demos | None = None, slots: str = "sequence") -> list[dict[str, Any]]:
    b = backend or FakeBackend()
    items = prepare(b, decisions, with_prefix=mode != "direct", layout=layout, demos=demos, slots=slots)
    return list(score_items(b, items, mode, {"config_sha256": "test"}, sequence_norm=norm))


def _ids_text(d: Decision) -> str:
    """The ``--slots ids`` prompt of ``d`` (rendered without its one-token checks, which these ids fail)."""
    return FakeTokenizer().render_chat(messages_for(d, "ids")[0])


# --- the readout equals the full-sequence log-likelihood --------------------------------------------------------------
@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_every_mode_equals_a_fresh_full_sequence_log_likelihood(mode):
    decisions = _decisions()
    b = FakeBackend()
    recs = _records(decisions, mode, backend=b)
    validate_records(recs)
    for d, r in zip(decisions, recs, strict=True):
        p = render(b.tokenizer, d, "sequence")
        assert r["prompt_version"] == IDS_PROMPT_VERSION and r["prompt_sha256"] == sha256_text(_ids_text(d))
        conts = [list(c) for c in p.continuations]
        assert r["slots"]["token_ids"] == conts and r["slots"]["token_counts"] == [6, 5, 4]
        assert [b.tokenizer.decode(c) for c in conts] == ["refund", "other", "spam"]
        want = [fresh_loglik(b, p.ids, c) for c in conts]
        assert np.allclose(np.concatenate(r["slots"]["token_logprobs"]), np.concatenate(want), atol=1e-9, rtol=0)
        sums = np.array([sum(w) for w in want])
        assert np.allclose(r["option_logits"], sums, atol=1e-9, rtol=0)  # sum: the default
        assert np.allclose(r["probabilities"], np.exp(sums - sums.max()) / np.exp(sums - sums.max()).sum())
        assert math.isclose(r["allowed_token_mass"], float(np.exp(sums).sum()), rel_tol=1e-9)
        assert r["choice"] == d.option_ids[int(np.argmax(sums))]
        head = b.score_fresh(p.ids)  # the answer position's argmax, and whether it starts an option
        assert r["full_vocab_argmax"]["token_id"] == int(np.argmax(head))
        assert r["full_vocab_argmax"]["is_slot"] == (int(np.argmax(head)) in [c[0] for c in conts])
        assert r["slots"]["normalisation"] == "sum" and r["kernel"] == b.kernel and r["mode"] == mode


@pytest.mark.parametrize("mode", ["direct", "shared"])
@pytest.mark.parametrize(("layout", "k"), [("question-major", 0), ("question-major", 2), ("state-major", 2)])
def test_every_layout_and_demonstrations_equal_a_fresh_full_sequence_log_likelihood(mode, layout, k):
    decisions = _decisions()
    b = FakeBackend()
    demos = _demos(k) if k else None
    recs = _records(decisions, mode, backend=b, layout=layout, demos=demos)
    validate_records(recs)
    for d, r in zip(decisions, recs, strict=True):
        p = prompt_for(b.tokenizer, d, layout, demos, "sequence")
        assert r["layout"] == layout and r["prompt_sha256"] == sha256_text(p.text) and len(p.demo_ids) == k
        want = [fresh_loglik(b, p.ids, list(c)) for c in p.continuations]
        assert np.allclose(np.concatenate(r["slots"]["token_logprobs"]), np.concatenate(want), atol=1e-9, rtol=0)
        assert np.allclose(r["option_logits"], [sum(w) for w in want], atol=1e-9, rtol=0)


def test_mean_normalisation_scores_per_token_and_keeps_the_mass():
    decisions = _decisions(3)
    total, mean = _records(decisions), _records(decisions, norm="mean")
    validate_records(mean)
    for s, m in zip(total, mean, strict=True):
        lps = m["slots"]["token_logprobs"]
        assert m["slots"]["normalisation"] == "mean"
        assert np.allclose(m["option_logits"], [sum(lp) / len(lp) for lp in lps])
        assert np.allclose(s["option_logits"], [sum(lp) for lp in lps])
        assert m["allowed_token_mass"] == pytest.approx(s["allowed_token_mass"])  # the mass is always the sums'
        assert "sequence-mean" in readout_of(m) and "mean" in m["score_kind"]
    assert any(not np.allclose(s["probabilities"], m["probabilities"]) for s, m in zip(total, mean, strict=True))


def test_a_one_token_id_reads_what_the_ids_readout_reads():
    """A one-character id is one token in the fake: its sequence score is the ids readout's slot log-probability."""
    yn = (Option("y", "yes"), Option("n", "no"))
    d = _decisions(1, yn)
    seq = _records(d)[0]
    ids = next(score_items(FakeBackend(), prepare(FakeBackend(), d, slots="ids"), "direct", {"config_sha256": "t"}))
    assert seq["slots"]["token_counts"] == [1, 1]
    assert seq["slots"]["token_ids"] == [[t] for t in ids["slots"]["token_ids"]]
    assert np.allclose(seq["probabilities"], ids["probabilities"])
    assert seq["allowed_token_mass"] == pytest.approx(ids["allowed_token_mass"])
    assert seq["full_vocab_argmax"] == ids["full_vocab_argmax"]


def test_the_options_of_a_row_share_a_pass_and_rows_share_their_state():
    b = FakeBackend()
    recs = _records(_decisions(), "serial", backend=b)
    assert b.calls["fresh"] == 0 and b.calls["with_prefix"] == 0  # only forks and packed passes
    assert all(r["timing"]["sequence_chunks"] == 1 for r in recs)  # three options, one pass per row
    for r in recs:
        assert r["prefix_tokens"] == r["input_tokens"] - 1 and r["suffix_tokens"] == 1
    # each state's first row builds its group prefix and counts those tokens as prefilled (the run's first from
    # nothing, the others on the system prompt the first left); its second row (the other question) reuses it
    assert [r["cache"]["lookup"] for r in recs] == ["miss", "partial"] + ["partial"] * 4
    first, second = recs[0], recs[1]
    assert first["cache"]["prefilled_tokens"] == first["prefix_tokens"]
    assert second["cache"]["reused_tokens"] > second["cache"]["prefilled_tokens"] > 0
    with Scorer(backend=FakeBackend(), mode="serial", slots="sequence") as s:  # the cache lives across calls
        rows = [row_of(d) for d in _decisions(2)]
        once = [d.record for d in s.decide_many(rows)]
        # the records' counts are the cache's: every token that went through the model is some record's
        stats = s.prefix_cache.stats
        assert sum(r["cache"]["prefilled_tokens"] for r in once) == stats.prefilled_tokens
        again = [d.record for d in s.decide_many(rows)]
    assert [r["cache"]["lookup"] for r in again] == ["hit", "hit"] and all(r["cache_hit"] for r in again)
    assert all(r["timing"]["prefill_s"] == 0.0 for r in again)


def test_budget_splits_the_options_into_more_passes_with_the_same_numbers():
    d = _decisions(1)
    b = FakeBackend()
    items = prepare(b, d, with_prefix=True, slots="sequence")
    one = next(score_items(b, items, "serial", {"config_sha256": "t"}))
    split = next(score_items(b, items, "serial", {"config_sha256": "t"}, max_batch_tokens=1))
    assert one["timing"]["sequence_chunks"] == 1 and split["timing"]["sequence_chunks"] == 3
    assert split["slots"]["token_logprobs"] == one["slots"]["token_logprobs"]


# --- refusals -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("ids", "tok", "field", "fragment"), [
    (("no", "none"), FakeTokenizer(), "options[1].id", "one's tokens begin the other's"),
    (("none", "no"), FakeTokenizer(), "options[1].id", "one's tokens begin the other's"),
    (("Bill", "other"), FakeTokenizer(broken="decode"), "options[0].id", "decodes to 'bill'"),
    (("refund", "other"), FakeTokenizer(merges=["\nr"]), "options[0].id", "changes the prompt's last tokens"),
])
def test_ids_that_are_not_disjoint_continuations_are_refused_naming_the_field(ids, tok, field, fragment):
    d = _decisions(1, tuple(Option(i, f"option {i}") for i in ids))[0]
    with pytest.raises(InputError) as err:
        render(tok, d, "sequence")
    assert err.value.field == field and fragment in str(err.value) and str(err.value).startswith("rows.jsonl:1: ")
    assert "--slots sequence" in str(err.value)


def test_an_id_spelling_a_control_token_stays_text():
    d = _decisions(1, (Option("<eos>", "end"), Option("other", "else")))[0]
    p = render(FakeTokenizer(), d, "sequence")
    assert len(p.continuations[0]) == len("<eos>") and FakeTokenizer().decode(list(p.continuations[0])) == "<eos>"


def test_the_openai_backend_is_refused_naming_the_slots(tmp_path, capsys):
    with pytest.raises(OptionError, match=r"slots: sequence .* openai backend"):
        Scorer(backend="openai", slots="sequence", base_url="http://127.0.0.1:9")
    engine = FakeEngine("vllm")
    remote = engine_backend(engine)  # an already built remote backend: refused before any completion
    with pytest.raises(OptionError, match=r"slots: sequence .* the openai backend does not return"):
        _records(_decisions(1), "serial", backend=remote)
    assert engine.completions == 0
    inp = tmp_path / "rows.jsonl"
    inp.write_bytes(orjson.dumps(row_of(_decisions(1)[0])) + b"\n")
    out = tmp_path / "out.jsonl"
    code = cli.main(["score", "--input", str(inp), "--output", str(out), "--slots", "sequence", "--backend", "openai",
                     "--base-url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and "slots: sequence" in err and "openai" in err and "Traceback" not in err
    assert not out.exists()  # refused before the output is made


@pytest.mark.parametrize(("args", "words"), [
    (["--sequence-norm", "mean"],
     "sequence_norm: 'mean' applies to slots sequence, json and auto only (got slots letters)"),
    (["--slots", "sequence", "--permute", "2"], "permute: does not combine with slots sequence"),
    (["--slots", "sequence", "--mode", "shared", "--exact"], "exact: does not combine with slots sequence"),
    (["--slots", "sequence", "--engine", "ray"], "--slots sequence is not supported with --engine ray"),
])
def test_bad_combinations_exit_2_naming_the_field_before_anything_runs(tmp_path, monkeypatch, capsys, args, words):
    loaded = []
    monkeypatch.setattr(cli, "load_backend", lambda cfg: loaded.append(cfg) or FakeBackend())
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(orjson.dumps(row_of(_decisions(1)[0])) + b"\n")
    assert cli.main(["score", "--input", str(inp), "--output", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not loaded and not out.exists()


def test_the_api_and_configs_refuse_the_same_combinations():
    with pytest.raises(OptionError, match="sequence_norm: 'max' is not one of sum, mean"):
        Scorer(backend=FakeBackend(), slots="sequence", sequence_norm="max")
    with pytest.raises(OptionError, match="sequence_norm: 'sum' applies to slots sequence, json and auto only"):
        Scorer(backend=FakeBackend(), slots="ids", sequence_norm="sum")
    with pytest.raises(OptionError, match="permute: does not combine"):
        ScoreConfig(slots="sequence", permute=3)
    assert ScoreConfig(slots="sequence").sequence_norm == "sum" and ScoreConfig().sequence_norm is None


# --- records, hashes, signatures ------------------------------------------------------------------------------------
def test_the_record_check_holds_the_sequence_block():
    rec = _records(_decisions(1))[0]
    check_record(rec, "f", 1)
    slots = rec["slots"]
    lps = slots["token_logprobs"]
    for edit, field in [
        ({"token_logprobs": [[lps[0][0] - 1.0, *lps[0][1:]], *lps[1:]]}, "option_logits[0]"),
        ({"token_counts": [1, 1, 1]}, "slots.token_counts"),
        ({"token_ids": [slots["token_ids"][0], slots["token_ids"][0][:2], slots["token_ids"][2]]},
         "slots.token_ids[1]"),
        ({"token_ids": [1, 2, 3]}, "slots.token_ids"),
        ({"normalisation": "mean"}, "option_logits[0]"),
        ({"normalisation": "max"}, "slots.normalisation"),
        ({"token_logprobs": [[0.5] * 6, *lps[1:]]}, "slots.token_logprobs[0]"),
    ]:
        with pytest.raises(InputError) as err:
            check_record({**rec, "slots": {**slots, **edit}}, "f", 1)
        assert err.value.field == field, (edit, str(err.value))
    for key in ("normalisation", "token_counts", "token_logprobs"):
        with pytest.raises(InputError, match=f"slots.{key}"):
            check_record({**rec, "slots": {k: v for k, v in slots.items() if k != key}}, "f", 1)
    with pytest.raises(InputError, match="allowed_token_mass"):
        check_record({**rec, "allowed_token_mass": rec["allowed_token_mass"] / 2}, "f", 1)
    yn = _decisions(1, (Option("y", "Y"), Option("n", "N")))
    ids = next(score_items(FakeBackend(), prepare(FakeBackend(), yn, slots="ids"), "direct", {"config_sha256": "t"}))
    with pytest.raises(InputError, match=r"slots\.normalisation"):  # only the sequence readout has its fields
        check_record({**ids, "slots": {**ids["slots"], "normalisation": "sum"}}, "f", 1)


def test_sequence_runs_are_their_own_configuration_and_signature():
    info = FakeBackend().model_info()
    ds = _decisions(2)
    letters = checked_config_parts(info, ds, {"input": "x"}, "direct", 4096)
    ids = checked_config_parts(info, ds, {"input": "x"}, "direct", 4096, slots="ids")
    assert "slots" not in letters and "sequence_norm" not in letters and "sequence_norm" not in ids
    seq = checked_config_parts(info, ds, {"input": "x"}, "direct", 4096, slots="sequence")
    assert seq["slots"] == "sequence" and seq["sequence_norm"] == "sum"
    mean = checked_config_parts(info, ds, {"input": "x"}, "direct", 4096, slots="sequence", sequence_norm="mean")
    assert mean["sequence_norm"] == "mean"
    yn = (Option("y", "Y"), Option("n", "N"))
    by_ids = next(score_items(FakeBackend(), prepare(FakeBackend(), _decisions(1, yn), slots="ids"), "direct",
                              {"config_sha256": "t"}))
    by_seq, by_mean = _records(_decisions(1, yn))[0], _records(_decisions(1, yn), norm="mean")[0]
    assert by_seq["prompt_sha256"] == by_ids["prompt_sha256"]  # the same prompt …
    assert len({by_ids["signature"], by_seq["signature"], by_mean["signature"]}) == 3  # … three decision procedures
    assert (readout_of(by_ids), readout_of(by_seq), readout_of(by_mean)) == ("plain", "sequence-sum", "sequence-mean")


def test_a_prior_fitted_on_sequence_records_applies_to_sequence_runs_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = [{"id": f"r{i}", "state": f"ticket {i}: {'refund me' if i % 2 else 'hello'}", "question": "Which kind?",
             "options": [{"id": o.id, "description": o.description} for o in OPTIONS]} for i in range(10)]
    inp = tmp_path / "rows.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    raw, prior = tmp_path / "raw.jsonl", tmp_path / "prior.json"
    assert cli.main(["score", "--input", str(inp), "--output", str(raw), "--slots", "sequence"]) == 0
    assert cli.main(["calibrate", "prior", str(raw), "--output", str(prior)]) == 0
    cal = tmp_path / "cal.jsonl"
    assert cli.main(["score", "--input", str(inp), "--output", str(cal), "--slots", "sequence",
                     "--calibration", str(prior)]) == 0
    recs = read_records(cal)
    assert all(r["calibrated"]["applied"] for r in recs)
    capsys.readouterr()
    # the same prior does not cover the ids readout of the same prompt, nor the mean normalisation
    for args in (["--sequence-norm", "mean"], ["--mode", "serial", "--sequence-norm", "mean"]):
        assert cli.main(["score", "--input", str(inp), "--output", str(tmp_path / f"x{len(args)}.jsonl"), "--slots",
                         "sequence", *args, "--calibration", str(prior)]) == 2
        assert "sequence-mean" in capsys.readouterr().err


# --- the faces: API, command line, service, semif prompt --------------------------------------------------------------
def _stable(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in rec.items() if k not in ("timing", "cache")}
    out["run"] = {k: v for k, v in rec["run"].items() if k != "started_unix"}
    return out


def test_api_and_cli_records_are_equal(tmp_path, monkeypatch):
    rows = [row_of(d) for d in _decisions()]
    with Scorer(backend=FakeBackend(), mode="shared", slots="sequence", sequence_norm="mean") as s:
        got = [d.record for d in s.decide_many(rows)]
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared", "--slots", "sequence",
                     "--sequence-norm", "mean"]) == 0
    assert [_stable(r) for r in got] == [_stable(r) for r in read_records(out)]
    assert got[0]["slots"]["readout"] == "sequence" and got[0]["slots"]["normalisation"] == "mean"
    with Scorer(backend=FakeBackend(), slots="sequence") as s, pytest.raises(InputError, match=r"options\[1\]\.id"):
        s.decide("a state", "Refund?", {"no": "no refund", "no_refund": "none"})


def test_the_service_reads_sequences_and_refuses_overlapping_ids_with_422():
    from serve_helpers import live

    from scorer.serving.service import build_app

    rows = [row_of(d) for d in _decisions(2)]
    row = rows[0]
    with Scorer(backend=FakeBackend(), slots="sequence") as s, live(build_app(s)) as url:
        batch = httpx.post(f"{url}/v1/decide/batch", json={"rows": rows}, timeout=30).json()["records"]
        assert [check_record(r, "service", None)["slots"]["readout"] for r in batch] == ["sequence"] * 2
        models = httpx.get(f"{url}/v1/models", timeout=30).json()
        assert models["slots"] == "sequence" and models["sequence_norm"] == "sum"
        bad = httpx.post(f"{url}/v1/decide", json={**row, "options": [{"id": "no", "description": "No"},
                                                                       {"id": "nope", "description": "No!"}]},
                         timeout=30)
        assert bad.status_code == 422 and bad.json()["field"] == "options[1].id"


def test_prompt_command_shows_the_continuations(tmp_path, monkeypatch, capsys):
    doc = fake_prompt_json(tmp_path, _decisions(1)[0], ["--slots", "sequence"], monkeypatch, capsys)
    assert doc["slots"] == "sequence" and doc["prompt_version"] == IDS_PROMPT_VERSION
    assert [len(c) for c in doc["continuations"]] == [6, 5, 4]
    assert doc["prompt"] == _ids_text(_decisions(1)[0])


def test_run_score_writes_valid_sequence_records(tmp_path):
    out = tmp_path / "out.jsonl"
    n = run_score(_decisions(), FakeBackend(), out, ScoreConfig(mode="shared", run_parts={"input": "x"},
                                                                 slots="sequence"))
    assert n == 6 and all(r["slots"]["readout"] == "sequence" for r in read_records(out))


# --- the real model -----------------------------------------------------------------------------------------------
REAL_OPTIONS = (Option("refund_request", "the customer asks for money back"),
                Option("account_change", "the customer wants to change account details"),
                Option("other", "anything else"))
REAL_ROWS = [Decision("t1", "I was charged twice for my order, please give me my money back.",
                      "What does the customer want?", REAL_OPTIONS, {}, "mem:1"),
             Decision("t2", "I was charged twice for my order, please give me my money back.",
                      "Which team should handle this ticket?", REAL_OPTIONS, {}, "mem:2"),
             Decision("t3", "How do I change the email address on my account?",
                      "What does the customer want?", REAL_OPTIONS, {}, "mem:3")]
SEQ_TOL = {"torch": 1e-4, "llamacpp": 0.0}
"""Largest |Δ| allowed between a record's token log-probability and the fresh full-sequence one, per backend.
Measured on the rows above (every mode × layout below, state-major with demonstrations too): torch fp32 at most
2.7e-5; llama.cpp (Q4_1) exactly 0 (its canonical batch shapes, :mod:`scorer.backends.llamacpp_backend`; before them
question-major with demonstrations moved one by 0.121)."""


def _check_real(backend: Backend, mode: str, seen: dict[str, dict[tuple[int, ...], np.ndarray]],
                layout: str = "state-major", demos: Demos | None = None, slots: str = "sequence") -> float:
    recs = _records(REAL_ROWS, mode, backend=backend, layout=layout, demos=demos, slots=slots)
    validate_records(recs)
    worst = 0.0
    for d, r in zip(REAL_ROWS, recs, strict=True):
        p = prompt_for(backend.tokenizer, d, layout, demos, slots)
        assert r["slots"]["readout"] == slots and r["prompt_version"] == p.version
        assert max(r["slots"]["token_counts"]) > 1  # multi-token ids
        closers = p.closers or ((),) * len(p.continuations)
        assert bool(p.closers) == (slots == "json")  # a JSON answer's closing quote: any token beginning with it
        for c, cls, lp in zip(p.continuations, closers, r["slots"]["token_logprobs"], strict=True):
            want = fresh_loglik(backend, p.ids, list(c), seen.setdefault(backend.name, {}), last=cls)
            worst = max(worst, float(np.max(np.abs(np.array(lp) - want))))
        assert 0.0 < r["allowed_token_mass"] <= 1.0
    assert worst <= SEQ_TOL[backend.name], worst
    return worst


def _real_demos() -> Demos:
    rows = [Decision(f"d{i}", state, q, REAL_OPTIONS, {"label": label}, f"demos.jsonl:{i + 1}")
            for i, (state, q, label) in enumerate([
                ("Please refund the broken kettle I returned last week.", "What does the customer want?",
                 "refund_request"),
                ("I moved house; update my delivery address.", "What does the customer want?", "account_change")])]
    return Demos([demo_of(d, "demos.jsonl", n) for n, d in enumerate(rows, start=1)], 2, 0)


REAL_LAYOUTS = [("state-major", False), ("state-major", True), ("question-major", False), ("question-major", True)]


@pytest.mark.slow
@pytest.mark.parametrize("slots", ["sequence", "json"])
@pytest.mark.parametrize("mode", ["direct", "shared"])
@pytest.mark.parametrize(("layout", "with_demos"), REAL_LAYOUTS)
def test_smollm2_torch_equals_the_fresh_full_sequence_log_likelihood(smol_torch, fresh_seen, mode, layout, with_demos,
                                                                       slots):
    _check_real(smol_torch, mode, fresh_seen, layout, _real_demos() if with_demos else None, slots)


# json on llama.cpp (a minute each: a fresh pass per token of every option) in the two layouts' extremes only
LLAMACPP_CASES = [(layout, demos, "sequence") for layout, demos in REAL_LAYOUTS] + [
    ("state-major", False, "json"), ("question-major", True, "json")]


@pytest.mark.slow
@pytest.mark.llamacpp
@pytest.mark.parametrize("mode", ["direct", "shared"])
@pytest.mark.parametrize(("layout", "with_demos", "slots"), LLAMACPP_CASES)
def test_smollm2_llamacpp_equals_the_fresh_full_sequence_log_likelihood(smol_llamacpp, fresh_seen, mode, layout,
                                                                          with_demos, slots):
    # validate_prompt: the GGUF's tokenizer gives each id the same tokens
    _check_real(smol_llamacpp, mode, fresh_seen, layout, _real_demos() if with_demos else None, slots)
