"""``semif versus``: the same model, state and criteria, answered three ways, traced (``semif-trace-v2``).

* Typed lane: every criterion becomes a yes/no decision (options A. Yes / B. No); the shared state is
  prefilled once and all suffixes are scored in packed passes (shared mode); each decision is read
  from its answer slot's logits. No token is generated. With ``--calibration`` each decision also gets
  calibrated probabilities beside the raw ones (raw are never changed).
* Free lane: one prompt (``semif-array-v1``) holds the state and the numbered criteria and asks for a
  JSON array of lowercase "yes"/"no"; greedy decoding with the KV cache until end-of-turn or the token
  limit. The output is judged strictly and never repaired.
* Constrained lane: the same prompt, greedy decoding under a grammar that admits exactly one JSON array
  of one option id per criterion (valid by construction), enforced by the backend's own engine
  (llama.cpp's grammar sampler; llguidance for torch). Compiling the grammar happens once, before the
  runs, and is recorded; each run starts a fresh grammar state inside its clock.

All lanes run on the same backend object (same weights, dtype, device), written on the backend
protocol only. Each repeat runs typed, free, constrained in that order (warm-ups first). Each run
takes its t0 before rendering any prompt; everything after is measured inside the run with a
monotonic clock. Evidence that a production caller would not compute (top-k lists, token texts,
which token the grammar overruled) is derived after the run's clock stops, from logits kept during
the run, so it does not inflate any lane's time.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import orjson

from scorer import trace
from scorer.backends.base import Backend, Grammar, pack_chunks
from scorer.calibration import load_calibration
from scorer.calibration.apply import check_decisions
from scorer.core.errors import InputError, ValidationError
from scorer.core.hashing import sha256_file, sha256_text
from scorer.core.machine import library_versions, load_average, machine_facts
from scorer.core.package_data import data_path
from scorer.decision import readout
from scorer.formats.rows import Decision, check_state, nonempty_str
from scorer.prompting.grammar import ArrayGrammar
from scorer.prompting.prompt import ARRAY_PROMPT_VERSION, YES_NO, sha256_tokens
from scorer.scoring.drift import DEFAULT_PROBE_ROWS, DEFAULT_SAFETY, default_report_path
from scorer.scoring.exact import ExactPolicy
from scorer.scoring.generation import (
    Criterion,
    VersusInput,
    default_max_new_tokens,
    render_array,
    run_generated,
)
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS, Item, make_record, memory_need, prepare, score_items

YES_NO_IDS = tuple(o.id for o in YES_NO)
DEFAULT_INPUT = data_path("versus", "ticket-21.json")
DEFAULT_TRACES = Path("data") / "traces"
DEFAULT_REPEATS, DEFAULT_WARMUP, DEFAULT_TOP_K = 3, 1, 5
_INPUT_KEYS = {"id", "state", "criteria"}
_CRITERION_KEYS = {"id", "question", "label"}


def load_input(path: str | Path) -> VersusInput:
    """Read and validate a versus input file, with file/field errors."""
    name = str(path)
    p = Path(path)
    if not p.is_file():
        raise InputError(name, None, None, "file not found", 'a JSON file {"id", "state", "criteria"}')
    try:
        obj = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(name, None, None, f"invalid JSON ({exc})", "one JSON object") from None
    if not isinstance(obj, dict):
        raise InputError(name, None, None, f"a JSON {type(obj).__name__}", 'an object {"id", "state", "criteria"}')
    for key in sorted(_INPUT_KEYS):
        if key not in obj:
            raise InputError(name, None, key, "missing", "keys id, state, criteria")
    unknown = sorted(set(obj) - _INPUT_KEYS)
    if unknown:
        raise InputError(name, None, None, f"unknown keys {unknown}", "only id, state, criteria")
    if not nonempty_str(obj["id"]):
        raise InputError(name, None, "id", f"{obj['id']!r}", "a non-empty string")
    state = obj["state"]
    check_state(state, name, None)
    raw = obj["criteria"]
    if not isinstance(raw, list) or not raw:
        raise InputError(name, None, "criteria", "not a non-empty list", "a list of {id, question, label?} objects")
    crits: list[Criterion] = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        where = f"criteria[{i}]"
        if not isinstance(c, dict):
            raise InputError(name, None, where, f"a {type(c).__name__}", "an object {id, question, label?}")
        bad = sorted(set(c) - _CRITERION_KEYS)
        if bad:
            raise InputError(name, None, where, f"unknown keys {bad}", "only id, question and label")
        for key in ("id", "question"):
            if key not in c:
                raise InputError(name, None, f"{where}.{key}", "missing", "a non-empty string")
            if not nonempty_str(c[key]):
                raise InputError(name, None, f"{where}.{key}", f"{c[key]!r}", "a non-empty string")
        if c["id"] in seen:
            raise InputError(name, None, f"{where}.id", f"duplicate id {c['id']!r}", "unique criterion ids")
        seen.add(c["id"])
        label = c.get("label")
        if label is not None and label not in ("yes", "no"):
            raise InputError(name, None, f"{where}.label", f"{label!r}", '"yes" or "no" (or no label)')
        crits.append(Criterion(c["id"], c["question"], label))
    return VersusInput(obj["id"], state, tuple(crits))


def decisions_for(inp: VersusInput, source: str = "") -> list[Decision]:
    """The typed path's rows: one yes/no decision per criterion, in order."""
    return [Decision(c.id, inp.state, c.question, YES_NO, {"label": c.label} if c.label else {},
                     f"{source}#criteria[{i}]") for i, c in enumerate(inp.criteria)]


# --- runs --------------------------------------------------------------------------------------------
def _r(t: float) -> float:
    return round(t, 6)


class Calibrator(Protocol):
    """Calibration applied to typed decisions (what ``--calibration`` plugs in; :class:`FileCalibration`).

    ``check`` runs before any run and refuses decisions the calibration cannot serve (another model, an
    uncovered signature). ``apply`` gets the record-v1/v2 dict of one typed decision (raw ``option_ids``,
    ``option_logits``, ``probabilities``, ``signature``…) and returns its calibrated probabilities in
    ``option_ids`` order, or None when the calibration leaves it uncalibrated; it never changes the record.
    """

    def check(self, decisions: list[Decision], model: dict[str, Any]) -> None:
        ...

    def apply(self, record: dict[str, Any]) -> list[float] | None:
        ...

    def provenance(self) -> dict[str, Any]:
        """The trace's ``calibration`` block: method, file, file_sha256, rows_used, detail."""
        ...


class FileCalibration:
    """A ``semif calibrate prior|bias`` file applied through :mod:`scorer.calibration` (the same lookup and
    the same calibrated logits as ``semif score --calibration``). A signature the file saw with too few
    rows (``applied: false``) stays uncalibrated here: its decision gets no calibrated block."""

    def __init__(self, path: str):
        self.path = path
        self._cal = load_calibration(path)  # a bad file is an InputError naming it
        self._rows: dict[str, int] = {}
        self._levels: set[str] = set()

    def check(self, decisions: list[Decision], model: dict[str, Any]) -> None:
        check_decisions(self._cal, decisions, model)

    def apply(self, record: dict[str, Any]) -> list[float] | None:
        block = self._cal.apply(record)["calibrated"]
        if not block["applied"]:
            return None
        key = block["signature"] if block["level"] == "signature" else f"{block['level']}:{block['offsets']}"
        self._rows[key] = int(block["rows"])
        self._levels.add(str(block["level"]))
        return [float(p) for p in block["probabilities"]]

    def provenance(self) -> dict[str, Any]:
        return {"method": self._cal.method, "file": self.path,
                "file_sha256": sha256_file(Path(self.path)),
                "rows_used": sum(self._rows.values()),
                "detail": {"estimator": self._cal.estimator, "levels": sorted(self._levels),
                           "entries_used": len(self._rows), "applied_by": "scorer.calibration (semif score's lookup)",
                           "tie_rule": "calibrated tie = top two calibrated probabilities exactly equal"}}


def load_calibrator(path: str) -> Calibrator:
    """``--calibration FILE``: a missing or malformed file is an input error before any model loads."""
    if not Path(path).is_file():
        raise InputError(path, None, None, "file not found", "a calibration file written by semif calibrate")
    return FileCalibration(path)


def _check_calibrated(probs: list[float] | None, n: int, cid: str) -> list[float] | None:
    if probs is None:
        return None
    if len(probs) != n or not all(np.isfinite(probs)) or any(p < 0 for p in probs) or abs(sum(probs) - 1) > 1e-6:
        raise ValidationError(f"the calibration returned {probs!r} for {cid} "
                              f"(expected {n} finite probabilities summing to 1)")
    return [float(p) for p in probs]


def run_typed(backend: Backend, decisions: list[Decision], repeat: int, warmup: bool, clock0: float,
              max_batch_tokens: int, top_k: int, info: dict[str, Any], exact: ExactPolicy | None = None,
              calibration: Calibrator | None = None) -> tuple[dict[str, Any], list[Item]]:
    """One typed run: render+encode, prefill the shared prefix, packed suffix passes, readouts, (with an
    exact policy) a fresh re-score of every decision whose margin is under the drift bound, and (with a
    calibration) calibrated probabilities beside the raw ones, inside the clock as a caller would pay it."""
    t0 = time.perf_counter()
    items = prepare(backend, decisions, with_prefix=True)
    t_enc = time.perf_counter() - t0
    if len({sha256_tokens(it.prefix) for it in items}) != 1:
        raise ValidationError("the typed prompts of one state do not share one token prefix")
    pre = backend.prefill(items[0].prefix)
    t_pre = time.perf_counter() - t0
    suffixes = [it.prompt.ids[len(it.prefix):] for it in items]
    logits: list[np.ndarray] = []
    avail: list[float] = []
    passes: list[int] = []
    chunks = pack_chunks(suffixes, max_batch_tokens)
    at = 0
    for k, chunk in enumerate(chunks):
        # One fan_out per packed chunk, so each decision's availability is its own pass's end.
        lg, _timing = backend.fan_out(pre, chunk, max_batch_tokens,
                                      wants=[it.prompt.slot_ids for it in items[at:at + len(chunk)]])
        at += len(chunk)
        t = time.perf_counter() - t0
        logits += lg
        avail += [t] * len(chunk)
        passes += [k] * len(chunk)
    t_suf = time.perf_counter() - t0
    run_ident = {"config_sha256": "versus", "repeat": repeat, "warmup": warmup}
    zero = {"encode_s": 0.0, "forward_s": 0.0, "total_s": 0.0}
    records = [make_record(it, lg, backend, info, "shared", zero, None, run_ident)
               for it, lg in zip(items, logits, strict=True)]
    escalated = [False] * len(items)
    if exact is not None:
        for i, it in enumerate(items):
            if exact.escalates(records[i]):
                # The fresh path's answer replaces the fast one; it is available when its own pass ends.
                logits[i] = backend.score_fresh(it.prompt.ids, want=it.prompt.slot_ids)
                records[i] = make_record(it, logits[i], backend, info, "direct", zero, None, run_ident)
                avail[i] = time.perf_counter() - t0
                escalated[i] = True
    calibrated = ([_check_calibrated(calibration.apply(rec), len(rec["option_ids"]), rec["id"]) for rec in records]
                  if calibration is not None else [None] * len(records))
    t_avail = time.perf_counter() - t0
    backend.release(pre)
    tok = backend.tokenizer
    decisions_out = []
    for rec, lg, ta, k, esc, cal, d in zip(records, logits, avail, passes, escalated, calibrated, decisions,
                                            strict=True):
        label = d.extra.get("label")
        decisions_out.append({
            "criterion_id": rec["id"], "t_available": _r(ta), "pass": k, "escalated": esc,
            "option_ids": rec["option_ids"],
            "letters": rec["letters"], "option_logits": rec["option_logits"], "probabilities": rec["probabilities"],
            "choice": rec["choice"], "margin": rec["margin"], "tie": rec["tie"],
            "tied_option_ids": rec["tied_option_ids"], "allowed_token_mass": rec["allowed_token_mass"],
            "full_vocab_argmax": rec["full_vocab_argmax"],
            "top_k": readout.top_k(lg, top_k, tok.decode, backend.logits_normalized) if top_k else [],
            "label": label, "correct": None if label is None else rec["choice"] == label,
            "calibrated": None if cal is None else trace.calibrated_block(cal, rec["option_ids"], label)})
    n_pre = len(items[0].prefix)
    n_suf = sum(len(s) for s in suffixes)
    n_esc = sum(len(it.prompt.ids) for it, esc in zip(items, escalated, strict=True) if esc)
    run = {"path": "typed", "repeat": repeat, "warmup": warmup, "start_s": _r(t0 - clock0),
           "events": [{"name": "encoded", "t": _r(t_enc)}, {"name": "prefill_done", "t": _r(t_pre)},
                      {"name": "suffix_done", "t": _r(t_suf)}, {"name": "decisions_available", "t": _r(t_avail)}],
           "total_s": _r(t_avail),
           "tokens": {"prefix": n_pre, "suffix": n_suf, "escalated": n_esc, "processed": n_pre + n_suf + n_esc,
                      "output": 0, "passes": len(chunks)},
           "escalated": sum(escalated),
           "decisions": decisions_out}
    return run, items


# --- the experiment ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class VersusConfig:
    """How the experiment is run."""

    repeats: int = DEFAULT_REPEATS
    """Measured runs of each path."""
    warmup: int = DEFAULT_WARMUP
    """Warm-up runs of each path (kept in the trace, flagged)."""
    max_new_tokens: int | None = None
    """Generation limit; default :func:`default_max_new_tokens`."""
    top_k: int = DEFAULT_TOP_K
    """Alternatives recorded per decision and per generated token."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per packed pass."""
    check_direct: bool = True
    """After the runs, score the criteria in direct mode (untimed) and compare with the typed choices."""
    exact: bool = True
    """Typed path: escalate to a fresh pass every decision whose margin is under the measured drift bound."""
    exact_safety: float = DEFAULT_SAFETY
    """Bound = safety × 2 × max |Δp| (see :mod:`scorer.scoring.drift`)."""
    exact_probe: int = DEFAULT_PROBE_ROWS
    """Without a usable drift report: criteria scored both ways (once, before the runs) to measure |Δp|."""
    drift_report: Path | None = None
    """A ``semif drift`` report of this configuration; default: ``data/results/drift-<model>-<backend>-shared.json``
    when it exists and matches, else a probe."""
    command: str | None = None
    """The command line, recorded in the trace."""


def _prompts_block(backend: Backend, inp: VersusInput, items: list[Item], max_new: int,
                   grammar: ArrayGrammar, compiled: Grammar) -> dict[str, Any]:
    tok = backend.tokenizer
    pre = items[0].prefix
    text, ids = render_array(tok, inp)
    return {
        "typed": {"version": items[0].prompt.version, "template": items[0].prompt.template,
                  "letters": list(items[0].prompt.letters), "slot_token_ids": items[0].prompt.slot_ids,
                  "prefix_tokens": len(pre), "prefix_sha256": sha256_tokens(pre), "prefix_text": tok.decode(pre),
                  "suffix_tokens": [len(it.prompt.ids) - len(pre) for it in items],
                  "suffix_texts": [tok.decode(it.prompt.ids[len(pre):]) for it in items],
                  "input_tokens": [len(it.prompt.ids) for it in items],
                  "prompt_sha256": [it.prompt.sha256 for it in items],
                  "tokens_sha256": [it.prompt.tokens_sha256 for it in items]},
        "generated": {"version": ARRAY_PROMPT_VERSION, "template": tok.template_name, "text": text,
                      "prompt_sha256": sha256_text(text), "tokens_sha256": sha256_tokens(ids),
                      "input_tokens": len(ids), "max_new_tokens": max_new,
                      "stop_token_ids": sorted(backend.stop_ids())},
        "constrained": {"engine": compiled.engine, "grammar_format": "gbnf", "grammar": grammar.gbnf(),
                        "grammar_sha256": grammar.sha256(), "values": [list(v) for v in grammar.values],
                        "max_new_tokens": grammar.max_new_tokens(), "compile_s": round(compiled.compile_s, 6),
                        "rule": grammar.rule()},
    }


def _differences(prompts: dict[str, Any], n: int) -> list[str]:
    ty, ge, co = prompts["typed"], prompts["generated"], prompts["constrained"]
    return [
        f"Instructions: the typed prompts ({ty['version']}) ask for one option letter; the generated prompt "
        f"({ge['version']}) asks for a JSON array of \"yes\"/\"no\". Both use the model's {ge['template']} template "
        "with the system message first and the state first in the user message.",
        f"Typed: {n} prompts, one criterion each, offered as options A. Yes / B. No; they share a "
        f"{ty['prefix_tokens']}-token prefix (system + state) and differ in a {min(ty['suffix_tokens'])}–"
        f"{max(ty['suffix_tokens'])}-token suffix. Generated (free and constrained alike): one "
        f"{ge['input_tokens']}-token prompt with all {n} criteria numbered.",
        "Typed reads each answer from the letter slots' logits at one position (no token is emitted); the "
        "generated lanes decode greedily, so their answer to criterion k is conditioned on their own answers to "
        "criteria 1..k-1 and on the criteria after k, which the typed prompts never see.",
        f"Free: the model writes what it wants, up to {ge['max_new_tokens']} tokens; its output is accepted only "
        "if it is a valid JSON array of exactly the right length (never repaired). Constrained: the same prompt "
        f"and the same greedy decoding, but at every step only tokens the grammar allows may be chosen "
        f"({co['rule']}; enforced by {co['engine']}), so its output is valid by construction; where the model's "
        "own first choice was refused, the token records it.",
    ]


def _notes(trace_doc: dict[str, Any], exact_note: str) -> list[str]:
    s, model = trace_doc["summary"], trace_doc["model"]
    notes = [exact_note, "Token account: " + s["token_account"]["line"]]
    if model.get("device") == "cpu":
        notes.append(
            "Measured on a CPU, where prefill is compute-bound: every lane pays for reading the shared state, so "
            "the ratio depends on how many prefill tokens one decode step is worth here (above). On a GPU, prefill "
            "tokens are processed in parallel and cost little next to sequential decode steps, so the same token "
            "counts give a larger ratio. Either way the typed lane yields one decision per criterion, with "
            "probabilities, each available when its pass ends.")
    n = len(trace_doc["inputs"]["criteria"])
    for lane in ("free", "constrained"):
        ls = s[lane]
        if ls["capped_runs"]:
            limit = trace_doc["prompts"]["generated" if lane == "free" else "constrained"]["max_new_tokens"]
            tail = (f"; the token that starts value {n} (the last criterion's) came at "
                    f"{ls['all_answers_median_s']:.2f} s (median), "
                    "so a run that closed the array and stopped there would have taken about that long"
                    if ls["all_answers_median_s"] is not None else f"; it never reached value {n}")
            notes.append(
                f"In {ls['capped_runs']} of {s['runs']} measured {lane} runs the model did not end its turn and was "
                f"stopped at the {limit}-token limit: those runs' time is set by the limit{tail}. They are "
                "recorded as failures, not repaired.")
        if not ls["outputs_identical"]:
            notes.append(f"The {lane} outputs differ between repeats although decoding is greedy: the kernel's "
                         "numerics are not bit-reproducible run to run.")
    co = s["constrained"]
    if co["masked_tokens_median"]:
        notes.append(f"The grammar overruled the model's own first choice on {co['masked_tokens_median']:g} token(s) "
                     "per constrained run (median); each such token records what the model wanted (free_argmax).")
    cal = trace_doc.get("calibration")
    if cal:
        notes.append(f"Typed decisions also carry calibrated probabilities ({cal['method']}, from "
                     f"{cal['file'] or 'an in-run fit'}, {cal['rows_used']} rows); the raw probabilities and "
                     "choices are unchanged, and agreement between lanes compares raw choices.")
    return notes


def _calibrate(backend: Backend, items: list[Item], cfg: VersusConfig) -> tuple[ExactPolicy | None, dict[str, Any]]:
    """Set the exact policy's bound once, before the runs (a property of the configuration, not of a run)."""
    if not cfg.exact:
        return None, {"enabled": False}
    report = cfg.drift_report
    fallback = None
    if report is None:
        auto = default_report_path(backend, "shared")
        if auto.is_file():
            report = auto
    policy = ExactPolicy(safety=cfg.exact_safety, probe_rows=cfg.exact_probe, report=report)
    try:
        policy.calibrate(backend, items, "shared", cfg.max_batch_tokens)
    except InputError as exc:
        if cfg.drift_report is not None:
            raise  # a report the user named must match; only the discovered default may be passed over
        fallback = f"{report} not used: {exc}"
        policy = ExactPolicy(safety=cfg.exact_safety, probe_rows=cfg.exact_probe)
        policy.calibrate(backend, items, "shared", cfg.max_batch_tokens)
    block = {"enabled": True, **policy.block}
    if fallback:
        block["report_skipped"] = fallback
    return policy, block


def _check_direct(backend: Backend, decisions: list[Decision], typed_run: dict[str, Any]) -> dict[str, Any]:
    items = prepare(backend, decisions, with_prefix=False)
    recs = list(score_items(backend, items, "direct", {"config_sha256": "versus-check"}))
    mism, max_dp = [], 0.0
    for rec, d in zip(recs, typed_run["decisions"], strict=True):
        max_dp = max(max_dp, *(abs(a - b) for a, b in zip(rec["probabilities"], d["probabilities"], strict=True)))
        if rec["choice"] != d["choice"]:
            mism.append(d["criterion_id"])
    return {"mode": "direct", "choices_equal": not mism, "max_abs_dp": max_dp, "mismatched": mism}


RunFn = Callable[[dict[str, Any]], None]
StartFn = Callable[[str, int, bool], None]
"""Told ``(path, repeat, warmup)`` as each run starts (``typed``, ``free``, ``constrained``)."""


def run_versus(backend: Backend, inp: VersusInput, cfg: VersusConfig, source: str = "",
               on_run: RunFn | None = None, calibration: Calibrator | None = None,
               on_start: StartFn | None = None) -> dict[str, Any]:
    """Run the whole protocol and return the finalized ``semif-trace-v2`` trace (not yet written).

    ``on_start`` is told each run as it starts, ``on_run`` gets each run's record as it ends (progress: a
    generated run can take minutes, and nothing else is said meanwhile)."""
    if cfg.repeats < 1 or cfg.warmup < 0:
        raise ValidationError(f"--repeats must be ≥ 1 and --warmup ≥ 0 (got {cfg.repeats}, {cfg.warmup})")
    n = len(inp.criteria)
    max_new = cfg.max_new_tokens or default_max_new_tokens(n)
    info = backend.model_info()
    decisions = decisions_for(inp, source)
    if calibration is not None:  # every decision's calibration is looked up before anything is scored
        calibration.check(decisions, info)
    # Rendered once up front (untimed) for the prompts block; every run renders again inside its clock.
    base_items = prepare(backend, decisions, with_prefix=True)
    grammar = ArrayGrammar(tuple(YES_NO_IDS for _ in inp.criteria))
    compiled = backend.grammar(grammar.gbnf())  # compiled once, untimed (a server caches compiled grammars)
    prompts = _prompts_block(backend, inp, base_items, max_new, grammar, compiled)
    max_con = prompts["constrained"]["max_new_tokens"]
    want_gen = prompts["generated"]["prompt_sha256"]
    # A fixed-size state (llama.cpp's KV cache) is sized once, outside every run's clock.
    backend.plan_memory(memory_need(base_items, "shared", cfg.max_batch_tokens))
    if len(render_array(backend.tokenizer, inp)[1]) + max_con > backend.n_ctx:
        raise ValidationError(f"the generated prompt plus the constrained lane's {max_con} new tokens exceed the "
                              f"model's context ({backend.n_ctx}); SemIf never truncates")
    policy, exact_block = _calibrate(backend, base_items, cfg)
    runs: list[dict[str, Any]] = []
    created_utc = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    load_before = load_average()
    clock0 = time.perf_counter()
    schedule = [(True, i) for i in range(cfg.warmup)] + [(False, i) for i in range(cfg.repeats)]
    for warm, rep in schedule:
        if on_start:
            on_start("typed", rep, warm)
        typed, items = run_typed(backend, decisions, rep, warm, clock0, cfg.max_batch_tokens, cfg.top_k, info,
                                 policy, calibration)
        if [it.prompt.sha256 for it in items] != prompts["typed"]["prompt_sha256"]:
            raise ValidationError("the typed prompts rendered differently between runs")
        runs.append(typed)
        if on_run:
            on_run(typed)
        choices = [d["choice"] for d in typed["decisions"]]
        for lane_grammar, limit in ((None, max_new), (compiled, max_con)):
            if on_start:
                on_start("free" if lane_grammar is None else "constrained", rep, warm)
            gen = run_generated(backend, inp, rep, warm, clock0, limit, cfg.top_k, want_gen, lane_grammar)
            gen["agreement"] = trace.agreement(gen["parsed"], gen["complete"], choices)
            runs.append(gen)
            if on_run:
                on_run(gen)
    wall = time.perf_counter() - clock0
    first_measured = next(r for r in runs if r["path"] == "typed" and not r["warmup"])
    check = _check_direct(backend, decisions, first_measured) if cfg.check_direct else None

    mach = {**machine_facts(), "load_average_before": load_before, "load_average_after": load_average()}
    if info.get("device") == "cpu":
        mach["gpu"] = None  # a GPU in the box that the run did not use must not be credited with the numbers
    n_esc = sum(r["escalated"] for r in runs if r["path"] == "typed" and not r["warmup"])
    if policy is not None:
        how = (f"a drift report ({exact_block['drift_report']})" if exact_block["source"] == "drift-report"
               else f"a probe of {exact_block['probe_rows']} criteria scored both ways before the runs, untimed")
        exact_txt = (f"with the exact policy: a decision whose margin is under {exact_block['bound']:.3g} "
                     f"(safety {exact_block['safety']:g} x 2 x max |dp| {exact_block['max_abs_dp']:.3g}, from {how}) "
                     f"is re-scored by a fresh pass inside the typed clock; {n_esc} decision(s) of the measured runs "
                     "were re-scored")
    else:
        exact_txt = "without the exact policy (--no-exact)"
    exact_note = ("Typed mode: shared (the state's prefix is prefilled once and the criteria's suffixes are packed "
                  f"into block-masked passes), {exact_txt}. "
                  + ("The typed choices of measured repeat 0 were also checked against direct mode (one fresh "
                     "forward per criterion, untimed), see checks.typed_vs_direct."
                     if check else "No direct-mode check was run (--no-check-direct)."))
    doc: dict[str, Any] = {
        "format": trace.TRACE_FORMAT_V2,
        "experiment": {"id": trace.experiment_id(inp.id, info.get("key"), info.get("backend"), info.get("device"),
                                                 created_utc),
                       "kind": "versus", "created_utc": created_utc,
                       "title": f"Typed vs free vs constrained generation: {n} yes/no criteria about {inp.id} "
                                f"on {info.get('key')}",
                       "command": cfg.command, "wall_s": _r(wall)},
        "machine": mach,
        "versions": {**library_versions(), **{k: str(v) for k, v in (info.get("versions") or {}).items()}},
        "model": info,
        "inputs": {**inp.as_json(), "sha256": ""},
        "prompts": prompts,
        "calibration": None if calibration is None else {
            **calibration.provenance(),
            "calibrated_decisions": sum(1 for d in first_measured["decisions"] if d["calibrated"] is not None)},
        "differences": _differences(prompts, n),
        "notes": [],
        "protocol": {"warmup": cfg.warmup, "repeats": cfg.repeats,
                     "order": "alternating: typed, free, constrained per repeat, warm-ups first",
                     "lanes": ["typed", "free", "constrained"],
                     "typed_mode": "shared", "exact": exact_block,
                     "decoding": "greedy (argmax), KV cache, thinking disabled, stop at end-of-turn",
                     "grammar_masking": ("constrained: every step picks the argmax over the tokens the grammar "
                                         "allows; masked marks a step where the model's own argmax was refused"),
                     "max_new_tokens": max_new, "constrained_max_new_tokens": max_con, "top_k": cfg.top_k,
                     "max_batch_tokens": cfg.max_batch_tokens},
        "checks": {"typed_vs_direct": check},
        "runs": runs,
        "summary": {},
        "checksums": {},
    }
    doc["summary"] = trace.compute_summary(doc)
    doc["notes"] = _notes(doc, exact_note)
    return trace.finalize(doc)
