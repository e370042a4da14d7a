#!/usr/bin/env python3
"""Which label-free correction makes ONE request about a never-seen question right more often: every method judged
on labelled sets with each row answered alone (no batch statistics, no labels, nothing fitted on other rows).

Every labelled row is scored as it is and, for the methods, as derived rows, all in one run (shared mode: a state is
prefilled once for its rows; derived rows are ordinary decisions):

* ``rot<s>`` — the options rotated cyclically by ``s`` (every shift: each option at every position once);
* ``cf<j>`` — the same question and options about a content-free state (``N/A``, ``[MASK]``, ``None``: Zhao et al.
  2021), under every rotation;
* ``dom<j>`` — the same question about the row's own state with its words shuffled (domain-context calibration,
  Fei et al. 2023: in-domain words, no content), two seeded shuffles, identity order.

Then, per row, from those records alone (:data:`METHODS`): the raw readout; the mean over rotations (the
order-averaged readout, ``--permute K``); rotations with the per-question position prior divided out; the raw
readout divided by the content-free prior; rotations each divided by their own content-free prior, averaged; the raw
readout divided by the domain-context prior. The report gives balanced accuracy (per family, averaged) and accuracy
per set and question type, the wire confidence's ECE and its answers at ≥ 0.9, and what each method costs (scored
prompts and tokens per decision).

    .venv/bin/python benchmarks/single_request_study.py --model qwen2.5-1.5b --backend llamacpp \\
        --sets authored,boundary,shape-small --output data/results/single-request-study-qwen2.5-1.5b.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer import Scorer  # noqa: E402
from scorer.calibration.label_free import (  # noqa: E402
    CONTENT_FREE_STATES,
    DOMAIN_SAMPLES,
    Needs,
    calibrate,
    shuffled_state,
)
from scorer.calibration.label_free import needs as method_needs  # noqa: E402
from scorer.calibration.prior import DEFAULT_MIN_ROWS, fit_prior  # noqa: E402
from scorer.core.checks import (  # noqa: E402
    DEFAULT_SEQUENCE_NORM,
    NORMED_SLOTS,
    SEQUENCE_NORMS,
    SLOTS,
    OptionError,
    check_sequence_norm,
)
from scorer.core.io import check_writable  # noqa: E402
from scorer.decision.confidence import choice_confidence  # noqa: E402
from scorer.decision.questions import ANSWER_KINDS, answer_kind  # noqa: E402
from scorer.decision.readout import read_sequences  # noqa: E402
from scorer.evaluation import metrics  # noqa: E402
from scorer.evaluation.confidence import summary as confidence_summary  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.formats.records import dumps_record, read_records  # noqa: E402
from scorer.formats.rows import Decision, load_decisions  # noqa: E402
from scorer.formats.signature import record_signatures  # noqa: E402
from scorer.prompting.prompt import slots_for  # noqa: E402

SETS = {"authored": ROOT / "data" / "eval" / "authored.jsonl", "boundary": ROOT / "data" / "eval" / "boundary.jsonl",
        "shape-small": ROOT / "data" / "workloads" / "shape-small.jsonl",
        "single": ROOT / "data" / "eval" / "single.jsonl", "heldout": ROOT / "data" / "eval" / "heldout.jsonl"}
FORMAT = "semif-single-request-study-v1"
CONTENT_FREE = CONTENT_FREE_STATES
FLOOR = 1e-12


METHODS: dict[str, str] = {
    "none": "the readout as it is: one prompt",
    "rotations": "mean over every cyclic rotation of the options (K prompts)",
    "position-prior": "rotations, each divided by the question's mean probability per position",
    "content-free": "raw / the question's prior on N/A, [MASK], None (3 prompts per question, cached)",
    "rotations+content-free": "each rotation divided by its own content-free prior, averaged (K prompts + 3K per "
                              "question, cached)",
    "domain": "raw / the prior on the row's own words shuffled (2 more prompts of the state's length)",
    "rotations+domain": "rotations mean / the shuffled-state prior",
}
"""Every method (scorer.calibration.label_free.METHODS), and what it costs."""


def rotated(d: Decision, shift: int) -> Decision:
    k = shift % len(d.options)
    return replace(d, options=d.options[k:] + d.options[:k])


def needs(methods: Sequence[str]) -> Needs:
    """The derived prompts ``methods`` read together (each method's :func:`scorer.calibration.label_free.needs`)."""
    each = [method_needs(m) for m in methods]
    return Needs(rotations=any(n.rotations for n in each), content_free=any(n.content_free for n in each),
                 domain=any(n.domain for n in each))


def shifts(d: Decision, want: Needs) -> range:
    """The rotations of ``d`` that are read: every one when a method averages over them, else the identity."""
    return range(len(d.options)) if want.rotations else range(1)


def derived(rows: Sequence[Decision], methods: Sequence[str] = tuple(METHODS)) -> list[Decision]:
    """The derived rows ``methods`` read, for every row: ids ``ROW#rotS`` (``ROW#rot0`` is the row itself),
    ``ROW#cfJ.rotS``, ``ROW#domJ``; content-free rows are one per question and option list (shared by rows asking the
    same question); rotations beyond the identity only when a method averages over them."""
    want = needs(methods)
    out: list[Decision] = []
    seen_cf: set[tuple[str, tuple[str, ...]]] = set()
    for d in rows:
        out.extend(replace(rotated(d, s), id=f"{d.id}#rot{s}") for s in shifts(d, want))
        key = (d.question, tuple(o.id for o in d.options))
        if want.content_free and key not in seen_cf:
            seen_cf.add(key)
            for j, cf in enumerate(CONTENT_FREE):
                for s in shifts(d, want):
                    out.append(replace(rotated(d, s), id=f"{d.id}#cf{j}.rot{s}", state=cf, extra={}))
        if want.domain:
            for j in range(DOMAIN_SAMPLES):
                out.append(replace(d, id=f"{d.id}#dom{j}", state=shuffled_state(d.state, f"{d.id}/{j}"), extra={}))
    return out


def _probs(rec: dict[str, Any], ids: Sequence[str]) -> np.ndarray:
    """A record's probabilities aligned to ``ids``."""
    pos = {o: i for i, o in enumerate(rec["option_ids"])}
    return np.array([rec["probabilities"][pos[o]] for o in ids], dtype=np.float64)


class RowRecords:
    """The records of one labelled row and its derived rows, as :func:`scorer.calibration.label_free.calibrate`
    takes them (by position as served; the row's own readout first)."""

    def __init__(self, d: Decision, recs: dict[str, dict[str, Any]], cf_owner: str, want: Needs) -> None:
        self.d, self.ids = d, [o.id for o in d.options]
        self.by_pos = [np.array(recs[f"{d.id}#rot{s}"]["probabilities"], dtype=np.float64) for s in shifts(d, want)]
        self.cf_rot = [[np.array(recs[f"{cf_owner}#cf{j}.rot{s}"]["probabilities"], dtype=np.float64)
                        for j in range(len(CONTENT_FREE))] for s in shifts(d, want)] if want.content_free else None
        self.dom = [_probs(recs[f"{d.id}#dom{j}"], self.ids)
                    for j in range(DOMAIN_SAMPLES)] if want.domain else None

    def method(self, name: str) -> np.ndarray:
        """The library's correction ``name`` of this row (the scorer's own code, on the study's prompts)."""
        return calibrate(name, self.by_pos, self.cf_rot, self.dom)


def _record(d: Decision, p: np.ndarray) -> dict[str, Any]:
    """A minimal record of ``p`` for the metrics (choice = argmax, ties as metrics count them)."""
    order = np.argsort(-p, kind="stable")
    tie = len(p) > 1 and abs(p[order[0]] - p[order[1]]) <= 1e-12
    return {"id": d.id, "option_ids": [o.id for o in d.options], "probabilities": [float(x) for x in p],
            "option_logits": [float(x) for x in np.log(np.maximum(p, FLOOR))],
            "choice": None if tie else d.options[int(order[0])].id, "margin": float(p[order[0]] - p[order[1]]),
            "tie": bool(tie), "timing": {"total_s": 0.0}, "type": d.type,
            "extra": d.extra}


def gold(rows: Sequence[Decision]) -> list[metrics.Label]:
    """The rows' labels as the metrics read them (family and group from the row, the row itself when absent)."""
    return [metrics.Label(d.id, str(d.extra["label"]), str(d.extra.get("family") or "all"),
                          str(d.extra.get("group") or d.id), tuple(o.id for o in d.options)) for d in rows]


def evaluate(rows: Sequence[Decision], recs: dict[str, dict[str, Any]],
             methods: Sequence[str] = tuple(METHODS)) -> dict[str, Any]:
    """Per method: balanced accuracy, accuracy and the wire confidence, over ``rows``, overall and per type."""
    owner: dict[tuple[str, tuple[str, ...]], str] = {}
    for d in rows:
        owner.setdefault((d.question, tuple(o.id for o in d.options)), d.id)
    want = needs(methods)
    per = [RowRecords(d, recs, owner[(d.question, tuple(o.id for o in d.options))], want) for d in rows]
    labels = gold(rows)
    return {name: judge(rows, labels, [_record(r.d, r.method(name)) for r in per], name) for name in methods}


def judge(rows: Sequence[Decision], labels: Sequence[metrics.Label], made: Sequence[dict[str, Any]],
          name: str) -> dict[str, Any]:
    """Balanced accuracy, accuracy (overall and per question type) and the wire confidence of ``made`` (one record
    per row, in order)."""
    table, _ = metrics.align(list(labels), list(made), name)
    table.conf = np.array([choice_confidence(list(rec["probabilities"])) for rec in made])
    by_type: dict[str, Any] = {}
    for qtype in sorted({d.type or "choice" for d in rows}):
        keep = np.flatnonzero([(d.type or "choice") == qtype for d in rows])
        sub = metrics.subset(table, keep)
        by_type[qtype] = {"rows": len(keep), "balanced_accuracy": metrics.family_balanced_accuracy(sub),
                          "accuracy": metrics.accuracy(sub)}
    conf = confidence_summary(table)
    return {"balanced_accuracy": metrics.family_balanced_accuracy(table), "accuracy": metrics.accuracy(table),
            "by_type": by_type, "ece": conf["ece"], "high": conf["high"], "automation": conf["automation"]}


BATCH_FALLBACKS = ("none", "family")
"""The ``--calibration-fallback`` values the batch-calibrated reference is computed with (``none``: the default)."""


def batch_reference(rows: Sequence[Decision], recs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What ``--batch-calibrate`` (a label-free prior fitted on the whole set's rows, :func:`fit_prior` with its
    defaults, per fallback) makes of the same rows' readouts — the reference a single request is held against; it
    uses every other row of the set, so it is not a one-request answer."""
    labels = gold(rows)
    own = [recs[f"{d.id}#rot0"] for d in rows]
    out: dict[str, Any] = {}
    for fallback in BATCH_FALLBACKS:
        cal = fit_prior(own, record_signatures(own, None, "records"), "mean", DEFAULT_MIN_ROWS, fallback)
        made = [_record(d, np.asarray(cal.apply(r)["calibrated"]["probabilities"], dtype=np.float64))
                for d, r in zip(rows, own, strict=True)]
        out[fallback] = judge(rows, labels, made, f"batch-{fallback}")
    return out


def renormalised(rec: dict[str, Any], norm: str) -> dict[str, Any]:
    """A record read as a sequence, read again under the normalisation ``norm`` from its own token log-probabilities
    (the scorer's :func:`~scorer.decision.readout.read_sequences`; the same prompt and tokens, so what a run reading
    ``norm`` would have recorded), marked ``renormalised_from``."""
    slots = rec["slots"]
    earlier = str(slots["normalisation"])
    argmax = int(rec["full_vocab_argmax"]["token_id"])
    head = np.zeros(argmax + 1)
    head[argmax] = 1.0  # read_sequences takes the record's argmax from the head logits; only its index matters
    r = read_sequences([np.asarray(lp, dtype=np.float64) for lp in slots["token_logprobs"]], head, norm,
                       str(rec["model"].get("logits_dtype") or "float32"))
    ids = list(rec["option_ids"])
    kind = str(rec.get("score_kind") or "")
    return {**rec, "slots": {**slots, "normalisation": norm}, "option_logits": r.option_logits,
            "probabilities": r.probabilities, "choice": None if r.choice_index is None else ids[r.choice_index],
            "margin": r.margin, "tie": r.tie, "tied_option_ids": [ids[i] for i in r.tied_indices],
            "score_kind": kind.replace(f"each option's {earlier} of", f"each option's {norm} of"),
            "renormalised_from": earlier}


def _reusable(report: Path, name: str, slots: str, norm: str | None = None) -> dict[str, dict[str, Any]]:
    """The records of set ``name`` an earlier study (``report``) scored that this run, reading through ``slots``
    (options read as sequences normalised by ``norm``), would score the same way: the same model, and for each prompt
    the same resolved readout (so the same prompt version, prompt and tokens — what each record names, checked here);
    a record read as a sequence or a JSON answer under another normalisation is read again under ``norm``
    (:func:`renormalised`); a JSON answer whose closing quote was read as the lone quote token (a record without
    ``slots.closing``, from before the closing class) is scored again."""
    doc = json.loads(report.read_text(encoding="utf-8"))
    earlier_slots = str(doc.get("slots") or "letters")
    block = doc["sets"].get(name)
    if block is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    types = {d.id: d.type for d in load_decisions(SETS.get(name, Path(name)))}
    for r in read_records(ROOT / block["records"]["path"]):
        n, ids = len(r["option_ids"]), list(r["option_ids"])
        qtype = types.get(str(r["id"]).split("#")[0])  # a derived row asks its own row's kind of question
        resolved = slots_for(slots, n, ids, qtype)
        if resolved != slots_for(earlier_slots, n, ids, qtype):
            continue
        if resolved == "json" and not r["slots"].get("closing"):
            continue  # read with the lone closing quote (before the closing class): not what this run would score
        if resolved in NORMED_SLOTS and r["slots"].get("normalisation") != (norm or DEFAULT_SEQUENCE_NORM):
            r = renormalised(r, norm or DEFAULT_SEQUENCE_NORM)  # norm is None only for slots that read no sequence
        out[str(r["id"])] = r
    return out


def records_name(name: str) -> str:
    """The file name (without ``.jsonl.gz``) a set's records get in the run's records folder: a named set's name, a
    set given as a path its file's stem (a path joined onto the folder would replace it: every run would write the
    same file)."""
    return name if name in SETS else Path(name).name.removesuffix(".gz").removesuffix(".jsonl")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-1.5b")
    ap.add_argument("--backend", default="llamacpp", choices=("torch", "llamacpp"))
    ap.add_argument("--sets", default="authored,boundary,shape-small")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--slots", default="letters", choices=SLOTS,
                    help="the readout every prompt of the study is read through (letters: the default's)")
    ap.add_argument("--reuse", type=Path, metavar="REPORT",
                    help="an earlier study report of the same model and sets, read through other slots: every prompt "
                         "this run would read exactly as that run did (the same resolved readout, so the same prompt "
                         "and tokens) is taken from its records instead of being scored again (auto after letters "
                         "scores only the yes/no questions)")
    ap.add_argument("--sequence-norm", choices=SEQUENCE_NORMS,
                    help="with --slots sequence or auto: an option's token log-probabilities summed (the default) or "
                         "averaged per token")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="the label-free methods judged (a list; default every one); only the prompts they read are "
                         "scored (none: the rows themselves)")
    ap.add_argument("--kinds", default=",".join(ANSWER_KINDS),
                    help="the kinds of question studied (a list of " + ", ".join(ANSWER_KINDS) + "; default every "
                         "one): a set's other rows are left out")
    ap.add_argument("--from-records", type=Path, metavar="DIR",
                    help="judge the records an earlier run kept (DIR/SET.jsonl.gz) again, without a model (each set's "
                         "scoring seconds are taken from the report DIR.json when it is there)")
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    if len({records_name(n) for n in names}) < len(names):
        ap.error(f"--sets: two sets would share a records file ({', '.join(records_name(n) for n in names)})")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        ap.error(f"--methods: {', '.join(unknown) or 'nothing'} is not among {', '.join(METHODS)}")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in ANSWER_KINDS for k in kinds):
        ap.error(f"--kinds: {args.kinds!r} (expected a list of {', '.join(ANSWER_KINDS)})")
    try:  # the scorer's own rule: a normalisation only for slots read as sequences, sum when none is given
        norm = check_sequence_norm(args.sequence_norm, args.slots)
    except OptionError as exc:
        ap.error(f"--sequence-norm: {exc}")
    records_dir = args.output.with_suffix(".records")
    check_writable(args.output)
    if args.from_records is None:
        records_dir.mkdir(parents=True, exist_ok=False)
    sets: dict[str, Any] = {}
    inputs: dict[str, Path] = {}
    opts = {"threads": args.threads} if args.threads else {}
    earlier_report = args.from_records.with_suffix(".json") if args.from_records else None
    scored_by: dict[str, Any] = json.loads(earlier_report.read_text(encoding="utf-8")) \
        if earlier_report is not None and earlier_report.is_file() else {}
    scorer = None if args.from_records else Scorer(args.model, args.backend, mode="shared", label_free="none",
                                                   slots=args.slots, sequence_norm=args.sequence_norm, **opts)
    info: dict[str, Any] = {}
    for name in names:
        path = SETS.get(name, Path(name))
        rows = [d for d in load_decisions(path) if answer_kind(d.type, d.option_ids) in kinds]
        extra = derived(rows, methods)
        t0 = time.perf_counter()
        reused = 0
        seconds: float | None = None
        if scorer is None:
            out = args.from_records / f"{records_name(name)}.jsonl.gz"
            got = read_records(out)
            info = got[0]["model"]
            # what scoring these records cost is the earlier report's to say (judging them again costs no model)
            was = (scored_by.get("sets") or {}).get(name) or {}
            seconds, reused = was.get("seconds"), int(was.get("reused_rows") or 0)
        else:
            earlier = _reusable(args.reuse, name, args.slots, norm) if args.reuse else {}
            todo = [e for e in extra if e.id not in earlier]
            scored = {r["id"]: r for r in scorer.score_decisions(todo, {"input_sha256": name,
                                                                        "semif": "single-request-study"})}
            got = [scored[e.id] if e.id in scored else earlier[e.id] for e in extra]
            reused = len(extra) - len(todo)
            # compressed: a set's derived prompts are thousands of records, each naming the model in full
            out = records_dir / f"{records_name(name)}.jsonl.gz"
            out.write_bytes(gzip.compress(b"".join(dumps_record(r) for r in got), mtime=0))
            info = scorer.model_info()
            seconds = time.perf_counter() - t0
        recs = {r["id"]: r for r in got}
        tokens = sum(int(r["input_tokens"]) for r in got)
        sets[name] = {"rows": len(rows), "derived_rows": len(extra), "reused_rows": reused,
                      "seconds": seconds,
                      "prompt_tokens": tokens, "records": {"path": str(out.relative_to(ROOT))
                                                           if out.is_relative_to(ROOT) else str(out)},
                      "methods": evaluate(rows, recs, methods),
                      "batch_calibrated": batch_reference(rows, recs)}
        inputs[name] = path
        best = max(sets[name]["methods"].items(), key=lambda kv: kv[1]["balanced_accuracy"])
        print(f"{name}: " + ", ".join(f"{m} {v['balanced_accuracy']:.3f}" for m, v in sets[name]["methods"].items())
              + f" · best {best[0]}", file=sys.stderr)
    if scorer is not None:
        scorer.close()
    readout = args.slots + (f" ({args.sequence_norm})" if args.sequence_norm else "")
    if set(kinds) != set(ANSWER_KINDS):
        readout += ", " + " and ".join(kinds) + " questions only"
    report = make_report("single-request-study", FORMAT, inputs, {
        "title": f"Label-free corrections of one request, {args.model} {args.backend}, read through {readout}",
        "slots": args.slots, "sequence_norm": args.sequence_norm, "kinds": kinds,
        "model": info, "methods": {m: METHODS[m] for m in methods},
        "content_free_states": list(CONTENT_FREE), "domain_samples": DOMAIN_SAMPLES,
        "metric": "balanced accuracy within each family, averaged over families; every row answered alone",
        "sets": sets})
    write_report(args.output, report)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
