#!/usr/bin/env python3
"""Which label-free correction each KIND of question gets by default, chosen out of fold from a single-request study's
records (no model is run; ``benchmarks/single_request_study.py`` scored every prompt).

A question is a yes/no, a score or a choice question (:func:`scorer.decision.questions.answer_kind`); the study's sets
hold families of each (authored: choice and yes/no; boundary: yes/no; single: all three). The rule, one for every
model and readout:

* per kind, every family of every set that asks questions of that kind is one vote of equal weight: the method's
  balanced accuracy on that family's questions of that kind (each row answered alone, as the study scored it);
* the kind's default is the method with the highest mean over those families (a tie goes to the method listed first
  in :data:`scorer.calibration.label_free.METHODS`, ``none`` first: the cheaper);
* how well the rule does on questions it has not seen is measured by leaving one family out: each family's questions
  are corrected by the methods the rule picks from the other families alone, and every set is judged on those answers
  (``cross_fitted``) — the number to quote; ``picked`` is the rule's default judged on every family, the families it
  was picked on included.

    PYTHONPATH=. .venv/bin/python benchmarks/label_free_selection.py \\
        --study data/results/single-request-study-qwen2.5-1.5b-auto.json \\
        --output data/results/label-free-selection-qwen2.5-1.5b-auto.json

Writes one report (the common envelope, kind ``label-free-selection``); the table on stderr.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import single_request_study as study  # noqa: E402
from scorer.calibration.label_free import METHODS, by_kind  # noqa: E402
from scorer.core.io import check_writable  # noqa: E402
from scorer.decision.questions import ANSWER_KINDS, answer_kind  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.rows import Decision, load_decisions  # noqa: E402

FORMAT = "semif-label-free-selection-v1"
Group = tuple[str, str, str]
"""(set, family, kind): one vote."""


def kind_of(d: Decision) -> str:
    return answer_kind(d.type, d.option_ids)


def family_of(d: Decision) -> str:
    return str(d.extra.get("family") or "all")


class Study:
    """A study report's sets: rows and their per-method corrections (the study's own code on its records), the rows of
    the kinds of question ``kinds`` only (None: every kind the study scored); options read as sequences are read
    again under ``norm`` when it is given (:func:`single_request_study.renormalised`)."""

    def __init__(self, report_path: Path, kinds: Sequence[str] | None = None, norm: str | None = None) -> None:
        self.path = report_path
        self.report = json.loads(report_path.read_text(encoding="utf-8"))
        self.methods = [m for m in METHODS if all(m in v["methods"] for v in self.report["sets"].values())]
        scored = self.report.get("kinds") or list(ANSWER_KINDS)
        self.kinds = [k for k in scored if kinds is None or k in kinds]
        self.rows: dict[str, list[Decision]] = {}
        self.per: dict[str, list[study.RowRecords]] = {}
        for name, entry in self.report["sets"].items():
            rows = [d for d in load_decisions(study.SETS[name]) if kind_of(d) in scored]
            recs: dict[str, dict[str, Any]] = {}
            with gzip.open(ROOT / entry["records"]["path"], "rt", encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if norm and (rec.get("slots") or {}).get("normalisation") not in (None, norm):
                        rec = study.renormalised(rec, norm)
                    recs[rec["id"]] = rec
            owner: dict[tuple[str, tuple[str, ...]], str] = {}
            for d in rows:  # the content-free prompts' owner, as the study derived them (the rows it scored)
                owner.setdefault((d.question, tuple(d.option_ids)), d.id)
            want = study.needs(self.methods)
            keep = [d for d in rows if kind_of(d) in self.kinds]
            self.rows[name] = keep
            self.per[name] = [study.RowRecords(d, recs, owner[(d.question, tuple(d.option_ids))], want) for d in keep]

    def groups(self) -> dict[Group, list[int]]:
        """Every (set, family, kind) and the positions of its rows."""
        out: dict[Group, list[int]] = {}
        for name, rows in self.rows.items():
            for i, d in enumerate(rows):
                out.setdefault((name, family_of(d), kind_of(d)), []).append(i)
        return out

    def made(self, name: str, positions: Sequence[int], method_of: Mapping[int, str]) -> list[dict[str, Any]]:
        """The records of ``positions`` of set ``name``, row ``i`` corrected by ``method_of[i]``."""
        return [study._record(self.per[name][i].d, self.per[name][i].method(method_of[i])) for i in positions]

    def judge(self, name: str, positions: Sequence[int], method_of: Mapping[int, str]) -> dict[str, Any]:
        """The study's judgement of ``positions`` of set ``name``, row ``i`` corrected by ``method_of[i]``."""
        rows = [self.rows[name][i] for i in positions]
        return study.judge(rows, study.gold(rows), self.made(name, positions, method_of), "selection")


def pick(votes: Mapping[Group, Mapping[str, float]], groups: Sequence[Group], methods: Sequence[str]) -> str:
    """The method of ``methods`` with the highest mean vote over ``groups`` (ties: the first in METHODS)."""
    means = {m: float(np.mean([votes[g][m] for g in groups])) for m in methods}
    return max(methods, key=lambda m: (means[m], -METHODS.index(m)))


def judge_set(studies: Sequence[Study], name: str, method_of: Mapping[Group, str]) -> dict[str, Any]:
    """Set ``name`` judged whole, its rows gathered from every study that holds some, each corrected by the method
    ``method_of`` its (set, family, kind) gets."""
    rows: list[Decision] = []
    made: list[dict[str, Any]] = []
    for s in studies:
        got = s.rows.get(name) or []
        every = list(range(len(got)))
        rows += got
        made += s.made(name, every, {i: method_of[(name, family_of(d), kind_of(d))] for i, d in enumerate(got)})
    return study.judge(rows, study.gold(rows), made, "selection")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", type=Path, required=True, help="a single-request study report (every method judged)")
    ap.add_argument("--study-for", action="append", default=[], metavar="KIND=REPORT",
                    help="the questions of one kind taken from another study (e.g. read through another readout, "
                         "study run with --kinds KIND); its candidates are the methods it judged on every set")
    ap.add_argument("--study-norm", choices=("sum", "mean"),
                    help="read the --study-for studies' sequence records again under this normalisation (the one "
                         "the readout being chosen for uses)")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="overwrite an existing report")
    args = ap.parse_args(argv)
    check_writable(args.output, overwrite=args.force)
    overrides: dict[str, Path] = {}
    for item in args.study_for:
        kind, _, path = item.partition("=")
        if kind not in ANSWER_KINDS or not path:
            ap.error(f"--study-for: {item!r} (expected KIND=REPORT, KIND one of {', '.join(ANSWER_KINDS)})")
        overrides[kind] = Path(path)
    main_study = Study(args.study, [k for k in ANSWER_KINDS if k not in overrides])
    missing = [m for m in METHODS if m not in main_study.methods]
    if missing:
        ap.error(f"--study: {args.study} did not judge {', '.join(missing)} on every set (run the study with every "
                 "method)")
    studies = [main_study] + [Study(path, [kind], args.study_norm) for kind, path in overrides.items()]
    for kind, s in zip(overrides, studies[1:], strict=True):
        if kind not in s.kinds:
            ap.error(f"--study-for {kind}: {s.path} scored no {kind} questions")
    candidates = {k: s.methods for s in studies for k in s.kinds}
    located = {g: (s, pos) for s in studies for g, pos in s.groups().items()}
    votes = {g: {m: s.judge(g[0], pos, dict.fromkeys(pos, m))["balanced_accuracy"] for m in s.methods}
             for g, (s, pos) in located.items()}
    groups = list(located)
    kinds = [k for k in ANSWER_KINDS if any(g[2] == k for g in groups)]
    picked = {k: pick(votes, [g for g in groups if g[2] == k], candidates[k]) for k in kinds}
    held_out = {g: pick(votes, [o for o in groups if o[2] == g[2] and o != g], candidates[g[2]]) if
                len([o for o in groups if o[2] == g[2]]) > 1 else "none" for g in groups}
    names = list(dict.fromkeys(name for s in studies for name in s.rows))
    result: dict[str, Any] = {}
    for name in names:
        result[name] = {"rows": sum(len(s.rows.get(name) or []) for s in studies),
                        "cross_fitted": judge_set(studies, name, held_out),
                        "picked": judge_set(studies, name, {g: picked[g[2]] for g in groups}),
                        "none": judge_set(studies, name, dict.fromkeys(groups, "none"))}
        c = result[name]["cross_fitted"]
        print(f"{name}: cross-fitted {c['balanced_accuracy']:.3f} ("
              + ", ".join(f"{t} {v['balanced_accuracy']:.3f}" for t, v in c["by_type"].items())
              + f"), picked {result[name]['picked']['balanced_accuracy']:.3f}, none "
              f"{result[name]['none']['balanced_accuracy']:.3f}", file=sys.stderr)
    full = {k: picked.get(k, "none") for k in ANSWER_KINDS}
    print(f"picked: {full}", file=sys.stderr)
    readout = main_study.report["slots"] + "".join(
        f"; {k} questions from {p.name} ({s.report['slots']}{', ' + args.study_norm if args.study_norm else ''})"
        for (k, p), s in zip(overrides.items(), studies[1:], strict=True))
    report = make_report("label-free-selection", FORMAT, {"study": args.study, **{f"study-{k}": p for k, p in
                                                                                 overrides.items()}}, {
        "title": f"The label-free default per kind of question, chosen out of fold: "
                 f"{main_study.report['model']['key']} read through {readout}",
        "model": main_study.report["model"], "slots": main_study.report["slots"], "study": str(args.study),
        "studies_for": {k: str(p) for k, p in overrides.items()}, "study_norm": args.study_norm,
        "candidates": candidates,
        "rule": "per kind, the method with the highest balanced accuracy averaged over every family (of every set) "
                "that asks that kind, ties to the cheaper; cross_fitted: each family corrected by the methods "
                "picked without it",
        "picked": full, "method": by_kind(full),
        "kinds_without_families": [k for k in ANSWER_KINDS if k not in kinds],
        "votes": [{"set": g[0], "family": g[1], "kind": g[2], "rows": len(located[g][1]), "held_out_pick": held_out[g],
                   "balanced_accuracy": votes[g]} for g in sorted(groups)],
        "sets": result})
    write_report(args.output, report, overwrite=args.force)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
