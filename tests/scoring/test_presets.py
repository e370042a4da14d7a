"""Presets (scorer/scoring/presets.py; --preset on semif score and semif ask; Scorer(preset=)): a preset fills what is
not
given and explicit values win, records name the preset, the run hash names it, rows that share a state with the
preset's demonstrations are refused, and bad presets get file: field errors (exit 2) before any model loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.api import Scorer
from scorer.calibration.core import write_calibration
from scorer.calibration.prior import fit_prior
from scorer.core.errors import InputError, OutputExistsError
from scorer.formats.envelope import ENVELOPE_KEYS
from scorer.formats.records import read_records, validate_records
from scorer.models.store import sha256_file
from scorer.scoring.presets import PRESET_FORMAT, load_preset, preset_body, write_preset


def _rows(n: int, prefix: str = "r") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "state": f"Order {prefix}{i} arrived {i} days after the promised date.",
             "question": "Is the order late?",
             "options": [{"id": "y", "description": "Yes"}, {"id": "n", "description": "No"}],
             "label": "y" if i % 2 else "n", "group": f"{prefix}g{i // 2}"} for i in range(n)]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _preset(folder: Path, name: str = "good", layout: str = "question-major", k: int = 2, calibrated: bool = True,
            over: dict[str, Any] | None = None) -> Path:
    """A preset in ``folder`` with a demonstrations file and (``calibrated``) a prior fitted on the rows it is used on
    in the tests, in that very configuration."""
    folder.mkdir(parents=True, exist_ok=True)
    demos = _jsonl(folder / "demos.jsonl", _rows(6, "d"))
    cal_file = None
    if calibrated:
        with Scorer(backend=FakeBackend(), layout=layout, demos=demos if k else None, demos_k=k or None) as sc:
            recs = [d.record for d in sc.decide_many(_rows(8))]
        cal = fit_prior(recs, [r["signature"] for r in recs], "mean", 1, "none")  # these signatures only
        sha = write_calibration(cal, folder / f"{name}-cal.json")
        cal_file = {"path": f"{name}-cal.json", "sha256": sha}
    body = preset_body(name, layout, "letters", k,
                       {"path": "demos.jsonl", "sha256": sha256_file(demos), "seed": 0} if k else None,
                       "prior" if calibrated else "none", cal_file,
                       {"study": {"path": "study.json", "sha256": "0" * 64}, "metric": "balanced_accuracy",
                        "value": 0.75})
    body.update(over or {})
    path = folder / f"{name}.json"
    write_preset(path, body)
    return path


def test_a_preset_fills_what_is_not_given_and_every_record_names_it(tmp_path):
    path = _preset(tmp_path / "p")
    p = load_preset(path)
    with Scorer(backend=FakeBackend(), preset=path) as sc:
        assert (sc.layout, sc.slots, sc.demos.k if sc.demos else None) == ("question-major", "letters", 2)
        recs = [d.record for d in sc.decide_many(_rows(8))]
    validate_records(recs)
    for r in recs:
        assert r["layout"] == "question-major" and r["demos"]["k"] == 2
        assert all(i.startswith("d") for i in r["demos"]["ids"])  # the preset's own demonstrations
        assert r["calibrated"]["method"] == "prior" and r["calibrated"]["source"]["sha256"] == sha256_file(
            p.calibration_path)
        assert r["preset"] == {"name": "good", "path": str(path), "sha256": sha256_file(path)}
    # explicit values win over the preset's (its prior, fitted on question-major signatures, then covers nothing)
    with Scorer(backend=FakeBackend(), preset=path, layout="state-major", demos_k=1, on_uncovered="raw") as sc:
        got = sc.decide_many(_rows(8)[:2])
    assert {(d.record["layout"], d.record["demos"]["k"], d.record["calibrated"]["applied"]) for d in got} == \
        {("state-major", 1, False)}
    # the preset is part of what names the run: the same options without it are another run
    with Scorer(backend=FakeBackend(), preset=_preset(tmp_path / "q", calibrated=False)) as sc:
        with_preset = sc.decide_many(_rows(2))[0].record
    with Scorer(backend=FakeBackend(), layout="question-major", demos=tmp_path / "q" / "demos.jsonl", demos_k=2) as sc:
        without = sc.decide_many(_rows(2))[0].record
    assert with_preset["probabilities"] == without["probabilities"] and "preset" not in without
    assert with_preset["run"]["config_sha256"] != without["run"]["config_sha256"]


def test_rows_that_share_a_state_with_the_presets_demonstrations_are_refused(tmp_path, monkeypatch, capsys):
    path = _preset(tmp_path / "p", calibrated=False)
    shown = _rows(6, "d")[3]
    with Scorer(backend=FakeBackend(), preset=path) as sc, pytest.raises(InputError) as err:
        sc.decide_many([*_rows(2), {**shown, "id": "again"}])
    assert err.value.field == "state" and "has the state of demonstration 'd3' of preset 'good'" in str(err.value)
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded before the rows were checked"))
    rows = _jsonl(tmp_path / "rows.jsonl", [*_rows(2), {**shown, "id": "again"}])
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "o.jsonl"), "--preset", str(path)]) == 2
    err_text = capsys.readouterr().err
    assert err_text.startswith(f"semif: error: {rows}:3: field 'state': ") and "Traceback" not in err_text


def test_semif_score_with_a_preset_and_explicit_overrides(tmp_path, monkeypatch, capsys):
    path = _preset(tmp_path / "p")
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = _jsonl(tmp_path / "rows.jsonl", _rows(8))
    out = tmp_path / "a.jsonl"
    assert cli.main(["score", "--input", str(rows), "--output", str(out), "--mode", "shared", "--preset",
                     str(path)]) == 0
    recs = read_records(out)
    validate_records(recs)
    assert {(r["layout"], r["demos"]["k"], r["calibrated"]["method"], r["preset"]["name"]) for r in recs} == \
        {("question-major", 2, "prior", "good")}
    # the API with the same preset gives the same decisions
    with Scorer(backend=FakeBackend(), preset=path) as sc:
        api = [d.record for d in sc.decide_many(orjson.loads(x) for x in rows.read_bytes().splitlines())]
    assert [r["calibrated"]["probabilities"] for r in api] == [r["calibrated"]["probabilities"] for r in recs]
    # an explicit option wins, even one given its default value
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "b.jsonl"), "--preset", str(path),
                     "--layout", "state-major", "--demos-k", "1"]) == 2  # its prior knows question-major signatures
    err = capsys.readouterr().err
    assert "no calibration for signature" in err and "--uncovered raw" in err  # the way out is named
    out2 = tmp_path / "c.jsonl"
    assert cli.main(["score", "--input", str(rows), "--output", str(out2), "--preset", str(path), "--layout",
                     "state-major", "--demos-k", "1", "--uncovered", "raw"]) == 0
    recs2 = read_records(out2)
    assert {(r["layout"], r["demos"]["k"], r["calibrated"]["applied"]) for r in recs2} == {("state-major", 1, False)}


def test_semif_ask_with_a_preset(tmp_path, monkeypatch, capsys):
    path = _preset(tmp_path / "p", calibrated=False)
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    out = tmp_path / "ask.jsonl"
    assert cli.main(["ask", "--state", "Order 7 arrived 9 days late.", "--yesno", "late=Is the order late?",
                     "--preset", str(path), "--records", str(out)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert set(doc["answers"]) == {"late"}
    rec = read_records(out)[0]
    assert rec["layout"] == "question-major" and rec["demos"]["k"] == 2 and rec["preset"]["name"] == "good"


def test_a_preset_may_read_by_id_in_question_major_with_demonstrations(tmp_path):
    path = _preset(tmp_path / "p", calibrated=False, over={"slots": "sequence"})
    with Scorer(backend=FakeBackend(), preset=path) as sc:
        assert (sc.layout, sc.slots) == ("question-major", "sequence")
        recs = [d.record for d in sc.decide_many(_rows(4))]
    validate_records(recs)
    assert {r["prompt_version"] for r in recs} == {"semif-question-major-ids-v1"}
    assert {r["slots"]["readout"] for r in recs} == {"sequence"} and all(r["demos"]["k"] == 2 for r in recs)


def test_a_sequence_presets_normalisation_goes_with_its_readout(tmp_path, monkeypatch):
    path = _preset(tmp_path / "p", calibrated=False, over={"slots": "sequence", "sequence_norm": "mean"})
    assert load_preset(path).sequence_norm == "mean"
    assert load_preset(_preset(tmp_path / "s", calibrated=False, over={"slots": "sequence"})).sequence_norm == "sum"
    with Scorer(backend=FakeBackend(), preset=path) as sc:
        assert (sc.slots, sc.sequence_norm) == ("sequence", "mean")
        recs = [d.record for d in sc.decide_many(_rows(4))]
    assert {r["slots"]["normalisation"] for r in recs} == {"mean"}
    with Scorer(backend=FakeBackend(), preset=path, sequence_norm="sum") as sc:  # explicit wins
        assert sc.sequence_norm == "sum"
    with Scorer(backend=FakeBackend(), preset=path, slots="letters") as sc:  # not carried onto another readout
        assert (sc.slots, sc.sequence_norm) == ("letters", None)
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    rows = _jsonl(tmp_path / "rows.jsonl", _rows(4))
    for extra, norm in (([], "mean"), (["--sequence-norm", "sum"], "sum")):
        out = tmp_path / f"o{len(extra)}.jsonl"
        assert cli.main(["score", "--input", str(rows), "--output", str(out), "--preset", str(path), *extra]) == 0
        assert {r["slots"]["normalisation"] for r in read_records(out)} == {norm}
    out = tmp_path / "letters.jsonl"
    assert cli.main(["score", "--input", str(rows), "--output", str(out), "--preset", str(path),
                     "--slots", "letters"]) == 0
    assert {r["slots"]["readout"] for r in read_records(out)} == {"letters"}


@pytest.mark.parametrize(("over", "field"), [
    ({"layout": "sideways"}, "layout"), ({"slots": "words"}, "slots"), ({"demos_k": -1}, "demos_k"),
    ({"sequence_norm": "mean"}, "sequence_norm"), ({"slots": "sequence", "sequence_norm": "max"}, "sequence_norm"),
    ({"demos": None}, "demos"), ({"demos": {"path": "demos.jsonl", "sha256": "f" * 64, "seed": 0}}, "demos.sha256"),
    ({"demos": {"path": "missing.jsonl", "sha256": "f" * 64, "seed": 0}}, "demos.path"),
    ({"calibration": {"kind": "magic", "file": None}}, "calibration.kind"),
    ({"calibration": {"kind": "bias", "file": None}}, "calibration.file"),
    ({"name": "Not A Name"}, "name"),
])
def test_a_bad_preset_is_refused_naming_file_and_field(tmp_path, monkeypatch, capsys, over, field):
    path = _preset(tmp_path / "p", calibrated=False, over=over)
    with pytest.raises(InputError) as err:
        load_preset(path)
    assert err.value.path == str(path) and err.value.field == field
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded before the preset was checked"))
    rows = _jsonl(tmp_path / "rows.jsonl", _rows(2))
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "o.jsonl"), "--preset", str(path)]) == 2
    text = capsys.readouterr().err
    assert text.startswith(f"semif: error: {path}: field '{field}': ") and "Traceback" not in text


def test_unknown_presets_and_files_that_are_not_presets(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "presets"
    _preset(folder, "good", calibrated=False)
    with pytest.raises(InputError, match=r"^preset: no preset named 'nope' .*\(expected one of: good\)"):
        load_preset("nope", presets_dir=folder)
    with pytest.raises(InputError, match="is not a preset name"):
        load_preset("../etc", presets_dir=folder)
    assert load_preset("good", presets_dir=folder).name == "good"
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded"))
    rows = _jsonl(tmp_path / "rows.jsonl", _rows(2))
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "o.jsonl"), "--preset", "nope"]) == 2
    assert capsys.readouterr().err.startswith("semif: error: --preset: no preset named 'nope'")
    for text, field in ((b"{not json", None), (b"[]", None), (b'{"kind": "bias"}', "kind")):
        bad = tmp_path / "bad.json"
        bad.write_bytes(text)
        with pytest.raises(InputError) as err:
            load_preset(bad)
        assert err.value.field == field and err.value.path == str(bad)
    doc = orjson.loads((folder / "good.json").read_bytes())
    (tmp_path / "v0.json").write_bytes(orjson.dumps({**doc, "format": "semif-preset-v0"}))
    with pytest.raises(InputError, match=f"field 'format'.*expected '{PRESET_FORMAT}'"):
        load_preset(tmp_path / "v0.json")
    with pytest.raises(OutputExistsError, match="refusing to overwrite"):
        write_preset(folder / "good.json", {k: v for k, v in doc.items() if k not in ENVELOPE_KEYS})
    with pytest.raises(InputError, match=r"^preset: "):
        Scorer(backend=FakeBackend(), preset="no-such-preset-here")


def test_every_committed_preset_loads_and_its_files_match_their_hashes():
    from scorer.scoring.presets import PRESETS_DIR

    names = sorted(p.stem for p in PRESETS_DIR.glob("*.json") if not p.stem.endswith("-calibration"))
    assert "accurate-qwen2.5-0.5b" in names and "accurate-qwen2.5-1.5b" in names
    for name in names:
        p = load_preset(name)  # checks the demonstrations' and calibration's sha256
        assert p.provenance["study"]["path"].startswith("data/results/quality-study-"), name
        assert (Path(__file__).resolve().parents[2] / p.provenance["study"]["path"]).is_file(), name


def test_a_family_name_finds_the_preset_of_the_model_being_scored(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "presets"
    _preset(folder, "accurate-m1", calibrated=False)
    _preset(folder, "accurate-m2", layout="state-major", k=0, calibrated=False)
    assert load_preset("accurate", presets_dir=folder, model="m1").name == "accurate-m1"
    assert load_preset("accurate", presets_dir=folder, model="m2").layout == "state-major"
    with pytest.raises(InputError, match=r"no preset named 'accurate' \(.*accurate\.json not found, nor "
                                         r".*accurate-m3\.json\) \(expected one of: accurate-m1, accurate-m2\)"):
        load_preset("accurate", presets_dir=folder, model="m3")
    _preset(folder, "accurate", layout="state-major", k=0, calibrated=False)  # a file of its own name wins
    assert load_preset("accurate", presets_dir=folder, model="m1").name == "accurate"
    # the committed presets: `--preset accurate` is this model's study winner, on the command line and in the API
    from scorer.scoring.presets import PRESETS_DIR

    for model in ("qwen2.5-0.5b", "qwen2.5-1.5b"):
        assert load_preset("accurate", model=model).path == PRESETS_DIR / f"accurate-{model}.json"
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded"))
    rows = _jsonl(tmp_path / "rows.jsonl", _rows(2))
    assert cli.main(["score", "--input", str(rows), "--output", str(tmp_path / "o.jsonl"), "--model", "smollm2-135m",
                     "--preset", "accurate"]) == 2
    assert "accurate-smollm2-135m.json) (expected one of: accurate-qwen2.5-0.5b" in capsys.readouterr().err
