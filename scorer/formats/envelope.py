"""The common report envelope: what every result report says about itself, whatever it measured.

A report is a JSON object whose top level starts with the envelope's fields and continues with the
report's own body::

    {"kind": "peers", "format": "semif-peers-v1", "created_utc": "2026-11-30T14:02:11Z",
     "machine": {...}, "versions": {...}, "inputs": {"workload": {"path": ..., "sha256": ..., "bytes": ...}},
     ...body...}

* ``kind`` names what was measured (the site draws a report by its kind);
* ``format`` is the versioned layout of the body (a reader refuses a format it does not know);
* ``created_utc`` is when the report was made (ISO 8601, seconds, UTC);
* ``machine`` and ``versions`` come from :mod:`scorer.core.machine` (in a migrated report: what the old one
  recorded, or a ``note`` that it recorded none);
* ``inputs`` names every file the numbers depend on, with its sha256, so a reader can tell whether a
  re-run used the same bytes. Each entry is ``{"path", "sha256"}`` (``bytes`` when hashed here). A
  migrated report cites the sha256 the old report recorded when it was made (the file may have changed
  or gone since); an input whose sha256 was never recorded has ``"sha256": null`` and a ``note``;
* ``migrated_from`` (only in a report rewritten into the envelope by ``scripts/migrate_reports.py``)
  gives the ``sha256`` and ``format`` of the bytes it was migrated from, so a record or trace that cites
  the old file's sha256 can still be traced to it.

:data:`KINDS` lists every report kind and its current format. A report is written with
:func:`write_report` (create-only unless overwriting was asked for, atomic: :mod:`scorer.core.io`).

Plain data only: nothing here imports torch or a backend.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.core.io import FORCE_HINT, write_atomic
from scorer.core.machine import library_versions, machine_facts

ENVELOPE_KEYS = ("kind", "format", "created_utc", "machine", "versions", "inputs")
"""The envelope's fields, in the order they lead every report."""

KINDS: dict[str, str] = {
    "bench": "semif-bench-v2",  # semif bench shape
    "quant": "semif-quant-v2",  # semif quant
    "quant-schemes": "semif-quant-schemes-v1",  # semif quant --schemes
    "requant-grid": "semif-requant-grid-v1",  # benchmarks/requant_grid.py (reads quant-schemes reports' GGUFs)
    "compare": "semif-compare-v2",  # semif compare
    "drift": "semif-drift-v2",  # semif drift (also an input of --exact)
    "eval": "semif-eval-v2",  # semif eval
    "calibrate": "semif-eval-v2",  # semif calibrate temperature
    "calibration": "semif-eval-v2",  # semif calibrate report
    "order": "semif-eval-v2",  # semif order
    "route": "semif-eval-v2",  # semif route
    "route-threshold": "semif-eval-v2",  # semif route --threshold-output (read by semif score --escalate-below)
    "abstain-thresholds": "semif-thresholds-v1",  # semif calibrate thresholds (read by --policy T.json, Policy)
    "prior": "semif-calibration-v2",  # semif calibrate prior (also an input of --calibration)
    "bias": "semif-calibration-v2",  # semif calibrate bias (also an input of --calibration)
    "peers": "semif-peers-v1",  # benchmarks/peers
    "cache-verify": "semif-cache-verify-v1",  # benchmarks/cache_verify.py
    "ray-scale": "semif-ray-scale-v2",  # benchmarks/ray_scale.py
    "serve-load": "semif-serve-load-v2",  # benchmarks/serve_load.py
    "serve-batching": "semif-serve-batching-v1",  # benchmarks/serve_batching.py
    "grammar-mask-probe": "semif-grammar-mask-probe-v1",  # benchmarks/grammar-mask-probe.py
    "engines": "semif-engines-v1",  # benchmarks/engines.py
    "quality-study": "semif-quality-study-v1",  # benchmarks/quality_study.py
    "preset": "semif-preset-v1",  # benchmarks/quality_study.py --write-preset (read by scorer.scoring.presets)
    "agent-example": "semif-agent-example-v1",  # benchmarks/agent_example.py (examples/agent.py, docs/python-api.md)
    "confidence": "semif-confidence-v4",  # benchmarks/confidence_reliability.py (the curves, judged on labels)
    "single-request-study": "semif-single-request-study-v1",  # benchmarks/single_request_study.py
    "decision-latency": "semif-decision-latency-v1",  # benchmarks/decision_latency.py (/v1/systemone vs peers)
    "single-request-peer": "semif-single-request-peer-v1",  # benchmarks/single_request_peer.py (SemIf vs typed-gguf)
    "label-free-selection": "semif-label-free-selection-v1",  # benchmarks/label_free_selection.py (auto's picks)
    "llamacpp-batch-probe": "semif-llamacpp-batch-probe-v2",  # benchmarks/llamacpp_batch_probe.py (batch-shape drift)
    "busy": "semif-busy-v1",  # benchmarks/busy.py (slowdown beside a CPU-bound background job, SemIf and typed-gguf)
}
"""Every report kind and the format its writer writes now."""


def file_input(path: Path) -> dict[str, Any]:
    """An ``inputs`` entry: the path as given, the sha256 of its bytes and their count."""
    return {"path": str(path), "sha256": sha256_file(path), "bytes": path.stat().st_size}


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


# Pairs of (path field, sha256 field) by which a report body cites a file it read.
_CITATIONS = (("path", "sha256"), ("drift_report", "drift_report_sha256"))


def carried_inputs(body: Any, where: str = "") -> dict[str, dict[str, Any]]:
    """Every file ``body`` cites with its sha256 (``{"path", "sha256"}``, or a ``drift_report`` and its
    ``drift_report_sha256``), as ``inputs`` entries keyed by where the citation sits (``run``,
    ``plain.reversed``, ``runs[0]``…), in body order.

    The writers build their ``inputs`` from the body with this, and so does the migration of old reports,
    so a report says the same about its inputs whether it was written now or migrated.
    """
    out: dict[str, dict[str, Any]] = {}
    if isinstance(body, dict):
        for path_key, sha_key in _CITATIONS:
            path, sha = body.get(path_key), body.get(sha_key)
            if isinstance(path, str) and (isinstance(sha, str) or (sha is None and sha_key in body)):
                role = where if path_key == "path" else f"{where}.{path_key}".lstrip(".")
                out[role or path_key] = {"path": path, "sha256": sha} if sha else {
                    "path": path, "sha256": None, "note": "the report did not record this file's sha256"}
        for k, v in body.items():
            out.update(carried_inputs(v, f"{where}.{k}" if where else str(k)))
    elif isinstance(body, list):
        for i, v in enumerate(body):
            out.update(carried_inputs(v, f"{where}[{i}]"))
    return out


def make_report(kind: str, fmt: str, inputs: Mapping[str, Path | Mapping[str, Any]], body: Mapping[str, Any],
                versions: Mapping[str, str | None] | None = None, created: float | None = None) -> dict[str, Any]:
    """A whole report: the envelope (:func:`envelope`), then ``body`` in its own order.

    Raises ``ValueError`` if ``body`` holds an envelope field (it would silently replace the envelope's).
    """
    clash = [k for k in body if k in ENVELOPE_KEYS]
    if clash:
        raise ValueError(f"a report body may not hold the envelope's fields {clash}")
    return {**envelope(kind, fmt, inputs, versions, created), **body}


def report_bytes(report: Mapping[str, Any]) -> bytes:
    """A report file's bytes: 2-space indented JSON (numpy values as plain numbers) and a newline."""
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def write_report(path: Path, report: Mapping[str, Any], overwrite: bool = False, hint: str = FORCE_HINT) -> None:
    """Write ``report`` to ``path`` atomically; an existing file is refused unless ``overwrite``
    (:func:`scorer.core.io.write_atomic`, ``hint`` completes the refusal)."""
    write_atomic(path, report_bytes(report), overwrite, hint)


def read_json_file(path: Path, expected: str) -> tuple[bytes, dict[str, Any]]:
    """The bytes and the JSON object of a report-like input file; a missing file, broken JSON or another JSON value
    is an :class:`~scorer.core.errors.InputError` naming the file and saying what was ``expected``."""
    where = str(path)
    if not path.is_file():
        raise InputError(where, None, None, "file not found", expected)
    data = path.read_bytes()
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(where, None, None, f"invalid JSON ({exc})", expected) from None
    if not isinstance(doc, dict):
        raise InputError(where, None, None, f"a JSON {type(doc).__name__}", f"a JSON object: {expected}")
    return data, doc


def envelope_problems(obj: Any) -> list[str]:
    """What is wrong with ``obj``'s envelope (empty: a well-formed report of a known kind)."""
    if not isinstance(obj, dict):
        return [f"a report is a JSON object, not a {type(obj).__name__}"]
    problems = []
    lead = list(obj)[: len(ENVELOPE_KEYS)]
    if lead != list(ENVELOPE_KEYS):
        problems.append(f"the report must start with {list(ENVELOPE_KEYS)}, not {lead}")
    kind = obj.get("kind")
    if kind not in KINDS:
        problems.append(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    elif obj.get("format") != KINDS[kind]:
        problems.append(f"format {obj.get('format')!r} (a {kind} report is {KINDS[kind]!r})")
    created = obj.get("created_utc")
    if not isinstance(created, str) or len(created) != 20 or not created.endswith("Z"):
        problems.append(f"created_utc {created!r} (expected e.g. 2026-11-30T14:02:11Z)")
    for key in ("machine", "versions", "inputs"):
        if not isinstance(obj.get(key), dict):
            problems.append(f"{key} must be an object")
    for role, entry in (obj.get("inputs") or {}).items() if isinstance(obj.get("inputs"), dict) else ():
        if not isinstance(entry, dict) or "path" not in entry or "sha256" not in entry:
            problems.append(f"inputs.{role} must have a path and a sha256")
        elif entry["sha256"] is None and not entry.get("note"):
            problems.append(f"inputs.{role} has no sha256 and no note saying why")
    return problems
