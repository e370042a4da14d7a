"""Demonstrations (scorer/prompting/demos.py): never the scored row nor a row of its group (property test), balanced
over
labels, deterministic by seed, rendered as earlier chat turns in the reusable head of question-major and after
the state in state-major, listed in the records; bad files refused with file:line:field, exit 2."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend, FakeTokenizer, row_of
from hypothesis import given, settings
from hypothesis import strategies as st

from scorer import cli
from scorer.api import Scorer
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import Decision, Option
from scorer.prompting import layouts
from scorer.prompting.demos import Demos, demo_of, load_demos, prompt_for
from scorer.prompting.prompt import prefix_ids
from scorer.scoring.file_run import run_score
from scorer.scoring.options import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
AUTHORED = ROOT / "data" / "eval" / "authored.jsonl"
_YN = (Option("yes", "Yes"), Option("no", "No"))


def _row(i: int, label: str = "yes", group: Any = None, family: str | None = None, question: str = "Is it late?",
         options: tuple[Option, ...] = _YN, state: str | None = None) -> Decision:
    extra: dict[str, Any] = {"label": label}
    if group is not None:
        extra["group"] = group
    if family is not None:
        extra["family"] = family
    return Decision(f"r{i}", state or f"Order {i} arrived {i} days after the promised date.", question, options,
                    extra, f"rows:{i + 1}")


def _demos(rows: list[Decision], k: int = 4, seed: int = 0) -> Demos:
    return Demos([demo_of(d, "demos.jsonl", n) for n, d in enumerate(rows, start=1)], k, seed)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


# --- selection ------------------------------------------------------------------------------------------------
QUESTIONS = ["Is it late?", "Is it damaged?", "Is a refund asked for?"]
POOL = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["yes", "no"]), st.one_of(st.none(), st.integers(0, 4)),
                          st.sampled_from(["f1", "f2", None])), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None, database=None)
@given(pool=POOL, k=st.integers(1, 8), seed=st.integers(0, 10**6), pick=st.integers(0, 29))
def test_a_row_or_its_group_never_appears_among_its_demos(pool, k, seed, pick):
    rows = [_row(i, label, group, fam, QUESTIONS[q]) for i, (q, label, group, fam) in enumerate(pool)]
    demos = _demos(rows, k, seed)
    row = rows[pick % len(rows)]  # the demonstrations file is the input itself: the hard case
    chosen = demos.pick(row)
    ids = [s.id for s in chosen.shown]
    assert row.id not in ids and len(ids) == len(set(ids)) <= k
    group = row.extra.get("group")
    if group is not None:
        assert all(demos.by_id[i].group != str(group) for i in ids)
    eligible = [d for d in rows if d.id != row.id and (group is None or d.extra.get("group") != group)]
    assert len(ids) == min(k, len(eligible))  # as many as asked, whenever the file has them
    assert demos.pick(row) == chosen  # deterministic


def test_levels_fall_back_from_signature_to_family_to_generic():
    rows = ([_row(i, "yes" if i % 2 else "no", family="late") for i in range(2)]
            + [_row(10 + i, "no", family="late", question="Is it damaged?") for i in range(2)]
            + [_row(20 + i, "yes", question="Is a refund asked for?") for i in range(3)])
    demos = _demos(rows, k=4)
    target = _row(99, family="late")
    got = demos.pick(target)
    ids = [s.id for s in got.shown]
    assert set(ids[:2]) == {"r0", "r1"} and set(ids[2:]) == {"r10", "r11"} and got.level == "family"
    assert _demos(rows, k=2).pick(target).level == "signature"
    assert _demos(rows, k=6).pick(target).level == "generic"
    assert _demos(rows, k=4).pick(_row(98, question="Something else?")).level == "generic"


def test_selection_is_balanced_over_labels_and_seeded():
    rows = [_row(i, "yes") for i in range(10)] + [_row(10 + i, "no") for i in range(3)]
    for seed in range(5):
        got = _demos(rows, k=4, seed=seed).pick(_row(99))
        labels = Counter(demo.label for demo in (_demos(rows).by_id[s.id] for s in got.shown))
        assert labels == {"yes": 2, "no": 2}
    picks = {tuple(s.id for s in _demos(rows, k=4, seed=seed).pick(_row(99)).shown) for seed in range(8)}
    assert len(picks) > 1  # the seed matters
    assert _demos(rows, seed=3).pick(_row(99)) == _demos(rows, seed=3).pick(_row(99))


def test_rows_outside_the_picked_groups_share_one_set_of_demos():
    pool = [_row(i, "yes" if i % 2 else "no", group=f"g{i}") for i in range(12)]
    demos = _demos(pool, k=4)
    others = [_row(100 + i, group=f"new{i}", state=f"Another order {i}.") for i in range(5)]
    assert len({tuple(s.id for s in demos.pick(r).shown) for r in others}) == 1  # the prefix stays shared


def test_a_pick_of_its_own_group_is_refused():
    from scorer.core.errors import ValidationError
    from scorer.prompting.demos import check_disjoint

    rows = [_row(0, group="g"), _row(1, group="g")]
    demos = _demos(rows)
    with pytest.raises(ValidationError, match="of its group"):
        check_disjoint(rows[0], [demos.by_id["r1"].shown], demos.by_id)


# --- rendering ------------------------------------------------------------------------------------------------
def test_question_major_demos_are_earlier_turns_inside_the_shared_head():
    tok = FakeTokenizer()
    demos = _demos([_row(i, "yes" if i % 2 else "no", state=f"Demo state {i}.") for i in range(4)], k=2)
    prompts = [prompt_for(tok, _row(50 + i, state=f"Scored state {i}."), layouts.QUESTION_MAJOR, demos)
               for i in range(3)]
    p = prompts[0]
    assert p.text.count("<|im_start|>user\n") == 3 and p.text.count("<|im_start|>assistant\n") == 3
    assert p.text.index("Demo state") < p.text.index("Scored state 0") and "Demo state" in p.prefix_text
    for demo_id in p.demo_ids:  # each demonstration's own letter follows it
        d = demos.by_id[demo_id]
        turn = f"Demo state {demo_id[1:]}.\n\nAnswer with one letter, A to B.<|im_end|>\n<|im_start|>assistant\n"
        assert turn + "AB"[d.shown.label_index] + "<|im_end|>" in p.text
    heads = {tuple(prefix_ids(tok, q)) for q in prompts}
    assert len(heads) == 1 and len(next(iter(heads))) > len(tok.encode(p.text[: p.text.index("Demo state")]))
    assert p.demos_k == 2 and p.signature_version == "semif-question-major-v1+demos-2"


def test_state_major_demos_come_first_and_the_rows_turn_is_semif_direct_v1():
    tok = FakeTokenizer()
    demos = _demos([_row(i, "no", state=f"Demo state {i}.") for i in range(2)], k=2)
    rows = [_row(50 + i, state=f"Scored state {i // 2}.", question=f"Question {i % 2}?") for i in range(4)]
    prompts = [prompt_for(tok, r, layouts.STATE_MAJOR, demos) for r in rows]
    p = prompts[0]
    t = p.text
    assert t.index("Demo state") < t.index("State:\nScored state 0.") and "Demo state" in p.prefix_text
    assert t.rstrip().endswith("B. No<|im_end|>\n<|im_start|>assistant")
    # the row's own turn is its semif-direct-v1 turn, unchanged
    plain = prompt_for(tok, rows[0], layouts.STATE_MAJOR, None)
    own = plain.text[plain.text.index("<|im_start|>user\n"):]
    assert t.endswith(own) and t.count("<|im_start|>user\n") == 3
    assert "Scored state 0." in p.prefix_text and "Question 0?" not in p.prefix_text
    assert p.version == "semif-state-major-demos-v1"
    assert p.signature_version == "semif-state-major-demos-v1+demos-2" == layouts.signature_version(
        layouts.STATE_MAJOR, 2)
    # one prefix per state (demonstrations + state), and the demonstrations' tokens shared by every row
    heads = [tuple(prefix_ids(tok, q)) for q in prompts]
    assert heads[0] == heads[1] and heads[2] == heads[3] and heads[0] != heads[2]
    demo_part = tok.encode(t[: t.index("State:\nScored state 0.")])
    common = next(i for i, (a, b) in enumerate(zip(heads[0], heads[2], strict=False)) if a != b)
    assert common >= len(demo_part) - 2


def test_records_list_their_demos_and_runs_name_them(tmp_path):
    rows = [_row(i, "yes" if i % 3 else "no", group=f"g{i % 4}") for i in range(12)]
    out = tmp_path / "o.jsonl"
    run_score(rows, FakeBackend(), out, ScoreConfig(mode="shared", layout="question-major", demos=_demos(rows, k=3)))
    recs = read_records(out)
    validate_records(recs)
    for rec, row in zip(recs, rows, strict=True):
        assert rec["demos"]["k"] == 3 and len(rec["demos"]["ids"]) == 3 and rec["demos"]["level"] == "signature"
        assert row.id not in rec["demos"]["ids"]
        assert all(f"g{int(i[1:]) % 4}" != row.extra["group"] for i in rec["demos"]["ids"])
    plain = tmp_path / "p.jsonl"
    run_score(rows, FakeBackend(), plain, ScoreConfig(mode="shared", layout="question-major"))
    base = read_records(plain)
    assert "demos" not in base[0] and base[0]["run"]["config_sha256"] != recs[0]["run"]["config_sha256"]
    assert base[0]["signature"] != recs[0]["signature"]


def test_demos_refuse_permute():
    from scorer.core.errors import ValidationError

    rows = [_row(i) for i in range(3)]
    with pytest.raises(ValidationError, match="--demos and --permute"):
        run_score(rows, FakeBackend(), Path("/nonexistent/never.jsonl"), ScoreConfig(permute=2, demos=_demos(rows)))


# --- the command line and the API -------------------------------------------------------------------------------
def test_cli_score_with_demos(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = tmp_path / "rows.jsonl"  # a slice of the authored set, scored with itself as demonstrations
    rows.write_bytes(b"".join(line + b"\n" for line in AUTHORED.read_bytes().splitlines()[:30]))
    groups = {r["id"]: r["group"] for r in map(orjson.loads, rows.read_bytes().splitlines())}
    argv = ["--input", str(rows), "--mode", "shared", "--layout", "question-major", "--demos", str(rows),
            "--demos-k", "2", "--seed", "7"]
    out, again = tmp_path / "o.jsonl", tmp_path / "again.jsonl"
    assert cli.main(["score", *argv, "--output", str(out)]) == 0
    recs = read_records(out)
    for r in recs:
        assert len(r["demos"]["ids"]) == 2 and r["id"] not in r["demos"]["ids"]
        assert all(groups[i] != groups[r["id"]] for i in r["demos"]["ids"])
    assert cli.main(["score", *argv, "--output", str(again)]) == 0
    assert [r["demos"] for r in read_records(again)] == [r["demos"] for r in recs]  # deterministic by seed
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "x.jsonl"), "--demos-k", "2"]) == 2
    assert "--demos-k: given without --demos" in capsys.readouterr().err


BAD_DEMOS = [  # (row edit, field named)
    (lambda r: r.pop("label"), "label"),
    (lambda r: r.update(label="maybe"), "label"),
    (lambda r: r.update(label=3), "label"),
    (lambda r: r.update(group=["a"]), "group"),
    (lambda r: r.update(group=""), "group"),
    (lambda r: r.update(family={"x": 1}), "family"),
    (lambda r: r.update(options=[]), "options"),
    (lambda r: r.pop("question"), "question"),
]


@pytest.mark.parametrize(("edit", "field"), BAD_DEMOS)
def test_bad_demos_file_is_refused_with_file_line_field(tmp_path, monkeypatch, capsys, edit, field):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded before the demos were checked"))
    rows = [row_of(_row(i, group=f"g{i}")) for i in range(3)]
    edit(rows[1])
    bad = _jsonl(tmp_path / "demos.jsonl", rows)
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(AUTHORED), "--output", str(out), "--demos", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"semif: error: {bad}:2: field '{field}': ") and "Traceback" not in err
    assert not out.exists()


def test_demos_file_that_is_missing_or_empty(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded"))
    for path in (tmp_path / "nope.jsonl", _jsonl(tmp_path / "empty.jsonl", [])):
        assert cli.main(["score", "--input", str(AUTHORED), "--output", str(tmp_path / "o.jsonl"), "--demos",
                         str(path)]) == 2
        assert f"semif: error: {path}" in capsys.readouterr().err


def test_api_demos(tmp_path):
    from scorer.core.errors import SemifError

    path = _jsonl(tmp_path / "d.jsonl", [row_of(_row(i, "yes" if i % 2 else "no")) for i in range(6)])
    with Scorer(backend=FakeBackend(), mode="shared", layout="question-major", demos=path, demos_k=2, seed=1) as s:
        d = s.decide("A new order came 9 days late.", "Is it late?", {"yes": "Yes", "no": "No"}, id="x")
    assert len(d.record["demos"]["ids"]) == 2 and d.record["layout"] == "question-major"
    with pytest.raises(SemifError, match="demos_k and seed"):
        Scorer(backend=FakeBackend(), demos_k=2)
    assert load_demos(path, 2, 1).config()["k"] == 2
