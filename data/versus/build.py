#!/usr/bin/env python3
"""Build the showcase versus input from the shape workload (stdlib only, deterministic).

Writes ``scorer/data/versus/shape-s01.json`` (package data: the live page and semif versus read it): ONE state of ``data/workloads/shape-full.jsonl`` with
its 21 criteria and gold labels, as a ``semif versus`` input
``{"id", "state", "criteria": [{"id", "question", "label"}]}``.

Which state: the FIRST state in file order (``state_id`` of line 1, ``s01``). The rule was fixed
before anything was scored and does not look at any model's output, so the state is not picked for its
result. The criteria keep their file order; ids are the workload's ``criterion_id`` (c01..c21).
A calibration for this input must be estimated on the OTHER 36 states only (label-free priors).

Run: python data/versus/build.py   (rewrites shape-s01.json byte-for-byte)
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "workloads", "shape-full.jsonl")
OUT = os.path.join(HERE, "..", "..", "scorer", "data", "versus", "shape-s01.json")


def main() -> None:
    with open(SOURCE, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    state_id = rows[0]["state_id"]  # the rule: the first state in file order
    mine = [r for r in rows if r["state_id"] == state_id]
    assert len(mine) == 21, f"{state_id} has {len(mine)} criteria, expected 21"
    assert all(r["state"] == mine[0]["state"] for r in mine), "one state per state_id"
    assert all([o["id"] for o in r["options"]] == ["yes", "no"] for r in mine), "yes/no criteria only"
    doc = {"id": f"shape-{state_id}", "state": mine[0]["state"],
           "criteria": [{"id": r["criterion_id"], "question": r["question"], "label": r["label"]} for r in mine]}
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}: {state_id}, {len(mine)} criteria, "
          f"{sum(r['label'] == 'yes' for r in mine)} yes / {sum(r['label'] == 'no' for r in mine)} no")


if __name__ == "__main__":
    main()
