"""What every peer driver writes, whichever virtualenv it runs in (standard library only).

A driver is one process that loads one tool, scores the exported prompts once and writes one JSON
result. The result is written even when the tool fails, with the stage it failed at (``import``,
``load``, ``score``) and the error's own text, so the report can say exactly why a peer did not run::

    {"tool": "lm-eval", "status": "ok" | "failed", "stage": "done" | "import" | "load" | "score",
     "error": null | "ValueError: ...", "traceback_tail": "...", "import_s": 3.1, "load_s": 1.9,
     "score_s": 41.0, "peak_rss_bytes": ..., "peak_rss_children_bytes": ..., "versions": {...},
     "rows": [{"id", "scores", "score_kind", ...}], ...}
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

RESULT_FORMAT = "semif-peer-driver-v1"


def versions(dists: list[str]) -> dict[str, str | None]:
    """Installed versions of the named distributions in this interpreter (None = not installed)."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for d in dists:
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            out[d] = None
    return out


def read_prompts(path: Path) -> list[dict[str, Any]]:
    """The exported prompts (one JSON object per line: id, prompt, ids, letters, slot_ids, …)."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_driver(tool: str, dists: list[str], out: Path, body: Callable[[dict[str, Any]], None]) -> int:
    """Run ``body(result)``, which fills ``result`` and moves ``result["stage"]`` along; write the result.

    Exit status 0 when the tool ran, 3 when it failed at some stage (the result says where and why).
    """
    t0 = time.perf_counter()
    result: dict[str, Any] = {"format": RESULT_FORMAT, "tool": tool, "status": "failed", "stage": "import",
                              "error": None, "versions": versions(dists)}
    code = 0
    try:
        body(result)
        result.update(status="ok", stage="done")
    except BaseException as exc:  # the report must say why, whatever it was (incl. SystemExit from a library)
        result["error"] = f"{type(exc).__name__}: {exc}".strip()
        result["traceback_tail"] = "".join(traceback.format_exception(exc))[-4000:]
        code = 3
    result["driver_s"] = round(time.perf_counter() - t0, 4)
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    # Engines that score in worker processes (vLLM, SGLang): the largest reaped child's peak, else 0.
    result["peak_rss_children_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return code


def timed(result: dict[str, Any], key: str, fn: Callable[[], Any]) -> Any:
    """Call ``fn`` and store its wall seconds under ``result[key]``."""
    t0 = time.perf_counter()
    value = fn()
    result[key] = round(time.perf_counter() - t0, 6)
    return value


def engine_args(description: str | None, default_device: str) -> argparse.ArgumentParser:
    """The options every serving-engine driver (vLLM, SGLang) takes: the model folder, the exported prompts, the
    result file, dtype and device."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default=default_device, choices=("cpu", "cuda"))
    return ap
