"""The trace formats' names, canonical JSON and checksums, and their published JSON Schemas.

Checksums are sha256 over *canonical JSON*: UTF-8, object keys sorted, no whitespace, numbers as
orjson writes them (``orjson.dumps(x, option=OPT_SORT_KEYS)``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scorer.core.hashing import canonical_json, canonical_sha256, sha256_text
from scorer.formats.json_schemas import load_schema

TRACE_FORMAT = "semif-trace-v1"
TRACE_FORMAT_V2 = "semif-trace-v2"
FORMATS = (TRACE_FORMAT, TRACE_FORMAT_V2)
GENERATED_PATHS = {TRACE_FORMAT: ("generated",), TRACE_FORMAT_V2: ("free", "constrained")}
TYPED_EVENTS = ("encoded", "prefill_done", "suffix_done", "decisions_available")
GENERATED_EVENTS = ("encoded", "first_token", "done")
ANSWERS = ("yes", "no")
_MAX_SCHEMA_ERRORS = 20


# --- names ---------------------------------------------------------------------------------------------
def _safe(name: str) -> str:
    """A file-name-safe form of ``name`` that tells names apart: a name that is already safe stays as it is;
    any other (a path, a hub id, a space, a trailing ``~``) is shortened to its safe base name plus 8 hex digits
    of its sha256, so no two names share a part of ``experiment.id`` and an edit of ``inputs.id`` or
    ``model.key`` that the shortening alone would hide is still refused by verify."""
    short = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name).strip("-") or "model"
    if short == name:
        return name
    return f"{short}-{sha256_text(name)[:8]}"


def trace_name(input_id: str, model_key: str, backend: str, device: str) -> str:
    """``versus-<input>-<model>-<backend>-<device>.json``."""
    return f"versus-{_safe(input_id)}-{_safe(model_key)}-{_safe(backend)}-{_safe(device)}.json"


def experiment_id(input_id: str, model_key: Any, backend: Any, device: Any, created_utc: str) -> str:
    """``experiment.id``: the trace's name (without ``.json``) and the creation time, ``…-20261130T140352Z``."""
    stamp = created_utc.replace("-", "").replace(":", "")
    return f"{trace_name(input_id, str(model_key), str(backend), str(device))[:-5]}-{stamp}"


# --- canonical JSON and checksums ------------------------------------------------------------------
canonical = canonical_json
"""Canonical JSON bytes (:func:`scorer.core.hashing.canonical_json`): what every checksum is taken over."""
sha256_json = canonical_sha256
"""The sha256 of an object's canonical JSON (:func:`scorer.core.hashing.canonical_sha256`)."""


def inputs_digest(inputs: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the inputs' identity: ``{id, state, criteria}``."""
    return sha256_json({"id": inputs["id"], "state": inputs["state"], "criteria": inputs["criteria"]})


def checksums(trace: dict[str, Any]) -> dict[str, str]:
    """The checksums block for ``trace`` (its own checksums block is ignored)."""
    body = {k: v for k, v in trace.items() if k != "checksums"}
    return {"inputs_sha256": inputs_digest(trace["inputs"]), "runs_sha256": sha256_json(trace["runs"]),
            "content_sha256": sha256_json(body)}


def schema(fmt: str = TRACE_FORMAT) -> dict[str, Any]:
    """The published JSON Schema of a format (``semif-trace-v1`` → ``schema/trace-v1.json``)."""
    return load_schema(fmt)


def schema_errors(trace: Any) -> list[str]:
    """Schema violations as ``at <json path>: <message>`` lines (empty when the trace conforms); the schema is
    the one of the trace's own ``format`` (v1 when it names none we know, so the format error shows)."""
    import jsonschema

    got = trace.get("format") if isinstance(trace, dict) else None
    fmt = got if isinstance(got, str) and got in FORMATS else TRACE_FORMAT
    validator = jsonschema.Draft202012Validator(schema(fmt))
    out = []
    for err in sorted(validator.iter_errors(trace), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"at {where}: {err.message[:300]}")
        if len(out) >= _MAX_SCHEMA_ERRORS:
            out.append("… (more schema errors not shown)")
            break
    return out
