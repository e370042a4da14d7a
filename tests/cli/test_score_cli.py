"""`semif score` with a fake backend: exit codes, refusal to overwrite, resume after a kill."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend

from scorer import cli
from scorer.formats.records import read_records, validate_records
from scorer.scoring import file_run as score_file

ROWS = Path(__file__).resolve().parents[2] / "data" / "workloads" / "shape-small.jsonl"
_VOLATILE = ("timing", "run")


@pytest.fixture(autouse=True)
def _fake(monkeypatch):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())


def _stable(rec: dict) -> dict:
    # how a prefix came out of the radix cache depends on what the process's earlier rows left in it
    return {k: v for k, v in rec.items() if k not in _VOLATILE and k not in ("cache_hit", "cache")}


def test_score_writes_valid_records_in_input_order(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(ROWS), "--output", str(out), "--summary"]) == 0
    recs = read_records(out)
    validate_records(recs)
    ids = [json.loads(line)["id"] for line in ROWS.read_text().splitlines()]
    assert [r["id"] for r in recs] == ids
    assert "decisions/s" in capsys.readouterr().out


def test_bad_input_exits_2_before_model_loads(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "state": "s", "question": "q", "options": []}\n')
    monkeypatch.setattr(cli, "load_backend", lambda cfg: pytest.fail("model loaded before validation"))
    assert cli.main(["score", "--input", str(bad), "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"semif: error: {bad}:1: field 'options': 0 options (expected 2 to 255 options)" in err
    assert "Traceback" not in err


def test_existing_output_is_never_overwritten(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    out.write_text("precious\n")
    assert cli.main(["score", "--input", str(ROWS), "--output", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert out.read_text() == "precious\n"


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_resume_after_kill_equals_uninterrupted(tmp_path, monkeypatch, mode):
    full = tmp_path / "full.jsonl"
    assert cli.main(["score", "--input", str(ROWS), "--output", str(full), "--mode", mode,
                     "--max-batch-tokens", "300"]) == 0

    part = tmp_path / "part.jsonl"
    real_run = score_file.run_score
    count = {"n": 0}

    def killing_run(*args, **kwargs):
        def on_record(_rec):
            count["n"] += 1
            if count["n"] == 17:
                raise KeyboardInterrupt
        kwargs["on_record"] = on_record
        return real_run(*args, **kwargs)

    monkeypatch.setattr(score_file, "run_score", killing_run)
    assert cli.main(["score", "--input", str(ROWS), "--output", str(part), "--mode", mode,
                     "--max-batch-tokens", "300"]) == 130
    monkeypatch.setattr(score_file, "run_score", real_run)
    assert len(read_records(part)) == 17
    with part.open("ab") as f:  # a torn line, as if killed mid-write
        f.write(b'{"schema":"semif-record-v2","id":"s01-c1')
    assert cli.main(["score", "--input", str(ROWS), "--output", str(part), "--mode", mode,
                     "--max-batch-tokens", "300", "--resume"]) == 0
    a, b = read_records(full), read_records(part)
    assert [_stable(r) for r in a] == [_stable(r) for r in b]
    assert b[-1]["run"]["resumed_from"] == 17


def test_resume_refuses_another_configuration(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    assert cli.main(["score", "--input", str(ROWS), "--output", str(out), "--mode", "direct"]) == 0
    before = out.read_bytes()
    assert cli.main(["score", "--input", str(ROWS), "--output", str(out), "--mode", "serial", "--resume"]) == 2
    assert "run.config_sha256" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_context_overflow_is_an_error_not_truncation(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend(n_ctx=200))
    assert cli.main(["score", "--input", str(ROWS), "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "shape-small.jsonl:1" in err and "never truncates" in err


def test_prompt_command_prints_hashes(tmp_path, capsys):
    assert cli.main(["prompt", "--input", str(ROWS), "--id", "s01-c02", "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["id"] == "s01-c02" and len(doc["token_ids"]) == doc["input_tokens"]
    assert len(doc["prompt_sha256"]) == 64 and len(doc["tokens_sha256"]) == 64
    assert cli.main(["prompt", "--input", str(ROWS), "--id", "nope"]) == 2
