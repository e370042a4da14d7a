"""The common report envelope: what every result report says about itself, whatever it measured.

A report is a JSON object whose top level starts with the envelope's fields and continues with the
report's own body::

    {"kind": "peers", "format": "semif-peers-v1", "created_utc": "2026-11-30T14:02:11Z",
     "machine": {...}, "versions": {...}, "inputs": {"workload": {"path": ..., "sha256": ..., "bytes": ...}},
     ...body...}

* ``kind`` names what was measured (the site draws a report by its kind);
* ``format`` is the versioned layout of the body (a reader refuses a format it does not know);
* ``created_utc`` is when the report was made (ISO 8601, seconds, UTC);
* ``machine`` and ``versions`` come from :mod:`scorer.machine`;
* ``inputs`` names every file the numbers depend on, with its sha256, so a reader can tell whether a
  re-run used the same bytes.

Plain data only: nothing here imports torch or a backend.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scorer.machine import library_versions, machine_facts

ENVELOPE_KEYS = ("kind", "format", "created_utc", "machine", "versions", "inputs")
"""The envelope's fields, in the order they lead every report."""


def file_input(path: Path) -> dict[str, Any]:
    """An ``inputs`` entry: the path as given, the sha256 of its bytes and their count."""
    h = hashlib.sha256()
    n = 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            n += len(block)
    return {"path": str(path), "sha256": h.hexdigest(), "bytes": n}


def utc_now(t: float | None = None) -> str:
    """ISO 8601 UTC time stamp with seconds (``2026-11-30T14:02:11Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


def envelope(kind: str, fmt: str, inputs: Mapping[str, Path | Mapping[str, Any]],
             versions: Mapping[str, str | None] | None = None, created: float | None = None) -> dict[str, Any]:
    """The envelope of a report of ``kind`` in layout ``fmt``.

    ``inputs`` maps a role (``workload``, ``prompts``…) to a file (hashed here) or to an entry already
    made (e.g. a folder's digest). ``versions`` adds to or overrides the library versions of this process
    (a peer tool that ran in its own virtualenv reports its own). Raises ``OSError`` if an input cannot
    be read: a report never names an input it could not hash.
    """
    if not kind or not fmt:
        raise ValueError("a report needs a kind and a format")
    ins = {role: file_input(v) if isinstance(v, Path) else dict(v) for role, v in inputs.items()}
    vers: dict[str, Any] = dict(library_versions())
    vers.update(versions or {})
    return {"kind": kind, "format": fmt, "created_utc": utc_now(created), "machine": machine_facts(),
            "versions": vers, "inputs": ins}
