"""A trace's ``summary`` block (medians, validity, agreement, label counts, the token account; derived from
``runs`` only, so :func:`scorer.trace.verify` recomputes it) and the readable summary text."""

from __future__ import annotations

import statistics
from typing import Any

from scorer.core.errors import ValidationError
from scorer.trace.derive import event_t, measured
from scorer.trace.format import TRACE_FORMAT_V2


def _median(xs: list[float]) -> float:
    return round(float(statistics.median(xs)), 6)


def _rate(tokens: float, seconds: float) -> float | None:
    return round(tokens / seconds, 3) if seconds > 0 else None


def compute_summary(trace: dict[str, Any]) -> dict[str, Any]:
    """Medians over the measured runs, agreement and token counts (derived from ``runs`` only)."""
    if trace.get("format") == TRACE_FORMAT_V2:
        return compute_summary_v2(trace)
    typed, gen = measured(trace, "typed"), measured(trace, "generated")
    if not typed or not gen:
        raise ValidationError("a trace needs at least one measured run of each path")
    criteria = trace["inputs"]["criteria"]
    t_med = _median([r["total_s"] for r in typed])
    g_med = _median([r["total_s"] for r in gen])
    first = gen[0]
    agree = sum(1 for a in first["agreement"] if a is True)
    disagree = sum(1 for a in first["agreement"] if a is False)
    labels = [c.get("label") for c in criteria]
    label_block = None
    if any(lab is not None for lab in labels):
        parsed = first["parsed"] if first["complete"] else None
        label_block = {
            "labelled": sum(1 for lab in labels if lab is not None),
            "typed_correct": sum(1 for lab, d in zip(labels, typed[0]["decisions"], strict=True)
                                 if lab is not None and d["choice"] == lab),
            "generated_correct": 0 if parsed is None else sum(
                1 for lab, g in zip(labels, parsed, strict=True) if lab is not None and g == lab),
            "basis": "measured repeat 0 of each path; an invalid or incomplete generated array scores 0",
        }
    tt = typed[0]["tokens"]
    n_in = trace["prompts"]["generated"]["input_tokens"]
    steps = [r["decode_steps"] for r in gen]
    enc_t = [event_t(r, "encoded") for r in typed]
    pre_t = [event_t(r, "prefill_done") - event_t(r, "encoded") for r in typed]
    suf_t = [event_t(r, "suffix_done") - event_t(r, "prefill_done") for r in typed]
    rdo_t = [event_t(r, "decisions_available") - event_t(r, "suffix_done") for r in typed]
    enc_g = [event_t(r, "encoded") for r in gen]
    pre_g = [event_t(r, "first_token") - event_t(r, "encoded") for r in gen]
    dec_g = [event_t(r, "done") - event_t(r, "first_token") for r in gen]
    per_step = [d / s for d, s in zip(dec_g, steps, strict=True) if s > 0]
    # When the n-th value's first token appeared: all answers visible, whether or not the model then stopped.
    last = [t["t"] for r in gen for t in r["tokens"] if t["answer_index"] == len(criteria) - 1]
    phases: dict[str, float | None] = {
        "typed_encode_s": _median(enc_t), "typed_prefill_s": _median(pre_t), "typed_suffix_s": _median(suf_t),
        "typed_readout_s": _median(rdo_t),
        "generated_encode_s": _median(enc_g), "generated_prefill_s": _median(pre_g),
        "generated_decode_s": _median(dec_g),
        "generated_s_per_decode_step": _median(per_step) if per_step else None,
    }
    phases["typed_prefill_tokens_per_s"] = _rate(tt["prefix"], phases["typed_prefill_s"] or 0.0)
    phases["typed_suffix_tokens_per_s"] = _rate(tt["suffix"], phases["typed_suffix_s"] or 0.0)
    phases["generated_prefill_tokens_per_s"] = _rate(n_in, phases["generated_prefill_s"] or 0.0)
    step = phases["generated_s_per_decode_step"]
    phases["generated_decode_tokens_per_s"] = _rate(1.0, step) if step else None
    return {
        "typed_median_s": t_med,
        "generated_median_s": g_med,
        "wall_ratio": round(g_med / t_med, 6) if t_med > 0 else None,
        "output_tokens_avoided": float(statistics.median([r["output_tokens"] for r in gen])),
        "ttft_median_s": _median([r["ttft_s"] for r in gen]),
        "typed_first_decision_median_s": _median([min(d["t_available"] for d in r["decisions"]) for r in typed]),
        "agreement": {"agree": agree, "disagree": disagree, "missing": len(criteria) - agree - disagree,
                      "basis": "generated repeat 0 vs typed repeat 0 (measured runs)"},
        "labels": label_block,
        "generated_valid_runs": sum(1 for r in gen if r["complete"]),
        "generated_limit_runs": sum(1 for r in gen if r["stop_reason"] == "max_new_tokens"),
        "generated_all_answers_median_s": _median(last) if last and len(last) == len(gen) else None,
        "generated_outputs_identical": all(r["text"] == first["text"] for r in gen),
        "runs": len(typed),
        "typed_tokens": {"prefix": tt["prefix"], "suffix": tt["suffix"], "processed": tt["processed"],
                         "output": 0, "passes": tt["passes"],
                         "escalated_decisions_median": float(statistics.median([r["escalated"] for r in typed])),
                         "escalated_tokens_median": float(statistics.median([r["tokens"]["escalated"]
                                                                             for r in typed]))},
        "generated_tokens": {"input": n_in,
                             "output_median": float(statistics.median([r["output_tokens"] for r in gen])),
                             "decode_steps_median": float(statistics.median(steps)),
                             "processed_median": float(n_in + statistics.median(steps))},
        "phases": phases,
    }


def _lane_summary(trace: dict[str, Any], lane: str, typed_median: float) -> dict[str, Any]:
    runs = measured(trace, lane)
    n = len(trace["inputs"]["criteria"])
    first = runs[0]
    n_in = trace["prompts"]["generated"]["input_tokens"]
    steps = [r["decode_steps"] for r in runs]
    enc = [event_t(r, "encoded") for r in runs]
    pre = [event_t(r, "first_token") - event_t(r, "encoded") for r in runs]
    dec = [event_t(r, "done") - event_t(r, "first_token") for r in runs]
    per_step = [d / k for d, k in zip(dec, steps, strict=True) if k > 0]
    last = [t["t"] for r in runs for t in r["tokens"] if t["answer_index"] == n - 1]
    med = _median([r["total_s"] for r in runs])
    agree = sum(1 for a in first["agreement"] if a is True)
    disagree = sum(1 for a in first["agreement"] if a is False)
    labelled = any(c.get("label") is not None for c in trace["inputs"]["criteria"])
    step = _median(per_step) if per_step else None
    phases: dict[str, float | None] = {
        "encode_s": _median(enc), "prefill_s": _median(pre), "decode_s": _median(dec), "s_per_decode_step": step,
        "prefill_tokens_per_s": _rate(n_in, _median(pre)), "decode_tokens_per_s": _rate(1.0, step) if step else None}
    constrained = lane == "constrained"
    grammar = [r["grammar_s"] for r in runs]
    return {
        "median_s": med, "wall_ratio": round(med / typed_median, 6) if typed_median > 0 else None,
        "ttft_median_s": _median([r["ttft_s"] for r in runs]), "runs": len(runs),
        "complete_runs": sum(1 for r in runs if r["complete"]), "valid_runs": sum(1 for r in runs if r["valid"]),
        "capped_runs": sum(1 for r in runs if r["capped"]), "invalid_runs": sum(1 for r in runs if not r["valid"]),
        "verdict": first["verdict"], "outputs_identical": all(r["text"] == first["text"] for r in runs),
        "all_answers_median_s": _median(last) if last and len(last) == len(runs) else None,
        "agreement": {"agree": agree, "disagree": disagree, "missing": n - agree - disagree},
        "correct": sum(1 for c in first["correct"] if c is True) if labelled else None,
        "masked_tokens_median": float(statistics.median([r["masked_tokens"] for r in runs])) if constrained else None,
        # None also where a browser-made trace did not measure it (verify allows a null grammar_s only there)
        "grammar_s_median": _median(grammar) if constrained and None not in grammar else None,
        "tokens": {"input": n_in, "output_median": float(statistics.median([r["output_tokens"] for r in runs])),
                   "decode_steps_median": float(statistics.median(steps)),
                   "processed_median": float(n_in + statistics.median(steps))},
        "phases": phases,
    }


def _token_account(typed: dict[str, Any], free: dict[str, Any], con: dict[str, Any]) -> dict[str, Any]:
    """One sentence that explains the wall ratios by the tokens each lane paid for."""
    tt = typed["tokens"]
    rate = typed["phases"]["prefill_tokens_per_s"]
    step = free["phases"]["s_per_decode_step"] or con["phases"]["s_per_decode_step"]
    x = round(step * rate, 3) if step and rate else None
    esc = f" + {tt['escalated_tokens_median']:g} re-scored" if tt["escalated_tokens_median"] else ""
    parts = [f"typed prefilled {tt['prefix']} state tokens once and scored {tt['suffix']} criterion tokens"
             f"{esc} in {tt['passes']} pass(es), generating none"]
    for name, ls in (("free", free), ("constrained", con)):
        cap = ", capped" if ls["capped_runs"] else ""
        parts.append(f"{name} prefilled {ls['tokens']['input']} prompt tokens and generated "
                     f"{ls['tokens']['output_median']:g} one at a time{cap}")
    line = "; ".join(parts) + "."
    if x is not None:
        typed_eq = tt["prefix"] + tt["suffix"] + tt["escalated_tokens_median"]
        est = [(ls["tokens"]["input"] + x * ls["tokens"]["decode_steps_median"]) / typed_eq for ls in (free, con)]
        line += (f" Here one decode step costs about {x:.1f} prefill tokens ({1000 * step:.0f} ms per step vs "
                 f"{rate:.0f} prefill tokens/s), so in prefill-token equivalents free costs {est[0]:.1f}x and "
                 f"constrained {est[1]:.1f}x what typed does (measured: {free['wall_ratio'] or 0:.2f}x and "
                 f"{con['wall_ratio'] or 0:.2f}x).")
    return {"line": line, "decode_step_in_prefill_tokens": x}


def compute_summary_v2(trace: dict[str, Any]) -> dict[str, Any]:
    """v2 summary: per lane medians, validity, agreement with typed, label counts, the token account."""
    typed = measured(trace, "typed")
    if not typed or not measured(trace, "free") or not measured(trace, "constrained"):
        raise ValidationError("a v2 trace needs at least one measured run of each lane (typed, free, constrained)")
    tt = typed[0]["tokens"]
    enc = [event_t(r, "encoded") for r in typed]
    pre = [event_t(r, "prefill_done") - event_t(r, "encoded") for r in typed]
    suf = [event_t(r, "suffix_done") - event_t(r, "prefill_done") for r in typed]
    rdo = [event_t(r, "decisions_available") - event_t(r, "suffix_done") for r in typed]
    t_block: dict[str, Any] = {
        "median_s": _median([r["total_s"] for r in typed]),
        "first_decision_median_s": _median([min(d["t_available"] for d in r["decisions"]) for r in typed]),
        "tokens": {"prefix": tt["prefix"], "suffix": tt["suffix"], "processed": tt["processed"], "output": 0,
                   "passes": tt["passes"],
                   "escalated_decisions_median": float(statistics.median([r["escalated"] for r in typed])),
                   "escalated_tokens_median": float(statistics.median([r["tokens"]["escalated"] for r in typed]))},
        "phases": {"encode_s": _median(enc), "prefill_s": _median(pre), "suffix_s": _median(suf),
                   "readout_s": _median(rdo), "prefill_tokens_per_s": _rate(tt["prefix"], _median(pre)),
                   "suffix_tokens_per_s": _rate(tt["suffix"], _median(suf))},
    }
    free = _lane_summary(trace, "free", t_block["median_s"])
    con = _lane_summary(trace, "constrained", t_block["median_s"])
    decs = typed[0]["decisions"]
    labels = None
    if any(d["label"] is not None for d in decs):
        labels = {"labelled": sum(1 for d in decs if d["label"] is not None),
                  "typed_correct": sum(1 for d in decs if d["correct"] is True),
                  "typed_calibrated_correct": None if trace["calibration"] is None else sum(
                      1 for d in decs if (d["calibrated"] or d)["correct"] is True),
                  "free_correct": free["correct"] or 0, "constrained_correct": con["correct"] or 0}
    return {"runs": len(typed), "typed": t_block, "free": free, "constrained": con, "labels": labels,
            "token_account": _token_account(t_block, free, con),
            "basis": ("medians over the measured runs of each lane; agreement, verdicts and label counts on measured "
                      "repeat 0 of each lane (an incomplete array scores 0 and its values count as missing)")}


# --- summary text ------------------------------------------------------------------------------------
def _s(x: float | None, unit: str = "s") -> str:
    return "n/a" if x is None else f"{x:.2f} {unit}"


def _summary_head(trace: dict[str, Any], per: str, escalated_median: float) -> tuple[list[str], str]:
    """The lines every format's summary starts with (what ran where, the protocol) and the exact policy's text.

    ``per`` names a run's unit ("path" in v1, "lane" in v2)."""
    m, mach, proto = trace["model"], trace["machine"], trace["protocol"]
    ex = proto["exact"]
    exact_txt = (f"bound {ex.get('bound', float('nan')):.3g} from {ex.get('source')}, "
                 f"{escalated_median:g} decision(s) re-scored fresh per run (median)" if ex["enabled"] else "off")
    n = len(trace["inputs"]["criteria"])
    return [
        f"{trace['format']} · {trace['experiment']['id']} · {trace['experiment']['created_utc']}",
        f"model {m.get('key')} ({m.get('backend')}, {m.get('dtype')}, {m.get('device')}) · "
        f"machine {mach.get('cpu')}, {mach.get('cores')} cores, GPU {mach.get('gpu') or 'none'}",
        f"input {trace['inputs']['id']}: {n} criteria · {proto['warmup']} warm-up + {proto['repeats']} measured runs "
        f"per {per}, {proto['order']} · typed mode {proto['typed_mode']}",
    ], exact_txt


def _summary_text_v2(trace: dict[str, Any]) -> str:
    s = trace["summary"]
    ty = s["typed"]
    lines, exact_txt = _summary_head(trace, "lane", ty["tokens"]["escalated_decisions_median"])
    lines[-1] += f" · grammar by {trace['prompts']['constrained']['engine']}"
    lines += [
        f"typed        median {_s(ty['median_s'])}: prefill {ty['tokens']['prefix']} tok "
        f"{_s(ty['phases']['prefill_s'])}, {ty['tokens']['passes']} suffix pass(es) {ty['tokens']['suffix']} tok "
        f"{_s(ty['phases']['suffix_s'])}; 0 output tokens; first decision at {_s(ty['first_decision_median_s'])}; "
        f"exact policy {exact_txt}",
    ]
    for lane in ("free", "constrained"):
        ls = s[lane]
        ratio = "n/a" if ls["wall_ratio"] is None else f"{ls['wall_ratio']:.2f}x typed"
        extra = (f", grammar {_s(ls['grammar_s_median'])}, {ls['masked_tokens_median']:g} token(s) overruled"
                 if lane == "constrained" else "")
        lines.append(
            f"{lane:<12} median {_s(ls['median_s'])} ({ratio}): TTFT {_s(ls['ttft_median_s'])}, "
            f"{ls['tokens']['output_median']:g} output tokens{extra}; complete {ls['complete_runs']}/{ls['runs']}, "
            f"capped {ls['capped_runs']}, invalid {ls['invalid_runs']}; repeat 0: {ls['verdict']}")
        ag = ls["agreement"]
        lines.append(f"{'':<12} agreement with typed: {ag['agree']} agree, {ag['disagree']} differ, "
                     f"{ag['missing']} missing")
    lab = s["labels"]
    if lab:
        cal = ("" if lab["typed_calibrated_correct"] is None
               else f" (calibrated {lab['typed_calibrated_correct']}/{lab['labelled']})")
        lines.append(f"right against labels: typed {lab['typed_correct']}/{lab['labelled']}{cal}, free "
                     f"{lab['free_correct']}/{lab['labelled']}, constrained {lab['constrained_correct']}/"
                     f"{lab['labelled']}")
    lines.append(f"token account: {s['token_account']['line']}")
    return "\n".join(lines + _closing_lines(trace))


def summary_text(trace: dict[str, Any]) -> str:
    """A few readable lines: what ran where, the medians, and the token counts behind them."""
    if trace["format"] == TRACE_FORMAT_V2:
        return _summary_text_v2(trace)
    s = trace["summary"]
    ph, tt, gt = s["phases"], s["typed_tokens"], s["generated_tokens"]
    ratio = "n/a" if s["wall_ratio"] is None else f"{s['wall_ratio']:.2f}x"
    lines, exact_txt = _summary_head(trace, "path", tt.get("escalated_decisions_median", 0))
    lines += [
        f"typed      median {_s(s['typed_median_s'])}: encode {_s(ph['typed_encode_s'])}, prefill "
        f"{tt['prefix']} tok {_s(ph['typed_prefill_s'])}, {tt['passes']} suffix pass(es) {tt['suffix']} tok "
        f"{_s(ph['typed_suffix_s'])}; 0 output tokens; first decision at {_s(s['typed_first_decision_median_s'])}",
        f"           exact policy: {exact_txt}",
        f"generated  median {_s(s['generated_median_s'])}: TTFT {_s(s['ttft_median_s'])} (prefill {gt['input']} tok), "
        f"{gt['output_median']:g} output tokens, decode {_s(ph['generated_decode_s'])} "
        f"({_s(ph['generated_decode_tokens_per_s'], 'tok/s')}); valid complete arrays "
        f"{s['generated_valid_runs']}/{s['runs']}",
        f"wall ratio generated/typed {ratio} · output tokens avoided {s['output_tokens_avoided']:g}",
        f"agreement with typed ({s['agreement']['basis']}): {s['agreement']['agree']} agree, "
        f"{s['agreement']['disagree']} disagree, {s['agreement']['missing']} missing",
    ]
    if s.get("labels"):
        lab = s["labels"]
        lines.append(f"labels: typed {lab['typed_correct']}/{lab['labelled']}, "
                     f"generated {lab['generated_correct']}/{lab['labelled']}")
    if s["generated_limit_runs"]:
        lines.append(f"generated runs stopped by max_new_tokens: {s['generated_limit_runs']}/{s['runs']}; "
                     f"all {len(trace['inputs']['criteria'])} values visible at "
                     f"{_s(s['generated_all_answers_median_s'])} (median)")
    gen = measured(trace, "generated")
    if gen and not gen[0]["complete"]:
        lines.append(f"generated repeat 0 failed: {gen[0]['error']}")
    return "\n".join(lines + _closing_lines(trace))


def _closing_lines(trace: dict[str, Any]) -> list[str]:
    """The last lines of both formats' summaries: the typed-vs-direct check, then the trace's notes."""
    lines = []
    chk = trace["checks"].get("typed_vs_direct")
    if chk:
        lines.append(f"typed vs direct mode: choices {'equal' if chk['choices_equal'] else 'DIFFER'}, "
                     f"max |Δp| {chk['max_abs_dp']:.2e}")
    return lines + [f"note: {x}" for x in trace["notes"]]
