"""`semif score --permute K / --temperature T` on the fake backend, and the eval/calibrate/order/perturb
commands end to end on records it produced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.decision import permute
from scorer.evaluation import eval_report as ev
from scorer.formats.envelope import envelope_problems
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import load_decisions
from scorer.scoring.file_run import run_score
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
BOUNDARY = ROOT / "data" / "eval" / "boundary.jsonl"
AUTHORED = ROOT / "data" / "eval" / "authored.jsonl"


def _rows(path: Path, n: int):
    return load_decisions(path)[:n]


def _score(tmp_path: Path, rows, name: str, **kw) -> Path:
    out = tmp_path / f"{name}.jsonl"
    run_score(rows, FakeBackend(), out, ScoreConfig(mode=kw.pop("mode", "direct"), run_parts={"input": name}, **kw))
    return out


def test_permute_shifts():
    assert permute.permute_shifts(2, 2) == [0, 1]
    assert permute.permute_shifts(3, 2) == [0, 1]
    assert permute.permute_shifts(4, 2) == [0, 2]
    assert permute.permute_shifts(6, 3) == [0, 2, 4]
    assert permute.permute_shifts(2, 5) == [0, 1]  # never more orderings than options
    assert permute.permute_shifts(5, 1) == [0]


@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_permute_averages_the_rotations_aligned_by_id(tmp_path, mode):
    # Routing rows: 3-6 options, so passes cover different subsets of rows when K > 3.
    rows = [d for d in load_decisions(AUTHORED) if d.extra["family"] == "routing"][:6]
    out = _score(tmp_path, rows, "perm", mode=mode, permute=4)
    recs = read_records(out)
    validate_records(recs)
    assert [r["id"] for r in recs] == [d.id for d in rows]
    assert [r["run"]["index"] for r in recs] == list(range(len(rows)))
    from scorer.evaluation.perturb import rotate

    be = FakeBackend()
    for d, r in zip(rows, recs, strict=True):
        shifts = permute.permute_shifts(len(d.options), 4)
        assert r["permute"]["shifts"] == shifts and r["timing"]["permute_passes"] == len(shifts)
        single = [next(score_items(be, prepare(be, [rotate(d, s)], with_prefix=False), "direct", {"x": 1}))
                  for s in shifts]
        aligned = [[x["probabilities"][x["option_ids"].index(o)] for o in d.option_ids] for x in single]
        assert r["probabilities"] == pytest.approx(list(np.mean(aligned, axis=0)), abs=1e-6)
        assert r["option_ids"] == d.option_ids
        p = np.asarray(r["probabilities"])
        assert r["choice"] == d.option_ids[int(np.argmax(p))]
        assert np.exp(r["option_logits"]) / np.exp(r["option_logits"]).sum() == pytest.approx(p)
        assert r["permute"]["choices"] == [x["choice"] for x in single]


def test_permute_merge_ties_and_timing():
    base = {"option_ids": ["yes", "no"], "probabilities": [0.8, 0.2], "choice": "yes", "allowed_token_mass": 0.9,
            "score_kind": "s", "timing": {"total_s": 1.0, "forward_s": 0.9}, "prompt_sha256": "a", "input_tokens": 10,
            "run": {"index": 0}}
    rev = {**base, "option_ids": ["no", "yes"], "choice": "no", "allowed_token_mass": 0.7,
           "timing": {"total_s": 2.0, "forward_s": 1.5}, "prompt_sha256": "b"}
    m = permute.merge_permuted([base, rev], 2, [0, 1], 5)
    # a pure position bias (always 0.8 on the first letter) averages out to an exact tie
    assert m["probabilities"] == [0.5, 0.5] and m["tie"] is True and m["choice"] is None
    assert m["tied_option_ids"] == ["yes", "no"] and m["margin"] == 0.0
    assert m["timing"]["total_s"] == 3.0 and m["timing"]["permute_passes"] == 2
    assert m["allowed_token_mass"] == pytest.approx(0.8) and m["run"]["index"] == 5
    assert m["permute"]["choices"] == ["yes", "no"]


def test_temperature_on_score_keeps_choices(tmp_path):
    rows = _rows(BOUNDARY, 5)
    plain = read_records(_score(tmp_path, rows, "plain"))
    hot = read_records(_score(tmp_path, rows, "hot", temperature=3.0))
    validate_records(hot)
    assert [r["choice"] for r in plain] == [r["choice"] for r in hot]
    assert all(r["temperature"] == 3.0 for r in hot)
    assert all(h["margin"] <= p["margin"] + 1e-12 for p, h in zip(plain, hot, strict=True))
    assert plain[0]["run"]["config_sha256"] != hot[0]["run"]["config_sha256"]


def test_permute_resume_refuses_another_configuration(tmp_path):
    rows = _rows(BOUNDARY, 3)
    out = _score(tmp_path, rows, "p", permute=2)
    from scorer.core.errors import InputError

    with pytest.raises(InputError, match="config_sha256"):
        run_score(rows, FakeBackend(), out, ScoreConfig(run_parts={"input": "p"}, resume=True))
    assert run_score(rows, FakeBackend(), out, ScoreConfig(run_parts={"input": "p"}, resume=True, permute=2)) == 0


def test_eval_cli_end_to_end(tmp_path, capsys):
    rows = _rows(BOUNDARY, 12)
    run = _score(tmp_path, rows, "run")
    other = _score(tmp_path, load_decisions(_perturbed(tmp_path, rows)), "rev-run")
    rep = tmp_path / "eval.json"
    assert cli.main(["eval", str(run), "--labels", str(BOUNDARY), "--output", str(rep), "--reps", "50",
                     "--compare", str(other)]) == 0
    text = capsys.readouterr().out
    assert "accuracy" in text and "paired" in text
    doc = orjson.loads(rep.read_bytes())
    assert (doc["kind"], doc["format"]) == ("eval", "semif-eval-v2") and not envelope_problems(doc)
    assert set(doc["inputs"]) == {"run", "labels", "compare.run_b"}
    # 12 of the 24 labelled rows have records: the other 12 count as missing and wrong.
    assert doc["counts"]["rows"] == 24 and doc["counts"]["missing"] == 12
    assert doc["labels"]["sha256"] and doc["run"]["sha256"] and doc["versions"]["semif"]
    assert doc["metrics"]["accuracy"]["value"] <= 0.5
    assert doc["compare"]["rows"] == 24
    assert doc["time"]["rows_timed"] == 12
    assert doc["time"]["total_s"] == pytest.approx(sum(r["timing"]["total_s"] for r in read_records(run)), abs=1e-5)
    chosen = [r["letters"][r["option_ids"].index(r["choice"])] for r in read_records(run) if r["choice"]]
    assert doc["letter_bias"]["chosen"] == {k: chosen.count(k) for k in sorted(set(chosen))}
    assert sum(doc["letter_bias"]["gold"].values()) == 12
    # without --labels, records' extra.label is used (only the 12 scored rows)
    assert cli.main(["eval", str(run), "--output", str(tmp_path / "e2.json"), "--reps", "20"]) == 0
    assert orjson.loads((tmp_path / "e2.json").read_bytes())["counts"]["rows"] == 12
    # never overwrite silently
    assert cli.main(["eval", str(run), "--output", str(rep), "--reps", "20"]) == 2


def _perturbed(tmp_path: Path, rows) -> Path:
    from scorer.evaluation.perturb import perturb, row_json

    p = tmp_path / "rev.jsonl"
    p.write_text("".join(row_json(perturb(d, ["reverse"])) + "\n" for d in rows), encoding="utf-8")
    return p


def test_calibrate_cli_fits_and_applies(tmp_path, capsys):
    rows = load_decisions(AUTHORED)[:30]
    run = _score(tmp_path, rows, "run")
    applied = tmp_path / "cal.jsonl"
    assert cli.main(["calibrate", str(run), "--output", str(tmp_path / "c.json"), "--reps", "20", "--folds", "3",
                     "--apply", str(applied)]) == 0
    doc = orjson.loads((tmp_path / "c.json").read_bytes())
    t = doc["fit_all_rows"]["temperature"]
    assert doc["out_of_fold"]["argmax_unchanged"] is True and len(doc["out_of_fold"]["per_fold"]) == 3
    raw, cal = read_records(run), read_records(applied)
    validate_records(cal)
    assert [r["choice"] for r in raw] == [r["choice"] for r in cal]
    assert all(r["temperature"] == pytest.approx(t) for r in cal)
    # calibrating calibrated records is refused
    assert cli.main(["calibrate", str(applied), "--output", str(tmp_path / "c2.json"), "--reps", "5"]) == 2
    assert "T =" in capsys.readouterr().out


def test_order_cli(tmp_path, capsys):
    rows = _rows(BOUNDARY, 8)
    rev_rows = load_decisions(_perturbed(tmp_path, rows))
    base, rev = _score(tmp_path, rows, "base"), _score(tmp_path, rev_rows, "rev2")
    pb, pr = _score(tmp_path, rows, "pb", permute=2), _score(tmp_path, rev_rows, "pr", permute=2)
    out = tmp_path / "order.json"
    assert cli.main(["order", "--base", str(base), "--reversed", str(rev), "--permuted", str(pb),
                     "--permuted-reversed", str(pr), "--output", str(out), "--reps", "20"]) == 0
    doc = orjson.loads(out.read_bytes())
    # binary rows with K = 2 see the same two orderings either way: the averaged readout cannot flip
    assert doc["permuted"]["flips"] == 0
    assert doc["plain"]["flips"] == sum(a["choice"] != b["choice"]
                                        for a, b in zip(read_records(base), read_records(rev), strict=True))
    assert doc["cost"]["time_ratio"] > 0
    assert "flips" in capsys.readouterr().out


def test_perturb_cli(tmp_path):
    out = tmp_path / "w.jsonl"
    assert cli.main(["perturb", "--input", str(BOUNDARY), "--kind", "wrap,distract", "--output", str(out)]) == 0
    rows = load_decisions(out)
    assert len(rows) == 24 and rows[0].extra["perturbation"] == "wrap+distract"
    assert cli.main(["perturb", "--input", str(BOUNDARY), "--kind", "shuffle", "--output", str(tmp_path / "x")]) == 2


def test_score_cli_rejects_bad_permute_and_temperature(tmp_path):
    for flag in (["--permute", "0"], ["--temperature", "0"], ["--temperature", "-1"], ["--temperature", "inf"]):
        with pytest.raises(SystemExit):
            cli.main(["score", "--input", str(BOUNDARY), "--output", str(tmp_path / "o.jsonl"), *flag])


@pytest.mark.slow
def test_permute_on_a_real_model(smol_torch, tmp_path):
    rows = _rows(BOUNDARY, 3)
    out = tmp_path / "smol.jsonl"
    run_score(rows, smol_torch, out, ScoreConfig(run_parts={"input": "smol"}, permute=2))
    recs = read_records(out)
    validate_records(recs)
    for r in recs:
        assert len(r["permute"]["probabilities"]) == 2
        assert sum(r["probabilities"]) == pytest.approx(1.0)
        assert r["permute"]["prompt_sha256"][0] != r["permute"]["prompt_sha256"][1]
    rep = ev.eval_report(str(out), str(BOUNDARY), reps=20)
    assert rep["counts"]["rows"] == 24 and rep["counts"]["missing"] == 21 and rep["counts"]["invalid"] == 0
