"""``semif`` in its own process with the fake backend, for tests that need a real process (signals, SIGKILL,
two writers racing for one output).

    python tests/fake_semif.py score --input rows.jsonl --output out.jsonl [...]

``SEMIF_FAKE_DELAY`` (seconds, default 0) is slept before every forward pass (fresh, prefill, prefix
reuse, fan-out), so a test can stop the run between records. ``SEMIF_FAKE_READY`` names a file created
once the backend is loaded (after the output was locked), so a test knows the run is live.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakes import FakeBackend

from scorer import cli


class SlowFake(FakeBackend):
    """The fake backend, slowed down by a fixed delay per forward pass."""

    def __init__(self, delay: float):
        super().__init__()
        self.delay = delay

    def score_fresh(self, ids: list[int]) -> Any:
        time.sleep(self.delay)
        return super().score_fresh(ids)

    def prefill(self, ids: list[int]) -> Any:
        time.sleep(self.delay)
        return super().prefill(ids)

    def score_with_prefix(self, prefix: Any, suffix: list[int]) -> Any:
        time.sleep(self.delay)
        return super().score_with_prefix(prefix, suffix)

    def fan_out(self, prefix: Any, suffixes: list[list[int]], max_batch_tokens: int) -> Any:
        time.sleep(self.delay)
        return super().fan_out(prefix, suffixes, max_batch_tokens)


def _load(_cfg: Any) -> SlowFake:
    backend = SlowFake(float(os.environ.get("SEMIF_FAKE_DELAY", "0")))
    ready = os.environ.get("SEMIF_FAKE_READY")
    if ready:
        Path(ready).touch()
    return backend


if __name__ == "__main__":
    cli.load_backend = _load  # type: ignore[assignment]
    sys.exit(cli.main(sys.argv[1:]))
