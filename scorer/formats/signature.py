"""Decision signatures: a stable hash of what makes decisions comparable for calibration.

Two decisions share a signature when the model saw the same question with the same lettered options
under the same prompt version, from the same weights read the same way. Calibration statistics (an
option prior, fitted offsets) are only ever pooled over, and applied to, rows of one signature (or an
explicit, recorded fallback level).

The signature is ``sha256`` of the canonical JSON (sorted keys, no spaces, UTF-8) of::

    {"signature": "semif-signature-v1",
     "prompt_version": "semif-direct-v1",
     "question": "<question text, exactly as in the input>",
     "options": [["<id>", "<description>"], ...],          # in the order they were lettered A, B, …
     "model": <model identity, below>,
     "readout": "plain" | "permute-K" | "sequence-sum" | "sequence-mean"}

The **model identity** is the part of a record's ``model`` block that fixes the numbers: ``backend``,
``dtype`` and the weights — ``gguf_sha256`` (store or .gguf models: the file llama.cpp reads, or the
file torch dequantized), ``revision`` with the hub name (hub models), ``local_sha256`` (local HF
folders). The registry key, device, thread count and library versions are left out on purpose: the
same GGUF reached by key or by path is the same model, and CPU/GPU or thread differences are numerical
drift measured elsewhere (``semif drift``), not a different decision procedure. The state is left out:
it is what varies between the rows of a batch.

A **remote decision API's** record (``model.source`` ``remote``: ``semif score --backend systemone``) has no weights
to name: its identity adds ``remote``, the server's URL and the model it says answered (the same name at another
URL may be another model), and only its identity has that key, so every other signature is what it always was.

``readout`` is ``permute-K`` for records of ``semif score --permute K`` (their probabilities are
averages over K orderings, a different function of the prompt than one plain pass), and ``sequence-sum`` or
``sequence-mean`` for ``semif score --slots sequence`` (its prompt is the ``ids`` readout's, e.g.
``semif-direct-ids-v1``, but its numbers are the options' continuation scores: a calibration of one never applies
to the other).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from scorer.core.checks import DEFAULT_SEQUENCE_NORM, JSON_SEQUENCE_NORM
from scorer.core.errors import InputError
from scorer.core.hashing import canonical_sha256
from scorer.formats.rows import Decision, load_decisions

SIGNATURE_VERSION = "semif-signature-v1"
_IDENTITY_KEYS = ("backend", "dtype", "gguf_sha256", "revision", "local_sha256")


def model_identity(model: dict[str, Any]) -> dict[str, Any]:
    """The identity of the weights and numerics behind a record's ``model`` block (see module docstring)."""
    ident = {k: model.get(k) for k in _IDENTITY_KEYS}
    # A hub commit is only unique together with its repository name.
    ident["hub"] = model.get("key") if model.get("source") == "hub" else None
    if model.get("source") == "remote":  # a decision API: the server and the model it says answered
        ident["remote"] = {"base_url": model.get("base_url"), "model": model.get("key")}
    return ident


def identity_sha256(identity: dict[str, Any]) -> str:
    """Short stable key of a model identity (sha256 of its canonical JSON)."""
    return canonical_sha256(identity)


def describe_identity(identity: dict[str, Any]) -> str:
    """A one-line human description of a model identity, for error messages."""
    remote = identity.get("remote")
    if isinstance(remote, dict):
        return f"{identity.get('backend')} model {remote.get('model')!r} at {remote.get('base_url')}"
    weights = identity.get("gguf_sha256") or identity.get("local_sha256") or identity.get("revision") or "?"
    hub = f"{identity['hub']}@" if identity.get("hub") else ""
    return f"{identity.get('backend')} {identity.get('dtype')} weights {hub}{str(weights)[:12]}"


def readout_of(record: dict[str, Any]) -> str:
    """``plain``, ``permute-K`` for an order-averaged record, ``sequence-NORM`` (``json-close-NORM``) for a ``--slots
    sequence`` (``--slots json``) one, or ``codes`` for one read by the options' numbers."""
    perm = record.get("permute")
    if isinstance(perm, dict) and perm.get("k"):
        return f"permute-{int(perm['k'])}"
    slots = record.get("slots")
    if isinstance(slots, dict) and slots.get("readout") in ("sequence", "json"):
        close = "close-" if slots.get("closing") else ""  # json records from before the closing class: json-NORM
        return f"{slots['readout']}-{close}{slots.get('normalisation')}"
    if isinstance(slots, dict) and slots.get("readout") == "codes":
        return "codes"
    return "plain"


def signature_readout(permute: int = 1, slots: str = "letters", sequence_norm: str | None = None) -> str:
    """The ``readout`` a run's signatures name (what :func:`readout_of` reads back from its records)."""
    if permute > 1:
        return f"permute-{permute}"
    if slots == "codes":
        return "codes"
    if slots == "json":  # its closing quote read as any token beginning with it (records with slots.closing)
        return f"json-close-{sequence_norm or JSON_SEQUENCE_NORM}"
    return f"sequence-{sequence_norm or DEFAULT_SEQUENCE_NORM}" if slots == "sequence" else "plain"


def decision_signature(prompt_version: str, question: str, options: Sequence[tuple[str, str]],
                       model: dict[str, Any], readout: str = "plain") -> str:
    """The signature of a decision (module docstring); ``model`` is a record's model block."""
    doc = {"signature": SIGNATURE_VERSION, "prompt_version": prompt_version, "question": question,
           "options": [[str(i), str(d)] for i, d in options], "model": model_identity(model), "readout": readout}
    return canonical_sha256(doc)


def signature_of(decision: Decision, prompt_version: str, model: dict[str, Any], readout: str = "plain") -> str:
    """The signature of one input row scored with ``model`` under ``prompt_version``."""
    return decision_signature(prompt_version, decision.question, [(o.id, o.description) for o in decision.options],
                              model, readout)


def record_signatures(records: Iterable[dict[str, Any]], rows: Sequence[Decision] | None, name: str,
                      rows_name: str = "--input") -> list[str]:
    """The signature of each record: its own ``signature`` field (v2 records), else computed from the
    input row with the same id (v1 records carry no question text, so ``rows`` must be given).

    A v1 record without a matching row, or whose option ids differ from its row's, is an
    :class:`InputError` naming the records file and line.
    """
    by_id = {d.id: d for d in rows} if rows is not None else None
    out: list[str] = []
    for line, rec in enumerate(records, start=1):
        sig = rec.get("signature")
        if isinstance(sig, str) and sig:
            out.append(sig)
            continue
        if by_id is None:
            raise InputError(name, line, "signature", "missing (a semif-record-v1 record)",
                             f"records of record schema v2, or the input rows given with {rows_name} ROWS.jsonl")
        d = by_id.get(rec.get("id", ""))  # row ids are non-empty strings: a record without one matches none
        if d is None:
            raise InputError(name, line, "id", f"{rec.get('id')!r} is not a row of {rows_name}",
                             "the rows file the run scored")
        if list(rec.get("option_ids") or []) != d.option_ids:
            raise InputError(name, line, "option_ids", f"{rec.get('option_ids')} differ from the row's {d.option_ids}",
                             "the rows file the run scored (same options in the same order)")
        out.append(signature_of(d, str(rec.get("prompt_version")), rec.get("model") or {}, readout_of(rec)))
    return out


def load_rows(path: str | None) -> list[Decision] | None:
    """The decision rows of ``path`` (``None`` passes through)."""
    if path is None:
        return None

    return load_decisions(Path(path))
