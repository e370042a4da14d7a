"""The replay's verdict in plain words: the headline (one sentence for the whole trace), one sentence per lane
(what it answered, how many were right, how long it took, and what a capped or invalid run does to its numbers),
and the whole-workload context of a calibrated trace."""

from __future__ import annotations

import json
from pathlib import Path

from scorer.site.formatting import fmt_count, fmt_seconds
from scorer.site.inputs import ReportFile, TraceFile


def answers(values: list[str | None]) -> str:
    """``yes to all 21`` / ``no to 12 and yes to 9`` / ``… and a tie on 2`` (a tie is a ``None`` choice)."""
    counts: dict[str, int] = {}
    for v in values:
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    ties = len(values) - sum(counts.values())
    if len(counts) == 1 and not ties:
        (value, n), = counts.items()
        return f"{value} to all {n}" if n > 1 else f"{value} to the one criterion"
    parts = [f"{v} to {n}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if ties:
        parts.append(f"a tie on {ties}")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _runs_phrase(n: int, of: int) -> str:
    return f"all {of} runs" if n == of and of > 1 else f"{n} of {of} run{'' if of == 1 else 's'}"


def verdict_sentences(t: TraceFile) -> list[dict[str, str]]:
    """The replay's verdict in plain words, one sentence per lane: what it answered, how many were right,
    how long it took (median), and, where a lane was capped or invalid, what that does to its numbers.
    Each item is ``{"lane", "name", "text"}``: the lane's name, then the rest of its sentence."""
    out = []
    n = len(t.obj["inputs"]["criteria"])
    if t.control:
        out.append({"lane": "note", "name": "Timing control:",
                    "text": "this model has random weights, so its answers mean nothing; only its times do."})
    for lane in t.lanes:
        if lane.key == "typed":
            decisions = lane.run["decisions"]
            raw = answers([d["choice"] for d in decisions])
            cal = [d.get("calibrated") for d in decisions]
            if all(cal):
                text = f"answered {answers([c['choice'] for c in cal])} after calibration (raw: {raw})"
            else:
                text = f"answered {raw}"
            text += f" in {fmt_seconds(lane.median_s)}, with no output tokens"
            if lane.correct is not None:
                right = lane.calibrated_correct if lane.calibrated_correct is not None else lane.correct
                text += f"; {right} of {lane.labelled} match the labels"
                if lane.calibrated_correct is not None:
                    text += f" ({lane.correct} before calibration)"
            out.append({"lane": lane.key, "name": lane.name, "text": text + "."})
            if t.workload and all(cal):
                out.append({"lane": "note", "name": "On the whole workload:", "text": t.workload})
            continue
        runs = lane.runs
        if lane.usable:
            text = f"wrote a valid array ({answers(lane.run['parsed'])}) in {fmt_seconds(lane.median_s)}"
            if lane.ratio is not None:
                text += f", {lane.ratio:.2f}× the typed time"
            if lane.correct is not None:
                text += f"; {lane.correct} of {lane.labelled} match the labels"
            if lane.agree is not None:
                text += f", and it agrees with the typed decisions on {lane.agree} of {n}"
            if lane.masked_tokens:
                text += f"; the grammar overruled the model on {fmt_count(lane.masked_tokens)} token" + \
                        ("" if lane.masked_tokens == 1 else "s")
            if lane.valid_runs is not None and lane.valid_runs < runs:
                text += f" (valid in {_runs_phrase(lane.valid_runs, runs)})"
            text += "."
        elif lane.capped_runs:
            text = (f"never finished its array: the model did not end its turn and was stopped at the "
                    f"{lane.limit}-token limit in {_runs_phrase(lane.capped_runs, runs)}, so none of its values "
                    f"count, and its {fmt_seconds(lane.median_s)}")
            text += f" ({lane.ratio:.2f}× the typed time)" if lane.ratio is not None else ""
            text += " is the time of a failed, capped run."
        else:
            why = lane.verdict.removeprefix("invalid: ")
            bad = runs - (lane.valid_runs or 0)
            text = (f"wrote no usable array ({why}) in {_runs_phrase(bad, runs)}, so none of its values count; "
                    f"it took {fmt_seconds(lane.median_s)}.")
        out.append({"lane": lane.key, "name": lane.name, "text": text})
    runs = t.lanes[0].runs
    out.append({"lane": "basis", "name": "",
                "text": f"(Times are medians of {runs} runs per lane; answers and matches are the first run's.)"
                if runs > 1 else "(One measured run per lane.)"})
    return out


CONTROL_LEAD = "Timing control (random weights; only the times mean anything) — "


def headline(t: TraceFile) -> str:
    """The verdict in one sentence, shown above the lanes (in a phone's first screen; the paragraph of
    :func:`verdict_sentences` stays below them): per lane, how many match the labels (else what it answered)
    and its median time, a generated lane's time as a multiple of the typed time, and what a capped or
    invalid lane did instead of answering. scorer/site/assets/replay/verdict.js writes the same sentence in the page."""
    typed, n = t.lanes[0], len(t.obj["inputs"]["criteria"])
    if typed.correct is not None:
        cal = typed.calibrated_correct is not None
        what = f"{typed.calibrated_correct if cal else typed.correct} of {typed.labelled} right"
        what += " (calibrated)" if cal else ""
    else:
        what = f"all {n} criteria" if n > 1 else "1 criterion"
    # Short on purpose (lane keys, not names): on a phone it shares the first screen with the controls and lanes.
    parts = [f"Typed: {what} in {fmt_seconds(typed.median_s)}, no output tokens"]
    for g in t.lanes[1:]:
        took = fmt_seconds(g.median_s) + ("" if g.ratio is None else f" ({g.ratio:.2f}× as long)")
        if g.usable:
            got = "a valid array" if g.correct is None else f"{g.correct} of {g.labelled} right"
            parts.append(f"{g.key}: {got} in {took}")
        elif g.capped_runs:
            parts.append(f"{g.key}: no answer, hit its {g.limit}-token limit at {took}")
        else:
            parts.append(f"{g.key}: no usable array after {took}")
    return (CONTROL_LEAD if t.control else "") + "; ".join(parts) + "."


STORED_PRIOR = "prior mean · stored (fitted on the other folds) · plain"


def workload_context(t: TraceFile, reports: list[ReportFile], data_dir: Path) -> str:
    """The whole-workload accuracy of the calibration a trace's typed lane used, or "" when none is committed.

    A match needs a ``calibration`` report on the same model file, backend and dtype whose labelled rows
    hold this trace's state, and a calibration of the same kind (a mean prior fitted on the other groups)."""
    model = t.obj.get("model") or {}
    state = (t.obj.get("inputs") or {}).get("state")
    for r in reports:
        run = (r.obj.get("run") or {}) if r.kind == "calibration" else {}
        m = run.get("model") or {}
        if not m or any(m.get(k) != model.get(k) for k in ("gguf_sha256", "backend", "dtype")):
            continue
        labels = data_dir.parent / str((r.obj.get("labels") or {}).get("path", ""))
        if not labels.is_file():
            continue
        rows = [json.loads(ln) for ln in labels.read_text(encoding="utf-8").splitlines() if ln.strip()]
        if not any(row.get("state") == state for row in rows):
            continue
        for meth in r.obj.get("methods") or []:
            if meth.get("method") == STORED_PRIOR:
                raw = next((x for x in r.obj["methods"] if x.get("method") == "raw · plain"), None)
                acc = meth["accuracy"]["value"]
                n = r.obj.get("rows", len(rows))
                before = f" (raw readout {raw['accuracy']['value']:.3f})" if raw else ""
                return (f"the same label-free calibration, each state's prior fitted on the other states, is right on "
                        f"{acc:.3f} of all {n} decisions of {labels.name}{before}; report {r.rel}.")
    return ""
