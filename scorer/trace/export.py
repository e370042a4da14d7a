"""A trace as Chrome Trace Event Format JSON (Perfetto, chrome://tracing)."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from scorer.trace.derive import event_t
from scorer.trace.format import GENERATED_PATHS, TRACE_FORMAT


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def to_chrome(trace: dict[str, Any]) -> dict[str, Any]:
    """The trace as Chrome Trace Event Format JSON (opens in Perfetto / chrome://tracing).

    One process; thread 1 holds the typed runs, thread 2 the generated runs (v2: 2 free, 3 constrained),
    each run at its place on the experiment clock (``start_s``). Phases and generated tokens are complete (``X``) slices
    nested inside their run; typed decisions are instant (``i``) events at their ``t_available``.
    """
    pid = 1
    tids = {name: k for k, name in enumerate(("typed", *GENERATED_PATHS[trace["format"]]), start=1)}
    ev: list[dict[str, Any]] = [
        {"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
         "args": {"name": f"semif versus · {trace['experiment']['id']}"}},
        *({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}}
          for name, tid in tids.items()),
    ]

    def slice_(tid: int, name: str, base: float, t0: float, t1: float, args: dict[str, Any] | None = None) -> None:
        e = {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": "semif", "ts": _us(base + t0),
             "dur": _us(max(t1 - t0, 0.0))}
        if args:
            e["args"] = args
        ev.append(e)

    for run in trace["runs"]:
        tid, base = tids[run["path"]], run["start_s"]
        label = f"{run['path']} {'warm-up' if run['warmup'] else 'repeat'} {run['repeat']}"
        if run["path"] == "typed":
            tok = run["tokens"]
            slice_(tid, label, base, 0.0, run["total_s"], {"total_s": run["total_s"], **tok})
            enc, pre = event_t(run, "encoded"), event_t(run, "prefill_done")
            suf, dec = event_t(run, "suffix_done"), event_t(run, "decisions_available")
            slice_(tid, "render+encode", base, 0.0, enc)
            slice_(tid, f"prefill ({tok['prefix']} tokens)", base, enc, pre)
            slice_(tid, f"suffix passes ({tok['suffix']} tokens, {tok['passes']} pass(es))", base, pre, suf)
            slice_(tid, "readout" + (f" + {run['escalated']} fresh re-score(s)" if run["escalated"] else ""),
                   base, suf, dec)
            for d in run["decisions"]:
                ev.append({"ph": "i", "s": "t", "pid": pid, "tid": tid, "cat": "decision",
                           "name": f"{d['criterion_id']}: {d['choice']}{' (fresh)' if d['escalated'] else ''}",
                           "ts": _us(base + d["t_available"]),
                           "args": {"probabilities": dict(zip(d["option_ids"], d["probabilities"], strict=True)),
                                    "margin": d["margin"], "pass": d["pass"]}})
        else:
            toks = run["tokens"]
            args_run = {"total_s": run["total_s"], "ttft_s": run["ttft_s"], "output_tokens": run["output_tokens"],
                        "valid": run["valid"], "complete": run["complete"], "error": run["error"]}
            if "verdict" in run:
                args_run.update(verdict=run["verdict"], capped=run["capped"], masked_tokens=run["masked_tokens"],
                                grammar_s=run["grammar_s"])
            slice_(tid, label, base, 0.0, run["total_s"], args_run)
            enc, first, done = event_t(run, "encoded"), event_t(run, "first_token"), event_t(run, "done")
            slice_(tid, "render+encode", base, 0.0, enc)
            slice_(tid, f"prefill → first token ({trace['prompts']['generated']['input_tokens']} tokens)",
                   base, enc, first, {"token": toks[0]["text"], "p": toks[0]["p"]})
            slice_(tid, f"decode ({len(toks) - 1} steps)", base, first, done)
            for prev, t in pairwise(toks):
                args: dict[str, Any] = {"id": t["id"], "p": t["p"]}
                if t["yes_no"] is not None:
                    args["yes_no"] = {"yes": t["yes_no"]["yes"], "no": t["yes_no"]["no"]}
                if t.get("free_argmax") is not None:
                    args["masked"] = {"model_wanted": t["free_argmax"]["text"], "p": t["free_argmax"]["p"]}
                slice_(tid, json.dumps(t["text"], ensure_ascii=False), base, prev["t"], t["t"], args)
    s = trace["summary"]
    ratio = (s["wall_ratio"] if trace["format"] == TRACE_FORMAT
             else {lane: s[lane]["wall_ratio"] for lane in GENERATED_PATHS[trace["format"]]})
    return {"traceEvents": ev, "displayTimeUnit": "ms",
            "otherData": {"format": trace["format"], "experiment": trace["experiment"]["id"],
                          "model": trace["model"].get("key"), "summary_wall_ratio": ratio}}
