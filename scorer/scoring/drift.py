"""Drift of the fast paths against fresh scoring, and the bound it sets for the ``--exact`` policy.

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
``exact``. The policy itself is :class:`scorer.scoring.exact.ExactPolicy`; this module measures the drift
(``semif drift`` reports) and computes the bound.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scorer.backends.base import Backend
from scorer.core.errors import InputError, ValidationError
from scorer.core.hashing import sha256_hex
from scorer.core.io import FORCE_HINT, check_writable
from scorer.core.machine import cpu_flags, cpu_model, load_average, load_span
from scorer.decision import readout
from scorer.formats.envelope import carried_inputs, make_report, write_report
from scorer.formats.rows import Decision
from scorer.prompting.prompt import PROMPT_VERSION
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS, kernel_name, prepare, score_items

DRIFT_FORMAT = "semif-drift-v2"
"""Format of a drift report (v1, still read: ``schema``/``created_unix``, ``timing.load_average`` a list)."""
_DRIFT_FORMATS = ("semif-drift-v1", DRIFT_FORMAT)
FAST_MODES = ("serial", "shared")
DEFAULT_SAFETY = 4.0
DEFAULT_PROBE_ROWS = 4
RESULTS_DIR = Path("data/results")
ESCALATION_RULE = "escalate when tie or margin < bound; bound = safety * 2 * max(max_abs_dp, dtype_epsilon)"
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
    """Tokens a run's records ran through the model: every suffix, plus the prefix tokens each prefilled (the
    radix cache's ``cache.prefilled_tokens``; in records without that block, the whole prefix on a miss); a
    direct record's whole prompt."""
    n = 0
    for r in records:
        if r["prefix_tokens"] is None:
            n += int(r["input_tokens"])
        elif isinstance(r.get("cache"), dict):
            n += int(r["suffix_tokens"]) + int(r["cache"]["prefilled_tokens"])
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
_LLAMA_KEYS = ("weight_repack", "kv_unified", "min_piece", "flash_attn", "type_k", "type_v")


def simd_flags() -> list[str]:
    """SIMD features of the CPU (they choose the math kernels, hence the numerics)."""
    have = cpu_flags() or set()
    return [s for s in _SIMD if s in have]


def numerics_identity(backend: Backend, mode: str, max_batch_tokens: int) -> dict[str, Any]:
    """Everything that decides the fast path's numbers: weights, dtype, device, threads, libraries,
    CPU, mode, kernel and (shared mode) the packing budget."""
    info = backend.model_info()
    versions = info.get("versions") or {}
    return {
        "model": {k: info.get(k) for k in _MODEL_KEYS},
        "libraries": {k: versions.get(k) for k in sorted(versions) if k not in ("semif", "python")},
        "cpu": cpu_model(),
        "simd": simd_flags(),
        "mode": mode,
        "kernel": kernel_name(backend, mode),
        "max_batch_tokens": max_batch_tokens if mode == "shared" else None,
        "prompt_version": PROMPT_VERSION,
        # llama.cpp's settings that shape its batches (the canonical rules of scorer.backends.llamacpp_backend)
        **({"llama": {k: info["llama"].get(k) for k in _LLAMA_KEYS}} if isinstance(info.get("llama"), dict) else {}),
    }


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
    return rep, sha256_hex(data)


@dataclass(frozen=True)
class DriftConfig:
    """Where ``semif drift`` writes its reports and how it scores."""

    modes: tuple[str, ...] = FAST_MODES
    """The fast modes compared against direct (fresh) scoring."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per packed pass."""
    safety: float = DEFAULT_SAFETY
    """Safety factor of the exact bound each report states."""
    results_dir: Path = RESULTS_DIR
    """Where ``drift-<model>-<backend>-<mode>.json`` go."""
    output: Path | None = None
    """One report path instead (one mode only)."""
    force: bool = False
    """Overwrite existing reports."""


def report_paths(backend: Backend, cfg: DriftConfig) -> dict[str, Path]:
    """Where each mode's report goes; every path is checked writable before anything is measured."""
    outs = {m: cfg.output if cfg.output and len(cfg.modes) == 1 else
            default_report_path(backend, m, cfg.results_dir) for m in cfg.modes}
    if cfg.output and len(cfg.modes) > 1:
        raise InputError("--output", None, None, "one path for several modes", "--results-dir with several modes")
    for p in outs.values():
        check_writable(p, cfg.force, FORCE_HINT)
    return outs


def write_reports(reps: dict[str, dict[str, Any]], outs: dict[str, Path], force: bool) -> None:
    """Write each mode's report to its path and print its one-line summary."""
    for m, rep in reps.items():
        write_report(outs[m], rep, force)
        s = rep["summary"]
        print(f"{m:>7}: {s['rows']} rows · max |Δp| {s['max_abs_dp']:.3g} · mean |Δp| {s['mean_abs_dp']:.3g} · "
              f"flips {len(s['flips'])} · ties {len(s['ties'])} · exact bound {rep['bound']['bound']:.3g} · "
              f"fresh {rep['timing']['fresh_wall_s']:.1f} s, {m} {rep['timing']['fast_wall_s']:.1f} s")
        print(f"[semif] wrote {outs[m]}", file=sys.stderr)
