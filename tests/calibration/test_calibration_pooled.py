"""Label-free priors that cover small signatures: the pooled fallback (signature → family → the same options →
the model's prior per option id), its estimators by hand, the level in every calibrated block (and the record
check that holds it), files old and new, and ``--calibration-fallback`` on the command line (fake backend)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.calibration import prior as prior_mod
from scorer.calibration.core import LEVELS, load_calibration, readout_block, write_calibration
from scorer.core.errors import InputError
from scorer.formats.records import check_record, read_records, validate_records
from scorer.formats.rows import Decision, Option
from scorer.scoring.file_run import run_score
from scorer.scoring.options import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
YN = (Option("yes", "Yes"), Option("no", "No"))
ABC = (Option("a", "First"), Option("b", "Second"), Option("c", "Third"))


def rows(n: int, question: str, options: tuple[Option, ...] = YN, family: str | None = "f",
         start: int = 0) -> list[Decision]:
    extra = {} if family is None else {"family": family}
    return [Decision(f"r{i}", f"case number {i}", question, options, dict(extra), f"mem:{i}")
            for i in range(start, start + n)]


def score(tmp_path: Path, decisions: list[Decision], name: str = "r", backend: Any = None) -> list[dict[str, Any]]:
    out = tmp_path / f"{name}.jsonl"
    run_score(decisions, backend or FakeBackend(bias={"A": 1.0}), out, ScoreConfig(run_parts={"input": name}))
    return read_records(out)


def sigs(recs: list[dict[str, Any]]) -> list[str]:
    return [r["signature"] for r in recs]


def _workload() -> list[Decision]:
    """One large signature and small ones that each fall to a different level of the pooled fallback."""
    return (rows(10, "Big?")                                        # signature: 10 rows of its own
            + rows(3, "Small, same family?", start=10)              # family f, yes/no: 13 rows
            + rows(3, "Small, other family?", family="g", start=13)  # family g has 3 rows: the yes/no options pool
            + rows(2, "Small, no family?", family=None, start=16)   # no family: the yes/no options pool
            + rows(3, "Three options?", ABC, family=None, start=18)  # options pool of 3 rows: global, which
            + rows(6, "Three, reversed?", (ABC[2], ABC[1], ABC[0]), family=None, start=21))  # has a, b, c: 9 rows


def test_pooled_fallback_covers_each_small_signature_at_the_nearest_level(tmp_path):
    recs = score(tmp_path, _workload())
    by_id = {r["id"]: r for r in recs}
    cal = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8, fallback="pooled")
    out = {r["id"]: r["calibrated"] for r in cal.apply_all(recs)}
    want = {"r0": ("signature", 10), "r10": ("family", 13), "r13": ("options", 18), "r16": ("options", 18),
            "r18": ("global", 27), "r21": ("global", 27)}
    assert {i: (out[i]["level"], out[i]["rows"]) for i in want} == want
    assert all(b["applied"] for b in out.values())
    # the global pool: a, b, c each seen in 9 rows (>= 8) have offsets; yes/no too (18 rows)
    (g,) = [e for e in cal.entries if e.level == "global"]
    assert sorted(g.offsets) == ["a", "b", "c", "no", "yes"] and g.option_ids is None
    assert out["r18"]["unseen_option_ids"] == []
    # the small signatures are still listed as without an entry of their own
    assert {s.signature for s in cal.uncalibrated} == {by_id[i]["signature"] for i in want if i != "r0"}
    validate_records(list(cal.apply_all(recs)))
    # with fallback none nothing but the signature is fitted; family covers r10 only (as before this change)
    none = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8)
    fam = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8, fallback="family")
    assert [e.level for e in none.entries] == ["signature"]
    assert [e.level for e in fam.entries] == ["signature", "family"]
    fam_out = {r["id"]: r["calibrated"] for r in fam.apply_all(recs)}
    assert fam_out["r10"]["level"] == "family" and fam_out["r13"]["applied"] is False
    # the pooled file's family entry is the very one of --fallback family
    pooled_fam = next(e for e in cal.entries if e.level == "family")
    assert pooled_fam == next(e for e in fam.entries if e.level == "family")


def test_global_pool_leaves_rarely_seen_options_out_and_covers_no_stranger(tmp_path):
    recs = score(tmp_path, rows(10, "Big?") + rows(3, "Three options?", ABC, family=None, start=10))
    cal = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8, fallback="pooled")
    # a, b, c have 3 rows each (< 8): the global pool knows only yes/no, which covers none of the small rows,
    # so it is not kept and the three-option row stays raw
    assert [e.level for e in cal.entries] == ["signature"]
    abc = next(r for r in cal.apply_all(recs) if r["id"] == "r10")["calibrated"]
    assert abc["applied"] is False and abc["level"] is None and abc["reason"] == "3 rows < --min-rows 8"
    # a file whose global entry knows none of a new row's options refuses the row, naming its signature
    big = score(tmp_path, _workload(), "w")
    pooled = prior_mod.fit_prior(big, sigs(big), "mean", min_rows=8, fallback="pooled")
    stranger = score(tmp_path, rows(2, "Colour?", (Option("red", "Red"), Option("blue", "Blue")), family=None), "s")
    with pytest.raises(InputError, match=f"no calibration for signature {stranger[0]['signature']}"):
        pooled.apply(stranger[0])
    # one known option is enough: the other gets offset 0 and is listed as unseen
    mixed = score(tmp_path, rows(2, "Mixed?", (Option("yes", "Yes"), Option("blue", "Blue")), family=None), "m")
    blk = pooled.apply(mixed[0])["calibrated"]
    assert blk["level"] == "global" and blk["unseen_option_ids"] == ["blue"] and blk["offsets"][1] == 0.0


def test_pooled_estimators_by_hand():
    p1, p2 = np.array([0.8, 0.2]), np.array([0.5, 0.3, 0.2])
    z = [np.log(p1) + 4.0, np.log(p2) - 1.0]  # a constant per row changes nothing
    ids = [("yes", "no"), ("yes", "no", "maybe")]
    mean = prior_mod.estimate_pooled(z, ids, "mean")
    assert mean == pytest.approx({"yes": math.log((2 * 0.8 + 3 * 0.5) / 2), "no": math.log((2 * 0.2 + 3 * 0.3) / 2),
                                  "maybe": math.log(3 * 0.2)})
    geo = prior_mod.estimate_pooled(z, ids, "geometric")
    c1, c2 = np.log(p1) - np.log(p1).mean(), np.log(p2) - np.log(p2).mean()
    assert geo == pytest.approx({"yes": (c1[0] + c2[0]) / 2, "no": (c1[1] + c2[1]) / 2, "maybe": c2[2]})
    bal = prior_mod.estimate_pooled(z, ids, "balanced")
    for o in ("yes", "no", "maybe"):  # the calibrated batch gives every option its uniform share
        shares = []
        for zz, row in zip(z, ids, strict=True):
            if o in row:
                q = np.exp(zz - np.array([bal[x] for x in row]))
                shares.append(len(row) * q[row.index(o)] / q.sum())
        assert np.mean(shares) == pytest.approx(1.0, abs=1e-9)
    assert prior_mod.estimate_pooled(z, ids, "mean", min_rows=2).keys() == {"yes", "no"}
    with pytest.raises(ValueError, match="does not pool"):
        prior_mod.estimate_pooled(z, ids, "content-free")


@pytest.mark.parametrize("estimator", prior_mod.BATCH_ESTIMATORS)
def test_global_pool_over_one_option_set_equals_the_signature_prior(estimator):
    rng = np.random.default_rng(7)
    z = rng.normal(0.0, 2.0, (40, 3)) + np.array([1.0, 0.0, -0.5])
    sig = prior_mod.estimate(z, estimator)
    pooled = prior_mod.estimate_pooled(list(z), [("a", "b", "c")] * len(z), estimator)
    diff = np.array([pooled[o] for o in "abc"]) - sig
    assert np.ptp(diff) == pytest.approx(0.0, abs=1e-7)  # equal up to a constant: the same calibrated numbers


def test_pooled_file_round_trip_and_old_files_still_load(tmp_path):
    recs = score(tmp_path, _workload())
    cal = prior_mod.fit_prior(recs, sigs(recs), "geometric", min_rows=8, fallback="pooled")
    path = tmp_path / "pooled.json"
    write_calibration(cal, path)
    loaded = load_calibration(path)
    assert [e.level for e in loaded.entries] == [e.level for e in cal.entries]
    assert loaded.meta["fallback"] == "pooled"
    for a, b in zip(cal.apply_all(recs), loaded.apply_all(recs), strict=True):
        assert {k: v for k, v in a["calibrated"].items() if k != "source"} == \
               {k: v for k, v in b["calibrated"].items() if k != "source"}
    # an options entry without its option ids is refused, naming the field
    doc = loaded.to_json()
    i = next(k for k, e in enumerate(doc["entries"]) if e["level"] == "options")
    del doc["entries"][i]["option_ids"]
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps(doc))
    with pytest.raises(InputError, match=rf"entries\[{i}\]\.option_ids"):
        load_calibration(bad)
    # the files written before this change (v1 fixture, committed v2 files) load as they did
    olds = [ROOT / "tests" / "fixtures" / "prior-fake.json", *sorted((ROOT / "data" / "results").glob("prior-*.json")),
            *sorted((ROOT / "data" / "results").glob("bias-*.json"))]
    assert len(olds) >= 3
    for old in olds:
        assert {e.level for e in load_calibration(old).entries} <= set(LEVELS)


def test_the_record_check_holds_level_and_applied_together(tmp_path):
    recs = score(tmp_path, _workload())
    cal = prior_mod.fit_prior(recs, sigs(recs), "mean", min_rows=8)
    done = list(cal.apply_all(recs))
    applied = next(r for r in done if r["calibrated"]["applied"])
    skipped = next(r for r in done if not r["calibrated"]["applied"])
    with pytest.raises(InputError, match=r"calibrated\.level"):
        check_record({**applied, "calibrated": {**applied["calibrated"], "level": None}}, "f", 1)
    with pytest.raises(InputError, match=r"calibrated\.level"):
        check_record({**skipped, "calibrated": {**skipped["calibrated"], "level": "options"}}, "f", 1)
    blk = skipped["calibrated"]
    moved = {**blk, "offsets": [0.5, 0.0], "option_logits": [v - 0.5 if i == 0 else v
                                                             for i, v in enumerate(blk["option_logits"])]}
    moved.update(readout_block(np.array(moved["option_logits"]), skipped["option_ids"], 0.0))
    with pytest.raises(InputError, match=r"calibrated\.offsets.*applied false"):
        check_record({**skipped, "calibrated": moved}, "f", 1)


# --- the command line ---------------------------------------------------------------------------------------------
@pytest.fixture
def fake(monkeypatch):
    backend = FakeBackend(bias={"A": 1.0})
    monkeypatch.setattr(cli, "load_backend", lambda cfg: backend)
    return backend


def _rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    lines = [orjson.dumps({"id": d.id, "state": d.state, "question": d.question,
                           "options": [{"id": o.id, "description": o.description} for o in d.options], **d.extra})
             for d in _workload()]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_batch_calibrate_with_the_pooled_fallback(tmp_path, fake, capsys):
    rows_path = _rows_file(tmp_path)
    out = tmp_path / "out.jsonl"
    assert cli.main(["score", "--input", str(rows_path), "--output", str(out), "--batch-calibrate",
                     "--calibration-fallback", "pooled"]) == 0
    recs = read_records(out)
    levels = {r["id"]: r["calibrated"]["level"] for r in recs}
    assert [levels[i] for i in ("r0", "r10", "r13", "r16", "r18")] == ["signature", "family", "options", "options",
                                                                        "global"]
    assert recs[0]["calibrated"]["source"]["fallback"] == "pooled"
    assert "left uncalibrated" not in capsys.readouterr().err  # every signature is covered
    # the default leaves the small ones raw and says so, one line per signature
    plain = tmp_path / "plain.jsonl"
    assert cli.main(["score", "--input", str(rows_path), "--output", str(plain), "--batch-calibrate"]) == 0
    assert capsys.readouterr().err.count("left uncalibrated") == 5
    assert {r["calibrated"]["level"] for r in read_records(plain)} == {"signature", None}
    # without --batch-calibrate the option is refused, naming it
    assert cli.main(["score", "--input", str(rows_path), "--output", str(tmp_path / "x.jsonl"),
                     "--calibration-fallback", "pooled"]) == 2
    err = capsys.readouterr().err
    assert "--calibration-fallback" in err and "without --batch-calibrate" in err and "Traceback" not in err


def test_calibrate_prior_cli_pooled(tmp_path, fake, capsys):
    rows_path = _rows_file(tmp_path)
    run = tmp_path / "run.jsonl"
    assert cli.main(["score", "--input", str(rows_path), "--output", str(run)]) == 0
    prior = tmp_path / "prior.json"
    assert cli.main(["calibrate", "prior", str(run), "--output", str(prior), "--fallback", "pooled"]) == 0
    text = capsys.readouterr().out
    assert "covered by the family level" in text and "covered by the global level" in text
    assert {e.level for e in load_calibration(prior).entries} == {"signature", "family", "options", "global"}
    applied = tmp_path / "applied.jsonl"
    assert cli.main(["calibrate", "apply", str(run), "--calibration", str(prior), "--output", str(applied)]) == 0
    assert all(r["calibrated"]["applied"] for r in read_records(applied))
