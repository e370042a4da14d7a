"""The public Python API (scorer.api) with the fake backend: same records as `semif score`, same errors."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fakes import FakeBackend

from scorer import DecisionRecord, Scorer, cli
from scorer.core.errors import InputError, SemifError
from scorer.formats.records import read_records, validate_records

ROWS_FILE = Path(__file__).resolve().parents[2] / "data" / "workloads" / "shape-small.jsonl"


def _rows() -> list[dict]:
    return [orjson.loads(line) for line in ROWS_FILE.read_bytes().splitlines()]


def _without_volatile(rec: dict) -> dict:
    """A record without what differs between two runs of the same rows: timings and the start time."""
    out = {k: v for k, v in rec.items() if k != "timing"}
    out["run"] = {k: v for k, v in rec["run"].items() if k != "started_unix"}
    return out


def _cli_records(tmp_path: Path, rows: list[dict], mode: str, monkeypatch) -> list[dict]:
    inp, out = tmp_path / f"in-{mode}.jsonl", tmp_path / f"out-{mode}.jsonl"
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--mode", mode]) == 0
    return read_records(out)


@pytest.mark.parametrize("mode", ["direct", "serial", "shared"])
def test_decide_many_equals_cli_records(tmp_path, monkeypatch, mode):
    rows = _rows()
    with Scorer(backend=FakeBackend(), slots="letters", mode=mode) as s:
        got = s.decide_many(rows)
    want = _cli_records(tmp_path, rows, mode, monkeypatch)
    validate_records([d.record for d in got])
    assert [_without_volatile(d.record) for d in got] == [_without_volatile(r) for r in want]
    for d, r in zip(got, want, strict=True):
        assert d.prompt_sha256 == r["prompt_sha256"] and d.tokens_sha256 == r["tokens_sha256"]
        assert list(d.probabilities) == r["option_ids"] and list(d.probabilities.values()) == r["probabilities"]
        assert d.choice == r["choice"] and d.margin == r["margin"] and d.tie == r["tie"]


def test_shared_mode_prefills_each_state_once():
    rows = _rows()
    states = {orjson.dumps(r["state"]) for r in rows}
    fake = FakeBackend()
    with Scorer(backend=fake, slots="letters", mode="shared") as s:
        s.decide_many(rows)
    # one state built per state: the first prefilled, the others extended from the instructions they share
    assert fake.calls["prefill"] == 1 and fake.calls["prefill"] + fake.calls["extend"] == len(states) < len(rows)
    assert fake.calls["fresh"] == 0


def test_decide_with_an_option_mapping_is_typed_and_frozen():
    with Scorer(backend=FakeBackend(), slots="letters", mode="direct") as s:
        d = s.decide("The user wrote: where is my money back?", "Is the user asking for a refund?",
                     {"yes": "a refund is asked for", "no": "anything else"}, family="support")
    assert isinstance(d, DecisionRecord)
    assert d.id == "decision" and list(d.probabilities) == ["yes", "no"]
    assert abs(sum(d.probabilities.values()) - 1.0) < 1e-6
    assert d.choice in ("yes", "no") and d.margin >= 0
    assert d.record["extra"] == {"family": "support"} and d.record["option_ids"] == ["yes", "no"]
    assert d.timing["total_s"] >= 0
    validate_records([d.record])
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.choice = "no"  # type: ignore[misc]
    with pytest.raises(TypeError):
        d.probabilities["yes"] = 1.0  # type: ignore[index]


def _jsonl_error(tmp_path: Path, rows: list[dict]) -> str:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    from scorer.formats.rows import load_decisions

    with pytest.raises(InputError) as e:
        load_decisions(p)
    return str(e.value).removeprefix(f"{p}:")


@pytest.mark.parametrize("breakage", [
    {"options": [{"id": "a", "description": "x"}]},
    {"options": [{"id": "a", "description": "x"}, {"id": "a", "description": "y"}]},
    {"state": ""},
    {"question": 3},
    {"options": [{"id": "a", "description": "x"}, {"id": "b"}]},
])
def test_bad_rows_get_the_jsonl_field_messages(tmp_path, breakage):
    rows = _rows()[:3]
    rows[1] = {**rows[1], **breakage}
    fake = FakeBackend()
    with Scorer(backend=fake, slots="letters") as s, pytest.raises(InputError) as e:
        s.decide_many(rows)
    assert str(e.value) == "rows:" + _jsonl_error(tmp_path, rows)
    assert e.value.line == 2 and e.value.field is not None
    assert fake.calls == FakeBackend().calls  # nothing was scored


def test_duplicate_ids_and_non_json_values_are_refused():
    rows = _rows()[:2]
    with Scorer(backend=FakeBackend(), slots="letters") as s:
        with pytest.raises(InputError, match=r"^rows:2: field 'id': duplicate id"):
            s.decide_many([rows[0], {**rows[1], "id": rows[0]["id"]}])
        with pytest.raises(InputError, match=r"^rows:1: field 'tags': not JSON: a set"):
            s.decide_many([{**rows[0], "tags": {1, 2}}])
        with pytest.raises(InputError, match="no decisions"):
            s.decide_many([])
        with pytest.raises(InputError, match=r"^decision: field 'options': 1 options \(expected 2 to 255"):
            s.decide("state", "q?", {"only": "one"})


def test_the_engine_level_entry_scores_nothing_without_loading_the_model():
    fake = FakeBackend()
    with Scorer(backend=fake, slots="letters") as s:
        assert s.score_decisions([], {"input_sha256": "x", "semif": "test"}) == []
        assert fake.calls == FakeBackend().calls  # no pass was run for it


def test_scorer_loads_once_and_closes_what_it_owns(monkeypatch):
    import scorer.backends as backends

    loaded: list[FakeBackend] = []
    closed: list[FakeBackend] = []

    def load(cfg):
        assert cfg.model == "m" and cfg.backend == "torch" and cfg.threads == 1
        b = FakeBackend()
        b.close = lambda: closed.append(b)  # type: ignore[attr-defined]
        loaded.append(b)
        return b

    monkeypatch.setattr(backends, "load_backend", load)
    with Scorer(model="m", backend="torch", threads=1) as s:
        s.decide("a state", "q?", {"a": "x", "b": "y"})
        s.decide_many(_rows()[:4])
    assert len(loaded) == 1 and closed == loaded
    with pytest.raises(SemifError, match="closed"):
        s.decide("a state", "q?", {"a": "x", "b": "y"})


def test_a_backend_passed_in_is_not_closed():
    fake = FakeBackend()
    fake.close = lambda: pytest.fail("closed a backend it does not own")  # type: ignore[attr-defined]
    with Scorer(backend=fake, slots="letters") as s:
        s.decide("a state", "q?", {"a": "x", "b": "y"})


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mode": "fast"}, "mode: 'fast' is not one of direct, serial, shared"),
    ({"colour": "red"}, "unknown backend options colour"),
    ({"calibration": "no-such-calibration.json"}, "no-such-calibration.json"),
    ({"calibration": 3}, "not a file path or a Calibration"),
    ({"max_batch_tokens": 0}, "max_batch_tokens: 0 is not an integer >= 1"),
    ({"device": "cuda"}, "apply only to a backend named by string"),
])
def test_bad_configuration_is_a_clear_error(kwargs, message):
    with pytest.raises(SemifError, match=message):
        Scorer(backend=FakeBackend(), slots="letters", **kwargs)


def test_import_scorer_is_cheap_and_the_api_has_no_argparse():
    code = ("import sys, scorer; from scorer import Scorer; import scorer.api; "
            "bad = [m for m in ('torch', 'transformers', 'argparse', 'scorer.cli') if m in sys.modules]; "
            "print(bad); sys.exit(bool(bad))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


BOUNDARY = ROWS_FILE.parent.parent / "eval" / "boundary.jsonl"  # 24 rows, one question


def test_a_calibration_file_gives_the_cli_calibrated_records(tmp_path, monkeypatch):
    """Scorer(calibration=FILE) writes the block `semif score --calibration FILE` writes, checked up front."""
    rows = [orjson.loads(line) for line in BOUNDARY.read_bytes().splitlines()]
    inp, raw, prior, out = (tmp_path / n for n in ("in.jsonl", "raw.jsonl", "prior.json", "cal.jsonl"))
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend(bias={"A": 1.0}))
    assert cli.main(["score", "--input", str(inp), "--output", str(raw)]) == 0
    assert cli.main(["calibrate", "prior", str(raw), "--output", str(prior)]) == 0
    assert cli.main(["score", "--input", str(inp), "--output", str(out), "--calibration", str(prior),
                     "--mode", "shared"]) == 0
    with Scorer(backend=FakeBackend(bias={"A": 1.0}), mode="shared", calibration=prior) as s:
        got = s.decide_many(rows)
    want = read_records(out)
    assert [_without_volatile(d.record) for d in got] == [_without_volatile(r) for r in want]
    validate_records([d.record for d in got])
    for d in got:
        assert d.calibrated is not None and d.calibrated.applied and d.calibrated.method == "prior"
        assert d.final_choice == d.record["calibrated"]["choice"] == d.calibrated.choice
        assert list(d.calibrated.probabilities) == list(d.probabilities)
    assert any(d.final_choice != d.choice for d in got)  # the prior changed decisions
    with Scorer(backend=FakeBackend(bias={"A": 1.0})) as plain:
        d = plain.decide_row(rows[0])
    assert d.calibrated is None and d.final_choice == d.choice


def test_a_calibration_for_other_questions_is_refused_before_scoring(tmp_path, monkeypatch):
    rows = [orjson.loads(line) for line in BOUNDARY.read_bytes().splitlines()]
    inp, raw, prior = (tmp_path / n for n in ("in.jsonl", "raw.jsonl", "prior.json"))
    inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    assert cli.main(["score", "--input", str(inp), "--output", str(raw)]) == 0
    assert cli.main(["calibrate", "prior", str(raw), "--output", str(prior)]) == 0
    fake = FakeBackend()
    calls = []
    fake.score_fresh = lambda ids: calls.append(ids) or pytest.fail("scored before the check")  # type: ignore
    with Scorer(backend=fake, slots="letters", mode="direct", calibration=str(prior)) as s, \
            pytest.raises(SemifError, match="no calibration for signature") as err:
        s.decide_many(_rows()[:3])  # shape questions: not in the boundary prior
    assert str(prior) in str(err.value) and not calls
