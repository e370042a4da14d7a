#!/usr/bin/env python3
"""SemIf beside the PyPI peer typed-gguf on labelled sets, each state asked in ONE System One request, both serving
the same GGUF through llama.cpp, in one run.

Lanes (servers on loopback, started here and stopped at the end, one at a time so they never share the CPU):

* ``semif:NAME`` for each ``--semif NAME=FLAGS`` (``semif serve --model KEY --backend llamacpp FLAGS``; ``default``
  with no flags is SemIf's defaults as a user gets them);
* ``typed-gguf``: ``typed-gguf serve`` 0.3.0 in its own virtualenv, on the same GGUF file, with
  ``TYPED_GGUF_RUNTIME_DIR`` pointed at llama-cpp-python's bundled libraries (how
  ``benchmarks/decision_latency.py`` starts it).

Every lane is asked through the same client, SemIf's ``--backend systemone`` (:mod:`scorer.scoring.systemone_run`):
the rows of one state are one request (``noul`` for yes/no rows, ``score`` for score rows, ``choice`` otherwise), so
nothing is fitted on other rows and no labels are seen; the lane's answers become records, and every lane is judged
by the same code (balanced accuracy per family, averaged; accuracy; per question type; the ECE of the wire confidence
and the answers at confidence ≥ 0.9); each SemIf lane is then set beside the peer on the same rows
(``beside_peer``: the paired difference with its 95 % interval, per set, every set pooled, and per question type).
The records are kept beside the report (``<output stem>.records/``): a lane asks only the sets an earlier run did not
leave records of; the others are judged from those records (``--force`` asks every lane every set again;
``--judge-again`` judges the existing report's lanes again in place, asking nothing); a file that holds only part of
a set is refused. A lane that cannot start or stops answering is listed under ``failed_lanes`` with why (its
server's log is in ``<output stem>.records/logs/``), the report is written with the others, and the exit status
is 1.

    PYTHONPATH=. .venv/bin/python benchmarks/single_request_peer.py --model qwen2.5-1.5b --sets single \\
        --semif default= --output data/results/single-request-peer-qwen2.5-1.5b.json

Writes one report (the common envelope, kind ``single-request-peer``); progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import decision_latency as dl  # noqa: E402
from scorer.core.errors import EngineError, InputError  # noqa: E402
from scorer.core.io import RecordsOutput, check_writable  # noqa: E402
from scorer.decision.confidence import choice_confidence  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.evaluation.confidence import summary as confidence_summary  # noqa: E402
from scorer.formats.envelope import make_report, read_json_file, write_report  # noqa: E402
from scorer.formats.records import read_records  # noqa: E402
from scorer.formats.rows import Decision, load_decisions  # noqa: E402
from scorer.models import store  # noqa: E402
from scorer.scoring.systemone_run import SystemOneConfig, run_systemone  # noqa: E402

SETS = {"authored": ROOT / "data" / "eval" / "authored.jsonl", "boundary": ROOT / "data" / "eval" / "boundary.jsonl",
        "single": ROOT / "data" / "eval" / "single.jsonl", "heldout": ROOT / "data" / "eval" / "heldout.jsonl",
        "heldout2": ROOT / "data" / "eval" / "heldout2.jsonl", "heldout3": ROOT / "data" / "eval" / "heldout3.jsonl"}
"""The labelled sets (``heldout``, ``heldout2`` and ``heldout3``: never read by any choice of a default,
``data/eval/build_heldout.py``, ``build_heldout2.py`` and ``build_heldout3.py``)."""
FORMAT = "semif-single-request-peer-v1"
NOTES = ["Each lane ran alone, one request per state (the rows of one state are one request); every lane is judged by "
         "the same code from its records.",
         "Balanced accuracy is per family, then averaged over families; confidence is the choice formula "
         "(p_max - 1/K)/(1 - 1/K) over each answer's probabilities.",
         "beside_peer: SemIf minus typed-gguf on the same rows, with the paired 95 % interval of the difference "
         f"(states drawn with replacement, {metrics.BOOTSTRAP_REPS} draws, both lanes on each draw); a lane is ahead "
         "or behind only when the interval excludes 0. 'all sets' pools every set's families."]


def _table(rows: list[Decision], recs: list[dict[str, Any]]) -> metrics.Table:
    """One lane's records over ``rows`` as the metrics' table, its confidence the choice formula of each answer."""
    labels = [metrics.Label(d.id, str(d.extra["label"]), str(d.extra.get("family") or "all"),
                            str(d.extra.get("group") or d.id), tuple(o.id for o in d.options)) for d in rows]
    table, _ = metrics.align(labels, recs, "records")
    by_id = {r["id"]: r for r in recs}
    table.conf = np.array([choice_confidence(list(by_id[d.id]["probabilities"])) for d in rows])
    return table


def judge(rows: list[Decision], recs: list[dict[str, Any]]) -> dict[str, Any]:
    """Balanced accuracy (per family, averaged), accuracy, per question type, and the wire confidence's reliability
    of one lane's records over ``rows``."""
    table = _table(rows, recs)
    by_type: dict[str, Any] = {}
    for qtype in sorted({d.type or "choice" for d in rows}):
        keep = np.flatnonzero([(d.type or "choice") == qtype for d in rows])
        sub = metrics.subset(table, keep)
        by_type[qtype] = {"rows": len(keep), "balanced_accuracy": metrics.family_balanced_accuracy(sub),
                          "accuracy": metrics.accuracy(sub), "correct": int(sub.correct.sum())}
    conf = confidence_summary(table)
    return {"rows": len(rows), "balanced_accuracy": metrics.family_balanced_accuracy(table),
            "accuracy": metrics.accuracy(table), "correct": int(table.correct.sum()), "by_type": by_type,
            "ece": conf["ece"], "high": conf["high"],
            "seconds": round(sum(float(r["timing"]["total_s"]) for r in recs), 2)}


def _verdict(lo: float, hi: float) -> str:
    return "ahead" if lo > 0 else "behind" if hi < 0 else "not distinguishable"


def _pooled(sets: dict[str, list[Decision]], recs: dict[str, list[dict[str, Any]]]) -> tuple[list[Decision],
                                                                                             list[dict[str, Any]]]:
    """Every set's rows and records as one set: ids, families and groups named with their set, so that rows of
    different sets never meet (a family's balanced accuracy stays within its set)."""
    rows: list[Decision] = []
    out: list[dict[str, Any]] = []
    for s, rs in sets.items():
        for d in rs:
            extra = {**d.extra, "family": f"{s}/{d.extra.get('family') or 'all'}",
                     "group": f"{s}/{d.extra.get('group') or d.id}"}
            rows.append(replace(d, id=f"{s}/{d.id}", extra=extra))
        out += [{**r, "id": f"{s}/{r['id']}"} for r in recs[s]]
    return rows, out


def beside_peer(sets: dict[str, list[Decision]], recs: dict[str, dict[str, list[dict[str, Any]]]],
                peer: str = "typed-gguf") -> list[dict[str, Any]]:
    """Each SemIf lane against ``peer`` on the very same rows, per set (and every set pooled), overall and per
    question type: the difference of balanced accuracy (SemIf − peer) with its paired 95 % interval (states drawn
    with replacement, both lanes on the same draw), the rows only one of them got right, the exact McNemar p, and a
    verdict (ahead or behind only when the interval excludes 0). ``recs``: lane → set → its records."""
    if peer not in recs:
        return []
    named = dict(sets)
    lanes = {lane: dict(by_set) for lane, by_set in recs.items()}
    if len(sets) > 1:
        for by_set in lanes.values():
            if set(by_set) == set(sets):
                named["all sets"], by_set["all sets"] = _pooled(sets, by_set)
    out: list[dict[str, Any]] = []
    for lane, by_set in lanes.items():
        if lane == peer:
            continue
        for s, rows in named.items():
            if s not in by_set or s not in lanes[peer]:
                continue
            mine, theirs = _table(rows, by_set[s]), _table(rows, lanes[peer][s])
            for qtype in ["all", *sorted({d.type or "choice" for d in rows})]:
                keep = np.flatnonzero([qtype in ("all", d.type or "choice") for d in rows])
                got = metrics.paired(metrics.subset(theirs, keep), metrics.subset(mine, keep))
                ba = got["deltas"]["balanced_accuracy"]
                out.append({"lane": lane, "set": s, "type": qtype, "rows": len(keep), "semif": ba["b"],
                            "peer": ba["a"], "delta": ba["delta"], "ci_lo": ba["ci_lo"], "ci_hi": ba["ci_hi"],
                            "semif_only_right": got["b_only_correct"], "peer_only_right": got["a_only_correct"],
                            "mcnemar_exact_p": got["mcnemar_exact_p"], "verdict": _verdict(ba["ci_lo"], ba["ci_hi"])})
    return out


def records_path(out_dir: Path, lane: str, set_name: str) -> Path:
    return out_dir / f"{lane.replace(':', '-')}-{set_name}.jsonl"


def kept(path: Path, rows: list[Decision]) -> list[dict[str, Any]] | None:
    """The records an earlier run of this lane wrote for every row of the set, in order (None: no such file). A
    file that does not hold exactly the set's rows is refused: it is never overwritten without --force."""
    if not path.exists():
        return None
    recs = list(read_records(path))
    if [r["id"] for r in recs] != [d.id for d in rows]:
        raise SystemExit(f"error: {path} holds {len(recs)} records, not one per row of its set (an interrupted run?); "
                         "pass --force to ask that lane again")
    return recs


def run_lane(lane: dl.Lane, sets: dict[str, list[Decision]], out_dir: Path, timeout_s: float,
             force: bool = False) -> dict[str, Any]:
    """Ask ``lane`` every set into a new records file per set (``force``: replacing one an earlier run left); its
    results per set."""
    results: dict[str, Any] = {}
    for name, rows in sets.items():
        path = records_path(out_dir, lane.name, name)
        cfg = SystemOneConfig(base_url=lane.base, model=lane.served_model, concurrency=1, timeout_s=timeout_s,
                              retries=1)
        t0 = time.perf_counter()
        if force:
            path.unlink(missing_ok=True)
        with RecordsOutput.create(path, "pass --force to replace it") as sink:
            run_systemone(rows, cfg, sink, {"input": name, "lane": lane.name})
        wall = time.perf_counter() - t0
        recs = list(read_records(path))
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        results[name] = {**judge(rows, recs), "records": str(where), "wall_s": round(wall, 1),
                         "load_average": list(os.getloadavg())}
        got = results[name]
        print(f"[single-request-peer] {lane.name} {name}: balanced accuracy {got['balanced_accuracy']:.3f}, accuracy "
              f"{got['accuracy']:.3f} ({wall:.0f} s)", file=sys.stderr, flush=True)
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-1.5b", help="model store key (a GGUF both tools read)")
    ap.add_argument("--sets", default="single", help="labelled sets, comma-separated: " + ", ".join(SETS))
    ap.add_argument("--semif", action="append", default=[], metavar="NAME=FLAGS",
                    help="a SemIf lane: its name and its `semif serve` flags (repeatable; default: default=)")
    ap.add_argument("--no-peer", action="store_true", help="SemIf's lanes only")
    ap.add_argument("--threads", default="auto", help="semif serve's --threads")
    ap.add_argument("--typed-gguf-keep-alive", default="3600", help="typed-gguf's warm host lifetime (seconds)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one request may take")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="overwrite an existing report and its records")
    ap.add_argument("--judge-again", action="store_true",
                    help="judge every lane of the existing report at --output again from its kept records, in place "
                         "(nothing is asked; each set keeps the wall time and load average it was measured with)")
    return ap.parse_args(argv)


def judge_again(path: Path) -> int:
    """Rewrite the report at ``path`` with every lane judged again from its kept records and the lanes paired with
    the peer: what a change to the judging (not to the lanes) needs, without asking the lanes again."""
    try:
        _raw, doc = read_json_file(path, "a single-request-peer report")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if doc.get("kind") != "single-request-peer" or not isinstance(doc.get("lanes"), list):
        print(f"error: {path}: not a single-request-peer report (kind {doc.get('kind')!r})", file=sys.stderr)
        return 2
    names = list(dict.fromkeys(s for lane in doc["lanes"] for s in lane["sets"]))
    unknown = [s for s in names if s not in SETS]
    if unknown:
        print(f"error: {path}: sets {unknown} are not labelled sets this script knows ({', '.join(SETS)})",
              file=sys.stderr)
        return 2
    sets = {s: load_decisions(str(SETS[s])) for s in names}
    out_dir = path.with_suffix(".records")
    recs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for lane in doc["lanes"]:
        for s, earlier in lane["sets"].items():
            got = kept(records_path(out_dir, lane["name"], s), sets[s])
            if got is None:
                raise SystemExit(f"error: {records_path(out_dir, lane['name'], s)}: no records of {lane['name']} on "
                                 f"{s} to judge again (run the lane without --judge-again)")
            recs.setdefault(lane["name"], {})[s] = got
            lane["sets"][s] = {**earlier, **judge(sets[s], got)}
    doc["beside_peer"] = beside_peer({s: sets[s] for s in names}, recs)
    doc["notes"] = NOTES
    doc["judged_again_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_report(path, doc, overwrite=True)
    print(f"judged {path} again", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.judge_again:
        return judge_again(args.output)
    if args.output.exists() and not args.force:
        print(f"error: {args.output} exists (--force to overwrite it)", file=sys.stderr)
        return 2
    check_writable(args.output, overwrite=args.force)
    unknown = [s for s in args.sets.split(",") if s not in SETS]
    if unknown:
        print(f"error: --sets: unknown {unknown} (expected some of {', '.join(SETS)})", file=sys.stderr)
        return 2
    sets = {s: load_decisions(str(SETS[s])) for s in args.sets.split(",")}
    semif = [tuple(x.split("=", 1)) for x in (args.semif or ["default="])]
    gguf, _sha = store.gguf_for(store.resolve(args.model))
    out_dir = args.output.with_suffix(".records")
    out_dir.mkdir(parents=True, exist_ok=True)
    work = out_dir / "logs"
    work.mkdir(exist_ok=True)
    lanes: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    plans: list[tuple[str, str, list[str]]] = [(f"semif:{n}", "semif", shlex.split(f)) for n, f in semif]
    if not args.no_peer:
        plans.append(("typed-gguf", "typed-gguf", []))
    for name, tool, flags in plans:
        done = {} if args.force else {s: kept(records_path(out_dir, name, s), rows) for s, rows in sets.items()}
        # the sets an earlier run asked this lane are judged again from its records; the lane asks only the others
        kept_results = {s: {**judge(sets[s], recs), "records": str(records_path(out_dir, name, s)),
                            "kept_from_an_earlier_run": True} for s, recs in done.items() if recs is not None}
        missing = {s: rows for s, rows in sets.items() if s not in kept_results}
        if not missing:
            lanes.append({"name": name, "tool": tool, "flags": flags, "server": None, "sets": kept_results})
            continue
        lane = dl.Lane(name, tool, "llamacpp", served_model=args.model)
        ns = argparse.Namespace(threads=args.threads, semif_flags=flags,
                                typed_gguf_keep_alive=args.typed_gguf_keep_alive)
        try:
            with contextlib.ExitStack() as stack:
                if tool == "semif":
                    dl._start_semif(lane, args.model, ns, work, stack)
                else:  # its home holds a unix socket, whose path must stay short (108 bytes): a folder of its own
                    home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tg-")))
                    dl._start_typed_gguf(lane, args.model, gguf, ns, home, stack, log_dir=work)
                asked = run_lane(lane, missing, out_dir, args.timeout, args.force)
        except (EngineError, RuntimeError, OSError) as exc:
            # a lane that cannot start or stops answering is reported with why; the other lanes still count
            failed.append({"name": name, "tool": tool, "flags": flags, "error": str(exc)[-3000:],
                           "logs": str(work.relative_to(ROOT) if work.is_relative_to(ROOT) else work)})
            dl.say(f"{name} failed: {str(exc)[-600:]}")
            continue
        results = {s: kept_results[s] if s in kept_results else asked[s] for s in sets}
        lanes.append({"name": name, "tool": tool, "flags": flags, "server": lane.info, "sets": results})
    # each lane's records, read back for the paired comparison (a lane that failed has none to pair)
    recs = {lane["name"]: {s: list(read_records(records_path(out_dir, lane["name"], s))) for s in lane["sets"]}
            for lane in lanes}
    beside = "beside typed-gguf 0.3.0" if any(lane["tool"] == "typed-gguf" for lane in lanes) else \
        "alone (typed-gguf not run)" if args.no_peer else "alone (typed-gguf failed: failed_lanes)"
    report = make_report("single-request-peer", FORMAT, {s: SETS[s] for s in sets}, {
                         "title": f"One request per state, SemIf {beside} on {args.model} (llama.cpp)",
                         "model": args.model, "gguf": {"file": gguf.name, "sha256": _sha}, "lanes": lanes,
                         "failed_lanes": failed, "beside_peer": beside_peer(sets, recs),
                         "wall_s": round(time.perf_counter() - t_all, 1), "load_average": list(os.getloadavg()),
                         "notes": NOTES})
    write_report(args.output, report, overwrite=args.force)
    print(f"wrote {args.output}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
