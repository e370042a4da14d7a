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
    # the same answers paired: no difference, no row right by one lane only, never "ahead" or "behind"
    paired = doc["beside_peer"]
    assert {(p["set"], p["type"]) for p in paired} == {("boundary", "all"), ("boundary", "choice"),
                                                       ("single", "all"), ("single", "choice"), ("single", "score"),
                                                       ("single", "yesno"), ("all sets", "all"),
                                                       ("all sets", "choice"), ("all sets", "score"),
                                                       ("all sets", "yesno")}
    assert all(p["lane"] == "semif:default" and p["delta"] == 0 and p["semif_only_right"] == p["peer_only_right"] == 0
               and p["verdict"] == "not distinguishable" for p in paired)
    assert next(p for p in paired if (p["set"], p["type"]) == ("all sets", "all"))["rows"] == 181 + 24
    assert rep.tables[1]["caption"].startswith("SemIf beside typed-gguf") and len(rep.tables[1]["rows"]) == 10
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


def _row(i: int, kind: str, label: str, family: str) -> Any:
    from scorer.formats.rows import Decision, Option

    return Decision(id=f"r{i}", state=f"state {i}", question="q", options=(Option("a", "A"), Option("b", "B")),
                    extra={"label": label, "family": family, "group": f"g{i}"}, type=kind)


def _answer(d: Any, choice: str) -> dict[str, Any]:
    p = [0.8, 0.2] if choice == "a" else [0.2, 0.8]
    return {"id": d.id, "option_ids": ["a", "b"], "probabilities": p, "option_logits": [float(x) for x in p],
            "choice": choice}


def test_a_lane_right_where_the_peer_is_wrong_is_ahead_and_the_reverse_behind():
    rows = [_row(i, "yesno", "a" if i % 2 else "b", f"f{i % 3}") for i in range(60)]
    right = [_answer(d, d.extra["label"]) for d in rows]
    wrong = [_answer(d, "b" if d.extra["label"] == "a" else "a") for d in rows]
    half = [right[i] if i < 30 else wrong[i] for i in range(60)]
    got = peer.beside_peer({"x": rows}, {"semif:default": {"x": right}, "typed-gguf": {"x": half}})
    assert [(p["set"], p["type"]) for p in got] == [("x", "all"), ("x", "yesno")]  # one set: nothing to pool
    top = got[0]
    assert top["semif"] == 1.0 and top["delta"] > 0.3 and top["ci_lo"] > 0 and top["verdict"] == "ahead"
    assert top["semif_only_right"] == 30 and top["peer_only_right"] == 0 and top["mcnemar_exact_p"] < 1e-6
    flipped = peer.beside_peer({"x": rows}, {"semif:default": {"x": half}, "typed-gguf": {"x": right}})
    assert flipped[0]["verdict"] == "behind" and flipped[0]["ci_hi"] < 0
    # a few rows either way is within the noise
    near = [right[i] if i != 0 else wrong[0] for i in range(60)]
    assert peer.beside_peer({"x": rows}, {"semif:default": {"x": near}, "typed-gguf": {"x": right}})[0][
        "verdict"] == "not distinguishable"
    assert peer.beside_peer({"x": rows}, {"semif:default": {"x": right}}) == []  # no peer lane: nothing to pair


def test_judge_again_rejudges_the_kept_records_in_place_and_keeps_what_was_measured(tmp_path, monkeypatch):
    from scorer.models import store

    monkeypatch.setattr(store, "gguf_for", lambda ref, progress=True: (tmp_path / "m.gguf", "ab" * 32))
    monkeypatch.setattr(peer.dl, "_start_semif", _fake_start("semif"))
    monkeypatch.setattr(peer.dl, "_start_typed_gguf", _fake_start("typed-gguf"))
    out = tmp_path / "peer.json"
    assert peer.main(["--model", "smollm2-135m", "--sets", "boundary", "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    del doc["beside_peer"]  # as a report written before the pairing was judged
    doc["lanes"][0]["sets"]["boundary"]["balanced_accuracy"] = 0.0  # as a judge that has since been mended
    out.write_text(json.dumps(doc))

    def no_server(*_a: Any) -> None:
        raise AssertionError("--judge-again asks nothing")

    monkeypatch.setattr(peer.dl, "_start_semif", no_server)
    monkeypatch.setattr(peer.dl, "_start_typed_gguf", no_server)
    assert peer.main(["--output", str(out), "--judge-again"]) == 0
    again = json.loads(out.read_text())
    assert envelope_problems(again) == [] and again["created_utc"] == doc["created_utc"] and again["judged_again_utc"]
    a = again["lanes"][0]["sets"]["boundary"]
    assert a["wall_s"] == doc["lanes"][0]["sets"]["boundary"]["wall_s"]  # what was measured is kept
    assert a["balanced_accuracy"] == again["lanes"][1]["sets"]["boundary"]["balanced_accuracy"] > 0  # judged anew
    assert [(p["set"], p["type"]) for p in again["beside_peer"]] == [("boundary", "all"), ("boundary", "choice")]
    (out.with_suffix(".records") / "typed-gguf-boundary.jsonl").unlink()
    with pytest.raises(SystemExit, match=r"no records of typed-gguf on boundary to judge again"):
        peer.main(["--output", str(out), "--judge-again"])
    out.write_text(json.dumps({**doc, "kind": "decision-latency"}))
    assert peer.main(["--output", str(out), "--judge-again"]) == 2
    assert peer.main(["--output", str(tmp_path / "none.json"), "--judge-again"]) == 2  # no report: said, no traceback
