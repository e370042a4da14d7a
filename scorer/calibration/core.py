"""Calibration files and their application to records: the ``calibrated`` block.

A calibration maps a record's raw option logits ``z`` to calibrated logits ``c = z / T - b`` where ``b``
holds one offset per option (aligned by option id) and ``T`` a temperature (1 for priors). For a
prior, ``b = ln(prior)``, so ``softmax(c)`` is the raw distribution divided by the prior and
renormalised ("batch calibration", Zhou et al. 2023; "contextual calibration", Zhao et al. 2021).

Entries are looked up, most specific first:

1. ``signature``: fitted on rows of exactly this decision signature (:mod:`scorer.formats.signature`);
2. ``family``: fitted on the rows of one ``extra.family`` (priors: only rows with the same ordered
   option ids; bias: offsets per option id shared across the family's questions);
3. ``options``: fitted on every row with the same ordered option ids, whatever its family (priors with
   ``--fallback pooled`` only);
4. ``global``: offsets per option id over all rows of the model and readout (bias files, and priors with
   ``--fallback pooled``: :func:`scorer.calibration.prior.estimate_pooled`).

Offsets of fallback entries are per option id; an option id the fit never saw gets offset 0 (the
regularisation's centre) and the block counts it in ``unseen_option_ids``. A record whose model
identity is not in the file, or whose signature no level covers, is refused with an error naming the
file and the signature. A signature the fit saw with too few rows and no fallback gets a block with
``applied: false`` and the reason: its calibrated numbers equal the raw ones.

**Which choice to use.** A record's top-level ``choice``/``probabilities``/``margin`` are always the
raw model readout and are never modified. When a record carries a ``calibrated`` block, a consumer
that asked for calibration uses ``record["calibrated"]["choice"]`` (and its ``probabilities``,
``margin``, ``tie``); the block has the same fields as the top level, so
``record.get("calibrated", record)["choice"]`` is the decision in every case.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scorer.core.errors import InputError
from scorer.core.hashing import sha256_hex
from scorer.core.io import write_atomic
from scorer.decision.readout import resolution
from scorer.formats.envelope import carried_inputs, make_report, report_bytes
from scorer.formats.signature import describe_identity, identity_sha256, model_identity, readout_of

CALIBRATION_FORMAT = "semif-calibration-v2"
"""The file's format: the report envelope (``kind`` = the method), then the fit. Files of the layout before it
(``"schema": "semif-calibration-v1"``, no envelope) still load: they are inputs, and records cite their sha256."""
_CALIBRATION_V1 = "semif-calibration-v1"
METHODS = ("prior", "bias")
LEVELS = ("signature", "family", "options", "global")
# Logit dtypes whose resolution decides a calibrated tie; anything else (e.g. a GGUF quant name) is float32.
_DTYPES = ("float32", "bfloat16", "float16", "float64")


@dataclass(frozen=True)
class Entry:
    """One fitted calibration: offsets per option id (and a temperature) for one lookup key."""

    level: str
    """``signature``, ``family``, ``options`` or ``global`` (module docstring)."""
    model: str
    """sha256 of the model identity the entry was fitted on (:func:`identity_sha256`)."""
    readout: str
    """``plain`` or ``permute-K``: entries never cross readouts."""
    offsets: dict[str, float]
    """Offset subtracted from each option's (temperature-scaled) logit, by option id."""
    temperature: float
    """Divides the raw logits before the offsets are subtracted (1 for priors)."""
    rows: int
    """Scored rows the entry was estimated or fitted on."""
    signature: str | None = None
    """The decision signature (``signature`` level only)."""
    family: str | None = None
    """The ``extra.family`` (``family`` level only)."""
    option_ids: tuple[str, ...] | None = None
    """Ordered option ids a record must have to use the entry; ``None``: any ids (bias fallbacks)."""
    question: str | None = None
    """The question text, when the fit knew it (for readers of the file; not used to match)."""
    prior: tuple[float, ...] | None = None
    """Priors only: the estimated option prior, in ``option_ids`` order (``softmax(-offsets)`` reversed)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "model": self.model, "readout": self.readout,
                               "offsets": self.offsets, "temperature": self.temperature, "rows": self.rows}
        for k in ("signature", "family", "question"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.option_ids is not None:
            out["option_ids"] = list(self.option_ids)
        if self.prior is not None:
            out["prior"] = list(self.prior)
        return out


@dataclass(frozen=True)
class Skipped:
    """A signature the fit saw but did not calibrate (too few rows)."""

    signature: str
    """The decision signature."""
    model: str
    """sha256 of its model identity."""
    rows: int
    """Rows it had."""
    reason: str
    """Why it was left uncalibrated, e.g. ``3 rows < --min-rows 8``."""


@dataclass
class Calibration:
    """A loaded or freshly fitted calibration (a ``semif-calibration-v2`` file, or a v1 file)."""

    method: str
    """``prior`` (label-free) or ``bias`` (fitted on labels)."""
    estimator: str
    """How the entries were obtained, e.g. ``mean``, ``geometric``, ``content-free``, ``nll-offsets``."""
    models: dict[str, dict[str, Any]]
    """Model identities the file holds entries for, by their sha256."""
    entries: list[Entry]
    """Every fitted entry."""
    uncalibrated: list[Skipped] = field(default_factory=list)
    """Signatures seen but left uncalibrated."""
    source: dict[str, Any] = field(default_factory=dict)
    """What a calibrated block cites: ``{"kind": "file", "path", "sha256"}`` or ``{"kind": "in-run", …}``."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Everything else the file's body says (runs, labels, ``row_files``, options, evaluation); carried, not
    interpreted. The envelope of a loaded file is not kept: writing the calibration again makes a new one."""

    def __post_init__(self) -> None:
        self._by_sig = {e.signature: e for e in self.entries if e.level == "signature"}
        self._by_fam: dict[tuple[str, str, str], list[Entry]] = {}
        for e in self.entries:
            if e.level == "family":
                self._by_fam.setdefault((e.model, e.readout, str(e.family)), []).append(e)
        self._by_options = {(e.model, e.readout, e.option_ids): e for e in self.entries if e.level == "options"}
        self._global = {(e.model, e.readout): e for e in self.entries if e.level == "global"}
        self._skipped = {s.signature: s for s in self.uncalibrated}

    # --- lookup and application -----------------------------------------------------------------------------
    def _where(self) -> str:
        return str(self.source.get("path") or "in-run calibration")

    def check_model(self, model: dict[str, Any]) -> str:
        """The sha256 of ``model``'s identity, or an error when the file holds nothing for that model."""
        ident = model_identity(model)
        sha = identity_sha256(ident)
        if sha not in self.models:
            have = "; ".join(describe_identity(m) for m in self.models.values()) or "none"
            raise InputError(self._where(), None, "models",
                             f"no calibration for model {describe_identity(ident)} (identity {sha[:12]}); "
                             f"the file was fitted on: {have}",
                             "a calibration fitted on records of this very model, backend and dtype")
        return sha

    def lookup(self, signature: str, model_sha: str, readout: str, family: str | None,
               option_ids: list[str]) -> Entry | Skipped:
        """The entry that applies to a decision (most specific level first), a :class:`Skipped` when the
        signature was seen but left uncalibrated, or an error naming the file and the signature."""
        e = self._by_sig.get(signature)
        if e is not None:
            return e
        if family is not None:
            for f in self._by_fam.get((model_sha, readout, family), []):
                if f.option_ids is None or list(f.option_ids) == option_ids:
                    return f
        o = self._by_options.get((model_sha, readout, tuple(option_ids)))
        if o is not None:
            return o
        g = self._global.get((model_sha, readout))
        # A prior's global offsets are relative to a uniform guess (0: no bias): one that knows none of these
        # options would apply nothing, so it does not cover them. A bias entry still brings its temperature.
        if g is not None and (self.method != "prior" or any(o in g.offsets for o in option_ids)):
            return g
        s = self._skipped.get(signature)
        if s is not None:
            return s
        raise InputError(self._where(), None, "entries",
                         f"no calibration for signature {signature} (readout {readout}, family {family!r}, "
                         f"options {option_ids})",
                         "a calibration fitted on rows with this question and these options, or a family/global "
                         "fallback that covers them; or score such rows with their raw numbers, flagged as "
                         "uncovered: --uncovered raw (semif score, ask, serve), on_uncovered='raw' (Python API)")

    def apply(self, record: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
        """A copy of ``record`` with a ``calibrated`` block; its raw fields are left exactly as they were.

        ``signature`` defaults to the record's own ``signature`` field (v1 records have none: compute it
        with :func:`scorer.formats.signature.record_signatures`)."""
        sig = signature or record.get("signature")
        if not sig:
            raise InputError(str(record.get("id")), None, "signature", "missing",
                             "a record with a signature (record schema v2), or pass the signature")
        model_sha = self.check_model(record.get("model") or {})
        fam = (record.get("extra") or {}).get("family")
        ids = list(record["option_ids"])
        hit = self.lookup(sig, model_sha, readout_of(record), None if fam is None else str(fam), ids)
        out = dict(record)
        out["calibrated"] = self.block(record, hit, sig)
        return out

    def block(self, record: dict[str, Any], hit: Entry | Skipped, signature: str) -> dict[str, Any]:
        """The ``calibrated`` block of ``record`` under ``hit`` (see the module docstring)."""
        z = np.asarray(record["option_logits"], dtype=np.float64)
        ids = list(record["option_ids"])
        base = {"method": self.method, "estimator": self.estimator, "signature": signature,
                "source": dict(self.source)}
        if isinstance(hit, Skipped):
            raw = readout_block(z, ids, _tie_tol(record, z, 1.0))
            return {**base, "applied": False, "reason": hit.reason, "level": None, "rows": hit.rows,
                    "temperature": 1.0, "offsets": [0.0] * len(ids), "unseen_option_ids": [], **raw}
        offs = np.array([hit.offsets.get(o, 0.0) for o in ids], dtype=np.float64)
        unseen = [o for o in ids if o not in hit.offsets]
        c = z / hit.temperature - offs
        return {**base, "applied": True, "level": hit.level, "rows": hit.rows, "temperature": hit.temperature,
                "offsets": [float(v) for v in offs], "unseen_option_ids": unseen,
                **readout_block(c, ids, _tie_tol(record, z, hit.temperature))}

    def apply_all(self, records: Iterable[dict[str, Any]],
                  signatures: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """:meth:`apply` over records (with their own signatures, or the given ones in the same order)."""
        if signatures is None:
            for r in records:
                yield self.apply(r)
        else:
            for r, s in zip(records, signatures, strict=True):
                yield self.apply(r, s)

    # --- file I/O -------------------------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:
        """The fit as a file body (everything but the envelope)."""
        return {"method": self.method, "estimator": self.estimator,
                "models": self.models, "entries": [e.to_json() for e in self.entries],
                "uncalibrated": [{"signature": s.signature, "model": s.model, "rows": s.rows, "reason": s.reason}
                                 for s in self.uncalibrated],
                **self.meta}

    def to_json(self) -> dict[str, Any]:
        """The whole ``semif-calibration-v2`` document: the envelope made now (its inputs are the files the
        body cites: runs, labels, row files), then :meth:`body`."""
        body = self.body()
        return make_report(self.method, CALIBRATION_FORMAT, carried_inputs(body), body)


def readout_block(c: np.ndarray, ids: list[str], tol: float) -> dict[str, Any]:
    """Probabilities, choice, margin and tie of the (calibrated) logits ``c``; a tie (top two within
    ``tol``) has choice ``None``, never option A."""
    s = c - c.max()
    p = np.exp(s) / np.exp(s).sum()
    order = np.argsort(-c, kind="stable")
    tied = sorted(int(i) for i in order if c[order[0]] - c[i] <= tol)
    tie = len(tied) > 1
    return {"probabilities": [float(v) for v in p], "option_logits": [float(v) for v in c],
            "choice": None if tie else ids[int(order[0])], "margin": float(p[order[0]] - p[order[1]]),
            "tie": tie, "tied_option_ids": [ids[i] for i in tied] if tie else []}


def _tie_tol(record: dict[str, Any], z: np.ndarray, temperature: float) -> float:
    """Resolution of the raw logits (in the dtype they were computed in), scaled like the logits: two
    calibrated logits closer than that are not distinguishable."""
    m = record.get("model") or {}
    dtype = m.get("logits_dtype") or m.get("dtype")
    dtype = dtype if dtype in _DTYPES else "float32"
    return resolution(float(np.abs(z).max()), dtype) / temperature


def choice_of(record: dict[str, Any]) -> str | None:
    """The decision a consumer should use: the calibrated choice when the record has a calibrated block,
    else the raw one."""
    return record.get("calibrated", record)["choice"]


# --- reading and writing files ------------------------------------------------------------------------------------
def write_calibration(cal: Calibration, path: Path, force: bool = False) -> str:
    """Write ``cal`` to ``path`` atomically (never over an existing file unless ``force``). Returns its sha256."""
    data = report_bytes(cal.to_json())
    write_atomic(path, data, force)
    return sha256_hex(data)


def _num(v: Any, path: str, where: str, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise InputError(path, None, where, f"{v!r} is not a finite number", "a finite number")
    if positive and not float(v) > 0:
        raise InputError(path, None, where, f"{v!r} is not > 0", "a finite number > 0")
    return float(v)


def _str(v: Any, path: str, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise InputError(path, None, where, f"{v!r} is not a non-empty string", "a non-empty string")
    return v


def _entry(raw: Any, path: str, i: int, models: dict[str, Any]) -> Entry:
    w = f"entries[{i}]"
    if not isinstance(raw, dict):
        raise InputError(path, None, w, f"a {type(raw).__name__}", "an object")
    level = raw.get("level")
    if level not in LEVELS:
        raise InputError(path, None, f"{w}.level", f"{level!r}", f"one of {', '.join(LEVELS)}")
    model = _str(raw.get("model"), path, f"{w}.model")
    if model not in models:
        raise InputError(path, None, f"{w}.model", f"{model[:12]}… is not in the file's models", "a key of models")
    offs = raw.get("offsets")
    if not isinstance(offs, dict) or not offs:
        raise InputError(path, None, f"{w}.offsets", f"{offs!r}", "an object option id -> finite number")
    offsets = {str(k): _num(v, path, f"{w}.offsets.{k}") for k, v in offs.items()}
    rows = raw.get("rows")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise InputError(path, None, f"{w}.rows", f"{rows!r}", "an integer >= 0")
    ids = raw.get("option_ids")
    if ids is not None and (not isinstance(ids, list) or sorted(map(str, ids)) != sorted(offsets)):
        raise InputError(path, None, f"{w}.option_ids", f"{ids!r} do not match the offsets' ids {sorted(offsets)}",
                         "the same option ids as offsets")
    sig = raw.get("signature")
    if level == "signature":
        sig = _str(sig, path, f"{w}.signature")
        if ids is None:
            raise InputError(path, None, f"{w}.option_ids", "missing", "the signature's ordered option ids")
    fam = raw.get("family")
    if level == "family":
        fam = _str(fam, path, f"{w}.family")
    if level == "options" and ids is None:
        raise InputError(path, None, f"{w}.option_ids", "missing", "the ordered option ids the entry's rows had")
    prior = raw.get("prior")
    if prior is not None:
        prior = tuple(_num(v, path, f"{w}.prior") for v in prior)
    return Entry(level, model, _str(raw.get("readout"), path, f"{w}.readout"), offsets,
                 _num(raw.get("temperature", 1.0), path, f"{w}.temperature", positive=True), rows,
                 sig, fam, None if ids is None else tuple(map(str, ids)), raw.get("question"), prior)


# Fields of a file that are not carried in :attr:`Calibration.meta`: the envelope (old and new) and the fit.
_NOT_META = ("schema", "kind", "format", "created_utc", "machine", "versions", "inputs", "migrated_from",
             "method", "estimator", "models", "entries", "uncalibrated")


def load_calibration(path: str | Path) -> Calibration:
    """Read and validate a calibration file (``semif calibrate prior|bias --output``).

    Every problem — missing file, broken JSON (NaN and infinities are not JSON), another schema
    version, a non-finite or missing number — is an :class:`InputError` naming the file and field
    (the command line prints it on one line and exits 2)."""
    p = Path(path)
    name = str(path)
    if not p.is_file():
        raise InputError(name, None, None, "file not found", "a calibration file written by semif calibrate prior|bias")
    data = p.read_bytes()
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(name, None, None, f"invalid JSON ({exc})",
                         "a calibration file written by semif calibrate prior|bias") from None
    if not isinstance(doc, dict):
        raise InputError(name, None, None, f"a JSON {type(doc).__name__}", "a JSON object")
    if "schema" in doc:  # the layout before the envelope
        if doc["schema"] != _CALIBRATION_V1:
            raise InputError(name, None, "schema", f"{doc['schema']!r}",
                             f'"format": "{CALIBRATION_FORMAT}" (or a v1 file\'s "schema": "{_CALIBRATION_V1}")')
    elif doc.get("format") != CALIBRATION_FORMAT:
        raise InputError(name, None, "format", f"{doc.get('format')!r}", f'"{CALIBRATION_FORMAT}"')
    if doc.get("method") not in METHODS:
        raise InputError(name, None, "method", f"{doc.get('method')!r}", f"one of {', '.join(METHODS)}")
    if "schema" not in doc and doc.get("kind") != doc["method"]:
        raise InputError(name, None, "kind", f"{doc.get('kind')!r}", f"the method, {doc['method']!r}")
    models = doc.get("models")
    if not isinstance(models, dict) or not models:
        raise InputError(name, None, "models", f"{models!r}", "an object: identity sha256 -> model identity")
    for k, v in models.items():
        if not isinstance(v, dict) or identity_sha256(v) != k:
            raise InputError(name, None, f"models.{k[:12]}", "the key is not the sha256 of its identity",
                             "models written by semif calibrate")
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, list):
        raise InputError(name, None, "entries", f"{raw_entries!r}", "a list of entries")
    entries = [_entry(e, name, i, models) for i, e in enumerate(raw_entries)]
    skipped = []
    for i, s in enumerate(doc.get("uncalibrated") or []):
        if not isinstance(s, dict):
            raise InputError(name, None, f"uncalibrated[{i}]", f"a {type(s).__name__}", "an object")
        skipped.append(Skipped(_str(s.get("signature"), name, f"uncalibrated[{i}].signature"),
                               _str(s.get("model"), name, f"uncalibrated[{i}].model"), int(s.get("rows", 0)),
                               str(s.get("reason", ""))))
    if not entries and not skipped:
        raise InputError(name, None, "entries", "empty", "at least one entry")
    meta = {k: v for k, v in doc.items() if k not in _NOT_META}
    return Calibration(doc["method"], str(doc.get("estimator", "")), models, entries, skipped,
                       {"kind": "file", "path": name, "sha256": sha256_hex(data)}, meta)
