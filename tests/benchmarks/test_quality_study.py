"""The quality study (benchmarks/quality_study.py): group-disjoint folds whose demonstrations and calibrations never
see the evaluation fold (property tests), a whole study on fakes (report schema-valid and equal to a recomputation
from its own records, resume, refusals, dry run, the winner as a preset, the site's table), and a tiny real study on
smollm2 (slow)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from fakes import FakeBackend
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import quality_study, quality_study_table
from benchmarks.quality_study_plan import fold_demos, load_set, plan
from benchmarks.quality_study_preset import write_winner
from scorer.api import Scorer
from scorer.calibration.bias import fit_bias
from scorer.calibration.prior import fit_prior
from scorer.core.errors import InputError
from scorer.evaluation import metrics
from scorer.formats.envelope import envelope_problems
from scorer.formats.json_schemas import load_schema
from scorer.formats.records import read_records, validate_records
from scorer.models.store import sha256_file
from scorer.scoring.presets import load_preset
from scorer.site.reports import load_report

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema("quality-study-v1")


def _rows(n_groups: int, per_group: int = 2, ids: tuple[str, str] = ("y", "n"), group_key: str = "group",
          prefix: str = "t", questions: int = 2) -> list[dict[str, Any]]:
    out = []
    for g in range(n_groups):
        for j in range(per_group):
            i = g * per_group + j
            out.append({"id": f"{prefix}{i}", "state": f"Ticket {prefix}{i}: order {g * 13 + j}, {i % 5} days late.",
                        "question": f"Is the order late ({i % questions})?",
                        "options": [{"id": ids[0], "description": "Yes"}, {"id": ids[1], "description": "No"}],
                        "label": ids[(g + j) % 2], "family": f"f{i % questions}", group_key: f"{prefix}g{g}"})
    return out


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


# --- folds, demonstrations and calibrations never see the evaluation fold -------------------------------------
GROUPS = st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["y", "n"])), min_size=4, max_size=30)


@settings(max_examples=60, deadline=None, database=None)
@given(GROUPS, st.integers(2, 5), st.integers(1, 4), st.integers(0, 3))
def test_folds_are_group_disjoint_and_demos_come_from_other_folds(tmp_path_factory, rows, folds, k, seed):
    if len({g for g, _ in rows}) < 2:
        return
    data = [{"id": f"r{i}", "state": f"state {i}", "question": "Late?",
             "options": [{"id": "y", "description": "Yes"}, {"id": "n", "description": "No"}],
             "label": lab, "group": f"g{g}"} for i, (g, lab) in enumerate(rows)]
    s = load_set(str(_jsonl(tmp_path_factory.mktemp("p") / "set.jsonl", data)), folds=folds)
    fold_of_group: dict[str, int] = {}
    for lb, f in zip(s.labels, s.fold_of_row, strict=True):
        assert fold_of_group.setdefault(lb.group, f) == f  # a group never spans two folds
    for f in range(s.folds):
        held = {s.decisions[i].id for i in s.rows_in(f)}
        held_groups = {s.labels[i].group for i in s.rows_in(f)}
        demos = fold_demos(s, f, k, seed)
        assert not held & set(demos.by_id)  # the pool holds no row of the evaluation fold
        for i in s.rows_in(f):
            pick = demos.pick(s.decisions[i])
            assert not {x.id for x in pick.shown} & held
            assert not {demos.by_id[x.id].group for x in pick.shown} & held_groups


def test_calibration_is_fitted_on_the_training_folds_of_the_same_run(tmp_path, monkeypatch):
    s = load_set(str(_jsonl(tmp_path / "set.jsonl", _rows(6, 3))), folds=3)
    with Scorer(backend=FakeBackend()) as sc:
        base = sc.score_decisions(s.decisions, {"input_sha256": s.sha256, "semif": "test"})
    by_fold = {f: {i: {**r, "extra": {**r["extra"], "served": f}} for i, r in enumerate(base)} for f in range(s.folds)}
    seen: list[tuple[int, set[str], set[int]]] = []
    real = quality_study_table.fitter

    def spy(kind: str, gold: dict[str, str], fallback: str | None = None) -> Any:
        fit = real(kind, gold, fallback)

        def run(recs: list[dict[str, Any]]) -> Any:
            seen.append((len(seen), {r["id"] for r in recs}, {r["extra"]["served"] for r in recs}))
            return fit(recs)
        return run

    monkeypatch.setattr(quality_study_table, "fitter", spy)
    for cal in ("prior", "bias"):
        seen.clear()
        out, _ = quality_study_table.held_out(s, lambda f: by_fold[f], cal)
        assert len(seen) == s.folds
        for f, (_, ids, served) in enumerate(seen):
            held = {s.decisions[i].id for i in s.rows_in(f)}
            assert ids == {s.decisions[i].id for i in s.rows_outside(f)} and not ids & held
            assert served == {f}  # fitted on the run that served this fold, nothing else
        for i, rec in enumerate(out):
            assert rec["extra"]["served"] == s.fold_of_row[i] and rec["id"] == s.decisions[i].id


# --- a whole study on fakes -----------------------------------------------------------------------------------
def _sets(tmp_path: Path) -> tuple[Path, Path]:
    a = _jsonl(tmp_path / "tickets.jsonl", _rows(8, 2))
    # no group field: the state_id is the group; ids "yes"/"no" are 3 and 2 tokens on the fake tokenizer
    b = _jsonl(tmp_path / "queue.jsonl", _rows(5, 2, ("yes", "no"), "state_id", "q"))
    return a, b


def _study(tmp_path: Path, *extra: str, out: str = "study.json", sets: tuple[Path, ...] | None = None) -> int:
    a, b = sets or _sets(tmp_path)
    return quality_study.main(["run", "--model", "fake", "--sets", f"{a},{b}", "--k", "0,2", "--folds", "3",
                               "--reps", "40", "--readouts", "letters,ids", "--output", str(tmp_path / out),
                               "--work", str(tmp_path / "runs"), *extra], load=lambda cfg: FakeBackend())


def recompute(report: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every table number again, from the report's records alone, with scorer.calibration and scorer.evaluation.metrics
    (the
    study's own fold and calibration code not used)."""
    reps, seed = report["bootstrap"]["reps"], report["bootstrap"]["seed"]
    pr, bi = report["calibrations"]["prior"], report["calibrations"]["bias"]
    out = {}
    for row in report["table"]:
        sdesc = next(s for s in report["sets"] if s["name"] == row["set"])
        runs = [r for r in report["runs"] if (r["set"], r["layout"], r["k"], r["readout"])
                == (row["set"], row["layout"], row["k"], row["readout"])]
        recs_of = {r["fold"]: read_records(r["records"]["path"]) for r in runs}
        rows_file = [json.loads(x) for x in Path(sdesc["path"]).read_text().splitlines()]
        group = {r["id"]: str(r.get("group", r.get("state_id"))) for r in rows_file}
        labels = [metrics.Label(r["id"], r["label"], str(r.get("family", "all")), group[r["id"]],
                                tuple(o["id"] for o in r["options"])) for r in rows_file]
        gold = {lb.id: lb.label for lb in labels}
        held: list[dict[str, Any]] = []
        for f, fold_groups in enumerate(sdesc["fold_groups"]):
            recs = recs_of.get(f, recs_of.get(None))
            assert recs is not None
            test = [r for r in recs if group[r["id"]] in fold_groups]
            train = [r for r in recs if group[r["id"]] not in fold_groups]
            if row["calibration"] == "none":
                held += test
                continue
            sigs = [r["signature"] for r in train]
            cal = (fit_prior(train, sigs, pr["estimator"], pr["min_rows"], pr["fallback"])
                   if row["calibration"] == "prior" else
                   fit_bias(train, sigs, gold, bi["min_rows"], bi["temperature"], bi["l2"], bi["balanced"],
                            bi["levels"]))
            for r in test:
                try:
                    c = cal.apply(r)["calibrated"]
                    held.append({**r, **{k: c[k] for k in ("probabilities", "option_logits", "choice", "margin", "tie",
                                                           "tied_option_ids")}})
                except InputError:
                    held.append(r)
        t, _ = metrics.align(labels, held)
        key = (row["set"], row["layout"], row["k"], row["readout"], row["calibration"])
        out[key] = metrics.bootstrap(t, reps, seed)
    return out


def _check_ceiling(report: dict[str, Any]) -> None:
    """The ceiling again from the records alone: a row's record from the run that served its fold, the prior fitted
    on all of them (no labels), and a brute-force search of per-family offsets, independent of the vectorised one."""
    pr = report["calibrations"]["prior"]
    ceil = report["ceiling"]
    assert len(ceil["configurations"]) == len({(r["set"], r["layout"], r["k"], r["readout"]) for r in report["table"]})
    for c in ceil["configurations"]:
        sdesc = next(s for s in report["sets"] if s["name"] == c["set"])
        rows_file = [json.loads(x) for x in Path(sdesc["path"]).read_text().splitlines()]
        fold_of = {str(g): f for f, gs in enumerate(sdesc["fold_groups"]) for g in gs}
        runs = {r["fold"]: read_records(r["records"]["path"]) for r in report["runs"]
                if (r["set"], r["layout"], r["k"], r["readout"]) == (c["set"], c["layout"], c["k"], c["readout"])}
        recs = []
        for row in rows_file:
            mine = runs.get(fold_of[str(row.get("group", row.get("state_id")))], runs.get(None))
            assert mine is not None
            recs.append(next(r for r in mine if r["id"] == row["id"]))
        labels = [metrics.Label(r["id"], r["label"], str(r.get("family", "all")), "g",
                                tuple(o["id"] for o in r["options"])) for r in rows_file]
        raw = metrics.family_balanced_accuracy(metrics.align(labels, recs)[0])
        assert c["raw"] == pytest.approx(raw, abs=1e-12)
        for key, min_rows in (("batch_prior", pr["min_rows"]), ("batch_prior_every", 1)):
            cal = fit_prior(recs, [r["signature"] for r in recs], pr["estimator"], min_rows, pr["fallback"])
            view = []
            for r in recs:
                try:
                    got = cal.apply(r)["calibrated"]
                    view.append({**r, **{k: got[k] for k in ("probabilities", "option_logits", "choice", "margin",
                                                             "tie", "tied_option_ids")}})
                except InputError:
                    view.append(r)
            assert c[key] == pytest.approx(metrics.family_balanced_accuracy(metrics.align(labels, view)[0]),
                                           abs=1e-12), (c, key)
        # the offsets searched one by one on the report's grid (two options here: one offset)
        per = []
        for fam in sorted({lb.family for lb in labels}):
            fam_rows = [(lb, r) for lb, r in zip(labels, recs, strict=True) if lb.family == fam]
            lp = [[math.log(max(p, 1e-300)) for p in r["probabilities"]] for _, r in fam_rows]
            y = [lb.option_ids.index(lb.label) for lb, _ in fam_rows]
            best = 0.0
            for step in range(161):
                o = -4.0 + 8.0 * step / 160
                pred = [0 if v[0] >= v[1] - o else 1 for v in lp]
                recall = [sum(p == t == cl for p, t in zip(pred, y, strict=True)) / y.count(cl) for cl in set(y)]
                best = max(best, sum(recall) / len(recall))
            per.append(best)
        assert c["offset_bound"] == pytest.approx(sum(per) / len(per), abs=1e-9)
        assert c["offset_bound"] >= c["raw"] - 1e-12  # the grid holds offset 0: the raw readout
        # at the prior's levels: a question with the row minimum on its own, the rest by family (and option set)
        sizes = Counter(r["signature"] for r in recs)
        groups: dict[Any, list[int]] = {}
        for i, (lb, r) in enumerate(zip(labels, recs, strict=True)):
            key = r["signature"] if sizes[r["signature"]] >= pr["min_rows"] else (lb.family, lb.option_ids)
            groups.setdefault(key, []).append(i)
        pred: dict[str, str] = {}
        for idx in groups.values():
            lp = [[math.log(max(p, 1e-300)) for p in recs[i]["probabilities"]] for i in idx]
            y = [labels[i].option_ids.index(labels[i].label) for i in idx]
            best, best_o = -1.0, 0.0
            for step in range(161):
                o = -4.0 + 8.0 * step / 160
                got = [0 if v[0] >= v[1] - o else 1 for v in lp]
                recall = [sum(p == t == cl for p, t in zip(got, y, strict=True)) / y.count(cl) for cl in set(y)]
                if sum(recall) / len(recall) > best + 1e-12:
                    best, best_o = sum(recall) / len(recall), o
            for i, v in zip(idx, lp, strict=True):
                pred[recs[i]["id"]] = labels[i].option_ids[0 if v[0] >= v[1] - best_o else 1]
        chosen = [{**r, "choice": pred[r["id"]], "tie": False, "tied_option_ids": []} for r in recs]
        assert c["offset_bound_levels"] == pytest.approx(
            metrics.family_balanced_accuracy(metrics.align(labels, chosen)[0]), abs=1e-9)
    for e in ceil["summary"]:
        mine = [c for c in ceil["configurations"] if c["set"] == e["set"]]
        for key in quality_study_table.CEILINGS:
            assert e[key]["value"] == max(c[key] for c in mine)
        assert e["out_of_fold"]["value"] == max(r["balanced_accuracy"]["value"] for r in report["table"]
                                                if r["set"] == e["set"])


def _check_fallbacks(report: dict[str, Any]) -> None:
    """Each fallback's out-of-fold prior equals the table's own recomputation with that fallback in place of the
    study's; the table's ``prior`` is the study's fallback's column."""
    pr = report["calibrations"]["prior"]
    cells = {(c["set"], c["layout"], c["k"], c["readout"]): c for c in report["prior_fallbacks"]["configurations"]}
    assert len(cells) == len({(r["set"], r["layout"], r["k"], r["readout"]) for r in report["table"]})
    for fb in ("none", "family", "pooled"):
        again = recompute({**report, "calibrations": {**report["calibrations"], "prior": {**pr, "fallback": fb}},
                           "table": [r for r in report["table"] if r["calibration"] == "prior"]})
        for key, boot in again.items():
            assert cells[key[:4]][fb]["balanced_accuracy"] == pytest.approx(boot["balanced_accuracy"]["value"],
                                                                             abs=1e-12), (key, fb)
    for row in report["table"]:
        if row["calibration"] == "prior":
            cell = cells[(row["set"], row["layout"], row["k"], row["readout"])][pr["fallback"]]
            assert cell["balanced_accuracy"] == pytest.approx(row["balanced_accuracy"]["value"], abs=1e-12)
            assert cell["uncovered"] == row["uncovered"]
    for e in report["prior_fallbacks"]["summary"]:
        mine = [c for c in cells.values() if c["set"] == e["set"]]
        for fb in ("family", "pooled"):
            assert e[fb]["higher"] + e[fb]["equal"] + e[fb]["lower"] == len(mine) == e["configurations"]


def _check_report(report: dict[str, Any]) -> None:
    assert not envelope_problems(report)
    jsonschema.validate(report, SCHEMA)
    _check_fallbacks(report)
    again = recompute(report)
    for row in report["table"]:
        mine = again[(row["set"], row["layout"], row["k"], row["readout"], row["calibration"])]
        for m in quality_study_table.SHOWN:
            assert row[m] == pytest.approx(mine[m], abs=1e-12), (row["set"], row["layout"], row["k"], m)
    _check_ceiling(report)
    for run in report["runs"]:
        recs = read_records(run["records"]["path"])
        validate_records(recs)
        cost = run["cost"]
        assert cost["decisions"] == len(recs) == run["rows"]
        assert cost["reused_tokens"] == sum(r["cache"]["reused_tokens"] for r in recs)
        assert cost["prefilled_tokens"] + cost["reused_tokens"] == sum(r["prefix_tokens"] for r in recs)
        assert {r["run"]["config_sha256"] for r in recs} == {run["config_sha256"]}


def test_a_study_on_fakes_is_schema_valid_and_equal_to_its_records(tmp_path, capsys):
    assert _study(tmp_path) == 0
    report = orjson.loads((tmp_path / "study.json").read_bytes())
    _check_report(report)
    # these questions have too few rows for a prior of their own out of fold: only the pools cover them
    assert any(c["none"]["uncovered"] > c["pooled"]["uncovered"] for c in report["prior_fallbacks"]["configurations"])
    cap = capsys.readouterr()
    assert "| tickets | state-major | 0 | letters | none |" in cap.out and "[quality-study] run 1/" in cap.err
    # the grid: every readout in every layout and k; ids skipped, with the renderer's words, on a set it cannot read
    skipped = {(s["set"], s["layout"], s["k"], s["readout"]): s["reason"] for s in report["skipped"]}
    assert "options[0].id" in skipped[("queue", "state-major", 0, "ids")]  # 'yes' is 3 fake tokens
    assert "options[0].id" in skipped[("queue", "question-major", 2, "ids")]
    for cell in [("tickets", "state-major", 0, "ids"), ("tickets", "question-major", 0, "ids"),
                 ("tickets", "state-major", 2, "ids")]:
        assert cell not in skipped
    cals = Counter((r["set"], r["calibration"]) for r in report["table"])
    assert cals[("tickets", "none")] == cals[("tickets", "bias")] == 8 and cals[("queue", "prior")] == 4
    # k > 0 is scored once per fold, every fold's run shows only rows of the other folds
    for s in report["sets"]:
        group_fold = {g: f for f, gs in enumerate(s["fold_groups"]) for g in gs}
        rows = {r["id"]: r for r in map(json.loads, Path(s["path"]).read_text().splitlines())}
        for run in (r for r in report["runs"] if r["set"] == s["name"] and r["k"] > 0):
            assert run["fold"] is not None
            for rec in read_records(run["records"]["path"]):
                for did in rec["demos"]["ids"]:
                    d = rows[did]
                    assert group_fold[str(d.get("group", d.get("state_id")))] != run["fold"]
    base = next(r for r in report["table"] if (r["set"], r["layout"], r["k"], r["readout"], r["calibration"])
                == ("tickets", "state-major", 0, "letters", "none"))
    assert base["vs_baseline"]["verdict"] == "baseline"
    assert {r["vs_baseline"]["verdict"] for r in report["table"]} <= {"baseline", "helps", "hurts",
                                                                      "no clear difference"}
    assert report["winner"]["metric"] == "balanced_accuracy"
    # the site draws it: one chart per set, the whole table, the skipped ones
    site = load_report("results/study.json", b"{}", report, set())
    assert len(site.charts) == 2 and len(site.tables[0]["rows"]) == len(report["table"])
    assert site.tables[1]["caption"].startswith("ways of asking that were not run")
    ceiling = next(t for t in site.tables if t["caption"].startswith("how far recalibrating"))
    assert [r[0] for r in ceiling["rows"]] == ["tickets", "queue"]
    # and the Markdown table comes back from the report alone
    assert quality_study.main(["table", str(tmp_path / "study.json")]) == 0
    assert capsys.readouterr().out == quality_study_table.markdown(report)


def test_resume_reuses_checked_runs_and_refuses_what_is_not_this_study(tmp_path, capsys):
    assert _study(tmp_path, "--layouts", "question-major", "--calibrations", "none,prior") == 0
    first = orjson.loads((tmp_path / "study.json").read_bytes())
    capsys.readouterr()
    # the work folder is not silently reused, nor the report overwritten
    assert _study(tmp_path, "--layouts", "question-major", "--calibrations", "none,prior", out="b.json") == 2
    assert "holds runs of an earlier study" in capsys.readouterr().err
    assert _study(tmp_path, "--layouts", "question-major", "--calibrations", "none,prior", "--resume") == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert _study(tmp_path, "--layouts", "question-major", "--calibrations", "none,prior", "--resume",
                  out="b.json") == 0
    second = orjson.loads((tmp_path / "b.json").read_bytes())
    assert all(r["resumed"] for r in second["runs"]) and second["table"] == first["table"]
    # a tampered records file is refused, naming it
    victim = Path(second["runs"][0]["records"]["path"])
    assert victim.name.startswith("tickets.")
    victim.write_bytes(victim.read_bytes().replace(b'"id":"t0"', b'"id":"tX"', 1))
    assert _study(tmp_path, "--layouts", "question-major", "--calibrations", "none,prior", "--resume",
                  out="c.json") == 2
    err = capsys.readouterr().err
    assert str(victim.with_suffix("")) in err and "Traceback" not in err
    assert not (tmp_path / "c.json").exists()


def test_dry_run_counts_runs_and_scores_nothing(tmp_path, capsys):
    a, b = _sets(tmp_path)
    rc = quality_study.main(["run", "--model", "fake", "--sets", f"{a},{b}", "--folds", "3", "--readouts",
                             "letters,ids", "--output",
                             str(tmp_path / "s.json"), "--dry-run", "--seconds-per-decision", "0.5"],
                            load=lambda cfg: pytest.fail("a dry run loads no model"))
    assert rc == 0
    out = capsys.readouterr().out
    # every readout in every layout and k: 2 layouts x 4 k x 2 readouts = 16 per set; nothing is skipped before the
    # rows are rendered on the model's tokenizer (queue's multi-token ids are found then)
    assert out.startswith("32 configurations × 3 calibrations = 96 table rows; 0 skipped;")
    assert "decisions to score × 0.5 s/decision given" in out
    assert not (tmp_path / "s.json").exists()


def test_sequence_mean_is_scored_with_the_mean_normalisation(tmp_path):
    """The study's ``sequence-mean`` readout reaches the Scorer as --slots sequence --sequence-norm mean."""
    a, _ = _sets(tmp_path)
    assert quality_study.main(["run", "--model", "fake", "--sets", str(a), "--k", "0", "--folds", "3", "--reps", "40",
                               "--layouts", "state-major", "--readouts", "sequence,sequence-mean",
                               "--calibrations", "none", "--output", str(tmp_path / "s.json"),
                               "--work", str(tmp_path / "runs")], load=lambda cfg: FakeBackend()) == 0
    report = orjson.loads((tmp_path / "s.json").read_bytes())
    norms = {r["readout"]: {rec["slots"]["normalisation"] for rec in read_records(r["records"]["path"])}
             for r in report["runs"]}
    assert norms == {"sequence": {"sum"}, "sequence-mean": {"mean"}}


def test_k_for_gives_a_layout_its_own_k_values(tmp_path, capsys):
    s = load_set(str(_jsonl(tmp_path / "set.jsonl", _rows(4))), folds=2)
    p = plan([s], ["state-major", "question-major"], [0, 2, 4], ["letters"], ["none"], True,
             ks_for={"state-major": [0]})
    assert sorted((c.layout, c.k) for c in p.configs) == [("question-major", 0), ("question-major", 2),
                                                         ("question-major", 4), ("state-major", 0)]
    for bad, said in (("question=1", "'question' is not in --layouts"), ("state-major", "LAYOUT=K,K"),
                      ("state-major=x", "a comma list of integers")):
        assert _study(tmp_path, "--k-for", bad, out=f"{bad}.json") == 2
        err = capsys.readouterr().err
        assert "--k-for" in err and said in err and "Traceback" not in err
        assert not (tmp_path / f"{bad}.json").exists()


@pytest.mark.parametrize(("edit", "field"), [
    (lambda r: r.pop("label"), "label"), (lambda r: r.update(label="maybe"), "label"),
    (lambda r: r.pop("group"), "group"),
])
def test_bad_sets_are_refused_with_file_line_field(tmp_path, capsys, edit, field):
    rows = _rows(4)
    edit(rows[2])
    bad = _jsonl(tmp_path / "bad.jsonl", rows)
    assert _study(tmp_path, sets=(bad, bad)) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: field '{field}'" in err and "Traceback" not in err


def test_a_demos_file_that_shows_a_state_of_a_set_is_refused(tmp_path, capsys):
    a, _ = _sets(tmp_path)
    shown = orjson.loads(a.read_bytes().split(b"\n")[3])
    demos = _jsonl(tmp_path / "demos.jsonl", [_rows(1, 1, prefix="d")[0], shown])
    assert _study(tmp_path, "--demos", str(demos)) == 2
    assert f"{demos}:2: field 'state': demonstration 't3' has the state of row 't3' of set tickets" in \
        capsys.readouterr().err


def test_the_winner_becomes_a_preset_only_with_demonstrations_from_a_disjoint_file(tmp_path, capsys):
    demos = _jsonl(tmp_path / "demos.jsonl", _rows(4, 2, prefix="d"))
    presets = tmp_path / "presets"
    assert _study(tmp_path, "--demos", str(demos), "--layouts", "question-major", "--k", "2",
                  "--calibrations", "prior", "--write-preset", "best", "--presets-dir", str(presets)) == 0
    report = orjson.loads((tmp_path / "study.json").read_bytes())
    _check_report(report)
    assert all(r["fold"] is None for r in report["runs"])  # demonstrations from a file: one run per configuration
    p = load_preset(presets / "best.json")
    assert (p.layout, p.demos_k, p.slots, p.calibration_kind) == ("question-major", 2, "letters", "prior")
    assert p.demos_path is not None and p.demos_path.resolve() == demos.resolve()
    assert p.provenance["study"]["path"] == str(tmp_path / "study.json")
    assert p.provenance["metric"] == "balanced_accuracy" and p.provenance["value"] == report["winner"]["value"]
    # a preset user gets the study's records (the run hash also names the preset)
    a, _ = _sets(tmp_path)
    rows = [orjson.loads(x) for x in a.read_bytes().splitlines()]
    with Scorer(backend=FakeBackend(), preset=p) as sc:
        recs = [d.record for d in sc.decide_many(rows)]
    study = read_records(next(r for r in report["runs"] if r["set"] == "tickets")["records"]["path"])
    assert [r["probabilities"] for r in recs] == [r["probabilities"] for r in study]
    assert p.calibration_path is not None
    assert {r["calibrated"]["source"]["sha256"] for r in recs} == {sha256_file(p.calibration_path)}
    assert {r["preset"]["name"] for r in recs} == {"best"}
    # never overwritten
    capsys.readouterr()
    assert _study(tmp_path, "--demos", str(demos), "--layouts", "question-major", "--k", "2", "--calibrations",
                  "prior", "--write-preset", "best", "--presets-dir", str(presets), "--work", str(tmp_path / "runs2"),
                  out="again.json") == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_a_finished_study_becomes_the_same_preset_without_scoring_again(tmp_path, capsys):
    demos = _jsonl(tmp_path / "demos.jsonl", _rows(4, 2, prefix="d"))
    presets = tmp_path / "presets"
    assert _study(tmp_path, "--demos", str(demos), "--layouts", "question-major", "--k", "2",
                  "--calibrations", "prior", "--write-preset", "best", "--presets-dir", str(presets)) == 0
    report = tmp_path / "study.json"
    argv = ["preset", str(report), "--name", "again", "--presets-dir", str(presets)]
    assert quality_study.main(argv, load=lambda cfg: pytest.fail("the preset command loads no model")) == 0
    a, b = load_preset(presets / "best.json"), load_preset(presets / "again.json")
    assert (a.layout, a.demos_k, a.slots, a.sequence_norm, a.calibration_kind, a.demos_path) == (
        b.layout, b.demos_k, b.slots, b.sequence_norm, b.calibration_kind, b.demos_path)
    assert a.provenance == b.provenance
    assert a.calibration_path is not None and b.calibration_path is not None
    fitted = [orjson.loads(p.read_bytes()) for p in (a.calibration_path, b.calibration_path)]
    assert fitted[0]["entries"] == fitted[1]["entries"]
    assert quality_study.main(argv) == 2  # never overwritten
    assert "refusing to overwrite" in capsys.readouterr().err
    # a record file changed since the study is refused, the file and the field named
    doc = orjson.loads(report.read_bytes())
    run = next(r for r in doc["runs"] if r["layout"] == "question-major")
    cited = Path(run["records"]["path"])
    cited.write_bytes(cited.read_bytes() + b"\n")
    assert quality_study.main(["preset", str(report), "--name", "third", "--presets-dir", str(presets)]) == 2
    err = capsys.readouterr().err
    assert f"{report}: field 'runs[{run['run']}].records': {cited} has changed since the study" in err
    assert not (presets / "third.json").exists() and "Traceback" not in err
    bad = _jsonl(tmp_path / "not-a-study.json", [{"kind": "compare"}])
    assert quality_study.main(["preset", str(bad), "--name", "x", "--presets-dir", str(presets)]) == 2
    assert "field 'kind'" in capsys.readouterr().err


def test_a_winner_with_demonstrations_from_the_sets_own_folds_is_not_a_preset(tmp_path):
    report = {"winner": {"k": 2, "name": "question-major · k=2 · letters · calibration none", "calibration": "none"}}
    with pytest.raises(InputError, match=r"training folds.*would show rows of the sets it is judged on"):
        write_winner("x", tmp_path, report, tmp_path / "r.json", [], [], None, 0)
    assert not (tmp_path / "x.json").exists()


def test_the_grid_takes_every_readout_the_code_accepts(tmp_path):
    from benchmarks.quality_study_plan import READOUTS
    from scorer.core.checks import SLOTS

    # every --slots value, and sequence under both length normalisations
    assert {slots for slots, _ in READOUTS.values()} == set(SLOTS)
    assert READOUTS["sequence"] == ("sequence", "sum") and READOUTS["sequence-mean"] == ("sequence", "mean")
    s = load_set(str(_jsonl(tmp_path / "set.jsonl", _rows(4))), folds=2)
    p = plan([s], ["state-major", "question-major"], [0, 2], list(READOUTS), ["none"], False)
    ran = {c.readout for c in p.configs} | {x["readout"] for x in p.skipped}
    assert ran == set(READOUTS)
    with pytest.raises(InputError, match="--readouts: 'words' is not one"):
        plan([s], ["state-major"], [0], ["words"], ["none"], False)


# --- a tiny real study ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_tiny_real_study_on_smollm2(tmp_path, smol_torch, capsys):
    rule = [json.loads(x) for x in (ROOT / "data/eval/authored.jsonl").read_text().splitlines()
            if json.loads(x)["family"] == "rule"][:9]  # 3 groups of 3 yes/no rows with short states
    tiny = _jsonl(tmp_path / "rule-tiny.jsonl", rule)
    rc = quality_study.main(["run", "--model", "smollm2-135m", "--sets", str(tiny), "--k", "0,2", "--folds", "3",
                             "--readouts", "letters,ids", "--reps", "50", "--output", str(tmp_path / "q.json")],
                            load=lambda cfg: smol_torch)
    assert rc == 0, capsys.readouterr().err
    report = orjson.loads((tmp_path / "q.json").read_bytes())
    _check_report(report)
    assert report["model"]["key"] == "smollm2-135m"
    skipped = {(s["set"], s["layout"], s["k"], s["readout"]) for s in report["skipped"]}
    assert ("rule-tiny", "state-major", 0, "ids") not in skipped  # yes/no are one token each on smollm2
    assert ("rule-tiny", "question-major", 2, "ids") not in skipped  # every layout and k reads ids now
    # 2 layouts x 2 k x 2 readouts, 3 calibrations each; k 0 one run per configuration, k 2 one per fold
    assert len(report["table"]) == 8 * 3 and len(report["runs"]) == 4 + 4 * 3
    assert all(r["cost"]["decisions"] > 0 and r["cost"]["scoring_s"] > 0 for r in report["runs"])


@pytest.mark.parametrize(("table", "what"), [("x", "'table'"), ([], "'table'"), ([{"set": "a"}], "table[0].layout"),
                                             ([{"set": "a", "layout": "state-major", "k": 0, "readout": "letters",
                                                "calibration": "none", "balanced_accuracy": 0.5, "cost": 1}],
                                              "table[0].cost")])
def test_a_malformed_study_report_stops_the_site_build(table, what):
    from scorer.site.inputs import BuildError

    rep = {"kind": "quality-study", "format": quality_study.FORMAT, "created_utc": "2026-12-01T12:00:00Z",
           "machine": {}, "versions": {}, "inputs": {}, "table": table}
    with pytest.raises(BuildError, match=re.escape(f"r.json: a quality-study report needs {what}")):
        load_report("r.json", b"{}", rep, set())


@pytest.mark.parametrize(("created", "shown"), [("2026-12-02T19:16:51Z", "undercounted in this report"),
                                                ("2026-12-03T12:20:00Z", "23")])
def test_a_report_made_before_the_sequence_token_fix_does_not_show_those_counts_as_true(created, shown):
    """The sequence readouts' token counts of a report made before 2026-12-03 left out each group prefix's
    prefill (scorer.scoring.radix_cache.Lookup.after); the site says so rather than show them; letters rows are
    shown."""
    cost = {"seconds_per_decision": 0.7, "computed_tokens_per_decision": 23.0, "reused_share": 0.98}
    row = {"set": "a", "layout": "state-major", "k": 0, "calibration": "none", "balanced_accuracy": 0.5,
           "cost": cost}
    rep = {"kind": "quality-study", "format": quality_study.FORMAT, "created_utc": created, "machine": {},
           "versions": {}, "inputs": {}, "table": [{**row, "readout": "sequence-mean"}, {**row, "readout": "letters"}],
           "demo_costs": [{"set": "a", "layout": "state-major", "readout": "sequence", "k": 8, "time_ratio": 1.01,
                           "computed_tokens_ratio": 1.0, "reused_share": 0.98}]}
    site = load_report("r.json", b"{}", rep, set())
    seq, letters = site.tables[0]["rows"]
    assert seq[10] == shown and letters[10] == "23"
    assert site.tables[1]["rows"][0][4] == "1.01"
    assert site.tables[1]["rows"][0][5] == ("1" if shown == "23" else shown)


def test_group_field_id_makes_every_row_its_own_group(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "group"} for r in _rows(3, 2)]  # no group field at all
    s = load_set(str(_jsonl(tmp_path / "plain.jsonl", rows)), ("id",), folds=4)
    assert sorted(lb.group for lb in s.labels) == sorted(r["id"] for r in rows)
    assert s.folds == 4 and sorted(set(s.fold_of_row)) == [0, 1, 2, 3]
    with pytest.raises(InputError, match="field 'group': missing"):
        load_set(str(tmp_path / "plain.jsonl"), ("group",))
