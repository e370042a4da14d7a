"""When a ``semif score`` process wrote its first and last record: its output file polled while it runs."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def poll(proc: subprocess.Popen[bytes], out: Path, t0: float, every_s: float = 0.05
         ) -> tuple[float | None, float | None, int]:
    """Until ``proc`` exits: seconds since ``t0`` at which the first and the last record line appeared in
    ``out`` (None if none did), and how many lines it saw."""
    first = last = None
    seen = 0
    while proc.poll() is None:
        time.sleep(every_s)
        try:
            n = out.read_bytes().count(b"\n")
        except FileNotFoundError:
            continue
        now = time.perf_counter() - t0
        if n and first is None:
            first = now
        if n != seen:
            seen, last = n, now
    return first, last, seen
