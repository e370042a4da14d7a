"""The trace formats ``semif-trace-v1`` and ``semif-trace-v2``: write, load, verify, summarise, export.

A trace is plain JSON (schemas ``scorer/schema/trace-v1.json``, ``trace-v2.json``) that holds one versus
experiment: where it ran, what it ran, every run of every path with its timestamps and logit evidence,
and the summary medians. v1 has two paths (typed, generated); v2, which ``semif versus`` writes, has
three (typed, free, constrained), labels and right/wrong per decision, optional calibrated typed
probabilities with their provenance, and a capped/invalid verdict per generated run. Both verify,
summarise and export. Nothing here needs torch: a trace can be checked and rendered anywhere.

Checksums are sha256 over *canonical JSON*: UTF-8, object keys sorted, no whitespace, numbers as
orjson writes them (``orjson.dumps(x, option=OPT_SORT_KEYS)``). ``verify`` recomputes them, checks
the schema, and re-derives what can be re-derived (the parse of each generated output, per-criterion
agreement, the summary) so a trace whose numbers were edited by hand does not verify.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson

from scorer.errors import InputError, ValidationError
from scorer.io import FORCE_HINT, write_atomic

TRACE_FORMAT = "semif-trace-v1"
TRACE_FORMAT_V2 = "semif-trace-v2"
FORMATS = (TRACE_FORMAT, TRACE_FORMAT_V2)
GENERATED_PATHS = {TRACE_FORMAT: ("generated",), TRACE_FORMAT_V2: ("free", "constrained")}
TYPED_EVENTS = ("encoded", "prefill_done", "suffix_done", "decisions_available")
GENERATED_EVENTS = ("encoded", "first_token", "done")
ANSWERS = ("yes", "no")
_EPS = 1e-9  # slack for comparing rounded timestamps
_MAX_SCHEMA_ERRORS = 20
# The deepest a real trace nests is ~6 levels (runs[i].decisions[j].top_k[k].p); anything far deeper is
# refused at load, before the recursive schema check and canonical JSON (orjson stops at 255) can fail.
MAX_DEPTH = 32
# |p - softmax(option_logits)| allowed per probability: float64 softmax recomputed here vs at scoring time
# (same float64 logits) differs by a few ulp; a forged value is off by orders of magnitude more.
SOFTMAX_TOL = 1e-9


# --- canonical JSON and checksums ------------------------------------------------------------------
def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes: keys sorted, no whitespace (what every checksum is taken over)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical(obj)).hexdigest()


def inputs_digest(inputs: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the inputs' identity: ``{id, state, criteria}``."""
    return sha256_json({"id": inputs["id"], "state": inputs["state"], "criteria": inputs["criteria"]})


def checksums(trace: dict[str, Any]) -> dict[str, str]:
    """The checksums block for ``trace`` (its own checksums block is ignored)."""
    body = {k: v for k, v in trace.items() if k != "checksums"}
    return {"inputs_sha256": inputs_digest(trace["inputs"]), "runs_sha256": sha256_json(trace["runs"]),
            "content_sha256": sha256_json(body)}


def finalize(trace: dict[str, Any]) -> dict[str, Any]:
    """Fill the inputs hash, the summary and the checksums; returns the same dict."""
    trace["inputs"]["sha256"] = inputs_digest(trace["inputs"])
    trace["summary"] = compute_summary(trace)
    trace["checksums"] = checksums(trace)
    return trace


# --- generated output --------------------------------------------------------------------------------
def parse_array(text: str, n: int, v1_wording: bool = False) -> tuple[bool, bool, list[str] | None, str | None]:
    """Judge a generated output strictly: ``(valid, complete, parsed, error)``.

    Valid: the text, whitespace around it aside, is a JSON array whose every value is the string
    ``"yes"`` or ``"no"``. Complete: valid with exactly ``n`` values. Nothing is repaired: a code
    fence, a capitalised ``"Yes"``, a missing bracket or a 20-value array for 21 criteria is a failure.
    ``v1_wording`` reproduces v1's error text ("starting at at char"), so committed v1 traces still verify.
    """
    body = text.strip()
    if not body:
        return False, False, None, "empty output"
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        at = " at" if v1_wording or not exc.msg.endswith(" at") else ""
        return False, False, None, f"not a JSON value ({exc.msg}{at} char {exc.pos})"
    if not isinstance(value, list):
        return False, False, None, f"a JSON {type(value).__name__}, not an array"
    for i, v in enumerate(value):
        if v not in ANSWERS or not isinstance(v, str):
            shown = json.dumps(v, ensure_ascii=False)
            return False, False, None, f'value {i + 1} is {shown} (expected "yes" or "no")'
    if len(value) != n:
        return True, False, list(value), f"{len(value)} values for {n} criteria"
    return True, True, list(value), None


def agreement(parsed: list[str] | None, complete: bool, typed_choices: list[str | None]) -> list[bool | None]:
    """Per criterion: the generated value equals the typed choice; None where either is missing.

    An incomplete array cannot be aligned to the criteria, so all its entries are None.
    """
    if not complete or parsed is None:
        return [None] * len(typed_choices)
    return [None if c is None else g == c for g, c in zip(parsed, typed_choices, strict=True)]


def verdict(valid: bool, complete: bool, capped: bool, parsed: list[str] | None, error: str | None,
            limit: int) -> str:
    """A generated run's outcome in words (v2 ``verdict``; the site shows it as is)."""
    if complete:
        tail = f" (then stopped at the {limit}-token limit)" if capped else ""
        return f"valid: {len(parsed or [])} values{tail}"
    if capped:
        return f"capped: stopped at the {limit}-token limit before a complete array"
    return f"invalid: {error}"


def labels_correct(parsed: list[str] | None, complete: bool, labels: list[str | None]) -> list[bool | None]:
    """Per criterion: the generated value equals the label; None when unlabelled or the array is incomplete."""
    if not complete or parsed is None:
        return [None] * len(labels)
    return [None if lab is None else v == lab for v, lab in zip(parsed, labels, strict=True)]


def calibrated_block(probs: list[float], option_ids: list[str], label: str | None) -> dict[str, Any]:
    """A typed decision's v2 ``calibrated`` block: the calibrated probabilities and the choice they give
    (a tie when the top two are exactly equal), the margin, and right/wrong against the label."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    tie = probs[order[0]] == probs[order[1]]
    choice = None if tie else option_ids[order[0]]
    return {"probabilities": [float(p) for p in probs], "choice": choice,
            "margin": float(probs[order[0]] - probs[order[1]]), "tie": tie,
            "correct": None if label is None else choice == label}


# --- summary -----------------------------------------------------------------------------------------
def _median(xs: list[float]) -> float:
    return round(float(statistics.median(xs)), 6)


def _ev(run: dict[str, Any], name: str) -> float:
    for e in run["events"]:
        if e["name"] == name:
            return float(e["t"])
    raise KeyError(name)


def _rate(tokens: float, seconds: float) -> float | None:
    return round(tokens / seconds, 3) if seconds > 0 else None


def measured(trace: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """Measured (non-warm-up) runs of one path, in order."""
    return [r for r in trace["runs"] if r["path"] == path and not r["warmup"]]


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
    enc_t = [_ev(r, "encoded") for r in typed]
    pre_t = [_ev(r, "prefill_done") - _ev(r, "encoded") for r in typed]
    suf_t = [_ev(r, "suffix_done") - _ev(r, "prefill_done") for r in typed]
    rdo_t = [_ev(r, "decisions_available") - _ev(r, "suffix_done") for r in typed]
    enc_g = [_ev(r, "encoded") for r in gen]
    pre_g = [_ev(r, "first_token") - _ev(r, "encoded") for r in gen]
    dec_g = [_ev(r, "done") - _ev(r, "first_token") for r in gen]
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


# --- files -------------------------------------------------------------------------------------------
def dumps(trace: dict[str, Any]) -> bytes:
    """The trace file's bytes (orjson, 2-space indent, trailing newline)."""
    return orjson.dumps(trace, option=orjson.OPT_INDENT_2) + b"\n"


def write(path: Path, trace: dict[str, Any], force: bool = False) -> None:
    """Write atomically; refuse to replace an existing file unless ``force``."""
    write_atomic(path, dumps(trace), force, FORCE_HINT)


def load(path: str | Path) -> dict[str, Any]:
    """Read a trace file (JSON object with ``"format"`` one of :data:`FORMATS`), with file/field errors."""
    name = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError(name, None, None, "file not found", f"a {TRACE_FORMAT} JSON file")
    try:
        obj = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(name, None, None, f"invalid JSON ({exc})", f"a {TRACE_FORMAT} JSON file") from None
    if not isinstance(obj, dict):
        raise InputError(name, None, None, f"a JSON {type(obj).__name__}", "a JSON object")
    if obj.get("format") not in FORMATS:
        raise InputError(name, None, "format", f"{obj.get('format')!r}", " or ".join(f'"{f}"' for f in FORMATS))
    _check_depth(name, obj)
    return obj


def _check_depth(name: str, obj: Any) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (iteratively: no recursion on hostile input)."""
    stack: list[tuple[Any, str, int]] = [(obj, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            shown = where if len(where) <= 80 else where[:80] + "…"
            raise InputError(name, None, shown.lstrip("."), f"nested more than {MAX_DEPTH} levels deep",
                             f"at most {MAX_DEPTH} levels of arrays/objects")
        if isinstance(value, dict):
            stack.extend((v, f"{where}.{k}", depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))


def schema(fmt: str = TRACE_FORMAT) -> dict[str, Any]:
    """The published JSON Schema of a format (``semif-trace-v1`` → ``schema/trace-v1.json``)."""
    return orjson.loads((Path(__file__).parent / "schema" / f"{fmt.removeprefix('semif-')}.json").read_bytes())


def schema_errors(trace: Any) -> list[str]:
    """Schema violations as ``at <json path>: <message>`` lines (empty when the trace conforms); the schema is
    the one of the trace's own ``format`` (v1 when it names none we know, so the format error shows)."""
    import jsonschema

    got = trace.get("format") if isinstance(trace, dict) else None
    fmt = got if isinstance(got, str) and got in FORMATS else TRACE_FORMAT
    validator = jsonschema.Draft202012Validator(schema(fmt))
    out = []
    for err in sorted(validator.iter_errors(trace), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"at {where}: {err.message[:300]}")
        if len(out) >= _MAX_SCHEMA_ERRORS:
            out.append("… (more schema errors not shown)")
            break
    return out


# --- verify ------------------------------------------------------------------------------------------
def verify(trace: Any) -> list[str]:
    """Every problem found in ``trace``: schema, checksums, internal consistency. Empty = verified."""
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
        problems += _check_prompts(trace)
        problems += _check_protocol(trace)
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
    except (KeyError, IndexError, TypeError, ValueError) as exc:  # a net under the checks, never a traceback
        problems.append(f"inconsistent structure ({type(exc).__name__}: {exc})")
    if not problems:
        try:
            again = compute_summary(trace)
        except (ValidationError, KeyError, ValueError, ZeroDivisionError) as exc:
            problems.append(f"summary cannot be recomputed: {exc}")
        else:
            if canonical(again) != canonical(trace["summary"]):
                diff = sorted(k for k in again if canonical(again[k]) != canonical(trace["summary"].get(k)))
                problems.append(f"summary does not match the runs (differs in: {', '.join(diff)})")
    return problems


def _check_prompts(trace: dict[str, Any]) -> list[str]:
    out = []
    n = len(trace["inputs"]["criteria"])
    ids = [c["id"] for c in trace["inputs"]["criteria"]]
    if len(set(ids)) != n:
        out.append("inputs.criteria: duplicate criterion ids")
    ty = trace["prompts"]["typed"]
    for key in ("suffix_tokens", "suffix_texts", "input_tokens", "prompt_sha256", "tokens_sha256"):
        if len(ty[key]) != n:
            out.append(f"prompts.typed.{key} has {len(ty[key])} entries for {n} criteria")
    if len(ty["input_tokens"]) == n and len(ty["suffix_tokens"]) == n:
        for k, (inp, suf) in enumerate(zip(ty["input_tokens"], ty["suffix_tokens"], strict=True)):
            if inp != ty["prefix_tokens"] + suf:
                out.append(f"prompts.typed.input_tokens[{k}] = {inp} is not prefix {ty['prefix_tokens']} "
                           f"+ suffix {suf}")
    ge = trace["prompts"]["generated"]
    got = hashlib.sha256(ge["text"].encode("utf-8")).hexdigest()
    if got != ge["prompt_sha256"]:
        out.append(f"prompts.generated.prompt_sha256 is {ge['prompt_sha256']} but the text hashes to {got}")
    if ge["max_new_tokens"] != trace["protocol"]["max_new_tokens"]:
        out.append("prompts.generated.max_new_tokens differs from protocol.max_new_tokens")
    return out


def _check_protocol(trace: dict[str, Any]) -> list[str]:
    out = []
    proto = trace["protocol"]
    for path in ("typed", *GENERATED_PATHS[trace["format"]]):
        for warm, count in ((True, proto["warmup"]), (False, proto["repeats"])):
            reps = [r["repeat"] for r in trace["runs"] if r["path"] == path and r["warmup"] == warm]
            if reps != list(range(count)):
                kind = "warm-up" if warm else "measured"
                out.append(f"{kind} {path} runs have repeats {reps}, protocol says {count}")
    prev_end = 0.0
    for i, run in enumerate(trace["runs"]):
        if run["start_s"] + _EPS < prev_end:
            out.append(f"runs[{i}] starts at {run['start_s']} s, before the previous run ended ({prev_end} s)")
        prev_end = run["start_s"] + run["total_s"]
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
    t_pre, t_suf, t_all = _ev(run, "prefill_done"), _ev(run, "suffix_done"), _ev(run, "decisions_available")
    bound = trace["protocol"]["exact"].get("bound")
    for d in run["decisions"]:
        cid = d["criterion_id"]
        n = len(d["option_ids"])
        if not (len(d["letters"]) == len(d["option_logits"]) == len(d["probabilities"]) == n):
            out.append(f"{cid}: option_ids, letters, option_logits and probabilities differ in length")
            continue
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
    if abs(toks[0]["t"] - run["ttft_s"]) > _EPS or abs(_ev(run, "first_token") - run["ttft_s"]) > _EPS:
        out.append(f"ttft_s {run['ttft_s']} differs from the first token's time {toks[0]['t']} "
                   "or the first_token event")
    if run["ttft_s"] > run["total_s"] + _EPS:
        out.append(f"ttft_s {run['ttft_s']} is after total_s {run['total_s']}")
    if ts[-1] > _ev(run, "done") + _EPS:
        out.append(f"the last token ({ts[-1]} s) comes after the done event")
    if run["output_tokens"] != len(toks):
        out.append(f"output_tokens {run['output_tokens']} but {len(toks)} tokens are listed")
    if run["decode_steps"] != len(toks) - 1:
        out.append(f"decode_steps {run['decode_steps']} is not output_tokens - 1")
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
    answers = [t["answer_index"] for t in toks if t["answer_index"] is not None]
    if answers != list(range(len(answers))):
        out.append(f"answer_index values {answers} are not 0, 1, 2, … in token order")
    for t in toks:
        if t["yes_no"] is not None and abs(t["yes_no"]["yes"] + t["yes_no"]["no"] - 1.0) > 1e-6:
            out.append(f"token {t['i']}: yes_no probabilities do not sum to 1")
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


# --- v2: three lanes, labels, calibration -----------------------------------------------------------
def token_limit(trace: dict[str, Any], run: dict[str, Any]) -> int:
    """The token limit a generated run ran under (v2's constrained lane has its own)."""
    if run["path"] == "constrained":
        return int(trace["protocol"]["constrained_max_new_tokens"])
    return int(trace["protocol"]["max_new_tokens"])


def _lane_summary(trace: dict[str, Any], lane: str, typed_median: float) -> dict[str, Any]:
    runs = measured(trace, lane)
    n = len(trace["inputs"]["criteria"])
    first = runs[0]
    n_in = trace["prompts"]["generated"]["input_tokens"]
    steps = [r["decode_steps"] for r in runs]
    enc = [_ev(r, "encoded") for r in runs]
    pre = [_ev(r, "first_token") - _ev(r, "encoded") for r in runs]
    dec = [_ev(r, "done") - _ev(r, "first_token") for r in runs]
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
        "grammar_s_median": _median([r["grammar_s"] for r in runs]) if constrained else None,
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
    enc = [_ev(r, "encoded") for r in typed]
    pre = [_ev(r, "prefill_done") - _ev(r, "encoded") for r in typed]
    suf = [_ev(r, "suffix_done") - _ev(r, "prefill_done") for r in typed]
    rdo = [_ev(r, "decisions_available") - _ev(r, "suffix_done") for r in typed]
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


def _check_v2_blocks(trace: dict[str, Any]) -> list[str]:
    from scorer.grammar import ArrayGrammar

    out = []
    co, proto = trace["prompts"]["constrained"], trace["protocol"]
    n = len(trace["inputs"]["criteria"])
    got = hashlib.sha256(co["grammar"].encode("utf-8")).hexdigest()
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
            if g.max_new_tokens() != co["max_new_tokens"]:
                out.append(f"prompts.constrained.max_new_tokens {co['max_new_tokens']} is not the grammar's bound "
                           f"{g.max_new_tokens()}")
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
        if run["grammar_s"] is None or run["grammar_s"] > run["total_s"] + _EPS:
            out.append(f"grammar_s {run['grammar_s']} is missing or exceeds total_s {run['total_s']}")
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
        # The model's top-1 (before any mask) is the chosen token unless the grammar overruled it.
        top = t["top_k"][0] if t["top_k"] else None
        best = t["free_argmax"] if t["free_argmax"] is not None else t
        if top is not None and top["id"] != best["id"] and abs(top["p"] - best["p"]) > 1e-6:
            out.append(f"{where}: top_k[0] is token {top['id']} (p {top['p']}) but the argmax recorded is "
                       f"{best['id']} (p {best['p']})")
    return out


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
    chk = trace["checks"].get("typed_vs_direct")
    if chk:
        lines.append(f"typed vs direct mode: choices {'equal' if chk['choices_equal'] else 'DIFFER'}, "
                     f"max |Δp| {chk['max_abs_dp']:.2e}")
    lines += [f"note: {x}" for x in trace["notes"]]
    return "\n".join(lines)


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
    chk = trace["checks"].get("typed_vs_direct")
    if chk:
        lines.append(f"typed vs direct mode: choices {'equal' if chk['choices_equal'] else 'DIFFER'}, "
                     f"max |Δp| {chk['max_abs_dp']:.2e}")
    lines += [f"note: {x}" for x in trace["notes"]]
    return "\n".join(lines)


# --- Chrome trace export -----------------------------------------------------------------------------
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
            enc, pre = _ev(run, "encoded"), _ev(run, "prefill_done")
            suf, dec = _ev(run, "suffix_done"), _ev(run, "decisions_available")
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
            enc, first, done = _ev(run, "encoded"), _ev(run, "first_token"), _ev(run, "done")
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


def load_verified(path: str) -> dict[str, Any]:
    """Load and fully verify (schema, checksums, consistency): a tampered trace is never summarised or exported."""
    trace = load(path)
    errs = verify(trace)
    if errs:
        raise ValidationError(f"{path}: not a verified {trace['format']} trace ({len(errs)} problem(s); "
                              "`semif trace verify` lists them all):\n  " + "\n  ".join(errs))
    return trace
