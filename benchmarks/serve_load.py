"""Load on ``semif serve`` from this machine's loopback: throughput and p50/p95 latency at 1, 4 and 8 clients.

Starts one ``semif serve`` process (the user's own command), waits for ``/healthz``, then for each client
count runs two phases: **single** (each client sends one-row ``POST /v1/decide`` requests back to back) and
**batch** (each client sends ``POST /v1/decide/batch`` with all the rows of one state, i.e. one shared-prefix
group). Every answer is checked: status 200 and a record whose ``id`` is the row's; any other status (503 from
a full queue, say) is counted and reported, never hidden. The request counts are bounded (``--single``,
``--batches`` per client count), the server binds 127.0.0.1 only.

    .venv/bin/python benchmarks/serve_load.py --model qwen2.5-0.5b \\
        --output data/results/serve-load-qwen2.5-0.5b-shape-small.json

Writes one report (the common envelope, kind ``serve-load``); logs on stderr. Latency is measured by the
client from sending the request to reading the whole answer, so it includes the time a request waits in the
server's queue behind the other clients' requests: the service scores one request at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.formats.envelope import envelope, write_report  # noqa: E402

FORMAT = "semif-serve-load-v2"
"""v2: ``load_average`` {before, after} (v1: ``loadavg_before``/``loadavg_after``)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ys = sorted(xs)
    return ys[max(0, min(len(ys), math.ceil(q / 100 * len(ys))) - 1)]


async def run_phase(client: httpx.AsyncClient, clients: int, jobs: list[tuple[str, Any, list[str]]],
                    on_answer: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``jobs`` (path, body, expected ids) spread over ``clients`` concurrent workers; ``on_answer`` sees
    every 200 answer's JSON."""
    queue: asyncio.Queue[tuple[str, Any, list[str]]] = asyncio.Queue()
    for j in jobs:
        queue.put_nowait(j)
    lat: list[float] = []
    statuses: dict[str, int] = {}
    wrong = 0

    async def worker() -> None:
        nonlocal wrong
        while not queue.empty():
            path, body, ids = queue.get_nowait()
            t0 = time.perf_counter()
            r = await client.post(path, content=orjson.dumps(body), headers={"content-type": "application/json"})
            dt = time.perf_counter() - t0
            statuses[str(r.status_code)] = statuses.get(str(r.status_code), 0) + 1
            if r.status_code != 200:
                continue
            doc = r.json()
            if on_answer is not None:
                on_answer(doc)
            got = [rec["id"] for rec in doc["records"]] if "records" in doc else [doc["id"]]
            wrong += got != ids
            lat.append(dt)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    wall = time.perf_counter() - t0
    decisions = sum(len(ids) for _, _, ids in jobs)
    return {"clients": clients, "requests": len(jobs), "decisions": decisions, "wall_s": round(wall, 3),
            "statuses": statuses, "wrong_answers": wrong,
            "requests_per_s": round(len(lat) / wall, 3), "decisions_per_s": round(decisions / wall, 3),
            "latency_p50_s": round(_pct(lat, 50), 4) if lat else None,
            "latency_p95_s": round(_pct(lat, 95), 4) if lat else None,
            "latency_mean_s": round(statistics.fmean(lat), 4) if lat else None}


async def _bench(base: str, rows: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(orjson.dumps(r["state"]).decode(), []).append(r)
    states = list(groups.values())
    out = []
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        # one warm-up request of each kind: the first forward of a fresh process is slower (allocations)
        await client.post("/v1/decide", content=orjson.dumps(rows[0]))
        for clients in args.clients:
            single = [("/v1/decide", rows[i % len(rows)], [rows[i % len(rows)]["id"]]) for i in range(args.single)]
            batch = [("/v1/decide/batch", {"rows": states[i % len(states)]}, [r["id"] for r in states[i % len(states)]])
                     for i in range(args.batches)]
            for kind, jobs in (("single", single), ("batch", batch)):
                res = await run_phase(client, clients, jobs)
                res["kind"] = kind
                print(f"[serve-load] {kind:6s} clients={clients}: {res['requests_per_s']} req/s, "
                      f"{res['decisions_per_s']} decisions/s, p50 {res['latency_p50_s']} s, "
                      f"p95 {res['latency_p95_s']} s, statuses {res['statuses']}", file=sys.stderr, flush=True)
                out.append(res)
    return out


@contextlib.contextmanager
def running_server(cmd: list[str], base: str) -> Iterator[float]:
    """Run ``cmd`` (a ``semif serve`` serving at ``base``) until the block ends; yields the seconds it took
    until ``/healthz`` answered. A server that exits first ends the benchmark with its stderr."""
    t0 = time.perf_counter()
    server = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # A SIGTERM (a `timeout` around the benchmark) must stop the server too, not leave it scoring on its own.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        while True:
            if server.poll() is not None:
                err = server.stderr.read().decode(errors="replace") if server.stderr else ""
                raise SystemExit(f"semif serve exited {server.returncode}:\n{err[-4000:]}")
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield time.perf_counter() - t0
    finally:
        server.kill()  # its in-flight requests are the benchmark's own: nothing to finish
        server.wait(timeout=60)
        signal.signal(signal.SIGTERM, previous)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--workload", type=Path, default=ROOT / "data/workloads/shape-small.jsonl")
    ap.add_argument("--mode", default="shared", choices=("direct", "serial", "shared"))
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--single", type=int, default=48, help="one-row requests per client count")
    ap.add_argument("--batches", type=int, default=8, help="batch requests (one state's rows each) per client count")
    ap.add_argument("--batch-window-ms", type=float, default=0.0,
                    help="semif serve's cross-request batching window (default 0: each request alone)")
    ap.add_argument("--output", type=Path, required=True)
    args = ap.parse_args()
    if args.output.exists():
        raise SystemExit(str(refuse_overwrite(args.output)))
    rows = [orjson.loads(line) for line in args.workload.read_bytes().splitlines() if line.strip()]
    port = free_port()
    # The window named (0: one request at a time), so this benchmark measures what it always did whatever
    # semif serve's default window is; benchmarks/serve_batching.py measures the windows against each other.
    cmd = [str(ROOT / ".venv/bin/semif"), "serve", "--model", args.model, "--mode", args.mode,
           "--host", "127.0.0.1", "--port", str(port), "--batch-window-ms", str(args.batch_window_ms)]
    load_before = load_average()
    base = f"http://127.0.0.1:{port}"
    with running_server(cmd, base) as ready_s:
        print(f"[serve-load] server ready after {ready_s:.1f} s", file=sys.stderr, flush=True)
        phases = asyncio.run(_bench(base, rows, args))
        models = httpx.get(base + "/v1/models", timeout=10).json()
    load = load_span(load_before)
    report = {**envelope("serve-load", FORMAT, {"workload": args.workload}),
              "title": f"semif serve on loopback: {args.model}, {args.workload.name}, {args.mode} mode",
              "model": args.model, "mode": args.mode, "batch_window_ms": args.batch_window_ms,
              "command": " ".join(cmd[1:]), "server_ready_s": round(ready_s, 2),
              "served_model": models, "load_average": load,
              "phases": phases,
              "notes": ["latency: client-side, request sent to answer read, including waiting in the server's queue",
                        "single: one row per POST /v1/decide; batch: one state's rows per POST /v1/decide/batch",
                        "clients and server share this 2-core machine"]}
    write_report(args.output, report)
    print(f"[serve-load] wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
