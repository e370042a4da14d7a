"""A trace's lanes (typed, free, constrained) with the numbers its verdict and the replay show, read from the
trace's own summary and its first measured repeat."""

from __future__ import annotations

import re
from typing import Any

from scorer import trace as trace_mod
from scorer.site.formatting import finite
from scorer.site.inputs import Lane

_LANE_NAMES = {"typed": "Typed decisions", "free": "Free generation", "constrained": "Constrained generation"}


def lane_paths(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """``(lane key, runs[].path)`` of a trace's lanes, typed first."""
    if obj["format"] == "semif-trace-v1":
        return [("typed", "typed"), ("free", "generated")]
    return [("typed", "typed"), ("free", "free"), ("constrained", "constrained")]


def first_repeat(obj: dict[str, Any]) -> int:
    """The repeat the summary's answers and right/wrong counts come from (the first measured one)."""
    return min(r["repeat"] for r in obj["runs"] if not r["warmup"])


def trace_lanes(obj: dict[str, Any]) -> list[Lane]:
    """A trace's lanes (v1 or v2) with the numbers the verdict and the replay show, from its own summary."""
    s, rep0 = obj["summary"], first_repeat(obj)
    run0 = {r["path"]: r for r in obj["runs"] if not r["warmup"] and r["repeat"] == rep0}
    criteria = obj["inputs"]["criteria"]
    labelled = sum(1 for c in criteria if c.get("label") is not None)
    labels = s.get("labels") or {}
    lanes = []
    for key, path in lane_paths(obj):
        run = run0[path]
        if obj["format"] == "semif-trace-v1":
            ls = {"median_s": s["typed_median_s"], "first_decision_median_s": s["typed_first_decision_median_s"]} \
                if key == "typed" else {
                "median_s": s["generated_median_s"], "wall_ratio": s["wall_ratio"], "ttft_median_s": s["ttft_median_s"],
                "valid_runs": s["generated_valid_runs"], "capped_runs": s["generated_limit_runs"],
                "agreement": s["agreement"], "correct": labels.get("generated_correct"),
                "tokens": {"output_median": s["generated_tokens"]["output_median"]}}
        else:
            ls = s[key]
        lane = Lane(key, path, _LANE_NAMES[key], run, s["runs"], finite(ls.get("median_s")),
                    finite(ls.get("first_decision_median_s" if key == "typed" else "ttft_median_s")), labelled=labelled)
        if key == "typed":
            lane.output_tokens = 0
            lane.correct = labels.get("typed_correct") if labelled else None
            lane.calibrated_correct = labels.get("typed_calibrated_correct") if labelled else None
        else:
            lane.ratio = finite(ls.get("wall_ratio"))
            lane.valid_runs, lane.capped_runs = ls.get("valid_runs"), ls.get("capped_runs")
            lane.limit = obj["prompts"]["constrained" if key == "constrained" else "generated"]["max_new_tokens"]
            lane.verdict = run.get("verdict") or trace_mod.verdict(
                run["valid"], run["complete"], run["stop_reason"] == "max_new_tokens", run["parsed"],
                readable_error(run["error"]), lane.limit)
            usable = bool(run["complete"] and run["valid"])
            lane.correct = ls.get("correct") if usable and labelled else None
            lane.agree = ls["agreement"]["agree"] if usable else None
            lane.output_tokens = finite(ls["tokens"]["output_median"])
            lane.masked_tokens = finite(ls.get("masked_tokens_median"))
        lanes.append(lane)
    return lanes


def readable_error(msg: str | None) -> str | None:
    """Python's message for an unclosed string ends in "starting at", to which v1 traces appended
    " at char N": say it once (the trace itself keeps its bytes)."""
    return None if msg is None else re.sub(r"\bstarting at at char\b", "starting at character", msg)
