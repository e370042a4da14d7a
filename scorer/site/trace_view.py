"""What the replay shows about a built-in trace that the build writes rather than the page: the numbers table,
the headline and the verdict, the lanes' names, and when the replay of a repeat ends."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import fmt_count, fmt_seconds, fmt_value
from scorer.site.inputs import Lane, TraceFile
from scorer.site.verdict import headline, verdict_sentences


def _cell(text: str, note: str = "", warn: bool = False) -> dict[str, Any]:
    return {"text": text, "note": note, "warn": warn}


def numbers_table(t: TraceFile) -> dict[str, Any]:
    """The replay's numbers: one column per lane, one row per measure; a number a failed or capped run
    distorts carries the reason beside it (``note``, with ``warn``)."""
    lanes = t.lanes
    runs = lanes[0].runs
    rows: list[tuple[str, list[dict[str, Any]]]] = []

    def caveat(lane: Lane) -> str:
        if lane.key == "typed" or lane.usable:
            return ""
        return f"capped at {lane.limit} tokens, no answer" if lane.capped_runs else "no usable array"

    rows.append((f"wall time (median of {runs})",
                 [_cell(fmt_seconds(x.median_s), caveat(x), bool(caveat(x))) for x in lanes]))
    rows.append(("÷ typed time", [_cell("—") if x.key == "typed" else
                                  _cell("—" if x.ratio is None else f"{x.ratio:.2f}×",
                                        f"vs a {'capped' if x.capped_runs else 'failed'} run" if caveat(x) else "",
                                        bool(caveat(x))) for x in lanes]))
    rows.append(("first decision / first token", [_cell(fmt_seconds(x.first_s)) for x in lanes]))
    rows.append(("output tokens (median)", [_cell(fmt_value(fmt_count(x.output_tokens)),
                                                  "the limit" if x.capped_runs and not x.usable else "",
                                                  bool(x.capped_runs and not x.usable)) for x in lanes]))
    rows.append(("valid arrays", [_cell("—") if x.key == "typed" else
                                  _cell(f"{x.valid_runs} of {runs}",
                                        f"{x.capped_runs} capped" if x.capped_runs else "", not x.valid_runs)
                                  for x in lanes]))
    if lanes[0].labelled:
        def right(x: Lane) -> dict[str, Any]:
            if x.key == "typed":
                if x.calibrated_correct is not None:
                    return _cell(f"{x.calibrated_correct} of {x.labelled}", f"calibrated; {x.correct} raw")
                return _cell(f"{x.correct} of {x.labelled}")
            return _cell(f"{x.correct} of {x.labelled}") if x.usable else _cell("—", "no usable array", True)
        rows.append(("match the labels (first run)", [right(x) for x in lanes]))
    rows.append(("agree with typed (first run)", [_cell("—") if x.key == "typed" else
                                                  _cell(f"{x.agree} of {len(t.obj['inputs']['criteria'])}")
                                                  if x.usable else _cell("—", "no usable array", True)
                                                  for x in lanes]))
    if any(x.masked_tokens is not None for x in lanes):
        rows.append(("tokens the grammar overruled", [_cell("—" if x.masked_tokens is None else
                                                            fmt_value(fmt_count(x.masked_tokens))) for x in lanes]))
    account = ((t.obj["summary"].get("token_account") or {}).get("line")) or ""
    return {"columns": [x.name for x in lanes], "keys": [x.key for x in lanes],
            "rows": [{"label": label, "cells": cells} for label, cells in rows], "account": account,
            "basis": "Times are medians over the measured runs of each lane (warm-ups excluded); answers, "
                     "matches and agreement are those of the first measured run."}


def replay_end(obj: dict[str, Any], repeat: int) -> float:
    """When the replay of one repeat ends: its last timestamp on any lane (as ``prepare`` in
    scorer/site/assets/replay/prepare.js computes it)."""
    end = 0.0
    for r in obj["runs"]:
        if r["warmup"] or r["repeat"] != repeat:
            continue
        tokens = r["tokens"] if r["path"] != "typed" else []  # a typed run's "tokens" are its counts
        times = [r["total_s"]] + [e["t"] for e in r["events"]] + [x["t"] for x in tokens]
        times += [d["t_available"] for d in r.get("decisions") or []]
        end = max(end, *times)
    return end


def trace_view(t: TraceFile) -> dict[str, Any]:
    """Everything the replay shows about a built-in trace that this build writes rather than the page:
    the headline, the verdict, the numbers, the lanes' names. For a trace the build did not see, the page
    computes the same from the trace (``view`` in scorer/site/assets/replay/verdict.js; tests prove the two equal)."""
    return {"slug": t.slug, "label": t.label, "control": t.control, "headline": headline(t),
            "verdict": verdict_sentences(t), "numbers": numbers_table(t),
            "lanes": [{"key": x.key, "path": x.path, "name": x.name} for x in t.lanes]}
