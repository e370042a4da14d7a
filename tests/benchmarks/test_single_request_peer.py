"""benchmarks/single_request_peer.py end to end on fake lanes: two System One servers on loopback (SemIf's service on
the fake backend) asked one request per state through SemIf's System One client, judged by the same code, written
as an enveloped report the site draws; a lane whose records are all kept is judged again, not asked; nothing an earlier
run wrote is overwritten without --force."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from fakes import FakeBackend
from serve_helpers import live

from benchmarks import single_request_peer as peer
from scorer import Scorer
from scorer.formats.envelope import KINDS, envelope_problems
from scorer.formats.records import read_records
from scorer.serving.service import build_app
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.reports import _KINDS


def _fake_start(tool: str):
    def start(lane: Any, model: str, *rest: Any, **_kw: Any) -> None:
        stack: contextlib.ExitStack = rest[-1]
        scorer = stack.enter_context(Scorer(backend=FakeBackend(), mode="shared"))
        lane.base = stack.enter_context(live(build_app(scorer)))
        lane.served_model = "jev-latest"
        lane.info = {"command": f"fake {tool}"}
    return start


def test_a_run_on_fake_lanes_writes_a_report_the_site_draws(tmp_path, monkeypatch):
    from scorer.models import store

    monkeypatch.setattr(store, "gguf_for", lambda ref, progress=True: (tmp_path / "m.gguf", "ab" * 32))
    monkeypatch.setattr(peer.dl, "_start_semif", _fake_start("semif"))
    monkeypatch.setattr(peer.dl, "_start_typed_gguf", _fake_start("typed-gguf"))
    out = tmp_path / "peer.json"
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary,single", "--semif", "default=",
                      "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert envelope_problems(doc) == [] and doc["kind"] == "single-request-peer" and KINDS[doc["kind"]] == peer.FORMAT
    assert [lane["name"] for lane in doc["lanes"]] == ["semif:default", "typed-gguf"]
    single = doc["lanes"][0]["sets"]["single"]
    assert single["rows"] == 181 and set(single["by_type"]) == {"choice", "score", "yesno"}
    assert sum(v["rows"] for v in single["by_type"].values()) == 181 and 0.0 <= single["balanced_accuracy"] <= 1.0
    assert sum(v["correct"] for v in single["by_type"].values()) == single["correct"]  # each row in one type
    assert all(v["correct"] <= v["rows"] for v in single["by_type"].values())
    # the same answers judged the same way: the two fake lanes agree exactly
    assert doc["lanes"][0]["sets"] == {k: {**v, "records": doc["lanes"][0]["sets"][k]["records"]}
                                       for k, v in doc["lanes"][0]["sets"].items()}
    a, b = doc["lanes"][0]["sets"]["boundary"], doc["lanes"][1]["sets"]["boundary"]
    assert a["balanced_accuracy"] == b["balanced_accuracy"] and a["correct"] == b["correct"]
    recs = list(read_records(out.with_suffix(".records") / "semif-default-single.jsonl"))
    assert len(recs) == 181 and all(r["mode"] == "remote" for r in recs)
    rep = ReportFile(rel="results/peer.json", slug="peer", raw=out.read_bytes(), sha256="x", obj=doc,
                     kind="single-request-peer")
    draw = _KINDS["single-request-peer"].draw
    assert draw is not None
    draw("results/peer.json", rep)
    assert len(rep.charts) == 2 and "typed-gguf" in str(rep.charts[0]) and rep.tables[0]["rows"]
    with pytest.raises(BuildError, match=r"lanes\[0\] needs 'name'"):
        draw("r", ReportFile(rel="r", slug="r", raw=b"", sha256="x", kind="single-request-peer",
                             obj={"lanes": [{"sets": {}}]}))
    # a second run refuses to overwrite the report; without the report, it judges the lanes' kept records again
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary", "--output", str(out)]) == 2
    out.unlink()

    def no_server(*_a: Any) -> None:
        raise AssertionError("a lane whose records are all kept is not asked again")

    monkeypatch.setattr(peer.dl, "_start_semif", no_server)
    monkeypatch.setattr(peer.dl, "_start_typed_gguf", no_server)
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary,single", "--output", str(out)]) == 0
    again = json.loads(out.read_text())
    assert all(s["kept_from_an_earlier_run"] for lane in again["lanes"] for s in lane["sets"].values())
    assert again["lanes"][1]["sets"]["single"]["balanced_accuracy"] == doc["lanes"][1]["sets"]["single"][
        "balanced_accuracy"]
    part = out.with_suffix(".records") / "typed-gguf-boundary.jsonl"  # an interrupted lane's file is refused
    part.write_text("".join(part.read_text().splitlines(keepends=True)[:5]))
    out.unlink()
    with pytest.raises(SystemExit, match=r"holds 5 records, not one per row of its set"):
        peer.main(["--model", "smollm2-135m", "--sets", "boundary", "--output", str(out)])
    # a set no earlier run asked is asked; the kept sets are judged from their records, not asked again
    part.unlink()
    asked: list[int] = []
    real_run_lane = peer.run_lane

    def counting(lane: Any, sets: dict[str, Any], *rest: Any) -> dict[str, Any]:
        asked.append(len(sets))
        assert set(sets) == {"boundary"}
        return real_run_lane(lane, sets, *rest)

    monkeypatch.setattr(peer, "run_lane", counting)
    monkeypatch.setattr(peer.dl, "_start_semif", _fake_start("semif"))
    monkeypatch.setattr(peer.dl, "_start_typed_gguf", _fake_start("typed-gguf"))
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary,single", "--output", str(out)]) == 0
    mixed = json.loads(out.read_text())
    assert asked == [1]  # only typed-gguf's boundary file was missing
    assert mixed["lanes"][1]["sets"]["single"]["kept_from_an_earlier_run"]
    assert "kept_from_an_earlier_run" not in mixed["lanes"][1]["sets"]["boundary"]
    out.unlink()
    monkeypatch.setattr(peer, "run_lane", real_run_lane)
    # with --force every lane is asked again, its records replaced
    monkeypatch.setattr(peer.dl, "_start_semif", _fake_start("semif"))
    monkeypatch.setattr(peer.dl, "_start_typed_gguf", _fake_start("typed-gguf"))
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary", "--output", str(out), "--force"]) == 0
    assert len(list(read_records(out.with_suffix(".records") / "semif-default-boundary.jsonl"))) == 24


def test_unknown_sets_are_refused(tmp_path, capsys):
    assert peer.main(["--sets", "nope", "--output", str(tmp_path / "x.json")]) == 2
    assert "--sets: unknown ['nope']" in capsys.readouterr().err


def test_a_lane_that_stops_answering_is_reported_and_the_others_still_count(tmp_path, monkeypatch):
    from scorer.core.errors import EngineError
    from scorer.models import store

    monkeypatch.setattr(store, "gguf_for", lambda ref, progress=True: (tmp_path / "m.gguf", "ab" * 32))
    monkeypatch.setattr(peer.dl, "_start_semif", _fake_start("semif"))

    def dead(lane: Any, *rest: Any, **_kw: Any) -> None:
        raise EngineError("the System One server did not answer POST http://127.0.0.1:1/v1/systemone (refused)")

    monkeypatch.setattr(peer.dl, "_start_typed_gguf", dead)
    out = tmp_path / "peer.json"
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary", "--semif", "default=",
                      "--output", str(out)]) == 1
    doc = json.loads(out.read_text())
    assert envelope_problems(doc) == [] and [lane["name"] for lane in doc["lanes"]] == ["semif:default"]
    assert [f["name"] for f in doc["failed_lanes"]] == ["typed-gguf"] and "did not answer" in doc["failed_lanes"][0][
        "error"]
    assert "typed-gguf failed" in doc["title"]
    out.unlink()
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary", "--no-peer", "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["failed_lanes"] == [] and "typed-gguf not run" in doc["title"]
