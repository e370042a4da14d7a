"""Prompt layouts (scorer/prompting/layouts.py): state-major is semif-direct-v1 byte for byte (on fakes and against the
committed records of the real SmolLM2 tokenizer), question-major puts the state last and shares the question's
head, ``auto`` counts the shared prefix tokens of both over the run's rows, and every record names its layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend, FakeTokenizer

from scorer import cli
from scorer.api import Scorer
from scorer.core.errors import SemifError
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import Decision, Option, load_decisions
from scorer.prompting import layouts
from scorer.prompting.prompt import PROMPT_VERSION, prefix_ids, render
from scorer.scoring.file_run import run_score
from scorer.scoring.modes import prepare
from scorer.scoring.options import ScoreConfig, resolve_layout

ROOT = Path(__file__).resolve().parents[2]
AUTHORED = ROOT / "data" / "eval" / "authored.jsonl"
SHAPE = ROOT / "data" / "workloads" / "shape-small.jsonl"
COMMITTED = ROOT / "data" / "results" / "runs" / "smol-torch-authored.jsonl"


def _queue(n: int = 6) -> list[Decision]:
    """One question asked of many states (a routing queue): question-major's case."""
    opts = (Option("billing", "Billing: charges and refunds"), Option("access", "Account access and login"))
    return [Decision(f"t{i}", f"Ticket {i}: my card was charged {i + 2} times for one order.",
                     "Which team should handle this?", opts) for i in range(n)]


# --- state-major is semif-direct-v1 ---------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [AUTHORED, SHAPE])
def test_state_major_is_semif_direct_v1_byte_for_byte(rows):
    tok = FakeTokenizer(merges=["\n\n", "Qu", "State"])
    for d in load_decisions(rows)[:40]:
        old, new = render(tok, d), layouts.render(tok, d, layouts.STATE_MAJOR)
        assert (new.text, new.ids, new.prefix_text, new.slot_ids) == (old.text, old.ids, old.prefix_text, old.slot_ids)
        assert new.version == PROMPT_VERSION and new.layout == "state-major" and new.signature_version == PROMPT_VERSION


def test_state_major_run_keeps_its_config_hash_and_names_its_layout(tmp_path):
    rows = load_decisions(SHAPE)[:6]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run_score(rows, FakeBackend(), a, ScoreConfig(mode="shared"))
    run_score(rows, FakeBackend(), b, ScoreConfig(mode="shared", layout="question-major"))
    ra, rb = read_records(a), read_records(b)
    assert {r["layout"] for r in ra} == {"state-major"} and {r["prompt_version"] for r in ra} == {PROMPT_VERSION}
    assert {r["layout"] for r in rb} == {"question-major"}
    assert {r["prompt_version"] for r in rb} == {layouts.QUESTION_MAJOR_VERSION}
    # a plain run is named as it always was; another layout is another run, with other signatures
    from scorer.scoring.options import checked_config_parts, config_sha256

    info = FakeBackend().model_info()
    plain = config_sha256(checked_config_parts(info, rows, {}, "shared", 4096))
    assert ra[0]["run"]["config_sha256"] == plain != rb[0]["run"]["config_sha256"]
    assert all(x["signature"] != y["signature"] for x, y in zip(ra, rb, strict=True))


# --- question-major ------------------------------------------------------------------------------------------
def test_question_major_puts_the_question_first_and_the_state_last():
    tok = FakeTokenizer()
    d = _queue(1)[0]
    p = layouts.render(tok, d, layouts.QUESTION_MAJOR)
    user = p.text[p.plain_spans[-1][0]:p.plain_spans[-1][1]]
    assert p.text.index(layouts.QUESTION_MAJOR_SYSTEM) < p.text.index("Question: Which team")
    assert user.index("B. Account access") < user.index("State:\nTicket 0") < user.index("Answer with one letter")
    assert p.prefix_text.endswith("B. Account access and login\n\n") and "Ticket 0" not in p.prefix_text
    assert p.version == "semif-question-major-v1" and p.letters == "AB"


def test_question_major_rows_of_one_question_share_their_head():
    tok = FakeTokenizer(merges=["\n\nSt"])  # a BPE merge across the head's boundary
    prompts = [layouts.render(tok, d, layouts.QUESTION_MAJOR) for d in _queue()]
    heads = {tuple(prefix_ids(tok, p)) for p in prompts}
    assert len(heads) == 1 and all(p.ids[: len(next(iter(heads)))] == list(next(iter(heads))) for p in prompts)
    items = prepare(FakeBackend(tok), _queue(), layout=layouts.QUESTION_MAJOR)
    assert len({tuple(it.prefix) for it in items}) == 1  # one prefill serves the whole queue


@pytest.mark.parametrize("mode", ["serial", "shared"])
def test_question_major_fast_modes_equal_direct(tmp_path, mode):
    rows = _queue() + load_decisions(SHAPE)[:4]
    out = {}
    for m in ("direct", mode):
        path = tmp_path / f"{m}.jsonl"
        run_score(rows, FakeBackend(), path, ScoreConfig(mode=m, layout="question-major"))
        out[m] = read_records(path)
    for a, b in zip(out["direct"], out[mode], strict=True):
        assert a["probabilities"] == b["probabilities"] and a["tokens_sha256"] == b["tokens_sha256"]
    assert sum(bool(r["cache_hit"]) for r in out[mode]) >= len(_queue()) - 1


# --- every layout read out by id ------------------------------------------------------------------------------
def _yes_no_queue(n: int = 4) -> list[Decision]:
    opts = (Option("y", "the order arrived late"), Option("n", "the order arrived on time"))
    return [Decision(f"q{i}", f"Order {i} arrived {i} days after the promised date.", "Was it late?", opts,
                     {"label": "y" if i % 2 else "n", "group": f"g{i}"}, f"q.jsonl:{i + 1}") for i in range(n)]


def _demos_of(rows: list[Decision], k: int = 2) -> Any:
    from scorer.prompting.demos import Demos, demo_of

    return Demos([demo_of(d, "demos.jsonl", n) for n, d in enumerate(rows, start=1)], k, 0)


@pytest.mark.parametrize("slots", ["ids", "sequence"])
def test_question_major_read_by_id_lists_the_ids_and_asks_for_one(slots):
    tok = FakeTokenizer()
    d = _yes_no_queue(1)[0]
    p = layouts.render(tok, d, layouts.QUESTION_MAJOR, slots=slots)
    user = p.text[p.plain_spans[-1][0]:p.plain_spans[-1][1]]
    assert p.text.index(layouts.QUESTION_MAJOR_IDS_SYSTEM) < p.text.index("Question: Was it late?")
    assert user.index("n: the order arrived on time") < user.index("State:\nOrder 0") < user.index(
        "Answer with one option id: y or n.")
    assert "A. " not in p.text and p.prefix_text.endswith("n: the order arrived on time\n\n")
    assert p.version == layouts.QUESTION_MAJOR_IDS_VERSION == "semif-question-major-ids-v1"
    assert p.slots == slots and p.layout == "question-major" and p.slot_texts == ("y", "n")
    assert [tok.decode([t]) for t in p.slot_ids] == ["y", "n"]
    assert bool(p.continuations) == (slots == "sequence")
    # the letters' prompts are untouched by the ids' ones
    letters = layouts.render(tok, d, layouts.QUESTION_MAJOR)
    assert letters.version == "semif-question-major-v1" and "Answer with one letter, A to B." in letters.text


def test_state_major_read_by_id_without_demonstrations_is_semif_direct_ids_v1_byte_for_byte():
    tok = FakeTokenizer(merges=["\n\n", "Qu", "State"])
    for d in _yes_no_queue():
        old, new = render(tok, d, "ids"), layouts.render(tok, d, layouts.STATE_MAJOR, slots="ids")
        assert (new.text, new.ids, new.prefix_text, new.slot_ids) == (old.text, old.ids, old.prefix_text, old.slot_ids)
        assert new.version == old.version == "semif-direct-ids-v1" == new.signature_version


@pytest.mark.parametrize("layout", ["state-major", "question-major"])
@pytest.mark.parametrize("slots", ["ids", "sequence"])
def test_demonstrations_read_by_id_answer_with_their_ids(layout, slots):
    from scorer.prompting.demos import prompt_for

    tok = FakeTokenizer()
    rows = _yes_no_queue(6)
    demos = _demos_of(rows[2:], k=2)
    p = prompt_for(tok, rows[0], layout, demos, slots)
    assert len(p.demo_ids) == 2 and rows[0].id not in p.demo_ids
    msgs = layouts.messages(rows[0], layout, [demos.pick(rows[0]).shown[i] for i in range(2)], slots)[0]
    answers = [m["content"] for m in msgs if m["role"] == "assistant"]
    labels = {d.id: d.extra["label"] for d in rows}
    assert answers == [labels[i] for i in p.demo_ids]  # the demonstration's option id, never a letter
    base = "semif-state-major-demos-ids-v1" if layout == "state-major" else "semif-question-major-ids-v1"
    assert p.version == base and p.signature_version == f"{base}+demos-2"
    assert layouts.signature_version(layout, 2, slots) == p.signature_version
    assert "A. " not in p.text


@pytest.mark.parametrize("slots", ["ids", "sequence"])
def test_cli_scores_question_major_with_demonstrations_read_by_id(tmp_path, monkeypatch, slots):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = _yes_no_queue(6)
    inp, demos, out = tmp_path / "rows.jsonl", tmp_path / "demos.jsonl", tmp_path / "out.jsonl"

    def line(d: Decision, **extra: Any) -> bytes:
        opts = [{"id": o.id, "description": o.description} for o in d.options]
        return orjson.dumps({"id": d.id, "state": d.state, "question": d.question, "options": opts, **extra}) + b"\n"

    inp.write_bytes(b"".join(line(d) for d in rows[:3]))
    demos.write_bytes(b"".join(line(d, id="d" + d.id, state=f"Demo {d.state}", label=d.extra["label"])
                               for d in rows[3:]))
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--slots", slots, "--layout",
                     "question-major", "--demos", str(demos), "--demos-k", "2", "--mode", "shared"]) == 0
    recs = read_records(out)
    validate_records(recs)
    assert {r["layout"] for r in recs} == {"question-major"} and {r["slots"]["readout"] for r in recs} == {slots}
    assert {r["prompt_version"] for r in recs} == {"semif-question-major-ids-v1"}
    assert all(len(r["demos"]["ids"]) == 2 for r in recs)


def test_auto_renders_the_readout_it_will_score(tmp_path):
    rows = _yes_no_queue()
    layout, choice = resolve_layout(FakeBackend(), rows, "auto", None, "ids")
    assert layout == "question-major" and choice is not None
    ids_total = sum(len(layouts.render(FakeBackend().tokenizer, d, layout, slots="ids").ids) for d in rows)
    assert choice.total_tokens["question-major"] == ids_total


# --- auto ------------------------------------------------------------------------------------------------------
def test_shared_prefix_tokens_counts_what_a_prefix_tree_saves():
    assert layouts.shared_prefix_tokens([]) == 0
    assert layouts.shared_prefix_tokens([[1, 2, 3], [1, 2, 4], [5], [1, 2, 3, 9]]) == 2 + 3
    assert layouts.shared_prefix_tokens([[7, 7]] * 3) == 4


def test_auto_picks_the_layout_that_shares_more_tokens():
    backend = FakeBackend()
    many_questions = load_decisions(SHAPE)  # 2 states x 21 criteria
    layout, choice = resolve_layout(backend, many_questions, "auto")
    assert layout == "state-major" and choice is not None
    assert choice.shared_tokens["state-major"] > choice.shared_tokens["question-major"]
    layout, choice = resolve_layout(backend, _queue(), "auto")
    assert layout == "question-major" and choice.shared_tokens["question-major"] > choice.shared_tokens["state-major"]
    assert "question-major" in choice.describe()
    assert resolve_layout(backend, _queue(), "question-major") == ("question-major", None)
    one = _queue(1)  # nothing to share: the tie keeps today's prompt
    assert resolve_layout(backend, one, "auto")[0] == "state-major"


def test_cli_layout_auto_records_and_reports_the_choice(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = tmp_path / "q.jsonl"
    rows.write_bytes(b"".join(orjson.dumps({"id": d.id, "state": d.state, "question": d.question,
                                            "options": [{"id": o.id, "description": o.description}
                                                        for o in d.options]}) + b"\n" for d in _queue()))
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(rows), "--output", str(out), "--layout", "auto", "--mode", "shared"]) == 0
    assert "layout auto: question-major" in capsys.readouterr().err
    recs = read_records(out)
    validate_records(recs)
    assert {r["layout"] for r in recs} == {"question-major"}
    with pytest.raises(SystemExit) as exc:  # argparse's own refusal of an unknown layout
        cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "x.jsonl"), "--layout", "sideways"])
    assert exc.value.code == 2 and "sideways" in capsys.readouterr().err


def test_prompt_command_shows_the_layout(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["prompt", "--input", str(SHAPE), "--id", "s01-c02", "--layout", "question-major", "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["layout"] == "question-major" and doc["prompt_version"] == "semif-question-major-v1"
    assert doc["prompt"].index("Question:") < doc["prompt"].index("State:") and doc["demos"] is None
    assert 0 < doc["shared_head_tokens"] < doc["input_tokens"]
    assert cli.main(["prompt", "--input", str(SHAPE), "--id", "s01-c02", "--layout", "question-major"]) == 0
    assert "layout question-major (semif-question-major-v1); shared head" in capsys.readouterr().out


def test_api_layout_is_checked_and_used():
    with pytest.raises(SemifError, match="layout: 'diagonal' is not one of state-major, question-major, auto"):
        Scorer(backend=FakeBackend(), layout="diagonal")
    rows = [{"id": d.id, "state": d.state, "question": d.question,
             "options": [{"id": o.id, "description": o.description} for o in d.options]} for d in _queue(3)]
    with Scorer(backend=FakeBackend(), mode="shared", layout="auto") as s:
        recs = s.decide_many(rows)
    assert {r.record["layout"] for r in recs} == {"question-major"}


# --- the real SmolLM2 tokenizer -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smol_reference():
    """SmolLM2-135M's reference tokenizer from its verified GGUF (no weights)."""
    from transformers import AutoTokenizer

    from scorer.models import store
    from scorer.prompting.tokenizer import HFTokenizer, gguf_tokenizer_folder

    entry = store.REGISTRY["smollm2-135m"]
    folder, _ = gguf_tokenizer_folder(store.fetch(entry, progress=False), entry.sha256)
    return HFTokenizer(AutoTokenizer.from_pretrained(str(folder)))


@pytest.mark.slow
def test_state_major_hashes_equal_the_committed_records(smol_reference):
    """Committed SmolLM2 records (scored before layouts existed) pin state-major's prompts and token ids."""
    rows = {d.id: d for d in load_decisions(AUTHORED)}
    recs = [orjson.loads(line) for line in COMMITTED.read_bytes().splitlines() if line.strip()]
    assert len(recs) == len(rows) == 136
    for rec in recs:
        p = layouts.render(smol_reference, rows[rec["id"]], layouts.STATE_MAJOR)
        assert (p.sha256, p.tokens_sha256, len(p.ids)) == (rec["prompt_sha256"], rec["tokens_sha256"],
                                                           rec["input_tokens"]), rec["id"]
        assert p.version == rec["prompt_version"] == PROMPT_VERSION


@pytest.mark.slow
@pytest.mark.parametrize("k", [0, 2])
def test_question_major_renders_and_validates_on_smollm2(smol_reference, k):
    """Rendering validates every slot (one token, decodes to its letter, distinct, stable at the prompt's end);
    the head is a token prefix of the prompt, shared by rows of one question (without demonstrations: with
    them, rows of different groups may be shown different ones)."""
    from scorer.prompting.demos import load_demos, prompt_for

    rows = load_decisions(AUTHORED)
    demos = load_demos(AUTHORED, k=k) if k else None
    prompts = [prompt_for(smol_reference, d, layouts.QUESTION_MAJOR, demos) for d in rows]
    vocab = smol_reference.vocab_size
    for p in prompts:
        assert all(0 <= t < vocab for t in p.ids) and smol_reference.decode(p.ids) == p.text  # vocabulary, round trip
        assert [smol_reference.decode([t]) for t in p.slot_ids] == list(p.letters)  # single-token slots
        head = prefix_ids(smol_reference, p)
        assert 0 < len(head) < len(p.ids) and p.ids[: len(head)] == head
    by_question: dict[tuple[str, tuple[Option, ...]], set[tuple[int, ...]]] = {}
    for d, p in zip(rows, prompts, strict=True):
        by_question.setdefault((d.question, d.options), set()).add(tuple(prefix_ids(smol_reference, p)))
    if not k:
        assert all(len(h) == 1 for h in by_question.values())
    else:
        assert all(len(p.demo_ids) == k for p in prompts)


@pytest.mark.slow
@pytest.mark.llamacpp
def test_question_major_passes_the_three_gguf_validations(smol_reference, tmp_path):
    """The llama.cpp backend's three checks on question-major prompts with demonstrations: vocabulary parity
    (same vocabulary, identical encodings), single-token slots, per-row parity (the round trip of the ids)."""
    from scorer.backends.gguf_check import check_encodings, check_row, check_slots, check_vocabulary
    from scorer.backends.llamacpp_vocab import GGUFVocab
    from scorer.models import store
    from scorer.prompting.demos import load_demos, prompt_for

    vocab = GGUFVocab(store.fetch(store.REGISTRY["smollm2-135m"], progress=False))
    rows = load_decisions(AUTHORED)
    demos = load_demos(AUTHORED, k=2)
    prompts = [prompt_for(smol_reference, d, layouts.QUESTION_MAJOR, demos) for d in rows[:24]]
    hf = smol_reference.hf
    check_vocabulary(hf.convert_ids_to_tokens(list(range(len(hf)))), vocab)
    check_encodings(smol_reference, vocab, [p.text for p in prompts[:4]])
    for p in prompts:
        assert len(p.demo_ids) == 2
        check_slots(p, vocab)
        check_row(p, vocab)
