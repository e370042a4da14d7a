"""The blocks around the runs — experiment, machine, versions, model, protocol, checks — against each other
and against the runs: what was recorded twice must agree, and the run schedule must be the protocol's."""

from __future__ import annotations

import math
from typing import Any

from scorer.trace.format import GENERATED_PATHS, experiment_id

_EPS = 1e-9  # slack for comparing rounded timestamps
# The machine epsilon of each logits dtype a bound may be taken over: scorer.decision.readout.resolution(1.0, dtype),
# written out so that verify needs no numpy (tests/trace/test_trace_consistency.py holds the two equal).
LOGITS_EPSILON = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
DTYPE_EPSILONS = tuple(LOGITS_EPSILON.values())
EXACT_SOURCES = ("probe", "drift-report")


def check_header(trace: dict[str, Any]) -> list[str]:
    """Every problem of the experiment, machine, versions, model and checks blocks."""
    out = []
    exp, model, mach = trace["experiment"], trace["model"], trace["machine"]
    want = experiment_id(trace["inputs"]["id"], model.get("key"), model.get("backend"), model.get("device"),
                         exp["created_utc"])
    if exp["id"] != want:
        out.append(f"experiment.id is {exp['id']!r} but inputs.id, model key/backend/device and "
                   f"experiment.created_utc name it {want!r}")
    for key, value in (model.get("versions") or {}).items():
        if trace["versions"].get(key) != str(value):
            out.append(f"model.versions.{key} is {value!r} but versions.{key} is {trace['versions'].get(key)!r}")
    out += _check_model(trace)
    if mach.get("usable_cores") is not None and mach["usable_cores"] > mach["cores"]:  # null: not known
        out.append(f"machine.usable_cores {mach['usable_cores']} exceeds machine.cores {mach['cores']}")
    if model.get("device") == "cpu" and mach["gpu"] is not None:
        out.append(f"machine.gpu is {mach['gpu']!r} but the model ran on the cpu (a GPU the run did not use is "
                   "never credited)")
    ends = [r["start_s"] + r["total_s"] for r in trace["runs"]]
    if ends and exp["wall_s"] + _EPS < max(ends):
        out.append(f"experiment.wall_s {exp['wall_s']} is shorter than the runs, which end at {max(ends)} s")
    chk = trace["checks"].get("typed_vs_direct")
    if chk is not None:
        ids = [c["id"] for c in trace["inputs"]["criteria"]]
        if chk["mismatched"] != [i for i in ids if i in chk["mismatched"]] or len(set(chk["mismatched"])) != len(
                chk["mismatched"]):
            out.append(f"checks.typed_vs_direct.mismatched {chk['mismatched']} are not criterion ids in order")
        if chk["choices_equal"] != (not chk["mismatched"]):
            out.append(f"checks.typed_vs_direct.choices_equal is {chk['choices_equal']} but mismatched is "
                       f"{chk['mismatched']}")
        if not chk["max_abs_dp"] >= 0.0:
            out.append(f"checks.typed_vs_direct.max_abs_dp {chk['max_abs_dp']} is negative")
    return out


def _token_ids(trace: dict[str, Any]) -> list[int]:
    ids = [*trace["prompts"]["typed"]["slot_token_ids"], *trace["prompts"]["generated"]["stop_token_ids"]]
    for run in trace["runs"]:
        for d in run.get("decisions") or []:
            ids += [d["full_vocab_argmax"]["token_id"], *(e["id"] for e in d["top_k"])]
        for t in [] if run["path"] == "typed" else run["tokens"]:
            ids += [t["id"], *(e["id"] for e in t["top_k"])]
            if t.get("free_argmax"):
                ids.append(t["free_argmax"]["id"])
            if t["yes_no"]:
                ids += [t["yes_no"]["yes_id"], t["yes_no"]["no_id"]]
    return ids


def _check_model(trace: dict[str, Any]) -> list[str]:
    """What the model block records twice, and the bounds its vocabulary and context set on the runs."""
    out = []
    model = trace["model"]
    gguf = model.get("gguf")
    if isinstance(gguf, dict):
        for key, other in (("sha256", "gguf_sha256"), ("file", "gguf_file")):
            if key in gguf and other in model and gguf[key] != model[other]:
                out.append(f"model.gguf.{key} {gguf[key]!r} differs from model.{other} {model[other]!r}")
    ref = model.get("reference_tokenizer")
    if isinstance(ref, dict) and "gguf_sha256" in ref and ref["gguf_sha256"] != model.get("gguf_sha256"):
        out.append("model.reference_tokenizer.gguf_sha256 differs from model.gguf_sha256")
    vocab = model.get("vocab_size")
    if isinstance(vocab, int) and not isinstance(vocab, bool):
        big = max((i for i in _token_ids(trace) if i >= vocab), default=None)
        if big is not None:
            out.append(f"token id {big} is outside the model's vocabulary (model.vocab_size {vocab})")
    n_ctx = model.get("n_ctx")
    need = trace["prompts"]["generated"]["input_tokens"] + max(
        trace["protocol"]["max_new_tokens"], trace["protocol"].get("constrained_max_new_tokens", 0))
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and need > n_ctx:
        out.append(f"the generated prompt and its token limit need {need} positions, more than model.n_ctx {n_ctx}")
    ex = trace["protocol"]["exact"]
    dtype = model.get("logits_dtype") or model.get("dtype")
    # None: not a float dtype (a GGUF's quantization without logits_dtype), nothing to compare
    want = LOGITS_EPSILON.get(dtype) if isinstance(dtype, str) else None
    if ex["enabled"] and want is not None and ex.get("dtype_epsilon") != want:
        out.append(f"protocol.exact.dtype_epsilon {ex.get('dtype_epsilon')} is not the machine epsilon {want} of "
                   f"the model's logits dtype {dtype}")
    return out


def check_protocol(trace: dict[str, Any]) -> list[str]:
    """The run schedule (repeats per lane, runs in clock order) and the exact policy's block."""
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
    if proto["typed_mode"] != "shared":
        out.append(f"protocol.typed_mode is {proto['typed_mode']!r}; a versus trace's typed lane is shared mode")
    return out + _check_exact(trace)


def _check_exact(trace: dict[str, Any]) -> list[str]:
    ex = trace["protocol"]["exact"]
    if not ex["enabled"]:
        extra = sorted(set(ex) - {"enabled"})
        return [f"protocol.exact is disabled but has {', '.join(extra)}"] if extra else []
    out = []
    nums = [ex.get(k) for k in ("safety", "max_abs_dp", "dtype_epsilon", "bound")]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in nums):
        return [f"protocol.exact (enabled) needs the numbers safety, max_abs_dp, dtype_epsilon and bound; got {nums}"]
    safety, dp, eps, bound = (float(x) for x in nums)
    if eps not in DTYPE_EPSILONS:
        out.append(f"protocol.exact.dtype_epsilon {eps} is not the machine epsilon of a float dtype")
    if not safety >= 1.0 or not dp >= 0.0:
        out.append(f"protocol.exact.safety {safety} must be >= 1 and max_abs_dp {dp} >= 0")
    want = safety * 2.0 * max(dp, eps)
    if not math.isclose(bound, want, rel_tol=1e-12):
        out.append(f"protocol.exact.bound {bound} is not safety x 2 x max(max_abs_dp, dtype_epsilon) = {want}")
    source = ex.get("source")
    if source not in EXACT_SOURCES:
        out.append(f"protocol.exact.source {source!r} is not one of {', '.join(EXACT_SOURCES)}")
    elif source == "probe" and not 1 <= ex.get("probe_rows", 0) <= len(trace["inputs"]["criteria"]):
        out.append(f"protocol.exact.probe_rows {ex.get('probe_rows')!r}: a probe scores 1 to "
                   f"{len(trace['inputs']['criteria'])} criteria")
    return out
