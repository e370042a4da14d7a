"""Cross-request batching in ``semif serve``, before/after: one-row requests about shared states at 1, 4, 8 clients.

For each window (``--windows``, default ``0 5``: 0 is the service without batching, "before") one ``semif serve``
process (the user's own command, ``--batch-window-ms W``) is started on 127.0.0.1 and, for each client count,
``--requests`` one-row ``POST /v1/decide`` requests are sent by that many concurrent clients, back to back, in
workload order (the workload's rows are ordered by state, so clients that run together ask about the same state:
the agent pattern of several questions about one ticket at once). Every answer is checked (status 200, the
row's id); other statuses are counted and reported, never hidden. From the records: how many requests each was
scored with (``batch.requests``) and how many shared its prefix (``batch.group_requests``). The answers of every
window are compared with the first window's, row by row: max |Δp| and the choices that differ (batched scoring
packs rows into one pass, so only float noise may differ).

    .venv/bin/python benchmarks/serve_batching.py --model qwen2.5-0.5b \\
        --output data/results/serve-batching-qwen2.5-0.5b-shape-small.json

Writes one report (the common envelope, kind ``serve-batching``): a row per client count with throughput and
p50/p95 latency per window and the speed-up of each window over the first; load averages before and after.
Clients and server share the machine: quote it only from a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.serve_load import free_port, run_phase, running_server  # noqa: E402
from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.formats.envelope import envelope, write_report  # noqa: E402

FORMAT = "semif-serve-batching-v1"


async def _window_run(base: str, rows: list[dict[str, Any]], clients: list[int], requests: int
                      ) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """Every client count's phase on one server; the probabilities answered for each row id (the last seen)."""
    answers: dict[str, list[float]] = {}
    out = []
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        await client.post("/v1/decide", content=orjson.dumps(rows[0]))  # warm-up: a fresh process's first pass
        for n in clients:
            sizes: list[int] = []
            groups: list[int] = []

            def seen(doc: dict[str, Any], sizes: list[int] = sizes, groups: list[int] = groups) -> None:
                answers[doc["id"]] = doc["probabilities"]
                batch = doc.get("batch") or {"requests": 1, "group_requests": 1}
                sizes.append(batch["requests"])
                groups.append(batch["group_requests"])

            jobs = [("/v1/decide", rows[i % len(rows)], [rows[i % len(rows)]["id"]]) for i in range(requests)]
            res = await run_phase(client, n, jobs, seen)
            res["batch_requests_mean"] = round(statistics.fmean(sizes), 3) if sizes else None
            res["batch_requests_max"] = max(sizes, default=None)
            res["group_requests_mean"] = round(statistics.fmean(groups), 3) if groups else None
            print(f"[serve-batching] clients={n}: {res['requests_per_s']} req/s, p50 {res['latency_p50_s']} s, "
                  f"p95 {res['latency_p95_s']} s, batch mean {res['batch_requests_mean']}, "
                  f"statuses {res['statuses']}", file=sys.stderr, flush=True)
            out.append(res)
    return out, answers


def _agreement(ref: dict[str, list[float]], got: dict[str, list[float]]) -> dict[str, Any]:
    """``got`` against ``ref`` on the rows both answered: max |Δp| and how many argmax choices differ."""
    common = sorted(set(ref) & set(got))
    dp = max((abs(a - b) for k in common for a, b in zip(ref[k], got[k], strict=True)), default=0.0)
    flips = sum(max(range(len(ref[k])), key=ref[k].__getitem__) != max(range(len(got[k])), key=got[k].__getitem__)
                for k in common)
    return {"rows_compared": len(common), "max_abs_dp": dp, "choices_differing": flips}


def _table(windows: list[float], runs: list[list[dict[str, Any]]], clients: list[int]) -> list[dict[str, Any]]:
    """One row per client count: each window's throughput and latency, and its speed-up over the first window."""
    table = []
    for i, n in enumerate(clients):
        row: dict[str, Any] = {"clients": n}
        base = runs[0][i]["requests_per_s"]
        for w, run in zip(windows, runs, strict=True):
            ph = run[i]
            row[f"window_{w:g}ms"] = {"requests_per_s": ph["requests_per_s"], "latency_p50_s": ph["latency_p50_s"],
                                       "latency_p95_s": ph["latency_p95_s"],
                                       "batch_requests_mean": ph["batch_requests_mean"],
                                       "speedup": round(ph["requests_per_s"] / base, 3) if base else None}
        table.append(row)
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--workload", type=Path, default=ROOT / "data/workloads/shape-small.jsonl")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--requests", type=int, default=48, help="one-row requests per client count")
    ap.add_argument("--windows", type=float, nargs="+", default=[0.0, 5.0],
                    help="batch windows in ms, one server each; the first is the baseline (default 0 5)")
    ap.add_argument("--threads", type=int, help="semif serve --threads (default: its own)")
    ap.add_argument("--output", type=Path, required=True)
    args = ap.parse_args()
    if args.output.exists():
        raise SystemExit(str(refuse_overwrite(args.output)))
    rows = [orjson.loads(line) for line in args.workload.read_bytes().splitlines() if line.strip()]
    load_before = load_average()
    runs, answers, commands, ready = [], [], [], []
    models: dict[str, Any] = {}
    for w in args.windows:
        port = free_port()
        cmd = [str(ROOT / ".venv/bin/semif"), "serve", "--model", args.model, "--mode", "shared",
               "--host", "127.0.0.1", "--port", str(port), "--batch-window-ms", f"{w:g}",
               *(["--threads", str(args.threads)] if args.threads else [])]
        base = f"http://127.0.0.1:{port}"
        with running_server(cmd, base) as ready_s:
            print(f"[serve-batching] window {w:g} ms: server ready after {ready_s:.1f} s", file=sys.stderr, flush=True)
            run, got = asyncio.run(_window_run(base, rows, args.clients, args.requests))
            models = httpx.get(base + "/v1/models", timeout=10).json()
        runs.append(run)
        answers.append(got)
        commands.append(" ".join(cmd[1:]))
        ready.append(round(ready_s, 2))
    load = load_span(load_before)
    report = {**envelope("serve-batching", FORMAT, {"workload": args.workload}),
              "title": f"semif serve cross-request batching: {args.model}, {args.workload.name}, one-row requests",
              "model": args.model, "mode": "shared", "windows_ms": args.windows, "clients": args.clients,
              "requests_per_client_count": args.requests, "commands": commands, "server_ready_s": ready,
              "served_model": models["models"], "load_average": load,
              "table": _table(args.windows, runs, args.clients),
              "agreement": [{"window_ms": w, **_agreement(answers[0], a)} for w, a in zip(args.windows, answers,
                                                                                         strict=True)],
              "runs": [{"window_ms": w, "phases": r} for w, r in zip(args.windows, runs, strict=True)],
              "notes": ["latency: client-side, request sent to answer read, including waiting in the server's queue",
                        "requests in workload order (rows grouped by state), spread over the clients",
                        "agreement: each window's answers against the first window's, same rows",
                        "clients and server share this machine"]}
    write_report(args.output, report)
    print(f"[serve-batching] wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
