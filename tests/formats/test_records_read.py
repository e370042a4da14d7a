"""Reading record files (issue #21, items 1, 2 and 8): every command that reads records validates them first.

Records written by hand, by another tool or corrupted are refused by the one reader
(:func:`scorer.formats.records.read_records`) with ``FILE:LINE: field 'F': what (expected what)`` and exit 2, never a
traceback and never a report computed from them; and a command that writes a report checks that it can write
it before it prints or computes anything. Each test here failed on the code before the fix; the generated
cases are in ``test_fuzz_records.py``.
"""

from __future__ import annotations

import errno
import math
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.core.errors import InputError
from scorer.formats.records import dumps_record, read_records
from scorer.formats.rows import load_decisions
from scorer.scoring.file_run import run_score
from scorer.scoring.options import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
BOUNDARY = ROOT / "data" / "eval" / "boundary.jsonl"


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> list[dict[str, Any]]:
    """24 labelled records of the fake backend (two options each)."""
    out = tmp_path_factory.mktemp("recs") / "run.jsonl"
    run_score(load_decisions(BOUNDARY), FakeBackend(), out, ScoreConfig(run_parts={"input": "boundary"}))
    return read_records(out)


def _write(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def _edit(recs: list[dict[str, Any]], i: int, **fields: Any) -> list[dict[str, Any]]:
    out = [dict(r) for r in recs]
    out[i].update(fields)
    return out


def _error(capsys) -> tuple[str, str]:
    """stdout and the one ``semif: error:`` line of stderr (no traceback)."""
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err, cap.err
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("semif: error: "), cap.err
    return cap.out, lines[0]


# --- item 1: compare tracebacked on a wrong-length or string `probabilities` ---------------------------------------
@pytest.mark.parametrize(("value", "problem"), [([0.5, 0.25, 0.25], "3 values for 2 options"),
                                                ("x", "'x' is a string")])
def test_compare_refuses_bad_probabilities_with_file_line_field(tmp_path, capsys, records, value, problem):
    a = _write(tmp_path / "a.jsonl", records)
    b = _write(tmp_path / "b.jsonl", _edit(records, 1, probabilities=value))
    assert cli.main(["compare", str(a), str(b)]) == 2
    out, err = _error(capsys)
    assert err.startswith(f"semif: error: {b}:2: field 'probabilities': {problem}"), err
    assert out == ""


# --- item 2: eval reported on records whose probabilities is "x" or whose choice is not an option ------------------
@pytest.mark.parametrize(("field", "value", "problem"), [
    ("probabilities", "x", "'x' is a string (expected an array)"),
    ("choice", "maybe", "'maybe' is not an option id (expected one of ['yes', 'no'], or null on a tie)"),
])
def test_eval_refuses_invalid_records_and_writes_nothing(tmp_path, capsys, records, field, value, problem):
    run = _write(tmp_path / "run.jsonl", _edit(records, 4, **{field: value}))
    report = tmp_path / "eval.json"
    assert cli.main(["eval", str(run), "--output", str(report), "--reps", "20"]) == 2
    out, err = _error(capsys)
    assert err == f"semif: error: {run}:5: field '{field}': {problem}"
    assert out == "" and not report.exists()


@pytest.mark.parametrize("argv", [
    ["show", "{run}"],
    ["eval", "{run}", "--output", "{tmp}/r.json", "--reps", "20"],
    ["compare", "{good}", "{run}"],
    ["order", "--base", "{good}", "--reversed", "{run}", "--output", "{tmp}/r.json", "--reps", "20"],
    ["route", "--fast", "{good}", "--reference", "{run}", "--output", "{tmp}/r.json", "--reps", "20"],
    ["calibrate", "temperature", "{run}", "--output", "{tmp}/r.json", "--reps", "20"],
    ["calibrate", "prior", "{run}", "--output", "{tmp}/p.json"],
    ["calibrate", "bias", "{run}", "--labels", str(BOUNDARY), "--output", "{tmp}/p.json", "--reps", "20"],
    ["calibrate", "apply", "{run}", "--calibration", "{tmp}/p.json", "--output", "{tmp}/o.jsonl"],
    ["calibrate", "report", "--run", "{run}", "--labels", str(BOUNDARY), "--output", "{tmp}/r.json", "--reps", "20"],
    ["calibrate", "thresholds", "{run}", "--labels", str(BOUNDARY), "--precision", "0.9", "--output", "{tmp}/t.json"],
    ["show", "{run}", "--policy", "0.1"],
])
def test_every_command_that_reads_records_refuses_a_choice_that_is_not_an_option(tmp_path, capsys, records, argv):
    good = _write(tmp_path / "good.jsonl", records)
    run = _write(tmp_path / "run.jsonl", _edit(records, 2, choice="maybe"))
    if "apply" in argv:  # a valid calibration file to apply
        assert cli.main(["calibrate", "prior", str(good), "--output", str(tmp_path / "p.json")]) == 0
        capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [a.format(run=run, good=good, tmp=tmp_path) for a in argv]
    assert cli.main(args) == 2
    out, err = _error(capsys)
    assert err.startswith(f"semif: error: {run}:3: field 'choice': 'maybe' is not an option id"), err
    assert out == "" and sorted(p.name for p in tmp_path.iterdir()) == before


def test_resume_refuses_a_kept_record_that_is_not_valid_and_changes_nothing(tmp_path, capsys, monkeypatch):
    """`score --resume` keeps the records already in the file: each must be a valid record of the run, else
    the resume is refused before the model loads and the file stays byte-identical."""
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b"".join(orjson.dumps({"id": d.id, "state": d.state, "question": d.question,
                                            "options": [{"id": o.id, "description": o.description}
                                                        for o in d.options]}) + b"\n"
                              for d in load_decisions(BOUNDARY)[:6]))
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(rows), "--output", str(out)]) == 0
    lines = out.read_bytes().splitlines(keepends=True)[:4]  # a killed run: 4 of 6 records
    rec = orjson.loads(lines[2])
    rec["choice"] = "maybe"
    lines[2] = orjson.dumps(rec) + b"\n"
    out.write_bytes(b"".join(lines))
    before = out.read_bytes()
    capsys.readouterr()
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("the model loaded before the check"))
    assert cli.main(["score", "--input", str(rows), "--output", str(out), "--resume"]) == 2
    _, err = _error(capsys)
    assert err.startswith(f"semif: error: {out}:3: field 'choice': 'maybe' is not an option id"), err
    assert err.endswith("; nothing was changed)") and out.read_bytes() == before


# --- item 8: eval printed its report before failing on a read-only output folder ---------------------------------
def _deny_writes_in(folder: Path, monkeypatch) -> None:
    """A folder nobody may create files in. As root the permission bits do not apply, so the refusal is
    also simulated where the kernel would give it: creating a file there."""
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real_open = os.open

        def denied(path, flags, *a):
            if Path(path).parent == folder and flags & os.O_CREAT:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            return real_open(path, flags, *a)

        monkeypatch.setattr(os, "open", denied)


@pytest.mark.parametrize("argv", [
    ["eval", "{run}", "--output", "{out}"],
    ["order", "--base", "{run}", "--reversed", "{run}", "--output", "{out}"],
    ["route", "--fast", "{run}", "--reference", "{run}", "--output", "{out}"],
    ["route", "--fast", "{run}", "--reference", "{run}", "--output", "{run}.r.json", "--threshold-output", "{out}"],
    ["calibrate", "temperature", "{run}", "--output", "{out}"],
    ["compare", "{run}", "{run}", "--output", "{out}"],
])
def test_a_read_only_output_folder_is_refused_before_anything_is_printed(tmp_path, capsys, monkeypatch, records,
                                                                         argv):
    run = _write(tmp_path / "run.jsonl", records)
    ro = tmp_path / "ro"
    ro.mkdir()
    out = ro / "report.json"
    import scorer.evaluation.metrics

    def no_work(*a, **k):
        raise AssertionError("the report was computed before the output was checked")

    try:
        _deny_writes_in(ro, monkeypatch)
        monkeypatch.setattr(scorer.evaluation.metrics, "bootstrap", no_work)
        monkeypatch.setattr(scorer.evaluation.metrics, "evaluate", no_work)
        assert cli.main([a.format(run=run, out=out) for a in argv] + (["--reps", "20"] if argv[0] != "compare"
                                                                       else [])) == 1
        stdout, err = _error(capsys)
        assert err == f"semif: error: Permission denied: {out}" or err.startswith(
            f"semif: error: Permission denied: {ro}"), err
        assert stdout == "" and not out.exists()
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("argv", [
    ["eval", "{run}", "--output", "{out}"],
    ["order", "--base", "{run}", "--reversed", "{run}", "--output", "{out}"],
    ["route", "--fast", "{run}", "--reference", "{run}", "--output", "{out}"],
    ["route", "--fast", "{run}", "--reference", "{run}", "--output", "{run}.r.json", "--threshold-output", "{out}"],
    ["calibrate", "temperature", "{run}", "--output", "{out}"],
    ["compare", "{run}", "{run}", "--output", "{out}"],
])
def test_an_existing_report_is_refused_before_anything_is_printed(tmp_path, capsys, records, argv):
    run = _write(tmp_path / "run.jsonl", records)
    out = tmp_path / "report.json"
    out.write_bytes(b"mine")
    assert cli.main([a.format(run=run, out=out) for a in argv]) == 2
    stdout, err = _error(capsys)
    assert f"{out} exists" in err and stdout == "" and out.read_bytes() == b"mine"


# --- the reader itself --------------------------------------------------------------------------------------------
def test_committed_records_all_validate(data_dir):
    files = sorted((data_dir / "results" / "runs").glob("*.jsonl"))
    assert len(files) >= 29
    assert sum(len(read_records(f)) for f in files) >= 4000


def test_the_reader_names_file_line_field_what_and_expected(tmp_path, records):
    r = records[0]
    cases: list[tuple[bytes, str]] = [
        (b"", "no records (expected a JSONL file with at least one SemIf record)"),
        (dumps_record(r) + b"\n", ":2: empty line"),
        (dumps_record(r) + dumps_record(r), ":2: field 'id': duplicate id 'boundary-01' (first on line 1)"),
        (orjson.dumps({**r, "schema": "semif-record-v3"}), ":1: field 'schema': 'semif-record-v3' is not a record"),
        (orjson.dumps({k: v for k, v in r.items() if k != "margin"}), ":1: field 'margin': missing (expected a field "
                                                                     "every semif-record-v2 record has)"),
        (orjson.dumps({**r, "timing": {**r["timing"], "total_s": "1"}}), ":1: field 'timing.total_s': '1' is a string "
                                                                          "(expected a number)"),
        (orjson.dumps(r).replace(b'"margin":', b'"margin":1e999,"x":'), ":1: invalid JSON (number is infinity"),
        (orjson.dumps({**r, "letters": ["B", "A"]}), ":1: field 'letters': ['B', 'A'] for 2 options"),
        (orjson.dumps({**r, "tied_option_ids": ["yes", "no"]}), ":1: field 'tied_option_ids': ['yes', 'no'] without "
                                                                 "a tie"),
        (orjson.dumps({**r, "margin": r["margin"] / 2 + 0.01}), ":1: field 'margin': "),
        (orjson.dumps({**r, "option_logits": r["option_logits"][::-1]}), ":1: field 'probabilities': "),
        (orjson.dumps({**r, "schema": "semif-record-v1"}), ":1: field 'signature': present in a semif-record-v1"),
        (orjson.dumps({**r, "extra": {"d": _nest(70)}}),
         ":1: field 'extra.d': JSON nested more than 66 levels deep"),
    ]
    for data, want in cases:
        path = tmp_path / "x.jsonl"
        path.write_bytes(data)
        with pytest.raises(InputError) as exc:
            read_records(path)
        assert str(exc.value).startswith(f"{path}{want}" if want.startswith(":") else f"{path}: {want}"), \
            (want, str(exc.value))


def _nest(n: int) -> Any:
    out: Any = 1
    for _ in range(n):
        out = [out]
    return out


def test_calibrated_blocks_are_checked(records):
    from scorer.calibration.prior import fit_prior
    from scorer.formats.records import check_record, validate_records

    sigs = [r["signature"] for r in records]
    cal = fit_prior(records, sigs, "mean", 2, "none", {"kind": "in-run"})
    done = list(cal.apply_all(records))
    validate_records(done)
    blk = done[0]["calibrated"]
    for edit, field in [({"offsets": blk["offsets"][:1]}, "calibrated.offsets"),
                        ({"choice": "maybe"}, "calibrated.choice"),
                        ({"option_logits": [v + 1 for v in blk["option_logits"]]}, "calibrated.option_logits[0]"),
                        ({"signature": "0" * 64}, "calibrated.signature"),
                        ({"unseen_option_ids": ["zz"]}, "calibrated.unseen_option_ids[0]")]:
        with pytest.raises(InputError, match=rf"^f:1: field '{re.escape(field)}'"):
            check_record({**done[0], "calibrated": {**blk, **edit}}, "f", 1)
    assert math.isclose(sum(blk["probabilities"]), 1.0)


def test_permute_blocks_are_checked(tmp_path):
    from scorer.formats.records import check_record
    out = tmp_path / "perm.jsonl"
    run_score(load_decisions(BOUNDARY)[:3], FakeBackend(), out, ScoreConfig(run_parts={"input": "b"}, permute=2))
    rec = read_records(out)[0]
    perm = rec["permute"]
    for edit, field in [({"probabilities": perm["probabilities"][:1]}, "permute.probabilities"),
                        ({"probabilities": [perm["probabilities"][0], [0.5, 0.25, 0.25]]}, "permute.probabilities[1]"),
                        ({"option_ids": [["yes", "no"], ["no", "maybe"]]}, "permute.option_ids[1]"),
                        ({"probabilities": [[0.9, 0.1], [0.8, 0.2]]}, "probabilities")]:
        with pytest.raises(InputError, match=rf"^f:1: field '{re.escape(field)}'"):
            check_record({**rec, "permute": {**perm, **edit}}, "f", 1)


def test_validate_records_finds_the_record(records):
    from scorer.formats.records import validate_records
    validate_records(records)
    with pytest.raises(InputError, match=r"^records:3: field 'choice'"):
        validate_records(_edit(records, 2, choice="maybe"))
