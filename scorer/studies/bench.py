"""``semif bench shape``: throughput of the three modes on a states × criteria workload.

Every mode scores the same rows in memory (no output files). ``direct`` (fresh) is the reference:
it runs once; the fast modes and their ``--exact`` variants run ``--repeats`` times and report the
median wall time. The report (``data/results/shape-<size>-<model>-<backend>.json``) holds per pass
decisions/s, wall time, state latency p50, tokens processed, the analytic bound of the speed-up
(fresh tokens ÷ the mode's tokens) and the measured speed-up as a fraction of it, drift against
fresh (max |Δp|, flips, ties), escalations and their cost under ``--exact``, the per-criterion suffix
lengths, and the machine and library versions.

Timing: every pass includes rendering/encoding (``prepare``) and scoring, as a caller would see it. A
warm-up (one fresh pass and one fan-out, not timed) comes first, so the first mode does not pay for
the allocator and thread-pool start-up.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scorer.backends.base import Backend
from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.core.io import FORCE_HINT, check_writable
from scorer.core.machine import load_average, load_span
from scorer.core.progress import bar
from scorer.formats.envelope import carried_inputs, make_report, write_report
from scorer.formats.rows import Decision
from scorer.prompting.prompt import state_text
from scorer.scoring.drift import (
    DEFAULT_PROBE_ROWS,
    DEFAULT_SAFETY,
    FAST_MODES,
    RESULTS_DIR,
    compare,
    default_report_path,
    fast_tokens,
    identity_mismatch,
    load_report,
    numerics_identity,
    safe_name,
)
from scorer.scoring.exact import ExactPolicy
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS, prepare, score_items

BENCH_FORMAT = "semif-bench-v2"
"""Format of the report (v1: ``schema``/``created_unix``/``load_average.start|end``, no envelope)."""
WORKLOADS = ("shape",)
SIZES = ("small", "full")
DEFAULT_REPEATS = 3
# Targets of issue 3 (qwen2.5-0.5b on a 2-core CPU); the report says whether each was met.
TARGET_FRACTION_OF_BOUND = 0.90
TARGET_EXACT_THROUGHPUT = 0.80

Tick = Callable[[dict[str, Any]], None]


@dataclass
class Pass:
    """One timed pass of one mode over the whole workload."""

    name: str
    """``direct``, ``serial``, ``shared``, ``serial+exact`` or ``shared+exact``."""
    mode: str
    """The scoring mode underneath."""
    records: list[dict[str, Any]]
    """Records in input order."""
    wall_s: float
    """prepare + (probe) + scoring, seconds."""
    prepare_s: float
    """Rendering, encoding and grouping, seconds."""
    cpu_s: float
    """CPU seconds of this process over the pass (all threads): less sensitive than wall time to other
    programs competing for the cores."""
    done_at: list[float]
    """Seconds from the start of scoring to each record's emission, in input order."""
    policy: ExactPolicy | None = None
    """The ``--exact`` policy of an exact pass (bound, probe, escalations)."""


@dataclass
class ModeResult:
    """The repeats of one pass name."""

    passes: list[Pass] = field(default_factory=list)

    @property
    def first(self) -> Pass:
        return self.passes[0]

    @property
    def wall_s(self) -> float:
        return float(statistics.median(p.wall_s for p in self.passes))

    @property
    def cpu_s(self) -> float:
        return float(statistics.median(p.cpu_s for p in self.passes))


def default_input(size: str) -> Path:
    """The shape workload of a size: next to the package (a checkout), else under the working directory."""
    name = Path("data") / "workloads" / f"shape-{size}.jsonl"
    here = Path(__file__).resolve().parents[2] / name
    return here if here.is_file() else name


def timed_pass(backend: Backend, decisions: list[Decision], mode: str, max_batch_tokens: int,
               policy: ExactPolicy | None = None, tick: Tick | None = None, name: str | None = None) -> Pass:
    """Prepare and score every row once in ``mode`` (with ``policy``: under ``--exact``)."""
    t0, c0 = time.perf_counter(), time.process_time()
    items = prepare(backend, decisions, with_prefix=mode != "direct")
    prep = time.perf_counter() - t0
    if policy is not None:
        policy.calibrate(backend, items, mode, max_batch_tokens)
    records_iter = score_items(backend, items, mode, {"config_sha256": "bench"}, 0, max_batch_tokens)
    if policy is not None:
        records_iter = policy.apply(backend, items, mode, records_iter)
    recs: list[dict[str, Any]] = []
    done: list[float] = []
    for rec in records_iter:
        recs.append(rec)
        done.append(time.perf_counter() - t0)
        if tick:
            tick(rec)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return Pass(name or mode, mode, recs, wall, prep, cpu, done, policy)


def state_latencies(decisions: list[Decision], done_at: list[float]) -> list[float]:
    """Seconds each state took: from when the previous state was answered (or the pass began) until
    its last criterion was. Records are emitted in input order, so states complete in that order."""
    last: dict[str, int] = {}
    for i, d in enumerate(decisions):
        last[state_text(d.state)] = i
    ends = sorted(last.values())
    out, prev = [], 0.0
    for i in ends:
        out.append(done_at[i] - prev)
        prev = done_at[i]
    return out


def suffix_table(backend: Backend, decisions: list[Decision]) -> dict[str, Any]:
    """Per criterion: suffix tokens after the shared prefix, its question's own tokens, and what the
    template adds on top (``suffix - question``), over all states."""
    items = prepare(backend, decisions, with_prefix=True)
    tok = backend.tokenizer
    by: dict[str, dict[str, Any]] = {}
    for it in items:
        d = it.decision
        key = str(d.extra.get("criterion_id", d.question))
        suf = len(it.prompt.ids) - len(it.prefix)
        q = len(tok.encode(" " + d.question.strip()))
        q -= 1 if getattr(tok, "bos_id_prepended", None) is not None else 0
        e = by.setdefault(key, {"suffix_tokens": [], "question_tokens": q, "question": d.question})
        e["suffix_tokens"].append(suf)
    rows = {}
    for key, e in by.items():
        s = e["suffix_tokens"]
        rows[key] = {"suffix_tokens_min": min(s), "suffix_tokens_max": max(s),
                     "suffix_tokens_mean": float(np.mean(s)), "question_tokens": e["question_tokens"],
                     "template_overhead_tokens": min(s) - e["question_tokens"], "question": e["question"]}
    sufs = [len(it.prompt.ids) - len(it.prefix) for it in items]
    pres = sorted({len(it.prefix) for it in items})
    return {"by_criterion": rows, "suffix_tokens_mean": float(np.mean(sufs)), "suffix_tokens_max": max(sufs),
            "prefix_tokens_min": pres[0], "prefix_tokens_max": pres[-1],
            "note": "question_tokens = the question encoded alone with a leading space; template_overhead = the "
                    "smallest suffix minus that (option lines, chat turn end and the assistant header)"}


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def _exact_tokens(p: Pass) -> int:
    """Tokens an exact pass ran: the fast path (kept under fast_path's cache fields), every fresh
    re-score, and the probe."""
    n = fast_tokens(p.records)
    n += sum(int(r["input_tokens"]) for r in p.records
             if r.get("escalated") and r.get("exact", {}).get("fresh_from") == "rescore")
    return n + (p.policy.probe_tokens if p.policy else 0)


def phases(p: Pass) -> dict[str, float]:
    """Where a pass's wall time went, from the records' per-phase timing (shared mode: each group's
    totals once); ``other`` is what no phase accounts for (Python, readout, bookkeeping)."""
    out = {"prepare_s": p.prepare_s, "fresh_s": 0.0, "prefill_s": 0.0, "copy_s": 0.0, "suffix_s": 0.0,
           "escalate_s": 0.0, "probe_s": p.policy.probe_s if p.policy else 0.0}
    seen: set[str] = set()
    for r in p.records:
        t = r["timing"]
        out["escalate_s"] += t.get("escalate_s", 0.0)
        if r["mode"] == "direct":
            out["fresh_s"] += t["forward_s"]
        elif "group_prefill_s" in t:
            if r["prefix_sha256"] not in seen:
                seen.add(r["prefix_sha256"])
                out["prefill_s"] += t["group_prefill_s"]
                out["copy_s"] += t["group_copy_s"]
                out["suffix_s"] += t["group_suffix_s"]
        else:
            out["prefill_s"] += t.get("prefill_s", 0.0)
            out["copy_s"] += t.get("copy_s", 0.0)
            out["suffix_s"] += t.get("suffix_s", 0.0)
    out["other_s"] = p.wall_s - sum(out.values())
    return {k: round(v, 6) for k, v in out.items()}


def summarize(name: str, res: ModeResult, fresh: ModeResult, decisions: list[Decision],
              fast_of: dict[str, ModeResult]) -> dict[str, Any]:
    """The report block of one pass name."""
    first = res.first
    n = len(first.records)
    wall = res.wall_s
    lat = state_latencies(decisions, first.done_at)
    policy = first.policy
    tokens = _exact_tokens(first) if policy else fast_tokens(first.records)
    out: dict[str, Any] = {
        "mode": first.mode,
        "exact": policy is not None,
        "kernel": first.records[0]["kernel"] if not policy else (fast_of[first.mode].first.records[0]["kernel"]),
        "decisions": n,
        "repeats": len(res.passes),
        "wall_s": round(wall, 6),
        "wall_s_each": [round(p.wall_s, 6) for p in res.passes],
        "prepare_s": round(float(statistics.median(p.prepare_s for p in res.passes)), 4),
        "cpu_s": round(res.cpu_s, 6),
        "phases_s": phases(first),
        "decisions_per_s": n / wall,
        "state_latency_p50_s": _pct(lat, 50),
        "state_latency_p90_s": _pct(lat, 90),
        "states": len(lat),
        "tokens_processed": tokens,
        "tokens_per_s": tokens / wall,
        "repeats_identical": all(
            [r["probabilities"] for r in p.records] == [r["probabilities"] for r in first.records]
            for p in res.passes[1:]),
    }
    if first.mode != "direct":
        fresh_tokens = fast_tokens(fresh.first.records)
        bound = fresh_tokens / fast_tokens(fast_of[first.mode].first.records)
        speedup = fresh.wall_s / wall
        out.update(analytic_bound=bound, speedup_vs_fresh=speedup, fraction_of_bound=speedup / bound)
        cpu_speedup = fresh.cpu_s / res.cpu_s if res.cpu_s > 0 else None
        out.update(speedup_vs_fresh_cpu=cpu_speedup,
                   fraction_of_bound_cpu=None if cpu_speedup is None else cpu_speedup / bound)
        vs = compare(fresh.first.records, first.records)
        out["vs_fresh"] = {k: vs[k] for k in ("max_abs_dp", "mean_abs_dp", "max_abs_dlogit", "flips", "ties",
                                              "worst_rows")}
        out["vs_fresh"]["n_flips"] = len(vs["flips"])
        out["vs_fresh"]["n_ties"] = len(vs["ties"])
        chunks = [r["timing"].get("group_chunks") for r in first.records if "group_chunks" in r["timing"]]
        if chunks:
            out["chunks_per_state_max"] = int(max(chunks))
    if policy is not None:
        fast = fast_of[first.mode]
        esc = [r for r in first.records if r.get("escalated")]
        esc_s = [p.policy.escalate_s for p in res.passes if p.policy]
        probe_s = [p.policy.probe_s for p in res.passes if p.policy]
        out["exact_policy"] = {k: v for k, v in policy.block.items()}
        out["escalated"] = len(esc)
        out["escalated_share"] = len(esc) / n
        out["escalated_ids"] = [r["id"] for r in esc]
        out["escalated_changed_choice"] = [r["id"] for r in esc if r["fast_path"]["choice"] != r["choice"]]
        out["escalate_s"] = float(statistics.median(esc_s))
        out["probe_s"] = float(statistics.median(probe_s))
        out["exactness_cost_s"] = wall - fast.wall_s
        out["throughput_vs_fast"] = fast.wall_s / wall
        out["throughput_vs_fast_cpu"] = fast.cpu_s / res.cpu_s if res.cpu_s > 0 else None
    return out


def _report_for(backend: Backend, mode: str, source: str, drift_dir: Path, ids: set[str],
                max_batch_tokens: int) -> tuple[Path | None, str]:
    """The drift report an exact pass uses (or None: probe), and why."""
    if source == "probe":
        return None, "probe requested (--exact-source probe)"
    path = default_report_path(backend, mode, drift_dir)
    if not path.is_file():
        why = f"no drift report at {path}"
    else:
        rep, _ = load_report(path)
        bad = identity_mismatch(rep["identity"], numerics_identity(backend, mode, max_batch_tokens))
        overlap = ids & set(rep["input"].get("ids") or [])
        if bad:
            why = f"{path} was measured under another configuration ({bad})"
        elif overlap:
            why = (f"{path} was measured on {len(overlap)} rows of this very workload; a bound taken from the "
                   "rows it guards would prove nothing")
        else:
            return path, f"drift report {path} (held-out rows, same configuration)"
    if source == "report":
        raise InputError(str(path), None, None, why, "a matching `semif drift` report of held-out rows")
    return None, f"probe ({why})"


def warm_up(backend: Backend, decisions: list[Decision], max_batch_tokens: int) -> float:
    """One fresh pass and one small fan-out, untimed, so no pass pays the start-up costs."""
    t0 = time.perf_counter()
    items = prepare(backend, decisions[: min(3, len(decisions))])
    backend.score_fresh(items[0].prompt.ids, want=items[0].prompt.slot_ids)
    pre = backend.prefill(items[0].prefix)
    same = [it for it in items if it.prefix == items[0].prefix]
    backend.fan_out(pre, [it.prompt.ids[len(it.prefix):] for it in same], max_batch_tokens,
                    wants=[it.prompt.slot_ids for it in same])
    backend.release(pre)
    return time.perf_counter() - t0


def run_bench(backend: Backend, decisions: list[Decision], modes: list[str], exact_modes: list[str],
              repeats: int = DEFAULT_REPEATS, max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
              safety: float = DEFAULT_SAFETY, probe_rows: int = DEFAULT_PROBE_ROWS, exact_source: str = "auto",
              drift_dir: Path = RESULTS_DIR, tick: Tick | None = None,
              on_pass: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every pass and return the report (without the workload/machine header)."""
    if "direct" not in modes:
        modes = ["direct", *modes]  # fresh is the reference every other number is measured against
    for m in exact_modes:
        if m not in FAST_MODES:
            raise InputError("--exact-modes", None, None, f"{m!r}", f"a comma list of {', '.join(FAST_MODES)}")
    warm = warm_up(backend, decisions, max_batch_tokens)
    results: dict[str, ModeResult] = {}
    sources: dict[str, str] = {}
    ids = {d.id for d in decisions}
    plan: list[tuple[str, str, bool]] = [(m, m, False) for m in modes]
    plan += [(f"{m}+exact", m, True) for m in exact_modes]
    reports: dict[str, Path | None] = {}
    for name, mode, exact in plan:
        if exact:
            reports[name], sources[name] = _report_for(backend, mode, exact_source, drift_dir, ids, max_batch_tokens)
    # Direct (the costly reference) runs once; the fast passes then run round-robin, so a burst of
    # load from other programs falls on all of them rather than on every repeat of one.
    rounds = [[p for p in plan if p[1] == "direct"]] + [[p for p in plan if p[1] != "direct"]] * repeats
    for rnd in rounds:
        for name, mode, exact in rnd:
            if on_pass:
                on_pass(name)
            policy = ExactPolicy(safety=safety, probe_rows=probe_rows, report=reports[name]) if exact else None
            results.setdefault(name, ModeResult()).passes.append(
                timed_pass(backend, decisions, mode, max_batch_tokens, policy, tick, name))
    fast_of = {m: results[m] for m in FAST_MODES if m in results}
    for m in exact_modes:  # an exact pass is judged against its own fast path, run in this bench
        if m not in fast_of:
            raise InputError("--exact-modes", None, None, f"{m} without the plain {m} pass",
                             f"--modes including {m}")
    out = {name: summarize(name, res, results["direct"], decisions, fast_of) for name, res in results.items()}
    for name, src in sources.items():
        out[name]["bound_source"] = src
    return {"passes": out, "warm_up_s": warm}


def targets(passes: dict[str, Any]) -> dict[str, Any]:
    """Issue 3's targets, judged on the measured numbers (None where the pass did not run)."""
    sh, ex = passes.get("shared"), passes.get("shared+exact")
    return {
        "shared_fraction_of_bound": None if sh is None else sh["fraction_of_bound"],
        "shared_fraction_of_bound_met": None if sh is None else sh["fraction_of_bound"] >= TARGET_FRACTION_OF_BOUND,
        "shared_exact_flips": None if ex is None else ex["vs_fresh"]["n_flips"],
        "shared_exact_throughput_vs_fast": None if ex is None else ex["throughput_vs_fast"],
        "shared_exact_met": None if ex is None else (ex["vs_fresh"]["n_flips"] == 0
                                                     and ex["throughput_vs_fast"] >= TARGET_EXACT_THROUGHPUT),
        "targets": {"fraction_of_bound": TARGET_FRACTION_OF_BOUND, "exact_throughput_vs_fast": TARGET_EXACT_THROUGHPUT,
                    "exact_flips": 0},
    }


@dataclass(frozen=True)
class BenchConfig:
    """One ``semif bench`` run: the workload, the passes and where the report goes."""

    workload: str = "shape"
    """One of :data:`WORKLOADS` (names the report)."""
    size: str = "small"
    """One of :data:`SIZES`: the shipped workload file (unless ``input`` is given)."""
    input: Path | None = None
    """A workload file instead of ``data/workloads/shape-SIZE.jsonl``."""
    modes: tuple[str, ...] = ("direct", "serial", "shared")
    """The passes (direct always runs: the reference)."""
    exact_modes: tuple[str, ...] = FAST_MODES
    """Fast modes also run under ``--exact``."""
    repeats: int = DEFAULT_REPEATS
    """Passes per fast mode; the median is reported."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per packed pass."""
    exact_safety: float = DEFAULT_SAFETY
    """The exact bound's safety factor."""
    exact_probe: int = DEFAULT_PROBE_ROWS
    """Rows the exact policy's probe scores both ways."""
    exact_source: str = "auto"
    """``auto``, ``report`` or ``probe``: where the exact bound's drift comes from."""
    drift_dir: Path = RESULTS_DIR
    """Where ``semif drift`` wrote its reports."""
    output: Path | None = None
    """Report path (default ``data/results/<workload>-<size>-<model>-<backend>.json``)."""
    force: bool = False
    """Overwrite an existing report."""

    def __post_init__(self) -> None:
        if self.repeats < 1:  # refused before any model loads
            raise InputError("--repeats", None, None, f"{self.repeats}", "an integer >= 1")

    @property
    def input_path(self) -> Path:
        """The workload file: ``input``, else the shipped workload of ``size``."""
        return self.input if self.input else default_input(self.size)


def bench(backend: Backend, decisions: list[Decision], cfg: BenchConfig) -> dict[str, Any]:
    """Run every pass of ``cfg`` over ``decisions`` (the rows of ``cfg.input_path``), write the report (never
    over an existing one unless ``cfg.force``), print its table, and return it."""

    inp = cfg.input_path
    modes, exact_modes = list(cfg.modes), list(cfg.exact_modes)
    info = backend.model_info()
    tag = cfg.size if not cfg.input else inp.stem
    out = cfg.output if cfg.output else RESULTS_DIR / (
        f"{cfg.workload}-{tag}-{safe_name(str(info.get('key')))}-{backend.name}.json")
    check_writable(out, cfg.force, FORCE_HINT)
    n_passes = 1 + cfg.repeats * (len([m for m in modes if m != "direct"]) + len(exact_modes))
    pb = bar(len(decisions) * n_passes, "bench")
    load0 = load_average()
    t0 = time.perf_counter()
    try:
        measured = run_bench(backend, decisions, modes, exact_modes, cfg.repeats, cfg.max_batch_tokens,
                             cfg.exact_safety, cfg.exact_probe, cfg.exact_source, cfg.drift_dir,
                             tick=lambda _r: pb.update(1), on_pass=lambda name: pb.set_description(f"bench {name}"))
    finally:
        pb.close()
    states = len({state_text(d.state) for d in decisions})
    body = {
        "workload": {"name": cfg.workload, "size": None if cfg.input else cfg.size, "path": str(inp),
                     "sha256": sha256_file(inp), "rows": len(decisions), "states": states,
                     "criteria_per_state": len(decisions) / states},
        "model": info,
        "load_average": load_span(load0),
        "settings": {"max_batch_tokens": cfg.max_batch_tokens, "repeats": cfg.repeats,
                     "exact_safety": cfg.exact_safety, "exact_probe_rows": cfg.exact_probe,
                     "exact_source": cfg.exact_source, "timing": "median wall over repeats; direct runs once",
                     "load_s": round(backend.load_s, 3)},
        "suffix_tokens": suffix_table(backend, decisions),
        **measured,
        "total_s": round(time.perf_counter() - t0, 3),
        "targets": targets(measured["passes"]),
    }
    report = make_report("bench", BENCH_FORMAT, carried_inputs(body), body)
    write_report(out, report, cfg.force)
    print_summary(report)
    print(f"[semif] wrote {out}", file=sys.stderr)
    return report


def print_summary(report: dict[str, Any]) -> None:
    """A readable table of a bench report (stdout)."""
    w = report["workload"]
    m = report["model"]
    print(f"bench {w['name']} {w['size'] or w['path']}: {w['rows']} decisions, {w['states']} states · model "
          f"{m.get('key')} · {m.get('backend')} {m.get('dtype')} on {m.get('device')}")
    print(f"{'pass':<13} {'dec/s':>7} {'wall s':>8} {'p50 st s':>8} {'tokens':>8} {'bound':>6} {'speedup':>7} "
          f"{'%bound':>6} {'%b cpu':>6} {'max|dp|':>8} {'flips':>5} {'ties':>4} {'esc':>4} {'vs fast':>7}")
    for name, p in report["passes"].items():
        vs = p.get("vs_fresh") or {}
        print(f"{name:<13} {p['decisions_per_s']:>7.2f} {p['wall_s']:>8.2f} {p['state_latency_p50_s']:>8.2f} "
              f"{p['tokens_processed']:>8} {p.get('analytic_bound', 1.0):>6.2f} {p.get('speedup_vs_fresh', 1.0):>7.2f} "
              f"{_pct_of(p.get('fraction_of_bound', 1.0)):>6} {_pct_of(p.get('fraction_of_bound_cpu', 1.0)):>6} "
              f"{vs.get('max_abs_dp', 0.0):>8.2g} {vs.get('n_flips', 0):>5} {vs.get('n_ties', 0):>4} "
              f"{p.get('escalated', '-')!s:>4} {_fmt(p.get('throughput_vs_fast')):>7}")
    t = report.get("targets") or {}
    if t.get("shared_fraction_of_bound") is not None:
        print(f"targets: shared >= {100 * TARGET_FRACTION_OF_BOUND:.0f}% of bound: "
              f"{'met' if t['shared_fraction_of_bound_met'] else 'NOT met'}"
              + ("" if t.get("shared_exact_met") is None else
                 f"; shared --exact 0 flips and >= {100 * TARGET_EXACT_THROUGHPUT:.0f}% of shared throughput: "
                 f"{'met' if t['shared_exact_met'] else 'NOT met'}"))


def _pct_of(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


