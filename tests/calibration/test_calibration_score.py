"""Calibration on the command line with the fake backend: `semif score --calibration / --batch-calibrate`
(refusals, bad files, resume after a kill), `semif calibrate prior|bias|apply|temperature`, content-free
priors, and `semif eval` on calibrated records; one slow run on smollm2-135m."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.calibration import batch as batch_mod
from scorer.calibration import prior as prior_mod
from scorer.calibration.core import load_calibration
from scorer.core.errors import InputError
from scorer.formats.records import read_records, validate_records
from scorer.formats.rows import load_decisions
from scorer.scoring import file_run as score_file
from scorer.scoring import modes as score_run
from scorer.scoring.options import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "data" / "workloads" / "shape-small.jsonl"  # 2 states x 21 criteria
BOUNDARY = ROOT / "data" / "eval" / "boundary.jsonl"  # 24 rows, one question
RUNS = ROOT / "data" / "results" / "runs"
_VOLATILE = ("timing", "run", "cache_hit")


def _stable(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k not in _VOLATILE}


class OtherModel(FakeBackend):
    def model_info(self) -> dict[str, Any]:
        return {**super().model_info(), "gguf_sha256": "ee" * 32}


@pytest.fixture
def fake(monkeypatch):
    """`semif` loads the fake backend (biased towards letter A, like a small model saying "yes")."""
    state = {"backend": FakeBackend(bias={"A": 1.0})}
    monkeypatch.setattr(cli, "load_backend", lambda cfg: state["backend"])
    return state


def _prior_file(tmp_path: Path, rows: Path = BOUNDARY, **kw: Any) -> Path:
    run = tmp_path / "ref.jsonl"
    assert cli.main(["score", "--input", str(rows), "--output", str(run)]) == 0
    out = tmp_path / "prior.json"
    args = ["calibrate", "prior", str(run), "--output", str(out)] + [f"--{k.replace('_', '-')}={v}"
                                                                     for k, v in kw.items()]
    assert cli.main(args) == 0
    return out


def test_score_with_a_prior_file(tmp_path, fake, capsys):
    prior = _prior_file(tmp_path)
    out = tmp_path / "cal.jsonl"
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(out), "--calibration", str(prior)]) == 0
    recs, raw = read_records(out), read_records(tmp_path / "ref.jsonl")
    validate_records(recs)
    sha = load_calibration(prior).source["sha256"]
    for r, plain in zip(recs, raw, strict=True):
        c = r["calibrated"]
        assert c["source"] == {"kind": "file", "path": str(prior), "sha256": sha} and c["applied"]
        assert _stable({k: v for k, v in r.items() if k != "calibrated"}) == _stable(plain)
    assert sum(r["calibrated"]["choice"] != r["choice"] for r in recs) > 0  # the prior changed decisions


def test_score_refuses_another_model_or_question_before_scoring(tmp_path, fake, capsys):
    prior = _prior_file(tmp_path)
    capsys.readouterr()
    fake["backend"] = OtherModel()
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(out), "--calibration", str(prior)]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("semif: error: ") and str(prior) in last and "no calibration for model" in last
    assert "score direct" not in err and "Traceback" not in err  # refused before the progress bar
    assert not out.exists()  # refused before the first record
    fake["backend"] = FakeBackend(bias={"A": 1.0})
    assert cli.main(["score", "--input", str(ROWS), "--output", str(out), "--calibration", str(prior)]) == 2
    err = capsys.readouterr().err
    assert str(prior) in err and "no calibration for signature" in err and not out.exists()


@pytest.mark.parametrize(("content", "fragment"), [
    (b'{"schema": "semif-calibration-v1", "method": "prior", "entries": [', "invalid JSON"),
    (b'{"schema": "semif-calibration-v0"}', "field 'schema'"),
    (b'{"schema": "semif-calibration-v1", "method": "prior", "models": {}, "offsets": NaN}', "invalid JSON"),
])
def test_bad_calibration_files_exit_2_before_the_model_loads(tmp_path, monkeypatch, capsys, content, fragment):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model must not load"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(tmp_path / "o.jsonl"),
                     "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("semif: error: ") and str(bad) in err and fragment in err and "Traceback" not in err


def test_batch_calibrate_two_phases(tmp_path, fake, capsys):
    out = tmp_path / "b.jsonl"
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(out), "--batch-calibrate"]) == 0
    raw_file = batch_mod.raw_path(out)
    assert raw_file.name == "b.raw.jsonl"
    raw, recs = read_records(raw_file), read_records(out)
    validate_records(recs)
    assert [_stable(r) for r in raw] == [_stable({k: v for k, v in r.items() if k != "calibrated"}) for r in recs]
    assert all(r["calibrated"]["source"]["kind"] == "in-run" and r["calibrated"]["rows"] == 24 for r in recs)
    # equal to fitting the prior afterwards on the raw records
    cal = prior_mod.fit_prior(raw, [r["signature"] for r in raw])
    assert [r["calibrated"]["probabilities"] for r in recs] == \
        [r["calibrated"]["probabilities"] for r in cal.apply_all(raw)]
    err = capsys.readouterr().err
    assert "no extra forward pass" in err and "% of the" in err
    # a batch below --calibration-min-rows stays raw and says so
    small = tmp_path / "small.jsonl"
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(BOUNDARY.read_text().splitlines(keepends=True)[:5]))
    assert cli.main(["score", "--input", str(rows), "--output", str(small), "--batch-calibrate", "geometric"]) == 0
    assert not any(r["calibrated"]["applied"] for r in read_records(small))
    assert "left uncalibrated: 5 rows < --min-rows 8" in capsys.readouterr().err
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "x.jsonl"),
                     "--calibration-min-rows", "3"]) == 2  # an option that would do nothing is an error
    assert "without --batch-calibrate" in capsys.readouterr().err


def _kill_after(monkeypatch, n: int) -> None:
    real = score_file.run_score
    count = {"n": 0}

    def killing(*args, **kwargs):
        inner = kwargs.get("on_record")

        def on_record(rec):
            if inner:
                inner(rec)
            count["n"] += 1
            if count["n"] == n:
                raise KeyboardInterrupt
        kwargs["on_record"] = on_record
        return real(*args, **kwargs)

    monkeypatch.setattr(score_file, "run_score", killing)


@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_batch_calibrate_resume_after_a_kill_gives_identical_records(tmp_path, fake, monkeypatch, mode):
    full = tmp_path / "full.jsonl"
    args = ["score", "--input", str(ROWS), "--mode", mode, "--batch-calibrate", "--calibration-min-rows", "2"]
    assert cli.main([*args, "--output", str(full)]) == 0
    part = tmp_path / "part.jsonl"
    real = score_file.run_score
    _kill_after(monkeypatch, 17)
    assert cli.main([*args, "--output", str(part)]) == 130
    monkeypatch.setattr(score_file, "run_score", real)
    assert not part.exists() and len(read_records(batch_mod.raw_path(part))) == 17
    with batch_mod.raw_path(part).open("ab") as f:  # torn line, as if killed mid-write
        f.write(b'{"schema":"semif-record-v2","id":"s01-c1')
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("refused before the model loads"))
    assert cli.main([*args, "--output", str(part)]) == 2  # not without --resume
    monkeypatch.setattr(cli, "load_backend", lambda cfg: fake["backend"])
    assert cli.main([*args, "--output", str(part), "--resume"]) == 0
    a, b = read_records(full), read_records(part)
    assert [_stable(r) for r in a] == [_stable(r) for r in b]
    assert all(r["calibrated"]["applied"] for r in b)
    # resuming a finished run changes nothing
    before = part.read_bytes()
    assert cli.main([*args, "--output", str(part), "--resume"]) == 0
    assert part.read_bytes() == before


def test_batch_calibrate_kill_in_phase_two_loses_nothing(tmp_path, fake, monkeypatch):
    out = tmp_path / "o.jsonl"
    real = batch_mod.calibrate_raw
    monkeypatch.setattr(batch_mod, "calibrate_raw", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(out), "--batch-calibrate"]) == 130
    assert not out.exists() and len(read_records(batch_mod.raw_path(out))) == 24
    monkeypatch.setattr(batch_mod, "calibrate_raw", real)
    calls = {"n": 0}
    backend = FakeBackend(bias={"A": 1.0})
    orig = backend.score_fresh

    def counting(ids):
        calls["n"] += 1
        return orig(ids)

    backend.score_fresh = counting  # type: ignore[method-assign]
    monkeypatch.setattr(cli, "load_backend", lambda cfg: backend)
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(out), "--batch-calibrate", "--resume"]) == 0
    assert calls["n"] == 0 and len(read_records(out)) == 24  # phase 2 only: no forward pass


def test_calibration_run_resume_equals_uninterrupted(tmp_path, fake, monkeypatch):
    prior = _prior_file(tmp_path)
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    args = ["score", "--input", str(BOUNDARY), "--calibration", str(prior)]
    assert cli.main([*args, "--output", str(full)]) == 0
    real = score_file.run_score
    _kill_after(monkeypatch, 9)
    assert cli.main([*args, "--output", str(part)]) == 130
    monkeypatch.setattr(score_file, "run_score", real)
    assert cli.main([*args, "--output", str(part), "--resume"]) == 0
    assert [_stable(r) for r in read_records(full)] == [_stable(r) for r in read_records(part)]


def test_calibrate_prior_on_committed_v1_records_and_apply(tmp_path, capsys):
    run = RUNS / "q15-torch-authored.jsonl"
    out = tmp_path / "p.json"
    assert cli.main(["calibrate", "prior", str(run), "--output", str(out)]) == 2
    assert "--input" in capsys.readouterr().err  # v1 records need their rows
    rows = ROOT / "data" / "eval" / "authored.jsonl"
    assert cli.main(["calibrate", "prior", str(run), "--input", str(rows), "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "31 signatures: 1 calibrated" in text and text.count("uncalibrated: signature") == 30
    cal = load_calibration(out)
    assert cal.meta["runs"][0]["path"] == str(run) and cal.meta["min_rows"] == 8
    assert cal.entries[0].question == "Does the evidence support the claim?"
    applied = tmp_path / "applied.jsonl"
    assert cli.main(["calibrate", "apply", str(run), "--calibration", str(out), "--input", str(rows),
                     "--output", str(applied)]) == 0
    recs = read_records(applied)
    validate_records(recs)
    assert all(r["schema"] == "semif-record-v2" for r in recs)
    assert sum(r["calibrated"]["applied"] for r in recs) == 36  # the evidence question, 36 rows
    # semif eval shows raw and calibrated side by side
    rep = tmp_path / "eval.json"
    assert cli.main(["eval", str(applied), "--labels", str(rows), "--output", str(rep), "--reps", "20"]) == 0
    doc = orjson.loads(rep.read_bytes())
    assert "calibrated" in doc and doc["calibrated"]["changed_choices"] > 0
    assert {a["family"] for a in doc["auc_per_family"]} == {"evidence", "missing", "routing", "rule"}
    assert "ROC AUC per family" in capsys.readouterr().out


def test_calibrate_bias_cli_reports_out_of_fold(tmp_path, capsys):
    run = RUNS / "q15-torch-boundary.jsonl"
    out = tmp_path / "bias.json"
    assert cli.main(["calibrate", "bias", str(run), "--labels", str(BOUNDARY), "--output", str(out),
                     "--reps", "20", "--balanced", "--temperature"]) == 0
    doc = orjson.loads(out.read_bytes())
    oof = doc["out_of_fold"]
    assert oof["folds"] == 5 and {"before", "after", "beats_uncalibrated", "paired"} <= set(oof)
    assert doc["estimator"] == "nll-offsets+temperature" and doc["balanced"] is True
    levels = sorted(e["level"] for e in doc["entries"])
    assert levels == ["family", "global", "signature"]
    text = capsys.readouterr().out
    assert "out of fold" in text and "bal.acc before" in text
    assert load_calibration(out).method == "bias"
    assert cli.main(["calibrate", "bias", str(run), "--labels", str(BOUNDARY), "--output", str(out)]) == 2  # exists
    assert cli.main(["calibrate", "bias", str(run), "--labels", str(BOUNDARY), "--output", str(tmp_path / "x.json"),
                     "--levels", "planet"]) == 2


def test_temperature_subcommand_and_the_old_form(tmp_path, fake):
    run = tmp_path / "r.jsonl"
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(run)]) == 0
    for i, argv in enumerate((["calibrate", "temperature", str(run)], ["calibrate", str(run)])):
        rep = tmp_path / f"t{i}.json"
        assert cli.main([*argv, "--output", str(rep), "--reps", "10", "--folds", "3"]) == 0
        assert orjson.loads(rep.read_bytes())["kind"] == "calibrate"


def test_content_free_prior_with_the_fake(tmp_path):
    backend = FakeBackend(bias={"A": 1.0})
    rows = load_decisions(BOUNDARY)[:6]
    out = tmp_path / "r.jsonl"
    score_file.run_score(rows, backend, out, ScoreConfig(run_parts={"input": "x"}))
    recs = read_records(out)
    cal = prior_mod.content_free_prior(backend.model_info(), rows, recs, [r["signature"] for r in recs],
                                       score_run.fresh_scorer(backend))
    (entry,) = cal.entries
    assert entry.rows == 3 and cal.meta["forward_passes"] == 3 and cal.estimator == "content-free"
    from dataclasses import replace

    import numpy as np

    cf = [replace(rows[0], id=f"cf{j}", state=s) for j, s in enumerate(prior_mod.CONTENT_FREE_STATES)]
    direct = list(score_run.score_items(backend, score_run.prepare(backend, cf, with_prefix=False), "direct", {}))
    mean = np.mean([r["probabilities"] for r in direct], axis=0)
    assert list(entry.prior) == pytest.approx(list(mean / mean.sum()))
    assert cal.apply(recs[0])["calibrated"]["applied"]
    with pytest.raises(InputError, match="signature"):
        other = OtherModel()
        prior_mod.content_free_prior(other.model_info(), rows, recs, [r["signature"] for r in recs],
                                     score_run.fresh_scorer(other))


@pytest.mark.slow
def test_content_free_and_batch_prior_on_smollm2(smol_torch, tmp_path):
    rows = load_decisions(BOUNDARY)[:8]
    out = tmp_path / "smol.jsonl"
    score_file.run_score(rows, smol_torch, out, ScoreConfig(run_parts={"input": "boundary8"}))
    recs = read_records(out)
    validate_records(recs)
    sigs = [r["signature"] for r in recs]
    assert len(set(sigs)) == 1
    cf = prior_mod.content_free_prior(smol_torch.model_info(), rows, recs, sigs, score_run.fresh_scorer(smol_torch))
    batch = prior_mod.fit_prior(recs, sigs, "mean", 8)
    for cal in (cf, batch):
        (e,) = cal.entries
        assert sum(e.prior) == pytest.approx(1.0) and all(0 < p < 1 for p in e.prior)
        done = list(cal.apply_all(recs))
        validate_records(done)
        assert all(r["calibrated"]["applied"] for r in done)


def test_calibrate_prior_content_free_cli(tmp_path, fake, monkeypatch, capsys):
    import scorer.backends

    run = tmp_path / "r.jsonl"
    assert cli.main(["score", "--input", str(BOUNDARY), "--output", str(run)]) == 0
    monkeypatch.setattr(scorer.backends, "load_backend", lambda cfg: fake["backend"])
    out = tmp_path / "cf.json"
    assert cli.main(["calibrate", "prior", str(run), "--estimator", "content-free", "--output", str(out)]) == 2
    assert "--input" in capsys.readouterr().err  # content-free rebuilds the questions from the rows
    assert cli.main(["calibrate", "prior", str(run), "--estimator", "content-free", "--input", str(BOUNDARY),
                     "--output", str(out)]) == 0
    cal = load_calibration(out)
    assert cal.estimator == "content-free" and cal.meta["forward_passes"] == 3 and cal.entries[0].question
    monkeypatch.setattr(scorer.backends, "load_backend", lambda cfg: OtherModel())
    assert cli.main(["calibrate", "prior", str(run), "--estimator", "content-free", "--input", str(BOUNDARY),
                     "--output", str(tmp_path / "cf2.json")]) == 2
    assert "the very model" in capsys.readouterr().err


def test_phase_two_refuses_raw_records_without_a_signature(tmp_path):
    # v1 records have no signature: pooling them all under one key would calibrate unlike questions together
    raw = tmp_path / "old.raw.jsonl"
    raw.write_bytes((RUNS / "q15-torch-boundary.jsonl").read_bytes())
    with pytest.raises(InputError, match=r"old\.raw\.jsonl:1: field 'signature'"):
        batch_mod.calibrate_raw(raw, "mean", 8, "none")
