"""What verifying the fp32 cache costs at load time, against a cold load of the same folder.

The torch backend checks every file of ``~/.cache/semif/hf-v2/<gguf sha256>/`` against its BLAKE3
manifest before loading it (``scorer.models.store.verify_manifest``); the promise is that this stays under
10 % of a cold load. Each measurement runs in a fresh Python process (imports excluded from the timed
part), alternating, ``--repeats`` times:

* ``load``: ``AutoTokenizer`` + ``AutoModelForCausalLM.from_pretrained(folder)`` (what the backend does);
* ``verify``: ``verify_manifest(folder, sha)`` alone;
* ``verify_then_load``: the backend's real path: every file but the weights is checked first (config,
  tokenizer and template are read by nothing before they are verified), then the weights' digests are
  checked on a thread while transformers loads them; the model is refused before use if one differs.

With ``--drop-caches`` (root, Linux) the page cache is dropped before each measurement, so "cold" means
cold from disk; without it the files are usually cached and "cold" means a fresh process. A single-
threaded throughput probe of sha256 and BLAKE3 on this CPU is included (why BLAKE3 was chosen).

    .venv/bin/python benchmarks/cache_verify.py --model smollm2-135m --repeats 5 \\
        --output data/results/cache-verify-smollm2-135m.json [--drop-caches]

Run it on a quiet machine: its timings are only as good as the machine is idle (load averages are recorded).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.formats.envelope import make_report, write_report  # noqa: E402
from scorer.models import store  # noqa: E402

FORMAT = "semif-cache-verify-v1"

BUDGET = 0.10
_CHILD = r"""
import json, sys, time
from pathlib import Path
folder, sha, what = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from scorer import store
out = {}
t0 = time.perf_counter()
if what == "verify":
    store.verify_manifest(folder, sha)
    out["verify_s"] = time.perf_counter() - t0
if what == "load":
    AutoTokenizer.from_pretrained(str(folder))
    AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    out["load_s"] = time.perf_counter() - t0
if what == "verify_then_load":  # the backend's path: all but the weights first, their digests while they load
    from scorer.backends.torch_backend import _Check
    store.verify_manifest(folder, sha, weights=False)
    out["verify_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    check = _Check(lambda: store.verify_weights(folder, sha))
    AutoTokenizer.from_pretrained(str(folder))
    AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    check.result()
    out["load_s"] = time.perf_counter() - t1
out["total_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def _drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _measure(folder: Path, sha: str, what: str, drop: bool) -> dict[str, float]:
    if drop:
        _drop_caches()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(folder), sha, what], capture_output=True, text=True,
                          env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{what}: child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _throughput(mib: int = 256) -> dict[str, float]:
    """MiB/s of sha256 (OpenSSL), BLAKE3 on one thread and BLAKE3 on all threads, over one in-memory buffer."""
    import blake3

    buf = os.urandom(mib << 20)
    out = {}
    for name, make in (("sha256_1_thread", hashlib.sha256), ("blake3_1_thread", blake3.blake3),
                       ("blake3_auto_threads", lambda: blake3.blake3(max_threads=blake3.blake3.AUTO))):
        best = float("inf")
        for _ in range(3):
            h = make()
            t0 = time.perf_counter()
            h.update(buf)
            h.digest()
            best = min(best, time.perf_counter() - t0)
        out[name] = round(mib / best, 1)
    return out


def cache_verify_inputs(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The report's ``inputs``: the model folder measured, identified by the GGUF it was built from (the folder's
    manifest is checked against that sha256; hashing the folder itself is what is being timed)."""
    return {"model_folder": {"path": body["folder"], "sha256": body["gguf_sha256"],
                             "digest": "sha256 of the source GGUF the folder was built from"}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=store.TEST_MODEL, help="registry key (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--output", required=True, help="JSON report (never overwritten)")
    ap.add_argument("--drop-caches", action="store_true", help="drop the page cache before each measurement (root)")
    args = ap.parse_args()
    out = Path(args.output)
    if out.exists():
        raise SystemExit(str(refuse_overwrite(out)))
    from scorer.backends.torch_backend import dequantize_gguf

    entry = store.get_entry(args.model)
    folder = dequantize_gguf(store.fetch(entry), entry.sha256)  # built (and verified) if missing
    manifest = store.verify_manifest(folder, entry.sha256)
    runs: dict[str, list[dict[str, float]]] = {"load": [], "verify": [], "verify_then_load": []}
    load_before = load_average()
    for _ in range(args.repeats):
        for what in runs:
            runs[what].append(_measure(folder, entry.sha256, what, args.drop_caches))
    load = load_span(load_before)
    med = {
        "load_s": statistics.median(r["load_s"] for r in runs["load"]),
        "verify_s": statistics.median(r["verify_s"] for r in runs["verify"]),
        "verify_then_load_total_s": statistics.median(r["total_s"] for r in runs["verify_then_load"]),
    }
    overhead = med["verify_then_load_total_s"] - med["load_s"]
    body = {
        "model": args.model, "gguf_sha256": entry.sha256, "folder": str(folder),
        "files": len(manifest["files"]), "bytes": sum(f["bytes"] for f in manifest["files"].values()),
        "hash": manifest["hash"], "page_cache": "dropped before each measurement" if args.drop_caches else
        "not dropped (fresh process, files likely cached)",
        "repeats": args.repeats, "runs": runs, "median": med,
        # The whole check alone, against a cold load (what a check before the load would cost) ...
        "ratio_verify_to_load": round(med["verify_s"] / med["load_s"], 4),
        # ... and what the backend's path (weights checked while they load) adds to a cold load: the budget.
        "ratio_overhead_to_load": round(overhead / med["load_s"], 4),
        "budget": BUDGET, "budget_applies_to": "ratio_overhead_to_load",
        "within_budget": overhead / med["load_s"] < BUDGET,
        "throughput_mib_s": _throughput(),
        "load_average": load,
    }
    report = make_report("cache-verify", FORMAT, cache_verify_inputs(body), body)
    write_report(out, report)
    print(f"wrote {out}: the check adds {report['ratio_overhead_to_load']:+.1%} to a cold load (budget "
          f"{BUDGET:.0%}); the whole check alone is {report['ratio_verify_to_load']:.1%} of one", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
