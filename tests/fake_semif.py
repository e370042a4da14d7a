"""``semif`` in its own process with the fake backend, for tests that need a real process (signals, SIGKILL,
two writers racing for one output).

    python tests/fake_semif.py score --input rows.jsonl --output out.jsonl [...]

``SEMIF_FAKE_DELAY`` (seconds, default 0) is slept before every forward pass (fresh, prefill, prefix
reuse, each packed fan-out pass), so a test can stop the run between records. ``SEMIF_FAKE_READY`` names
a file created once the backend is loaded (after the output was locked), so a test knows the run is live.
``SEMIF_FAKE_LOAD_S`` (seconds, default 0) is how long the "model load" takes, and ``SEMIF_FAKE_LOADING``
names a file created when it starts, so a test can signal the run during its load.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakes import SlowFakeBackend

import scorer.backends as backends
from scorer import cli


def _load(_cfg: Any) -> SlowFakeBackend:
    loading = os.environ.get("SEMIF_FAKE_LOADING")
    if loading:
        Path(loading).touch()
    time.sleep(float(os.environ.get("SEMIF_FAKE_LOAD_S", "0")))
    delay = float(os.environ.get("SEMIF_FAKE_DELAY", "0"))
    backend = SlowFakeBackend(prefill_s=delay, pass_s=delay, reuse_s=delay)
    ready = os.environ.get("SEMIF_FAKE_READY")
    if ready:
        Path(ready).touch()
    return backend


if __name__ == "__main__":
    cli.load_backend = _load  # type: ignore[assignment]
    backends.load_backend = _load  # type: ignore[assignment]  # what a Scorer loads with (semif serve, semif mcp)
    sys.exit(cli.main(sys.argv[1:]))
