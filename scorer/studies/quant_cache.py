"""The cache of ``semif quant --schemes`` outputs: one verified folder per (reference, scheme, recipe, calibration).

Each output (a re-quantized GGUF, a compressed-tensors checkpoint) lives in ``<cache>/quant-v1/<key>/``, where
``key`` is the sha256 of the canonical JSON of its inputs (:class:`EntryKey`): the sha256 of the fp32 reference it
was made from, the scheme, the recipe as data and the calibration text's sha256. Any change to one of them is
another folder, never a stale hit. The folder is built whole under a temporary name and renamed into place, with a
manifest of every file's size and digest (:func:`scorer.models.store.build_verified`, the fp32 cache's machinery) and
:data:`scorer.models.store.QUANT_META` stating the inputs; on every use it is checked against both, and a folder that
differs (a tampered or truncated file, an added file, a meta naming other inputs) is refused with a
:class:`ModelError` naming the file, before anything is scored from it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer.core.errors import ModelError
from scorer.core.hashing import canonical_sha256
from scorer.models import store


@dataclass(frozen=True)
class EntryKey:
    """What one cached output is a function of."""

    reference_sha256: str
    """sha256 of the fp32 reference it was made from (the F32 GGUF for llama.cpp types, the fp32 checkpoint's
    manifest, which pins every file of it, for llm-compressor schemes)."""
    scheme: str
    """``gguf:Q8_0``, ``w8a8``, ``awq-w4a16``, ``gptq-w4a16``…"""
    recipe: dict[str, Any]
    """The recipe as data (tool, modifiers or llama.cpp type, calibration sizes)."""
    calibration_sha256: str | None
    """sha256 of the calibration text (None for schemes that use none)."""

    def inputs(self) -> dict[str, Any]:
        return {"reference_sha256": self.reference_sha256, "scheme": self.scheme, "recipe": self.recipe,
                "calibration_sha256": self.calibration_sha256}

    def digest(self) -> str:
        return canonical_sha256(self.inputs())


@dataclass(frozen=True)
class Entry:
    """A verified cache folder and what its meta says."""

    folder: Path
    meta: dict[str, Any]
    reused: bool
    """It existed before this run (nothing was produced)."""


def _check_meta(folder: Path, key: EntryKey) -> dict[str, Any]:
    path = folder / store.QUANT_META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ModelError(f"{path}: missing or not JSON; the quantized cache folder is refused "
                         f"(rm -r '{folder}' and rerun to rebuild it)") from None
    if not isinstance(meta, dict) or meta.get("inputs") != key.inputs():
        raise ModelError(f"{path}: names inputs {meta.get('inputs') if isinstance(meta, dict) else meta!r}, not "
                         f"{key.inputs()}; the quantized cache folder is refused (rm -r '{folder}' and rerun)")
    return meta


def load(key: EntryKey) -> Entry | None:
    """The verified folder of ``key``, or None when there is none; a ModelError when it exists but differs."""
    folder = store.quant_dir(key.digest())
    if not folder.exists():
        return None
    store.verify_manifest(folder, key.digest())
    return Entry(folder, _check_meta(folder, key), True)


def ensure(key: EntryKey, produce: Callable[[Path], dict[str, Any]]) -> Entry:
    """The verified folder of ``key``: reused (and checked) when cached, else built with ``produce(tmp)``, which
    writes the output files into ``tmp`` and returns facts about the making (seconds, versions) for the meta."""
    got = load(key)
    if got is not None:
        return got

    def build(tmp: Path) -> None:
        facts = produce(tmp)
        meta = {"inputs": key.inputs(), "scheme": key.scheme, "key": key.digest(),
                "created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "produced": facts}
        (tmp / store.QUANT_META).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    folder = store.build_verified(store.quant_dir(key.digest()), key.digest(), f"quantized {key.scheme}", build)
    return Entry(folder, _check_meta(folder, key), False)


def weight_bytes(folder: Path) -> int:
    """Bytes of the folder's weight files (what a scheme costs on disk)."""
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file() and f.name.endswith(store.WEIGHT_SUFFIXES))
