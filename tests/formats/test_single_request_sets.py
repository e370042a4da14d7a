"""The labelled single-request sets ``data/eval/single.jsonl`` (its families vote in the label-free selection),
``data/eval/heldout.jsonl``, ``data/eval/heldout2.jsonl`` and ``data/eval/heldout3.jsonl`` (all held out from every
choice of a default): valid rows, each rebuilt byte for byte by its builder, balanced (question types, choice label
positions, yes/no, score levels), and made of families and states that no other labelled file of the project
uses."""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from scorer.formats.rows import Decision, load_decisions

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "data" / "eval"
EXTRA_KEYS = {"label", "family", "group", "why", "difficulty"}
NOT_SINGLE_REQUEST = [EVAL / "authored.jsonl", EVAL / "boundary.jsonl", ROOT / "scorer" / "data" / "demos" /
                      "decisions.jsonl", ROOT / "data" / "examples" / "decisions.jsonl"]
OLD_FAMILIES = {"evidence", "missing", "rule", "routing", "boundary"}


@dataclass(frozen=True)
class LabelledSet:
    """One set, its builder and the bounds it is held to (the held-out sets were written to tighter ones)."""

    name: str
    rows_fn: str
    families: tuple[int, int]
    group_size: tuple[int, int]
    choice_options: tuple[int, int]
    hard_share: tuple[float, float]
    others: tuple[str, ...] = ()
    """The single-request sets whose families and states this one must not share."""

    @property
    def path(self) -> Path:
        return EVAL / f"{self.name}.jsonl"

    def builder(self) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"build_{self.name}", EVAL / f"build_{self.name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod


SETS = [LabelledSet("single", "rows_single", (6, 8), (2, 5), (2, 6), (0.15, 1.0)),
        LabelledSet("heldout", "rows_heldout", (7, 8), (2, 4), (3, 5), (0.25, 0.45), others=("single",)),
        LabelledSet("heldout2", "rows_heldout2", (7, 8), (2, 4), (3, 5), (0.25, 0.45), others=("single", "heldout")),
        LabelledSet("heldout3", "rows_heldout3", (7, 8), (2, 4), (3, 5), (0.25, 0.45),
                    others=("single", "heldout", "heldout2"))]
HELD_OUT = [s for s in SETS if s.name.startswith("heldout")]


@pytest.fixture(scope="module", params=SETS, ids=[s.name for s in SETS])
def labelled(request: pytest.FixtureRequest) -> tuple[LabelledSet, list[Decision]]:
    return request.param, load_decisions(request.param.path)


def test_file_is_what_the_builder_writes(labelled, tmp_path):
    spec, _ = labelled
    mod = spec.builder()
    out = tmp_path / f"{spec.name}.jsonl"
    mod.dump(out, getattr(mod, spec.rows_fn)())
    assert out.read_bytes() == spec.path.read_bytes()
    mod.dump(tmp_path / "again.jsonl", getattr(mod, spec.rows_fn)())
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


@pytest.mark.parametrize("spec", HELD_OUT, ids=[s.name for s in HELD_OUT])
def test_the_held_out_builder_says_so(spec: LabelledSet):
    doc = " ".join((spec.builder().__doc__ or "").split())
    assert "HELD OUT" in doc and "no default, method or readout was chosen on it" in doc


def test_rows_are_labelled_and_complete(labelled):
    _, rows = labelled
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


def test_groups_share_one_state_and_family(labelled):
    spec, rows = labelled
    by_group: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        by_group.setdefault(r.extra["group"], set()).add((r.extra["family"], json.dumps(r.state)))
    assert all(len(v) == 1 for v in by_group.values())
    states = [next(iter(v))[1] for v in by_group.values()]
    assert len(states) == len(set(states)), "a state belongs to one group only"
    lo, hi = spec.group_size
    sizes = Counter(r.extra["group"] for r in rows)
    assert all(lo <= n <= hi for n in sizes.values()), sizes


def _others(spec: LabelledSet) -> list[Path]:
    return NOT_SINGLE_REQUEST + [EVAL / f"{o}.jsonl" for o in spec.others]


def test_families_and_states_are_new(labelled):
    spec, rows = labelled
    families = {r.extra["family"] for r in rows}
    lo, hi = spec.families
    assert lo <= len(families) <= hi
    others: set[str] = set()
    for path in _others(spec):
        for d in load_decisions(path):
            if "family" in d.extra:
                others.add(d.extra["family"])
    assert others >= OLD_FAMILIES
    assert not families & others, families & others
    assert min(Counter(r.extra["family"] for r in rows).values()) >= 15
    ours = {json.dumps(r.state) for r in rows}
    for path in _others(spec):
        assert not ours & {json.dumps(d.state) for d in load_decisions(path)}, path.name


def test_type_balance(labelled):
    spec, rows = labelled
    types = Counter(r.type for r in rows)
    assert set(types) == {"choice", "yesno", "score"}
    for t, n in types.items():
        assert 0.28 <= n / len(rows) <= 0.40, (t, n)
    hard = [r for r in rows if r.extra.get("difficulty") == "hard"]
    lo, hi = spec.hard_share
    assert lo * len(rows) <= len(hard) <= hi * len(rows)
    assert {r.type for r in hard} == {"choice", "yesno", "score"}


def test_choice_labels_spread_over_positions(labelled):
    spec, rows = labelled
    choice = [r for r in rows if r.type == "choice"]
    pos = Counter(r.option_ids.index(r.extra["label"]) for r in choice)
    lo, hi = spec.choice_options
    assert all(lo <= len(r.option_ids) <= hi for r in choice)
    assert max(pos.values()) <= 0.40 * len(choice)
    assert pos[0] <= 0.30 * len(choice), "the gold option is not usually listed first"
    assert len(pos) >= 4


def test_yesno_is_half_yes(labelled):
    _, rows = labelled
    yesno = [r for r in rows if r.type == "yesno"]
    assert all(r.option_ids == ["yes", "no"] for r in yesno)
    yes = sum(r.extra["label"] == "yes" for r in yesno)
    assert 0.40 <= yes / len(yesno) <= 0.60


def test_score_levels_and_spread(labelled):
    _, rows = labelled
    score = [r for r in rows if r.type == "score"]
    assert all(3 <= len(r.option_ids) <= 5 for r in score)
    assert all(all(o.description.strip() for o in r.options) for r in score)
    where: Counter[str] = Counter()
    for r in score:
        i, n = r.option_ids.index(r.extra["label"]), len(r.option_ids)
        where["lowest" if i == 0 else "highest" if i == n - 1 else "middle"] += 1
    assert where["lowest"] >= 0.15 * len(score)
    assert where["highest"] >= 0.15 * len(score)
    assert where["middle"] >= 0.25 * len(score)
    assert max(where.values()) <= 0.60 * len(score)
