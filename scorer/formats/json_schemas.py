"""The published JSON Schemas (``scorer/formats/schemas/``: rows, records, traces, the quality study's report), read
as package data: the one loader every reader of a schema uses, so they work from an installed wheel as from the
checkout. Each file is read once per process."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import orjson

SCHEMAS = resources.files("scorer.formats") / "schemas"
"""The folder of the schema files (inside the installed package)."""


@functools.cache
def _schema_bytes(name: str) -> bytes:
    path = SCHEMAS / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"no published schema {name!r} (expected one of {', '.join(names())})")
    return path.read_bytes()


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (``row-v1``, ``record-v2``, ``trace-v2``…; a ``semif-`` prefix is dropped), a fresh
    copy the caller may change."""
    return orjson.loads(_schema_bytes(name.removeprefix("semif-")))


def names() -> list[str]:
    """Every published schema, by name."""
    return sorted(p.name.removesuffix(".json") for p in SCHEMAS.iterdir() if p.name.endswith(".json"))


def guide(name: str) -> str:
    """A schema's guide for people (``trace-v2`` → ``schemas/trace-v2.md``)."""
    return (SCHEMAS / f"{name.removeprefix('semif-')}.md").read_text(encoding="utf-8")
