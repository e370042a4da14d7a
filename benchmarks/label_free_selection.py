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
    """A study report's sets: rows and their per-method corrections (the study's own code on its records)."""

    def __init__(self, report_path: Path) -> None:
        self.report = json.loads(report_path.read_text(encoding="utf-8"))
        self.rows: dict[str, list[Decision]] = {}
        self.per: dict[str, list[study.RowRecords]] = {}
        for name, entry in self.report["sets"].items():
            rows = load_decisions(study.SETS[name])
            recs: dict[str, dict[str, Any]] = {}
            with gzip.open(ROOT / entry["records"]["path"], "rt", encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    recs[rec["id"]] = rec
            owner: dict[tuple[str, tuple[str, ...]], str] = {}
            for d in rows:
                owner.setdefault((d.question, tuple(d.option_ids)), d.id)
            want = study.needs(list(METHODS))
            self.rows[name] = rows
            self.per[name] = [study.RowRecords(d, recs, owner[(d.question, tuple(d.option_ids))], want) for d in rows]

    def groups(self) -> dict[Group, list[tuple[str, int]]]:
        """Every (set, family, kind) and the positions of its rows."""
        out: dict[Group, list[tuple[str, int]]] = {}
        for name, rows in self.rows.items():
            for i, d in enumerate(rows):
                out.setdefault((name, family_of(d), kind_of(d)), []).append((name, i))
        return out

    def judge(self, name: str, positions: Sequence[int], method_of: Mapping[int, str]) -> dict[str, Any]:
        """The study's judgement of ``positions`` of set ``name``, row ``i`` corrected by ``method_of[i]``."""
        rows = [self.rows[name][i] for i in positions]
        made = [study._record(self.per[name][i].d, self.per[name][i].method(method_of[i])) for i in positions]
        return study.judge(rows, study.gold(rows), made, "selection")


def pick(votes: Mapping[Group, Mapping[str, float]], groups: Sequence[Group]) -> str:
    """The method with the highest mean vote over ``groups`` (ties: the first in METHODS)."""
    means = {m: float(np.mean([votes[g][m] for g in groups])) for m in METHODS}
    return max(METHODS, key=lambda m: (means[m], -METHODS.index(m)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", type=Path, required=True, help="a single-request study report (every method judged)")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="overwrite an existing report")
    args = ap.parse_args(argv)
    check_writable(args.output, overwrite=args.force)
    s = Study(args.study)
    missing = [m for m in METHODS if any(m not in v["methods"] for v in s.report["sets"].values())]
    if missing:
        ap.error(f"--study: {args.study} did not judge {', '.join(missing)} on every set (run the study with every "
                 "method)")
    groups = s.groups()
    votes = {g: {m: s.judge(g[0], [i for _, i in pos], dict.fromkeys([i for _, i in pos], m))["balanced_accuracy"]
                 for m in METHODS} for g, pos in groups.items()}
    kinds = [k for k in ANSWER_KINDS if any(g[2] == k for g in groups)]
    picked = {k: pick(votes, [g for g in groups if g[2] == k]) for k in kinds}
    held_out = {g: pick(votes, [o for o in groups if o[2] == g[2] and o != g]) if
                len([o for o in groups if o[2] == g[2]]) > 1 else "none" for g in groups}
    result: dict[str, Any] = {}
    for name, rows in s.rows.items():
        every = list(range(len(rows)))
        cross = {i: held_out[(name, family_of(d), kind_of(d))] for i, d in enumerate(rows)}
        chosen = {i: picked[kind_of(d)] for i, d in enumerate(rows)}
        result[name] = {"rows": len(rows), "cross_fitted": s.judge(name, every, cross),
                        "picked": s.judge(name, every, chosen),
                        "none": s.judge(name, every, dict.fromkeys(every, "none"))}
        c = result[name]["cross_fitted"]
        print(f"{name}: cross-fitted {c['balanced_accuracy']:.3f} ("
              + ", ".join(f"{t} {v['balanced_accuracy']:.3f}" for t, v in c["by_type"].items())
              + f"), picked {result[name]['picked']['balanced_accuracy']:.3f}, none "
              f"{result[name]['none']['balanced_accuracy']:.3f}", file=sys.stderr)
    full = {k: picked.get(k, "none") for k in ANSWER_KINDS}
    print(f"picked: {full}", file=sys.stderr)
    report = make_report("label-free-selection", FORMAT, {"study": args.study}, {
        "title": f"The label-free default per kind of question, chosen out of fold: {s.report['model']['key']} "
                 f"read through {s.report['slots']}",
        "model": s.report["model"], "slots": s.report["slots"], "study": str(args.study),
        "rule": "per kind, the method with the highest balanced accuracy averaged over every family (of every set) "
                "that asks that kind, ties to the cheaper; cross_fitted: each family corrected by the methods "
                "picked without it",
        "picked": full, "method": by_kind(full),
        "kinds_without_families": [k for k in ANSWER_KINDS if k not in kinds],
        "votes": [{"set": g[0], "family": g[1], "kind": g[2], "rows": len(groups[g]), "held_out_pick": held_out[g],
                   "balanced_accuracy": votes[g]} for g in sorted(groups)],
        "sets": result})
    write_report(args.output, report, overwrite=args.force)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
