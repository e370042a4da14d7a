"""``--slots ids``: the option ids as answer slots. Refusals name the option's field (exit 2); on a fake the
readout is the letters' machinery over the ids' tokens (every mode, permute, exact, the API, the service);
records say which readout ran; a real SmolLM2-135M run with yes/no ids."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import orjson
import pytest
from fakes import FakeBackend, FakeTokenizer, fake_prompt_json, row_of

from scorer import Scorer, cli
from scorer.core.checks import OptionError
from scorer.core.errors import InputError, ValidationError
from scorer.decision import readout
from scorer.formats.records import check_record, read_records, validate_records
from scorer.formats.rows import Decision, Option
from scorer.prompting.prompt import IDS_PROMPT_VERSION, PROMPT_VERSION, render
from scorer.scoring.file_run import run_score
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import ScoreConfig, checked_config_parts

# Single characters: one token each in the fake's character tokenizer (as " yes"/" no" are in a real BPE).
YN = (Option("y", "the customer asks for money back"), Option("n", "anything else"))


def _decisions(n: int = 6, options: tuple[Option, ...] = YN) -> list[Decision]:
    states = ["I was charged twice, refund me.", "How do I change my email?"]
    return [Decision(f"r{i}", states[i % 2], f"Question {i // 2}?", options, {"family": "f"}, f"rows.jsonl:{i + 1}")
            for i in range(n)]


def _records(decisions: list[Decision], mode: str = "direct", slots: str = "ids") -> list[dict[str, Any]]:
    b = FakeBackend()
    return list(score_items(b, prepare(b, decisions, with_prefix=mode != "direct", slots=slots), mode,
                            {"config_sha256": "test"}))


# --- refusals -----------------------------------------------------------------------------------------------------
def test_a_multi_token_id_is_refused_naming_its_field():
    d = _decisions(1, (Option("y", "Yes"), Option("maybe", "Perhaps")))[0]
    with pytest.raises(InputError) as err:
        render(FakeTokenizer(), d, "ids")
    msg = str(err.value)
    assert err.value.field == "options[1].id" and msg.startswith("rows.jsonl:1: field 'options[1].id': ")
    assert "'maybe' is 5 tokens" in msg and "exactly one token" in msg
    # the same row reads out by letter as before
    assert render(FakeTokenizer(), d).slot_texts == ("A", "B")


@pytest.mark.parametrize(("broken", "ids", "field", "fragment"), [
    ("collide", ("A", "B"), "options[1].id", "same token"),
    ("decode", ("A", "B"), "options[1].id", "decodes to 'b'"),
    ("boundary", ("A", "B"), "options[0].id", "not stable at the prompt boundary"),
])
def test_every_slot_rule_of_the_letters_holds_for_ids(broken, ids, field, fragment):
    d = _decisions(1, tuple(Option(i, f"option {i}") for i in ids))[0]
    with pytest.raises(InputError) as err:
        render(FakeTokenizer(broken=broken), d, "ids")
    assert err.value.field == field and fragment in str(err.value)
    with pytest.raises(ValidationError):  # the letters break the same rule, as a tokenizer check
        render(FakeTokenizer(broken=broken), d)


def test_unknown_slots_are_refused_everywhere():
    with pytest.raises(OptionError, match="slots: 'words' is not one of letters, ids, sequence"):
        Scorer(backend=FakeBackend(), slots="words")
    with pytest.raises(OptionError, match="slots"):
        ScoreConfig(slots="words")


def test_cli_refuses_a_multi_token_id_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = [row_of(d) for d in _decisions(2)] + [row_of(_decisions(1, (Option("yes", "Yes"), Option("n", "No")))[0])]
    rows[-1]["id"] = "r9"
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--slots", "ids"]) == 2
    err = capsys.readouterr().err
    assert f"{inp}:3: field 'options[0].id': 'yes' is 3 tokens" in err and "Traceback" not in err
    assert not out.exists() or out.read_bytes() == b""  # refused before the first record
    with pytest.raises(SystemExit) as usage:  # a usage error, in the API's words
        cli.main(["score", "--input", str(inp), "--output", str(tmp_path / "o2.jsonl"), "--slots", "words"])
    assert usage.value.code == 2
    assert "argument --slots: 'words' is not one of letters, ids, sequence" in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "version"), [
    (["--layout", "question-major"], "semif-question-major-ids-v1"), (["--layout", "auto"], None),
    (["--demos", "DEMOS"], "semif-state-major-demos-ids-v1")])
def test_ids_work_in_every_layout_and_with_demonstrations(tmp_path, monkeypatch, capsys, extra, version):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    inp, out, demos = tmp_path / "rows.jsonl", tmp_path / "out.jsonl", tmp_path / "demos.jsonl"
    rows = [row_of(d) for d in _decisions(2)]
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    demos.write_bytes(b"".join(orjson.dumps({**r, "id": "d" + r["id"], "state": "Another state.",
                                             "label": r["options"][0]["id"]}) + b"\n" for r in rows))
    args = [str(demos) if a == "DEMOS" else a for a in extra]
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--slots", "ids", *args]) == 0
    recs = read_records(out)
    validate_records(recs)
    assert {r["slots"]["readout"] for r in recs} == {"ids"}
    assert {r["prompt_version"] for r in recs} <= {IDS_PROMPT_VERSION, "semif-question-major-ids-v1",
                                                     "semif-state-major-demos-ids-v1"}
    if version is not None:
        assert {r["prompt_version"] for r in recs} == {version}
    capsys.readouterr()
    assert cli.main(["prompt", "--input", str(inp), "--id", "r0", "--slots", "ids", "--json", *args]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["slots"] == "ids" and doc["slot_texts"] == ["y", "n"]
    assert Scorer(backend=FakeBackend(), slots="ids", layout="question-major").layout == "question-major"
    assert ScoreConfig(slots="ids", layout="auto").layout == "auto"


# --- the readout --------------------------------------------------------------------------------------------------
def test_ids_read_the_ids_tokens_with_the_letters_machinery():
    tok = FakeTokenizer()
    b = FakeBackend()
    decisions = _decisions()
    recs = _records(decisions)
    validate_records(recs)
    for d, r in zip(decisions, recs, strict=True):
        p = render(tok, d, "ids")
        assert p.version == IDS_PROMPT_VERSION and r["prompt_version"] == IDS_PROMPT_VERSION
        assert "Reply with the option's id only." in p.text and "\ny: the customer asks for money back" in p.text
        slots = [tok.encode("y")[0], tok.encode("n")[0]]
        assert p.slot_ids == slots and r["slots"] == {"readout": "ids", "texts": ["y", "n"], "token_ids": slots}
        want = readout.read(b.score_fresh(p.ids), slots, "float32")  # the letters' readout, over the ids' tokens
        assert r["option_logits"] == want.option_logits and r["probabilities"] == want.probabilities
        assert r["allowed_token_mass"] == want.allowed_token_mass
        assert r["full_vocab_argmax"]["is_slot"] == (want.argmax_token_id in slots)
        letters = render(tok, d)
        assert letters.version == PROMPT_VERSION and letters.text != p.text
        # the two prompts differ in the instruction and the option labels only
        assert p.text.replace("option's id", "option's letter").replace("one of the options",
                                                                        "one of the lettered options") \
            .replace("\ny: ", "\nA. ").replace("\nn: ", "\nB. ") == letters.text
    # a letters run's records say so too
    assert _records(decisions, slots="letters")[0]["slots"]["readout"] == "letters"


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_ids_fast_modes_equal_direct(mode):
    direct, fast = _records(_decisions(8)), _records(_decisions(8), mode)
    for a, b in zip(direct, fast, strict=True):
        assert a["probabilities"] == b["probabilities"] and a["tokens_sha256"] == b["tokens_sha256"]
    assert any(r["cache_hit"] for r in fast)


def test_ids_runs_are_their_own_configuration_and_signature(tmp_path):
    info = FakeBackend().model_info()
    ds = _decisions()
    letters = checked_config_parts(info, ds, {"input": "x"}, "direct", 4096)
    assert "slots" not in letters  # a letters run's hash is what it always was
    assert checked_config_parts(info, ds, {"input": "x"}, "direct", 4096, slots="ids")["slots"] == "ids"
    a, b = _records(ds), _records(ds, slots="letters")
    assert a[0]["signature"] != b[0]["signature"]  # calibration never pools a letters and an ids readout
    out = tmp_path / "o.jsonl"
    run_score(ds, FakeBackend(), out, ScoreConfig(run_parts={"input": "x"}, slots="ids", permute=2))
    perm = read_records(out)
    validate_records(perm)
    assert perm[0]["slots"]["texts"] == ["y", "n"] and perm[0]["permute"]["k"] == 2


def test_exact_rescores_through_the_ids(tmp_path):
    from scorer.scoring.exact import ExactPolicy

    out = tmp_path / "e.jsonl"
    policy = ExactPolicy(safety=2.0, probe_rows=8)  # every row probed: the bound covers every row's drift
    run_score(_decisions(8), FakeBackend(drift=0.05), out,
              ScoreConfig(mode="shared", run_parts={"input": "x"}, slots="ids", exact=policy))
    recs = read_records(out)
    validate_records(recs)
    fresh = _records(_decisions(8))
    assert [r["choice"] for r in recs] == [f["choice"] for f in fresh]  # exact: the fresh path's choices
    assert all(r["slots"] == f["slots"] for r, f in zip(recs, fresh, strict=True))


def test_the_record_check_holds_the_slots_block():
    rec = _records(_decisions(1))[0]
    for edit, field in [({"texts": ["A", "B"]}, "slots.texts"), ({"token_ids": [5, 5]}, "slots.token_ids"),
                        ({"readout": "letters"}, "slots.texts"), ({"readout": "words"}, "slots.readout")]:
        with pytest.raises(InputError, match=field.replace(".", r"\.")):
            check_record({**rec, "slots": {**rec["slots"], **edit}}, "f", 1)
    arg = {**rec["full_vocab_argmax"], "is_slot": not rec["full_vocab_argmax"]["is_slot"]}
    with pytest.raises(InputError, match=r"full_vocab_argmax\.is_slot"):
        check_record({**rec, "full_vocab_argmax": arg}, "f", 1)
    old = {k: v for k, v in rec.items() if k != "slots"}  # records written before the block still read
    assert check_record(old, "f", 1) is old


# --- the faces: API, command line, service ------------------------------------------------------------------------
def _stable(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in rec.items() if k != "timing"}
    out["run"] = {k: v for k, v in rec["run"].items() if k != "started_unix"}
    return out


def test_api_and_cli_records_are_equal(tmp_path, monkeypatch):
    rows = [row_of(d) for d in _decisions()]
    with Scorer(backend=FakeBackend(), mode="shared", slots="ids") as s:
        got = [d.record for d in s.decide_many(rows)]
    inp, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", "shared", "--slots", "ids"]) == 0
    assert [_stable(r) for r in got] == [_stable(r) for r in read_records(out)]
    assert got[0]["slots"]["readout"] == "ids"
    # one row through decide(): refused naming the field
    with Scorer(backend=FakeBackend(), slots="ids") as s, pytest.raises(InputError, match=r"options\[0\]\.id"):
        s.decide("a state", "Refund?", {"yes": "a refund", "n": "no"})


def test_the_service_reads_ids_and_refuses_a_multi_token_id_with_422():
    from serve_helpers import live as _live

    from scorer.serving.service import build_app

    row = row_of(_decisions(1)[0])
    with Scorer(backend=FakeBackend(), slots="ids") as s, _live(build_app(s)) as url:
        ok = httpx.post(f"{url}/v1/decide", json=row, timeout=30)
        assert ok.status_code == 200 and ok.json()["slots"]["readout"] == "ids"
        assert httpx.get(f"{url}/v1/models", timeout=30).json()["slots"] == "ids"
        bad = httpx.post(f"{url}/v1/decide", json={**row, "options": [{"id": "yes", "description": "Yes"},
                                                                       {"id": "n", "description": "No"}]}, timeout=30)
        assert bad.status_code == 422 and bad.json()["field"] == "options[0].id" and "3 tokens" in bad.json()["error"]


def test_prompt_command_shows_the_ids_slots(tmp_path, monkeypatch, capsys):
    doc = fake_prompt_json(tmp_path, _decisions(1)[0], ["--slots", "ids"], monkeypatch, capsys)
    assert doc["slots"] == "ids" and doc["slot_texts"] == ["y", "n"] and doc["prompt_version"] == IDS_PROMPT_VERSION


# --- the real model -----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_smollm2_reads_yes_no_ids(smol_torch):
    tok = smol_torch.tokenizer
    yes_no = (Option("yes", "the customer asks for money back"), Option("no", "anything else"))
    rows = [Decision("t1", "I was charged twice for my order, please give me my money back.",
                     "Is the customer asking for a refund?", yes_no, {}, "mem:1"),
            Decision("t2", "How do I change the email address on my account?",
                     "Is the customer asking for a refund?", yes_no, {}, "mem:2")]
    recs = list(score_items(smol_torch, prepare(smol_torch, rows, with_prefix=True, slots="ids"), "shared",
                            {"config_sha256": "test"}))
    validate_records(recs)
    slots = [tok.encode("yes")[0], tok.encode("no")[0]]
    assert all(len(tok.encode(w)) == 1 for w in ("yes", "no"))
    for d, r in zip(rows, recs, strict=True):
        assert r["slots"] == {"readout": "ids", "texts": ["yes", "no"], "token_ids": slots}
        assert r["prompt_version"] == IDS_PROMPT_VERSION
        fresh = readout.read(smol_torch.score_fresh(render(tok, d, "ids").ids), slots, smol_torch.logits_dtype)
        assert np.allclose(r["probabilities"], fresh.probabilities, atol=1e-4)  # shared vs fresh: measured drift
        assert 0.0 < r["allowed_token_mass"] <= 1.0
    # an id that is several tokens is refused before anything is scored, naming its field
    long = Decision("t3", "x", "Refund?", (Option("yes", "Yes"), Option("definitely-not", "No")), {}, "mem:3")
    with pytest.raises(InputError, match=r"mem:3: field 'options\[1\]\.id': 'definitely-not' is \d+ tokens"):
        prepare(smol_torch, [long], slots="ids")


@pytest.mark.slow
@pytest.mark.llamacpp
def test_llamacpp_checks_the_ids_slots_on_its_own_tokenizer(smol_llamacpp):
    yes_no = (Option("yes", "Yes"), Option("no", "No"))
    rows = [Decision("t1", "I was charged twice, please refund me.", "Is this a refund request?", yes_no, {}, "mem:1")]
    items = prepare(smol_llamacpp, rows, slots="ids")  # validate_prompt: the GGUF's tokenizer agrees on each id
    rec = next(score_items(smol_llamacpp, items, "direct", {"config_sha256": "test"}))
    validate_records([rec])
    tok = smol_llamacpp.tokenizer
    assert rec["slots"]["token_ids"] == [tok.encode("yes")[0], tok.encode("no")[0]]
    assert rec["prompt_version"] == IDS_PROMPT_VERSION and 0.0 < rec["allowed_token_mass"] <= 1.0
