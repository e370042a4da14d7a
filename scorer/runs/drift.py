"""Drift of the fast paths against fresh scoring, and the ``--exact`` escalation policy.

``semif drift`` scores the same rows fresh (direct mode) and in a fast mode (serial, shared) and
reports how far the probabilities moved: max and mean |Δp|, argmax flips listed by id, and ties
reported apart from flips (a tie has no argmax, so it is neither a flip nor a match).

Exactness: when the fast path's numbers differ from the fresh path's by at most δ per probability,
the gap between any two options moves by at most 2δ. A fast choice can therefore only differ from
the fresh choice when its margin (top minus second probability) is at most 2δ. ``--exact`` re-scores
on the fresh path every decision whose fast margin is below ``bound = safety × 2 × max(δ, ε)``, where
δ is the *measured* max |Δp| (from a drift report of this very configuration, or from a probe of the
first rows of the run itself), ε is the machine epsilon of the logits' dtype (a probe that saw no
drift proves no zero), and ``safety`` (> 1) covers rows whose drift exceeds what the measurement saw.
Escalated records carry the fresh numbers, ``escalated: true`` and their fast-path numbers under
``fast_path``; every record of an ``--exact`` run carries the bound and where it came from under
``exact``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scorer import readout
from scorer.backends.base import Backend
from scorer.errors import InputError, ValidationError
from scorer.io import FORCE_HINT, check_writable
from scorer.prompt import PROMPT_VERSION
from scorer.runs.score import DEFAULT_MAX_BATCH_TOKENS, MODES, Item, make_record, prepare, score_items
from scorer.schema import Decision

DRIFT_FORMAT = "semif-drift-v2"
"""Format of a drift report (v1, still read: ``schema``/``created_unix``, ``timing.load_average`` a list)."""
_DRIFT_FORMATS = ("semif-drift-v1", DRIFT_FORMAT)
FAST_MODES = ("serial", "shared")
DEFAULT_SAFETY = 4.0
DEFAULT_PROBE_ROWS = 4
RESULTS_DIR = Path("data/results")
ESCALATION_RULE = "escalate when tie or margin < bound; bound = safety * 2 * max(max_abs_dp, dtype_epsilon)"
# Readout fields an escalation replaces; the fast path's values are kept under ``fast_path``.
_FAST_KEYS = ("kernel", "probabilities", "option_logits", "choice", "margin", "tie", "tied_option_ids",
              "allowed_token_mass", "full_vocab_argmax", "timing")
# Identity fields of a model block that decide its numerics.
_MODEL_KEYS = ("key", "source", "gguf_sha256", "revision", "local_sha256", "dtype", "device", "backend", "threads")
_SIMD = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_bf16",
         "amx_int8", "asimd", "sve")


# --- comparison --------------------------------------------------------------------------------------------------
def _row_delta(fast: dict[str, Any], fresh: dict[str, Any]) -> tuple[float, float]:
    pf, pr = np.asarray(fast["probabilities"]), np.asarray(fresh["probabilities"])
    lf, lr = np.asarray(fast["option_logits"]), np.asarray(fresh["option_logits"])
    return float(np.max(np.abs(pf - pr))), float(np.max(np.abs(lf - lr)))


def compare(fresh: list[dict[str, Any]], fast: list[dict[str, Any]], worst: int = 10) -> dict[str, Any]:
    """Drift of ``fast`` records against ``fresh`` records of the same rows (aligned by id, in order).

    Per row |Δp| is the largest change of any option's probability. ``flips`` lists rows where both
    paths have a choice and the choices differ; ``ties`` lists rows where either path reports a tie
    (whether or not the other does), so a tie is never counted as a flip.
    """
    if [r["id"] for r in fresh] != [r["id"] for r in fast]:
        raise ValidationError("drift: the fresh and fast records are not the same rows in the same order")
    if not fresh:
        raise ValidationError("drift: no records to compare")
    dps: list[float] = []
    dls: list[float] = []
    flips: list[dict[str, Any]] = []
    ties: list[dict[str, Any]] = []
    for f, r in zip(fast, fresh, strict=True):
        dp, dl = _row_delta(f, r)
        dps.append(dp)
        dls.append(dl)
        if f["tie"] or r["tie"]:
            ties.append({"id": r["id"], "fresh_tie": r["tie"], "fast_tie": f["tie"], "fresh_choice": r["choice"],
                         "fast_choice": f["choice"], "fresh_tied_option_ids": r["tied_option_ids"],
                         "fast_tied_option_ids": f["tied_option_ids"]})
        elif f["choice"] != r["choice"]:
            flips.append({"id": r["id"], "fresh_choice": r["choice"], "fast_choice": f["choice"],
                          "fresh_margin": r["margin"], "fast_margin": f["margin"], "abs_dp": dp})
    order = np.argsort(-np.asarray(dps), kind="stable")[:worst]
    margins = [float(r["margin"]) for r in fresh]
    return {
        "rows": len(fresh),
        "max_abs_dp": max(dps),
        "mean_abs_dp": float(np.mean(dps)),
        "median_abs_dp": float(np.median(dps)),
        "max_abs_dlogit": max(dls),
        "flips": flips,
        "ties": ties,
        "min_fresh_margin": min(margins),
        "worst_rows": [{"id": fresh[i]["id"], "abs_dp": dps[i], "abs_dlogit": dls[i],
                        "fresh_margin": fresh[i]["margin"]} for i in order],
    }


def fast_tokens(records: list[dict[str, Any]]) -> int:
    """Tokens a run's records ran through the model: every suffix, plus each prefix when it was prefilled
    (a cache miss); a direct record's whole prompt."""
    n = 0
    for r in records:
        if r["prefix_tokens"] is None:
            n += int(r["input_tokens"])
        else:
            n += int(r["suffix_tokens"]) + (0 if r["cache_hit"] else int(r["prefix_tokens"]))
    return n


def dtype_epsilon(dtype: str) -> float:
    """Machine epsilon of the logits' dtype: the smallest drift a measurement may claim."""
    return readout.resolution(1.0, dtype)


def exact_bound(max_abs_dp: float, dtype: str, safety: float) -> float:
    """Margin below which a fast-path decision could differ from the fresh one (see the module doc)."""
    if not safety >= 1.0:
        raise ValidationError(f"--exact-safety {safety} (expected a number >= 1: the bound must cover the drift "
                              "that was measured)")
    return safety * 2.0 * max(max_abs_dp, dtype_epsilon(dtype))


# --- identity: which drift measurement may stand in for which run ---------------------------------------------
def simd_flags() -> list[str]:
    """SIMD features of the CPU (they choose the math kernels, hence the numerics)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [s for s in _SIMD if s in have]
    except OSError:
        pass
    return []


def numerics_identity(backend: Backend, mode: str, max_batch_tokens: int) -> dict[str, Any]:
    """Everything that decides the fast path's numbers: weights, dtype, device, threads, libraries,
    CPU, mode, kernel and (shared mode) the packing budget."""
    from scorer.machine import cpu_model

    info = backend.model_info()
    versions = info.get("versions") or {}
    return {
        "model": {k: info.get(k) for k in _MODEL_KEYS},
        "libraries": {k: versions.get(k) for k in sorted(versions) if k not in ("semif", "python")},
        "cpu": cpu_model(),
        "simd": simd_flags(),
        "mode": mode,
        "kernel": _mode_kernel(backend, mode),
        "max_batch_tokens": max_batch_tokens if mode == "shared" else None,
        "prompt_version": PROMPT_VERSION,
    }


def _mode_kernel(backend: Backend, mode: str) -> str:
    if mode == "shared":
        return backend.kernel
    return f"{backend.name}.{'fresh' if mode == 'direct' else 'prefix-reuse'}"


def identity_mismatch(have: dict[str, Any], want: dict[str, Any], prefix: str = "") -> str | None:
    """The first field where two identities differ, as ``path: report value != run value``; None if equal."""
    for k in [*want, *(k for k in have if k not in want)]:  # the run's order: the most telling field first
        a, b = have.get(k), want.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            sub = identity_mismatch(a, b, f"{prefix}{k}.")
            if sub:
                return sub
        elif a != b:
            return f"{prefix}{k}: report {a!r} != this run {b!r}"
    return None


# --- drift reports -----------------------------------------------------------------------------------------------
def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name if "/" in name else name)


def default_report_path(backend: Backend, mode: str, results_dir: Path = RESULTS_DIR) -> Path:
    info = backend.model_info()
    return results_dir / f"drift-{safe_name(str(info.get('key')))}-{backend.name}-{mode}.json"


def parse_rows(spec: str | None, n: int, path: str) -> tuple[int, int]:
    """``START:END`` (0-based, END exclusive, either side may be empty) → a checked slice of ``n`` rows."""
    if not spec:
        return 0, n
    m = re.fullmatch(r"(\d*):(\d*)", spec.strip())
    if not m:
        raise InputError(path, None, "--rows", f"{spec!r}", "START:END, 0-based, END exclusive (e.g. 735:777)")
    a = int(m.group(1)) if m.group(1) else 0
    b = int(m.group(2)) if m.group(2) else n
    if not 0 <= a < b <= n:
        raise InputError(path, None, "--rows", f"{spec!r} is not a non-empty slice of the {n} rows",
                         f"0 <= START < END <= {n}")
    return a, b


@dataclass
class ModeRun:
    """Records and wall time of one scoring pass."""

    records: list[dict[str, Any]]
    """Records in input order."""
    wall_s: float
    """Seconds for prepare + scoring."""


def run_mode(backend: Backend, decisions: list[Decision], mode: str, max_batch_tokens: int,
             on_record: Any = None) -> ModeRun:
    """Prepare and score ``decisions`` in ``mode`` in memory (no output file)."""
    t0 = time.perf_counter()
    items = prepare(backend, decisions, with_prefix=mode != "direct")
    recs = []
    for rec in score_items(backend, items, mode, {"config_sha256": "in-memory"}, 0, max_batch_tokens):
        recs.append(rec)
        if on_record:
            on_record(rec)
    return ModeRun(recs, time.perf_counter() - t0)


def measure(backend: Backend, decisions: list[Decision], modes: list[str], max_batch_tokens: int,
            safety: float, source: dict[str, Any], on_record: Any = None) -> dict[str, dict[str, Any]]:
    """Score ``decisions`` fresh once and in each of ``modes``; one drift report per mode."""
    from scorer.envelope import carried_inputs, make_report
    from scorer.machine import load_average, load_span

    load0 = load_average()
    fresh = run_mode(backend, decisions, "direct", max_batch_tokens, on_record)
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        fast = run_mode(backend, decisions, mode, max_batch_tokens, on_record)
        summary = compare(fresh.records, fast.records)
        body = {
            "identity": numerics_identity(backend, mode, max_batch_tokens),
            "model": backend.model_info(),
            "input": {**source, "rows": len(decisions), "ids": [d.id for d in decisions]},
            "summary": summary,
            "bound": {"safety": safety, "dtype_epsilon": dtype_epsilon(backend.logits_dtype),
                      "bound": exact_bound(summary["max_abs_dp"], backend.logits_dtype, safety),
                      "rule": ESCALATION_RULE},
            "timing": {"fresh_wall_s": round(fresh.wall_s, 4), "fast_wall_s": round(fast.wall_s, 4),
                       "load_average": load_span(load0),
                       "note": "wall times only: the drift numbers do not depend on timing (see semif bench)"},
        }
        out[mode] = make_report("drift", DRIFT_FORMAT, carried_inputs(body), body)
    return out


def load_report(path: Path) -> tuple[dict[str, Any], str]:
    """A drift report and the sha256 of its bytes, with file/field errors."""
    name = str(path)
    if not path.is_file():
        raise InputError(name, None, None, "file not found", "a drift report written by `semif drift`")
    data = path.read_bytes()
    try:
        rep = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(name, None, None, f"invalid JSON ({exc})", "a drift report") from None
    # Drift reports are inputs too: a v1 report kept from an older semif still reads.
    fmt = (rep.get("format") or rep.get("schema")) if isinstance(rep, dict) else None
    if fmt not in _DRIFT_FORMATS or (fmt == DRIFT_FORMAT and rep.get("kind") != "drift"):
        raise InputError(name, None, "format", "not a drift report", f'"kind": "drift", "format": "{DRIFT_FORMAT}"')
    for key in ("identity", "summary", "input"):
        if not isinstance(rep.get(key), dict):
            raise InputError(name, None, key, "missing", f"a {DRIFT_FORMAT} report written by `semif drift`")
    return rep, hashlib.sha256(data).hexdigest()


# --- the --exact policy ------------------------------------------------------------------------------------------
@dataclass
class ExactPolicy:
    """Re-score on the fresh path every fast-path decision whose margin is below a measured bound."""

    safety: float = DEFAULT_SAFETY
    """Multiplier (>= 1) on 2 × the measured max |Δp|."""
    probe_rows: int = DEFAULT_PROBE_ROWS
    """Without a drift report: how many leading rows to score both ways to measure δ."""
    report: Path | None = None
    """A drift report of this very configuration (identity checked); replaces the probe."""
    bound: float | None = None
    """The escalation bound, set by :meth:`calibrate`."""
    block: dict[str, Any] = field(default_factory=dict)
    """What every record of the run carries under ``exact``."""
    probe_s: float = 0.0
    """Seconds the probe took (0 with a drift report)."""
    probe_tokens: int = 0
    """Tokens the probe ran through the model: its rows fresh, plus their fast path (each prefix once)."""
    escalated: int = 0
    """Decisions re-scored so far."""
    escalate_s: float = 0.0
    """Seconds spent re-scoring them."""
    _fresh: dict[int, np.ndarray] = field(default_factory=dict)
    """Fresh logits of probed rows, by item index (reused if such a row escalates)."""
    _report_sha: str | None = None

    def config(self) -> dict[str, Any]:
        """What must match for ``--resume`` (goes into the run's config hash)."""
        if self.report is not None:
            _, sha = load_report(self.report)
            return {"safety": self.safety, "drift_report_sha256": sha}
        return {"safety": self.safety, "probe_rows": self.probe_rows}

    def calibrate(self, backend: Backend, items: list[Item], mode: str, max_batch_tokens: int) -> None:
        """Set the bound: from the drift report (refused unless it was measured under this very
        configuration) or by scoring the first ``probe_rows`` rows both ways."""
        if mode not in FAST_MODES:
            raise ValidationError(f"--exact applies to the fast modes ({', '.join(FAST_MODES)}); mode {mode!r} "
                                  "already is the fresh path")
        dtype = backend.logits_dtype
        if self.report is not None:
            rep, sha = load_report(self.report)
            want = numerics_identity(backend, mode, max_batch_tokens)
            bad = identity_mismatch(rep["identity"], want)
            if bad:
                raise InputError(str(self.report), None, f"identity.{bad.split(':', 1)[0]}",
                                 f"measured under another configuration ({bad})",
                                 "a drift report of this model, backend, dtype, threads, libraries, CPU, mode and "
                                 "batch budget (run `semif drift` with the same options)")
            delta = float(rep["summary"]["max_abs_dp"])
            self._report_sha = sha
            self.block = {"source": "drift-report", "drift_report": str(self.report), "drift_report_sha256": sha,
                          "measured_rows": int(rep["summary"]["rows"])}
        else:
            if self.probe_rows < 1:
                raise ValidationError(f"--exact-probe {self.probe_rows} (expected >= 1 row, or pass --drift-report)")
            t0 = time.perf_counter()
            probe = items[: min(self.probe_rows, len(items))]
            # The probe's records are scored like the run's own (the same group prefixes, same kernel), in
            # memory; its fresh logits are kept so an escalated probe row costs nothing more.
            fast = list(score_items(backend, probe, mode, {"config_sha256": "probe"}, 0, max_batch_tokens))
            info = backend.model_info()
            fresh = []
            for it in probe:
                self._fresh[it.index] = backend.score_fresh(it.prompt.ids)
                fresh.append(make_record(it, self._fresh[it.index], backend, info, "direct",
                                         {"encode_s": 0.0, "forward_s": 0.0, "total_s": 0.0}, None,
                                         {"config_sha256": "probe"}))
            delta = compare(fresh, fast)["max_abs_dp"]
            self.probe_tokens = sum(len(it.prompt.ids) for it in probe) + fast_tokens(fast)
            self.probe_s = time.perf_counter() - t0
            self.block = {"source": "probe", "probe_rows": len(probe), "probe_s": round(self.probe_s, 6)}
        self.bound = exact_bound(delta, dtype, self.safety)
        self.block = {"bound": self.bound, "max_abs_dp": delta, "safety": self.safety,
                      "dtype_epsilon": dtype_epsilon(dtype), "rule": ESCALATION_RULE, **self.block}

    def escalates(self, rec: dict[str, Any]) -> bool:
        if self.bound is None:
            raise ValidationError("ExactPolicy.calibrate must run before escalation")
        return bool(rec["tie"]) or float(rec["margin"]) < self.bound

    def apply(self, backend: Backend, items: list[Item], mode: str,
              records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Pass records through, re-scoring fresh those under the bound (order and fields kept)."""
        info = backend.model_info()
        for rec in records:
            if not self.escalates(rec):
                yield {**rec, "exact": self.block}
                continue
            idx = int(rec["run"]["index"])
            it = items[idx]
            t0 = time.perf_counter()
            logits = self._fresh.get(idx)
            from_probe = logits is not None
            if logits is None:
                logits = backend.score_fresh(it.prompt.ids)
            dt = time.perf_counter() - t0
            t = dict(rec["timing"])
            timing = {**t, "escalate_s": dt, "forward_s": t["forward_s"] + dt, "total_s": t["total_s"] + dt}
            cache = {k: rec[k] for k in ("prefix_tokens", "suffix_tokens", "cache_hit", "prefix_sha256")}
            run = {k: v for k, v in rec["run"].items() if k != "index"}
            new = make_record(it, logits, backend, info, mode, timing, cache, run)
            new.update(escalated=True, kernel=_mode_kernel(backend, "direct"),
                       fast_path={k: rec[k] for k in _FAST_KEYS},
                       exact={**self.block, "fresh_from": "probe" if from_probe else "rescore"})
            self.escalated += 1
            self.escalate_s += dt
            yield new


# --- command line ------------------------------------------------------------------------------------------------
def _cmd_drift(args: argparse.Namespace) -> int:
    from scorer import cli
    from scorer.cli import backend_config, file_sha256
    from scorer.envelope import write_report
    from scorer.progress import bar
    from scorer.schema import load_decisions

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise InputError("--modes", None, None, f"unknown mode {m!r}", f"a comma list of {', '.join(MODES)}")
    inp = Path(args.input)
    rows = load_decisions(inp)
    a, b = parse_rows(args.rows, len(rows), str(inp))
    rows = rows[a:b]
    backend = cli.load_backend(backend_config(args))
    outs = {m: Path(args.output) if args.output and len(modes) == 1 else
            default_report_path(backend, m, Path(args.results_dir)) for m in modes}
    if args.output and len(modes) > 1:
        raise InputError("--output", None, None, "one path for several modes", "--results-dir with several modes")
    for p in outs.values():
        check_writable(p, args.force, FORCE_HINT)
    source = {"path": str(inp), "sha256": file_sha256(inp), "slice": [a, b]}
    pb = bar(len(rows) * (1 + len(modes)), "drift")
    try:
        reps = measure(backend, rows, modes, args.max_batch_tokens, args.exact_safety, source,
                       on_record=lambda _r: pb.update(1))
    finally:
        pb.close()
    for m, rep in reps.items():
        write_report(outs[m], rep, args.force)
        s = rep["summary"]
        print(f"{m:>7}: {s['rows']} rows · max |Δp| {s['max_abs_dp']:.3g} · mean |Δp| {s['mean_abs_dp']:.3g} · "
              f"flips {len(s['flips'])} · ties {len(s['ties'])} · exact bound {rep['bound']['bound']:.3g} · "
              f"fresh {rep['timing']['fresh_wall_s']:.1f} s, {m} {rep['timing']['fast_wall_s']:.1f} s")
        print(f"[semif] wrote {outs[m]}", file=sys.stderr)
    return 0


def add_exact_args(p: argparse.ArgumentParser) -> None:
    """The ``--exact`` options (``semif score``, ``semif bench``)."""
    g = p.add_argument_group("exactness")
    g.add_argument("--exact", action="store_true",
                   help="re-score on the fresh path every fast-path decision whose margin is below a bound derived "
                        "from measured drift, so the choices equal fresh scoring's")
    add_exact_tuning_args(g, drift_help="--exact: take the drift from this `semif drift` report of the same "
                                        "configuration (else a probe of the first rows measures it)",
                          probe_help="--exact without --drift-report: rows scored both ways to measure drift")


def add_exact_tuning_args(g: Any, drift_help: str, probe_help: str) -> None:
    """Where the exact policy's bound comes from: ``--drift-report``, ``--exact-safety``, ``--exact-probe``
    (shared by ``semif score``/``bench``, where the policy is opt-in, and ``semif versus``, where it is on)."""
    g.add_argument("--drift-report", help=drift_help)
    g.add_argument("--exact-safety", type=float, default=DEFAULT_SAFETY,
                   help=f"bound = SAFETY x 2 x max|dp| (default {DEFAULT_SAFETY:g})")
    g.add_argument("--exact-probe", type=int, default=DEFAULT_PROBE_ROWS, metavar="N",
                   help=f"{probe_help} (default {DEFAULT_PROBE_ROWS})")


def policy_from_args(args: argparse.Namespace) -> ExactPolicy | None:
    if not getattr(args, "exact", False):
        if getattr(args, "drift_report", None):
            raise InputError("--drift-report", None, None, "given without --exact", "--exact --drift-report PATH")
        return None
    return ExactPolicy(safety=args.exact_safety, probe_rows=args.exact_probe,
                       report=Path(args.drift_report) if args.drift_report else None)


def register(sub: Any) -> None:
    from scorer.cli import _add_model_args, positive_int

    p = sub.add_parser("drift", help="measure how far a fast mode's probabilities drift from fresh scoring")
    p.add_argument("--input", required=True, help="decisions (JSONL)")
    p.add_argument("--rows", help="START:END slice of the input (0-based, END exclusive)")
    p.add_argument("--modes", default="serial,shared", help="comma list of modes to compare against direct")
    p.add_argument("--max-batch-tokens", type=positive_int, default=DEFAULT_MAX_BATCH_TOKENS)
    p.add_argument("--exact-safety", type=float, default=DEFAULT_SAFETY, help="safety factor of the bound")
    p.add_argument("--results-dir", default=str(RESULTS_DIR),
                   help="where drift-<model>-<backend>-<mode>.json go (default data/results)")
    p.add_argument("--output", help="report path (one mode only)")
    p.add_argument("--force", action="store_true", help="overwrite existing reports")
    _add_model_args(p)
    p.set_defaults(func=_cmd_drift)

