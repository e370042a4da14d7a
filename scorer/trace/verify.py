"""``verify``: schema, checksums and everything a trace lets one re-derive; ``load_verified`` for its readers."""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

from scorer.core.errors import ValidationError
from scorer.core.hashing import sha256_text
from scorer.prompting.grammar import ArrayGrammar
from scorer.prompting.prompt import YES_NO
from scorer.trace.answers import locate_answers
from scorer.trace.derive import (
    agreement,
    calibrated_block,
    event_t,
    labels_correct,
    measured,
    parse_array,
    token_limit,
    verdict,
)
from scorer.trace.evidence import check_decision_evidence, check_greedy_token, check_top_k
from scorer.trace.files import MAX_DEPTH, load, too_deep
from scorer.trace.format import (
    GENERATED_EVENTS,
    TRACE_FORMAT,
    TRACE_FORMAT_V2,
    TYPED_EVENTS,
    canonical,
    checksums,
    schema_errors,
)
from scorer.trace.header import check_header, check_protocol
from scorer.trace.rendering import check_prompts
from scorer.trace.summary import compute_summary

_EPS = 1e-9  # slack for comparing rounded timestamps

# |p - softmax(option_logits)| allowed per probability: float64 softmax recomputed here vs at scoring time
# (same float64 logits) differs by a few ulp; a forged value is off by orders of magnitude more.
SOFTMAX_TOL = 1e-9


def browser_made(trace: dict[str, Any]) -> bool:
    """Whether the trace was made in a web browser (the live page), which says so in ``machine.browser``: the one
    kind of trace that may record a grammar time as not measured (null), since the in-browser engine reports none."""
    return isinstance(trace["machine"].get("browser"), dict)


# --- verify ------------------------------------------------------------------------------------------
def verify(trace: Any) -> list[str]:
    """Every problem found in ``trace``: schema, checksums, internal consistency. Empty = verified.

    The one check every reader of a trace runs (``semif trace verify|summary|export``, the site build), so it
    also refuses JSON nested past :data:`~scorer.trace.files.MAX_DEPTH` itself, whoever parsed it."""
    deep = too_deep(trace)
    if deep is not None:
        return [f"at {deep or '(root)'}: nested more than {MAX_DEPTH} levels deep"]
    problems = schema_errors(trace)
    if problems:
        return problems  # the checks below rely on the structure the schema guarantees
    want = checksums(trace)
    for key, value in want.items():
        if trace["checksums"][key] != value:
            problems.append(f"checksums.{key} is {trace['checksums'][key]} but the content hashes to {value}")
    if trace["inputs"]["sha256"] != want["inputs_sha256"]:
        problems.append(f"inputs.sha256 is {trace['inputs']['sha256']} but the inputs hash to {want['inputs_sha256']}")
    v2 = trace["format"] == TRACE_FORMAT_V2
    try:
        problems += check_prompts(trace)
        problems += check_protocol(trace)
        problems += check_header(trace)
        if v2:
            problems += _check_v2_blocks(trace)
        typed_by_key = {(r["warmup"], r["repeat"]): r for r in trace["runs"] if r["path"] == "typed"}
        for i, run in enumerate(trace["runs"]):
            where = f"runs[{i}] ({run['path']}{' warm-up' if run['warmup'] else ''} {run['repeat']})"
            if run["path"] == "typed":
                problems += [f"{where}: {p}" for p in _check_typed(trace, run)]
                if v2:
                    problems += [f"{where}: {p}" for p in _check_typed_v2(trace, run)]
            else:
                problems += [f"{where}: {p}" for p in _check_generated(trace, run, typed_by_key)]
                if v2:
                    problems += [f"{where}: {p}" for p in _check_generated_v2(trace, run)]
    # a net under the checks, never a traceback: a field of the wrong type fails the schema, and the checks that run
    # beside it may meet it (AttributeError: model.versions edited to true, found by tests/trace/test_fuzz_trace.py)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
        problems.append(f"inconsistent structure ({type(exc).__name__}: {exc})")
    if not problems:
        try:
            again = compute_summary(trace)
        except (ValidationError, AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            problems.append(f"summary cannot be recomputed: {exc}")
        else:
            if canonical(again) != canonical(trace["summary"]):
                diff = sorted(k for k in again if canonical(again[k]) != canonical(trace["summary"].get(k)))
                problems.append(f"summary does not match the runs (differs in: {', '.join(diff)})")
    return problems


def pack_passes(suffix_tokens: list[int], budget: int) -> list[int]:
    """The pass each suffix is read in: packed greedily in order, at most ``budget`` tokens a pass, at least one
    suffix each (:func:`scorer.backends.base.pack_chunks`, which shared mode uses)."""
    out, k, size = [], 0, 0
    for i, n in enumerate(suffix_tokens):
        if i and size + n > budget:
            k, size = k + 1, 0
        out.append(k)
        size += n
    return out


def _check_events(run: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    out = []
    got = tuple(e["name"] for e in run["events"])
    if got != names:
        return [f"events are {list(got)}, expected {list(names)}"]
    ts = [e["t"] for e in run["events"]]
    if any(b + _EPS < a for a, b in pairwise(ts)):
        out.append(f"event timestamps decrease: {ts}")
    if ts[-1] > run["total_s"] + _EPS:
        out.append(f"last event at {ts[-1]} s is after total_s {run['total_s']} s")
    return out


def _check_typed(trace: dict[str, Any], run: dict[str, Any]) -> list[str]:
    out = _check_events(run, TYPED_EVENTS)
    ty = trace["prompts"]["typed"]
    tok = run["tokens"]
    if tok["prefix"] != ty["prefix_tokens"]:
        out.append(f"tokens.prefix {tok['prefix']} differs from prompts.typed.prefix_tokens {ty['prefix_tokens']}")
    if tok["suffix"] != sum(ty["suffix_tokens"]):
        out.append(f"tokens.suffix {tok['suffix']} is not the sum of prompts.typed.suffix_tokens")
    if tok["processed"] != tok["prefix"] + tok["suffix"] + tok["escalated"]:
        out.append(f"tokens.processed {tok['processed']} is not prefix + suffix + escalated")
    n_esc = sum(1 for d in run["decisions"] if d["escalated"])
    if run["escalated"] != n_esc:
        out.append(f"escalated {run['escalated']} but {n_esc} decisions are marked escalated")
    if n_esc and not trace["protocol"]["exact"]["enabled"]:
        out.append("decisions are escalated but the exact policy is off")
    esc_tokens = sum(inp for inp, d in zip(trace["prompts"]["typed"]["input_tokens"], run["decisions"], strict=False)
                     if d["escalated"])
    if tok["escalated"] != esc_tokens:
        out.append(f"tokens.escalated {tok['escalated']} is not the escalated prompts' {esc_tokens} tokens")
    crit = [c["id"] for c in trace["inputs"]["criteria"]]
    got = [d["criterion_id"] for d in run["decisions"]]
    if got != crit:
        out.append(f"decisions are for {got}, expected the criteria in order {crit}")
    if out:
        return out
    t_pre, t_suf, t_all = event_t(run, "prefill_done"), event_t(run, "suffix_done"), event_t(run, "decisions_available")
    bound = trace["protocol"]["exact"].get("bound")
    ty = trace["prompts"]["typed"]
    passes = [d["pass"] for d in run["decisions"]]
    if sorted(set(passes)) != list(range(tok["passes"])):
        out.append(f"tokens.passes is {tok['passes']} but the decisions were read in passes {sorted(set(passes))}")
    packed = pack_passes(ty["suffix_tokens"], trace["protocol"]["max_batch_tokens"])
    if passes != packed:
        out.append(f"the decisions' passes {passes} are not the suffixes packed in order into passes of at most "
                   f"protocol.max_batch_tokens {trace['protocol']['max_batch_tokens']} tokens ({packed})")
    for d in run["decisions"]:
        cid = d["criterion_id"]
        n = len(d["option_ids"])
        if d["option_ids"] != [o.id for o in YES_NO] or d["letters"] != ty["letters"]:
            out.append(f"{cid}: option_ids {d['option_ids']} and letters {d['letters']} are not the prompt's "
                       f"options {[o.id for o in YES_NO]} as {ty['letters']}")
        if not (len(d["letters"]) == len(d["option_logits"]) == len(d["probabilities"]) == n):
            out.append(f"{cid}: option_ids, letters, option_logits and probabilities differ in length")
            continue
        out += [f"{cid}: {p}" for p in check_top_k(d["top_k"], trace["protocol"]["top_k"])
                or check_decision_evidence(d, ty["slot_token_ids"])]
        lo, hi = (t_suf, t_all) if d["escalated"] else (t_pre, t_suf)
        if not lo - _EPS <= d["t_available"] <= hi + _EPS:
            out.append(f"{cid}: t_available {d['t_available']} outside [{lo}, {hi}]")
        if bound is not None and not d["escalated"] and (d["tie"] or d["margin"] < bound):
            out.append(f"{cid}: margin {d['margin']} is under the exact bound {bound} but it was not escalated")
        if d["pass"] >= tok["passes"]:
            out.append(f"{cid}: pass {d['pass']} but the run made {tok['passes']} passes")
        if abs(sum(d["probabilities"]) - 1.0) > 1e-6:
            out.append(f"{cid}: probabilities sum to {sum(d['probabilities'])}")
        out += [f"{cid}: {p}" for p in _check_softmax(d["option_logits"], d["probabilities"])]
        order = sorted(range(n), key=lambda i: -d["option_logits"][i])
        best = d["option_ids"][order[0]]
        if d["tie"] != (d["choice"] is None):
            out.append(f"{cid}: tie is {d['tie']} but choice is {d['choice']!r}")
        elif not d["tie"] and d["choice"] != best:
            out.append(f"{cid}: choice {d['choice']!r} is not the argmax option {best!r}")
        tied = d["tied_option_ids"]
        bad_tie = len(tied) < 2 or best not in tied or not set(tied) <= set(d["option_ids"])
        if (tied != []) if not d["tie"] else bad_tie:
            out.append(f"{cid}: tied_option_ids {tied} but tie is {d['tie']} (a tie lists the top option and at "
                       "least one other)")
        probs = sorted(d["probabilities"], reverse=True)
        if abs((probs[0] - probs[1]) - d["margin"]) > 1e-6:
            out.append(f"{cid}: margin {d['margin']} is not top minus second probability")
    return out


def _check_softmax(logits: list[float], probs: list[float]) -> list[str]:
    """Each probability must be the softmax of the option logits (within :data:`SOFTMAX_TOL`)."""
    top = max(logits)
    e = [math.exp(x - top) for x in logits]
    total = sum(e)
    want = [x / total for x in e]
    bad = [i for i, (p, w) in enumerate(zip(probs, want, strict=True)) if not abs(p - w) <= SOFTMAX_TOL]
    if not bad:
        return []
    i = bad[0]
    return [f"probabilities[{i}] is {probs[i]} but softmax(option_logits) gives {want[i]} "
            f"({len(bad)} of {len(probs)} differ by more than {SOFTMAX_TOL:g})"]


def _check_generated(trace: dict[str, Any], run: dict[str, Any],
                     typed_by_key: dict[tuple[bool, int], dict[str, Any]]) -> list[str]:
    out = _check_events(run, GENERATED_EVENTS)
    if out:
        return out
    toks = run["tokens"]
    n = len(trace["inputs"]["criteria"])
    if [t["i"] for t in toks] != list(range(len(toks))):
        out.append("token indices are not 0, 1, 2, …")
    ts = [t["t"] for t in toks]
    if any(b + _EPS < a for a, b in pairwise(ts)):
        out.append("token timestamps decrease")
    if abs(toks[0]["t"] - run["ttft_s"]) > _EPS or abs(event_t(run, "first_token") - run["ttft_s"]) > _EPS:
        out.append(f"ttft_s {run['ttft_s']} differs from the first token's time {toks[0]['t']} "
                   "or the first_token event")
    if run["ttft_s"] > run["total_s"] + _EPS:
        out.append(f"ttft_s {run['ttft_s']} is after total_s {run['total_s']}")
    if ts[-1] > event_t(run, "done") + _EPS:
        out.append(f"the last token ({ts[-1]} s) comes after the done event")
    if run["output_tokens"] != len(toks):
        out.append(f"output_tokens {run['output_tokens']} but {len(toks)} tokens are listed")
    if run["decode_steps"] != len(toks) - 1:
        out.append(f"decode_steps {run['decode_steps']} is not output_tokens - 1")
    stop_ids = trace["prompts"]["generated"]["stop_token_ids"]
    if stop_ids != sorted(set(stop_ids)):
        out.append(f"prompts.generated.stop_token_ids {stop_ids} are not distinct and sorted")
    wrong = [t["i"] for t in toks if t["stop"] != (t["id"] in stop_ids)]
    if wrong:
        out.append(f"tokens {wrong[:5]} are marked stop (or not) against prompts.generated.stop_token_ids {stop_ids}")
    stops = [t["i"] for t in toks if t["stop"]]
    if run["stop_reason"] == "end_of_turn":
        if stops != [len(toks) - 1]:
            out.append(f"stop_reason end_of_turn but stop tokens at {stops} (expected only the last)")
    else:
        if stops:
            out.append(f"stop_reason max_new_tokens but stop tokens at {stops}")
        if len(toks) != token_limit(trace, run):
            limit = token_limit(trace, run)
            out.append(f"stop_reason max_new_tokens after {len(toks)} tokens (limit {limit})")
    joined = "".join(t["text"] for t in toks if not t["stop"])
    if joined != run["text"]:
        out.append("text is not the concatenation of its tokens' texts")
    valid, complete, parsed, error = parse_array(run["text"], n, v1_wording=trace["format"] == TRACE_FORMAT)
    recorded = (run["valid"], run["complete"], run["parsed"], run["error"])
    if (valid, complete, parsed, error) != recorded:
        out.append(f"valid/complete/parsed/error {recorded!r} disagree with the text, which parses as "
                   f"{(valid, complete, parsed, error)!r}")
    # Where each answer value starts is a fact of the token texts: derive it again, so an index moved to another
    # token, or given to a run whose text is no array, does not verify (found by tests/trace/test_fuzz_trace_edits.py)
    spans = locate_answers([t["text"] for t in toks], run["stop_reason"] == "end_of_turn")
    moved = [(i, t["answer_index"]) for i, t in enumerate(toks) if t["answer_index"] != spans.answer_at.get(i)]
    if moved:
        i, got = moved[0]
        out.append(f"token {i}: answer_index {got} but the token texts put {spans.answer_at.get(i)} there "
                   f"({len(moved)} token(s) disagree)")
    placed = [i for i, t in enumerate(toks) if t["yes_no"] is not None and spans.answer_at.get(i) is None]
    if placed:
        out.append(f"tokens {placed[:5]} carry a yes_no split but start no answer value")
    k = trace["protocol"]["top_k"]
    for t in toks:
        # 1e-12, not 1e-6: the two are one normalisation (sum off by 2e-16 in every trace); a looser bound let a
        # forger move a small yes by 1e-8 unseen (found by tests/trace/test_fuzz_trace_edits.py)
        if t["yes_no"] is not None and abs(t["yes_no"]["yes"] + t["yes_no"]["no"] - 1.0) > 1e-12:
            out.append(f"token {t['i']}: yes_no probabilities do not sum to 1")
        # The model's top-1 (before any mask) is the chosen token unless the grammar overruled it.
        out += [f"token {t['i']}: {p}" for p in check_top_k(t["top_k"], k) or check_greedy_token(t)]
    typed = typed_by_key.get((run["warmup"], run["repeat"]))
    if len(run["agreement"]) != n:
        out.append(f"agreement has {len(run['agreement'])} entries for {n} criteria")
    elif typed is None:
        out.append("no typed run with the same repeat to compare with")
    elif len(typed["decisions"]) != n:
        out.append("cannot check agreement: the typed run of the same repeat does not hold one decision per criterion")
    else:
        want = agreement(parsed, complete, [d["choice"] for d in typed["decisions"]])
        if run["agreement"] != want:
            out.append(f"agreement {run['agreement']} does not match the typed run of the same repeat ({want})")
    return out


def _check_v2_blocks(trace: dict[str, Any]) -> list[str]:
    out = []
    co, proto = trace["prompts"]["constrained"], trace["protocol"]
    n = len(trace["inputs"]["criteria"])
    got = sha256_text(co["grammar"])
    if got != co["grammar_sha256"]:
        out.append(f"prompts.constrained.grammar_sha256 is {co['grammar_sha256']} but the grammar hashes to {got}")
    values = co.get("values")
    if values is not None:
        if len(values) != n:
            out.append(f"prompts.constrained.values has {len(values)} entries for {n} criteria")
        else:
            g = ArrayGrammar(tuple(tuple(v) for v in values))
            if g.gbnf() != co["grammar"]:
                out.append("prompts.constrained.grammar is not the grammar its values define")
            if g.rule() != co["rule"]:
                out.append("prompts.constrained.rule is not the grammar's rule in words")
            if g.max_new_tokens() != co["max_new_tokens"]:
                out.append(f"prompts.constrained.max_new_tokens {co['max_new_tokens']} is not the grammar's bound "
                           f"{g.max_new_tokens()}")
    if co["compile_s"] is None and not browser_made(trace):
        out.append("prompts.constrained.compile_s is null (not measured), which only a browser-made trace "
                   "(machine.browser) may say")
    if co["max_new_tokens"] != proto["constrained_max_new_tokens"]:
        out.append("prompts.constrained.max_new_tokens differs from protocol.constrained_max_new_tokens")
    if proto["lanes"] != ["typed", "free", "constrained"]:
        out.append(f"protocol.lanes is {proto['lanes']}, expected typed, free, constrained")
    cal = trace["calibration"]
    if cal is not None and "calibrated_decisions" in cal:
        first = measured(trace, "typed")[0]["decisions"] if measured(trace, "typed") else []
        k = sum(1 for d in first if d["calibrated"] is not None)
        if cal["calibrated_decisions"] != k:
            out.append(f"calibration.calibrated_decisions {cal['calibrated_decisions']} but {k} decisions of measured "
                       "typed repeat 0 are calibrated")
    return out


def _check_typed_v2(trace: dict[str, Any], run: dict[str, Any]) -> list[str]:
    out = []
    labels = [c.get("label") for c in trace["inputs"]["criteria"]]
    for d, lab in zip(run["decisions"], labels, strict=False):
        cid = d["criterion_id"]
        if d["label"] != lab:
            out.append(f"{cid}: label {d['label']!r} but the input's label is {lab!r}")
        want = None if lab is None else d["choice"] == lab
        if d["correct"] != want:
            out.append(f"{cid}: correct is {d['correct']} but choice {d['choice']!r} vs label {lab!r} gives {want}")
        cal = d["calibrated"]
        if cal is not None:
            if trace["calibration"] is None:
                out.append(f"{cid}: a calibrated block without the trace's calibration provenance")
                continue
            if len(cal["probabilities"]) != len(d["option_ids"]) or abs(sum(cal["probabilities"]) - 1.0) > 1e-6:
                out.append(f"{cid}: calibrated probabilities are not one distribution over the options")
                continue
            again = calibrated_block(cal["probabilities"], d["option_ids"], lab)
            for key in ("choice", "tie", "correct"):
                if cal[key] != again[key]:
                    out.append(f"{cid}: calibrated.{key} is {cal[key]!r} but its probabilities give {again[key]!r}")
            if abs(cal["margin"] - again["margin"]) > 1e-9:
                out.append(f"{cid}: calibrated.margin {cal['margin']} is not top minus second probability")
    return out


def _check_generated_v2(trace: dict[str, Any], run: dict[str, Any]) -> list[str]:
    out = []
    limit = token_limit(trace, run)
    if run["capped"] != (run["stop_reason"] == "max_new_tokens"):
        out.append(f"capped is {run['capped']} but stop_reason is {run['stop_reason']}")
    want = verdict(run["valid"], run["complete"], run["capped"], run["parsed"], run["error"], limit)
    if run["verdict"] != want:
        out.append(f"verdict {run['verdict']!r} does not match the run ({want!r})")
    labels = [c.get("label") for c in trace["inputs"]["criteria"]]
    right = labels_correct(run["parsed"], run["complete"], labels)
    if run["correct"] != right:
        out.append(f"correct {run['correct']} does not match the parsed values and labels ({right})")
    constrained = run["path"] == "constrained"
    if constrained:
        n_masked = sum(1 for t in run["tokens"] if t["masked"])
        if run["masked_tokens"] != n_masked:
            out.append(f"masked_tokens {run['masked_tokens']} but {n_masked} tokens are marked masked")
        if run["grammar_s"] is None:
            if not browser_made(trace):
                out.append("grammar_s is null (not measured), which only a browser-made trace (machine.browser) "
                           "may say")
        elif run["grammar_s"] > run["total_s"] + _EPS:
            out.append(f"grammar_s {run['grammar_s']} exceeds total_s {run['total_s']}")
    elif run["masked_tokens"] is not None or run["grammar_s"] is not None:
        out.append("a free run has masked_tokens or grammar_s (it has no grammar)")
    for t in run["tokens"]:
        where = f"token {t['i']}"
        if not constrained and (t["masked"] is not None or t["free_argmax"] is not None):
            out.append(f"{where}: masked/free_argmax set in a free run")
        elif constrained and t["masked"] is None:
            out.append(f"{where}: masked is null in a constrained run")
        elif constrained and bool(t["masked"]) != (t["free_argmax"] is not None):
            out.append(f"{where}: masked is {t['masked']} but free_argmax is {t['free_argmax']}")
        elif t["free_argmax"] is not None and t["free_argmax"]["id"] == t["id"]:
            out.append(f"{where}: masked, yet the chosen token is the model's own argmax")
    return out


def load_verified(path: str) -> dict[str, Any]:
    """Load and fully verify (schema, checksums, consistency): a tampered trace is never summarised or exported."""
    trace = load(path)
    errs = verify(trace)
    if errs:
        raise ValidationError(f"{path}: not a verified {trace['format']} trace ({len(errs)} problem(s); "
                              "`semif trace verify` lists them all):\n  " + "\n  ".join(errs))
    return trace
