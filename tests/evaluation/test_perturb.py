"""The perturbation builder: what each kind does, that ids and labels survive, and byte-stability
(a rebuild equals the committed perturbed files byte for byte)."""

from __future__ import annotations

import hashlib

import pytest

from scorer.core.errors import InputError, OutputExistsError
from scorer.evaluation import perturb
from scorer.formats.rows import Decision, Option, load_decisions


def _d(state, n: int = 3, rid: str = "row-1") -> Decision:
    opts = tuple(Option(f"o{i}", f"Option {i}") for i in range(n))
    return Decision(rid, state, "Is it so?", opts, {"label": "o1", "family": "f", "group": "g"})


def test_reverse_and_rotate_keep_ids():
    d = _d("text", 4)
    assert [o.id for o in perturb.reverse(d).options] == ["o3", "o2", "o1", "o0"]
    assert [o.id for o in perturb.rotate(d, 1).options] == ["o1", "o2", "o3", "o0"]
    assert perturb.rotate(d, 4).options == d.options
    assert perturb.rotate(d, 6).options == perturb.rotate(d, 2).options
    for x in (perturb.reverse(d), perturb.rotate(d, 3)):
        assert sorted(x.option_ids) == sorted(d.option_ids) and x.extra["label"] == "o1"


def test_wrap_keeps_the_question_verbatim():
    d = _d("text")
    w = perturb.wrap(d)
    assert d.question in w.question and w.question != d.question
    assert w.question in {t.format(q=d.question) for t in perturb.WRAPPERS}
    assert perturb.wrap(d) == w  # deterministic


def test_distract_text_object_and_array():
    t = perturb.distract(_d("The state.  "))
    assert t.state.startswith("The state.\n\nUnrelated note: ") and t.state.split("\n\n")[1] in perturb.NOTES
    o = perturb.distract(_d({"a": 1, "unrelated_note": "mine"}))
    assert list(o.state) == ["a", "unrelated_note", "unrelated_note_2"] and o.state["unrelated_note"] == "mine"
    a = perturb.distract(_d([1, 2]))
    assert a.state[:2] == [1, 2] and a.state[2] in perturb.NOTES


def test_perturb_tags_and_composes():
    d = perturb.perturb(_d("s"), ["reverse", "wrap"])
    assert d.extra["perturbation"] == "reverse+wrap"
    assert perturb.perturb(d, ["distract"]).extra["perturbation"] == "reverse+wrap+distract"


def test_parse_kinds():
    assert perturb.parse_kinds("reverse, rotate-2") == ["reverse", "rotate-2"]
    for bad in ("", "shuffle", "rotate-x"):
        with pytest.raises(InputError):
            perturb.parse_kinds(bad)


def test_row_json_reproduces_the_builders_lines(data_dir):
    for name in ("authored", "boundary"):
        path = data_dir / "eval" / f"{name}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        assert [perturb.row_json(d) for d in load_decisions(path)] == lines


@pytest.mark.parametrize("kind", ["reverse", "wrap", "distract"])
@pytest.mark.parametrize("name", ["authored", "boundary"])
def test_committed_perturbed_files_rebuild_byte_for_byte(tmp_path, data_dir, kind, name):
    src = data_dir / "eval" / f"{name}.jsonl"
    out1, out2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert perturb.perturb_file(src, [kind], out1) == len(load_decisions(src))
    perturb.perturb_file(src, [kind], out2)
    assert out1.read_bytes() == out2.read_bytes()
    committed = data_dir / "eval" / f"perturbed-{kind}-{name}.jsonl"
    assert hashlib.sha256(out1.read_bytes()).hexdigest() == hashlib.sha256(committed.read_bytes()).hexdigest()
    rows, orig = load_decisions(out1), load_decisions(src)
    assert [r.id for r in rows] == [r.id for r in orig]
    for r, o in zip(rows, orig, strict=True):
        assert r.extra["label"] == o.extra["label"] and sorted(r.option_ids) == sorted(o.option_ids)
        if kind == "reverse":
            assert r.option_ids == o.option_ids[::-1] and r.state == o.state
        else:
            assert r.option_ids == o.option_ids


def test_perturb_file_refuses_to_overwrite(tmp_path, data_dir):
    out = tmp_path / "p.jsonl"
    perturb.perturb_file(data_dir / "eval" / "boundary.jsonl", ["reverse"], out)
    with pytest.raises(OutputExistsError):
        perturb.perturb_file(data_dir / "eval" / "boundary.jsonl", ["reverse"], out)
    perturb.perturb_file(data_dir / "eval" / "boundary.jsonl", ["reverse"], out, force=True)


def test_notes_mention_nothing_the_rows_ask_about(data_dir):
    text = "".join((data_dir / "eval" / f"{n}.jsonl").read_text(encoding="utf-8").lower()
                   for n in ("authored", "boundary"))
    for word in ("lighthouse", "quiz", "sunflower", "choir", "canteen", "lentil"):
        assert word not in text


def test_typed_rows_keep_their_type_and_score_levels_are_never_reordered(tmp_path):
    """A perturbed file keeps each row's question type; reversing or rotating a score question's ordered levels
    would change what it asks, so it is refused naming the row."""
    from scorer.core.errors import InputError
    from scorer.evaluation.perturb import perturb_file
    from scorer.formats.rows import load_decisions

    inp = tmp_path / "typed.jsonl"
    inp.write_text('{"id": "a", "state": "s", "question": "q?", "type": "yesno"}\n'
                   '{"id": "b", "state": "s", "question": "How bad?", "type": "score", '
                   '"options": ["low", "mid", "high"]}\n')
    assert perturb_file(inp, ["wrap"], tmp_path / "w.jsonl") == 2
    assert [d.type for d in load_decisions(tmp_path / "w.jsonl")] == ["yesno", "score"]
    with pytest.raises(InputError, match=r"typed.jsonl:2: field 'options': a score question perturbed by reverse"):
        perturb_file(inp, ["reverse"], tmp_path / "r.jsonl")
