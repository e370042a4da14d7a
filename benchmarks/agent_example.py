"""The agent example of docs/python-api.md (examples/agent.py), measured out of sample: fit on the training
tickets, run on the test.

    .venv/bin/python benchmarks/agent_example.py --model qwen2.5-0.5b
    # -> data/results/agent-example-qwen2.5-0.5b/ (rows, records, bias.json, thresholds-*.json, the example's output)
    #    data/results/agent-example-qwen2.5-0.5b.json (the report)

Every step is one of the user's own commands, run in order (and listed in the report with its wall time):

1. the example's three questions about each ``train`` ticket of ``data/examples/agent-tickets.json`` as rows
   (:func:`scorer.api.ask_rows`, the rows ``Scorer.ask`` scores), each with its ticket's label and the ticket as
   its ``group``: ``train-rows.jsonl`` (and ``test-rows.jsonl`` the same way);
2. ``semif score --mode shared`` on the training rows (what ``ask`` computes: one prefill per ticket);
3. ``semif calibrate bias`` on those records and labels, ``semif calibrate apply`` of it to them;
4. ``semif calibrate thresholds --precision P`` on the raw and on the calibrated training records: the policies;
5. ``examples/agent.py`` on the ``test`` tickets twice: raw (no calibration, the raw thresholds) and calibrated
   (the bias file, the calibrated thresholds), each keeping its records.

The report's numbers are recomputed from the example's records and the tickets' labels, independently of the
example's code (:func:`tally_records`: :meth:`scorer.decision.policy.Policy.verdict` on each record), and checked equal
to
the tally the example printed; a difference stops the script (exit 1) before anything is reported. Per lane and
question: answers, acted on, abstained on, right among acted (and that precision), right of all by the acting and
by the raw readout. The load averages before and after are in the report.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scorer.api import ask_rows  # noqa: E402
from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.decision.policy import acting, load_policy  # noqa: E402
from scorer.formats.envelope import envelope, write_report  # noqa: E402
from scorer.formats.records import read_records  # noqa: E402

FORMAT = "semif-agent-example-v1"
EXAMPLE = ROOT / "examples" / "agent.py"
LANES = ("raw", "calibrated")


def example_module() -> ModuleType:
    """examples/agent.py, loaded by its path (its questions, tally format and tickets file are the ones used)."""
    spec = importlib.util.spec_from_file_location("_semif_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def split_rows(tickets: list[dict[str, Any]], questions: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows ``Scorer.ask`` scores for each ticket (ids ``TICKET/QUESTION``), each with its label and the ticket
    as its group (the folds of the fits keep a ticket's questions together)."""
    rows = []
    for t in tickets:
        for name, row in zip(questions, ask_rows(t["text"], questions, id=t["id"]), strict=True):
            rows.append({**row, "label": t["labels"][name], "group": t["id"]})
    return rows


def tally_records(records: list[dict[str, Any]], labels: dict[str, str], policy: Any,
                  questions: list[str]) -> dict[str, dict[str, int]]:
    """The example's tally recomputed from its records: per question (the part of the record id after ``/``) and
    ``all``. Acted on: the policy's verdict on the record is confident; acting choice: the calibrated block's when
    there is one, else the raw choice (:func:`scorer.decision.policy.acting`)."""
    keys = ("decisions", "acted", "abstained", "right_acted", "right_acting", "right_raw")
    out = {q: dict.fromkeys(keys, 0) for q in (*questions, "all")}
    for rec in records:
        gold = labels[rec["id"]]
        act = policy.verdict(rec).confident
        choice = acting(rec)["choice"]
        for c in (out[rec["id"].rsplit("/", 1)[1]], out["all"]):
            c["decisions"] += 1
            c["acted" if act else "abstained"] += 1
            c["right_acted"] += act and choice == gold
            c["right_acting"] += choice == gold
            c["right_raw"] += rec["choice"] == gold
    return out


def parse_tally(text: str, fmt: str) -> dict[str, dict[str, int]]:
    """The tally lines the example printed (its ``TALLY`` format), back as numbers."""
    names: list[str] = []

    def field(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in names:
            return f"(?P={name})"
        names.append(name)
        return r"(?P<name>\w+)" if name == "name" else rf"(?P<{name}>\d+)"

    pattern = re.compile("^" + re.sub(r"\\\{(\w+)\\\}", field, re.escape(fmt)) + "$")
    out = {}
    for line in text.splitlines():
        m = pattern.match(line)
        if m:
            out[m["name"]] = {k: int(v) for k, v in m.groupdict().items() if k != "name"}
    return out


def lane_summary(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """The counts with the shares a reader wants: precision among acted, acted share, accuracy of each readout."""
    def share(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {q: {**c, "precision_acted": share(c["right_acted"], c["acted"]),
                "acted_share": share(c["acted"], c["decisions"]),
                "accuracy_acting": share(c["right_acting"], c["decisions"]),
                "accuracy_raw": share(c["right_raw"], c["decisions"])} for q, c in counts.items()}


def _run(argv: list[str], log: list[dict[str, Any]], stdout: Path | None = None) -> str:
    """Run one step (``semif …`` as ``python -m scorer.cli``, or a script) from the repository root; its stdout."""
    shown = " ".join(["semif", *argv[3:]] if argv[1:2] == ["-m"] else [_rel(Path(argv[1])), *argv[2:]])
    print(f"[agent-example] {shown}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    log.append({"command": shown, "wall_s": round(time.perf_counter() - t0, 2), "exit": done.returncode})
    if done.returncode != 0:
        raise SystemExit(f"[agent-example] failed ({done.returncode}): {shown}\n{done.stderr[-4000:]}")
    if stdout is not None:
        stdout.write_text(done.stdout, encoding="utf-8")
    return done.stdout


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--precision", type=float, default=0.9, help="target precision of the thresholds (default 0.9)")
    ap.add_argument("--out-dir", type=Path, help="where the steps write (default data/results/agent-example-MODEL/)")
    ap.add_argument("--output", type=Path, help="the report (default data/results/agent-example-MODEL.json)")
    args = ap.parse_args(argv)
    name = f"agent-example-{Path(args.model).name}"
    out_dir = (args.out_dir or ROOT / "data" / "results" / name).resolve()
    output = (args.output or ROOT / "data" / "results" / f"{name}.json").resolve()
    for p in (out_dir, output):
        if p.exists():
            raise SystemExit(str(refuse_overwrite(p)))
    ex = example_module()
    doc = orjson.loads(ex.TICKETS.read_bytes())
    questions = list(ex.QUESTIONS)
    load_before = load_average()
    out_dir.mkdir(parents=True)
    files = {k: out_dir / f for k, f in (
        ("train_rows", "train-rows.jsonl"), ("test_rows", "test-rows.jsonl"), ("train_raw", "train-raw.jsonl"),
        ("bias", "bias.json"), ("train_calibrated", "train-calibrated.jsonl"),
        ("thresholds_raw", "thresholds-raw.json"), ("thresholds_calibrated", "thresholds-calibrated.json"),
        ("records_raw", "test-raw.jsonl"), ("records_calibrated", "test-calibrated.jsonl"),
        ("printed_raw", "example-raw.txt"), ("printed_calibrated", "example-calibrated.txt"))}
    for split in ("train", "test"):
        files[f"{split}_rows"].write_bytes(b"".join(orjson.dumps(r) + b"\n"
                                                    for r in split_rows(doc[split], ex.QUESTIONS)))
    f = {k: _rel(v) for k, v in files.items()}  # the files written cite these paths: relative where they can be
    semif, log = [sys.executable, "-m", "scorer.cli"], []
    model = ["--model", args.model]
    _run([*semif, "score", "--input", f["train_rows"], "--output", f["train_raw"], "--mode", "shared", *model], log)
    _run([*semif, "calibrate", "bias", f["train_raw"], "--labels", f["train_rows"], "--output", f["bias"]], log)
    _run([*semif, "calibrate", "apply", f["train_raw"], "--calibration", f["bias"], "--output",
          f["train_calibrated"]], log)
    for lane in LANES:
        _run([*semif, "calibrate", "thresholds", f[f"train_{lane}"], "--labels", f["train_rows"], "--precision",
              f"{args.precision:g}", "--output", f[f"thresholds_{lane}"]], log)
    labels = {r["id"]: r["label"] for r in map(orjson.loads, files["test_rows"].read_bytes().splitlines())}
    sig_names = {r["signature"]: r["id"].rsplit("/", 1)[1] for r in read_records(files["train_raw"])}
    lanes: dict[str, Any] = {}
    for lane in LANES:
        cal = ["--calibration", f["bias"]] if lane == "calibrated" else []
        printed = _run([sys.executable, str(EXAMPLE), *model, *cal, "--policy", f[f"thresholds_{lane}"],
                        "--records", f[f"records_{lane}"]], log, files[f"printed_{lane}"])
        counts = tally_records(read_records(files[f"records_{lane}"]), labels,
                               load_policy(files[f"thresholds_{lane}"]), questions)
        shown = parse_tally(printed, ex.TALLY)
        if shown != counts:
            raise SystemExit(f"[agent-example] {lane}: the example printed {shown}, its records say {counts}")
        thresholds = orjson.loads(files[f"thresholds_{lane}"].read_bytes())
        by_name = {sig_names.get(sig, sig): e["threshold"] for sig, e in thresholds["thresholds"].items()}
        lanes[lane] = {"calibration": _rel(files["bias"]) if cal else None,
                       "policy": _rel(files[f"thresholds_{lane}"]), "printed_equals_records": True,
                       "thresholds": by_name,
                       "fallback": thresholds["fallback"]["threshold"],
                       "train_out_of_fold": {k: thresholds["out_of_fold"][k] for k in
                                             ("folds", "acted", "correct", "precision", "acted_share")},
                       "test": lane_summary(counts)}
    oof = orjson.loads(files["bias"].read_bytes())["out_of_fold"]
    bias_oof = {k: oof[k] for k in ("folds", "balanced_accuracy_gain", "beats_uncalibrated")}
    report = {**envelope("agent-example", FORMAT, {"tickets": ex.TICKETS, "example": EXAMPLE,
                                                   **{k: v for k, v in files.items() if not k.startswith("printed")}}),
              "title": f"The README's agent example on {args.model}: acted on, abstained, right among acted "
                       f"(test tickets; calibration and thresholds fitted on the training tickets)",
              "model": args.model, "precision_target": args.precision, "questions": questions,
              "tickets": {s: len(doc[s]) for s in ("train", "test")}, "steps": log, "lanes": lanes,
              "bias_train_out_of_fold": bias_oof, "load_average": load_span(load_before),
              "notes": ["out of sample: the test tickets were scored only by the example, after every fit",
                        "raw lane: no calibration, thresholds fitted on the raw training records; calibrated lane: "
                        "bias offsets and thresholds fitted on the training records",
                        "right_raw: the raw choice against the label, whatever the policy (the lane's readout "
                        "before calibration)", "one process per step on this machine; wall_s includes model loads"]}
    write_report(output, report)
    print(f"[agent-example] wrote {_rel(output)} and {_rel(out_dir)}/", file=sys.stderr)
    for lane in LANES:
        a = lanes[lane]["test"]["all"]
        print(f"{lane}: acted on {a['acted']}/{a['decisions']}, abstained on {a['abstained']}, right among acted "
              f"{a['right_acted']}/{a['acted']}; right of all: acting {a['right_acting']}, raw {a['right_raw']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
