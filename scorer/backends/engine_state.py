"""What runs where: one JSON file per engine started by ``semif engine start``.

``<cache>/engines/run/<engine>-<port>.json`` holds the engine, its process, URL, the model key and the weights
it serves (path and sha256, as verified before the start), its log file and command line. A file whose process
is gone is stale: :func:`live_states` skips it and ``semif engine status`` says so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scorer.models import store


def run_dir() -> Path:
    return store.cache_dir() / "engines" / "run"


def log_dir() -> Path:
    return store.cache_dir() / "engines" / "logs"


def state_path(engine: str, port: int) -> Path:
    return run_dir() / f"{engine}-{port}.json"


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def all_states() -> list[tuple[Path, dict[str, Any]]]:
    folder = run_dir()
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.glob("*.json")):
        st = read_state(p)
        if st is not None:
            out.append((p, st))
    return out


def live_states() -> list[tuple[Path, dict[str, Any]]]:
    return [(p, st) for p, st in all_states() if isinstance(st.get("pid"), int) and alive(st["pid"])]


def _host_port(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host in ("localhost", "::1"):
        host = "127.0.0.1"
    try:
        return host, parts.port
    except ValueError:
        return host, None


def state_for_url(base_url: str) -> dict[str, Any] | None:
    """The state of the live engine started here that serves ``base_url``, else None."""
    want = _host_port(base_url)
    for _p, st in live_states():
        if _host_port(str(st.get("base_url", ""))) == want:
            return st
    return None
