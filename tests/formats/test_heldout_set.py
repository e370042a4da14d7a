"""The held-out labelled single-request set ``data/eval/heldout.jsonl``: valid rows, rebuilt byte for byte by
``data/eval/build_heldout.py``, balanced (question types, choice label positions, yes/no, score levels), and made of
families that no other labelled file of the project uses (so no default was ever chosen on them)."""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from scorer.formats.rows import load_decisions

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "data" / "eval" / "heldout.jsonl"
BUILDER = ROOT / "data" / "eval" / "build_heldout.py"
OTHER_LABELLED = [ROOT / "data" / "eval" / "single.jsonl", ROOT / "data" / "eval" / "authored.jsonl",
                  ROOT / "data" / "eval" / "boundary.jsonl", ROOT / "scorer" / "data" / "demos" / "decisions.jsonl",
                  ROOT / "data" / "examples" / "decisions.jsonl"]
OLD_FAMILIES = {"evidence", "missing", "rule", "routing", "boundary", "returns", "incident", "hr", "contract",
                "review", "travel", "health-admin", "moderation"}
EXTRA_KEYS = {"label", "family", "group", "why", "difficulty"}


@pytest.fixture(scope="module")
def rows():
    return load_decisions(HELDOUT)


def _builder():
    spec = importlib.util.spec_from_file_location("build_heldout", BUILDER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_file_is_what_the_builder_writes(tmp_path):
    mod = _builder()
    out = tmp_path / "heldout.jsonl"
    mod.dump(out, mod.rows_heldout())
    assert out.read_bytes() == HELDOUT.read_bytes()
    mod.dump(tmp_path / "again.jsonl", mod.rows_heldout())
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


def test_builder_says_the_set_is_held_out():
    doc = " ".join((_builder().__doc__ or "").split())
    assert "HELD OUT" in doc
    assert "no default, method or readout was chosen on it" in doc


def test_rows_are_labelled_and_complete(rows):
    assert len(rows) >= 150
    assert len({r.id for r in rows}) == len(rows)
    for r in rows:
        assert set(r.extra) <= EXTRA_KEYS, r.id
        assert r.extra["label"] in r.option_ids, r.id
        why = r.extra["why"]
        assert isinstance(why, str) and why.strip(), r.id
        assert not re.search(r'[.!?]"? [A-Z]', why), f"{r.id}: why is one sentence"
        assert re.fullmatch(re.escape(r.extra["family"]) + r"-\d\d", r.extra["group"]), r.id
        assert r.id.startswith(r.extra["group"] + "-"), r.id
        assert r.extra.get("difficulty", "hard") == "hard", r.id
        assert isinstance(r.state, str) and 40 <= len(r.state.split()) <= 250, r.id
        for oid in r.option_ids:
            assert re.fullmatch(r"[a-z0-9][a-z0-9-]{0,19}", oid), (r.id, oid)


def test_groups_share_one_state_and_family(rows):
    by_group: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        by_group.setdefault(r.extra["group"], set()).add((r.extra["family"], json.dumps(r.state)))
    assert all(len(v) == 1 for v in by_group.values())
    states = [next(iter(v))[1] for v in by_group.values()]
    assert len(states) == len(set(states)), "a state belongs to one group only"
    sizes = Counter(r.extra["group"] for r in rows)
    assert all(2 <= n <= 4 for n in sizes.values()), sizes


def test_families_are_new(rows):
    families = {r.extra["family"] for r in rows}
    assert 7 <= len(families) <= 8
    others: set[str] = set()
    for path in OTHER_LABELLED:
        for d in load_decisions(path):
            if "family" in d.extra:
                others.add(d.extra["family"])
    assert others >= OLD_FAMILIES
    assert not families & others, families & others
    assert min(Counter(r.extra["family"] for r in rows).values()) >= 15


def test_no_state_is_shared_with_another_labelled_file(rows):
    ours = {json.dumps(r.state) for r in rows}
    for path in OTHER_LABELLED:
        assert not ours & {json.dumps(d.state) for d in load_decisions(path)}, path.name


def test_type_balance(rows):
    types = Counter(r.type for r in rows)
    assert set(types) == {"choice", "yesno", "score"}
    for t, n in types.items():
        assert 0.28 <= n / len(rows) <= 0.40, (t, n)
    hard = [r for r in rows if r.extra.get("difficulty") == "hard"]
    assert 0.25 * len(rows) <= len(hard) <= 0.45 * len(rows)
    assert {r.type for r in hard} == {"choice", "yesno", "score"}


def test_choice_labels_spread_over_positions(rows):
    choice = [r for r in rows if r.type == "choice"]
    pos = Counter(r.option_ids.index(r.extra["label"]) for r in choice)
    assert all(3 <= len(r.option_ids) <= 5 for r in choice)
    assert max(pos.values()) <= 0.40 * len(choice)
    assert pos[0] <= 0.30 * len(choice), "the gold option is not usually listed first"
    assert len(pos) >= 4


def test_yesno_is_half_yes(rows):
    yesno = [r for r in rows if r.type == "yesno"]
    assert all(r.option_ids == ["yes", "no"] for r in yesno)
    yes = sum(r.extra["label"] == "yes" for r in yesno)
    assert 0.40 <= yes / len(yesno) <= 0.60


def test_score_levels_and_spread(rows):
    score = [r for r in rows if r.type == "score"]
    assert all(3 <= len(r.option_ids) <= 5 for r in score)
    assert all(all(o.description.strip() for o in r.options) for r in score)
    where = Counter()
    for r in score:
        i, n = r.option_ids.index(r.extra["label"]), len(r.option_ids)
        where["lowest" if i == 0 else "highest" if i == n - 1 else "middle"] += 1
    assert where["lowest"] >= 0.15 * len(score)
    assert where["highest"] >= 0.15 * len(score)
    assert where["middle"] >= 0.25 * len(score)
    assert max(where.values()) <= 0.60 * len(score)
