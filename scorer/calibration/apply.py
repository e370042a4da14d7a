"""Applying a calibration to records as they are produced, and reading calibrated records back.

``semif score --calibration FILE`` checks every row with :func:`check_decisions` *before* the first
record is scored, so a file for another model or for other questions fails at once (exit 2, naming
the file and the signature) rather than after an hour of scoring; then each record passes through
:meth:`scorer.calibration.core.Calibration.apply`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from scorer.calibration.core import Calibration, Skipped
from scorer.core.checks import OptionError
from scorer.core.errors import InputError, brief
from scorer.formats.rows import Decision
from scorer.formats.signature import describe_identity, identity_sha256, model_identity, signature_of
from scorer.models import store
from scorer.prompting.prompt import PROMPT_VERSION

if TYPE_CHECKING:
    from scorer.backends import BackendConfig

ON_UNCOVERED = ("error", "raw")
"""What to do with a decision whose signature a calibration does not cover: refuse the run before anything
is scored (``error``), or score it and give it a ``calibrated`` block with ``applied: false, uncovered: true``
whose numbers are the raw ones (``raw``). A calibration for another model is refused either way."""


def check_on_uncovered(value: Any, option: str = "on_uncovered") -> str:
    """One of :data:`ON_UNCOVERED`."""
    if not isinstance(value, str) or value not in ON_UNCOVERED:
        raise OptionError(option, f"{brief(value)} is not one of {', '.join(ON_UNCOVERED)}")
    return value


def check_decisions(cal: Calibration, decisions: Sequence[Decision], model: dict[str, Any], permute: int = 1,
                    on_uncovered: str = "error", prompt_version: str | None = None, readout: str | None = None) -> None:
    """Raise the lookup error of the first decision the calibration does not cover (model first); with
    ``on_uncovered="raw"`` only the model is checked. ``prompt_version``: what the run's signatures name (its
    layout and demonstrations: :func:`scorer.prompting.layouts.signature_version`; default ``semif-direct-v1``);
    ``readout``:
    theirs (:func:`scorer.formats.signature.signature_readout`; default from ``permute``)."""
    cal.check_model(model)
    if on_uncovered == "raw":
        return
    if readout is None:
        readout = f"permute-{permute}" if permute > 1 else "plain"
    msha = identity_sha256(model_identity(model))
    for d in decisions:
        _lookup(cal, d, model, msha, prompt_version, readout)


def covered(cal: Calibration, decisions: Sequence[Decision], model: dict[str, Any], prompt_version: str | None,
            readout: str) -> list[bool]:
    """Per decision, whether ``cal`` has an entry for it (or left its signature uncalibrated on purpose): what
    :func:`apply_records` applies rather than flags ``uncovered`` (arguments as :func:`check_decisions`')."""
    msha = identity_sha256(model_identity(model))
    out = []
    for d in decisions:
        try:
            _lookup(cal, d, model, msha, prompt_version, readout)
        except InputError:
            out.append(False)
        else:
            out.append(True)
    return out


def _lookup(cal: Calibration, d: Decision, model: dict[str, Any], msha: str, prompt_version: str | None,
            readout: str) -> None:
    fam = d.extra.get("family")
    version = PROMPT_VERSION if prompt_version is None else prompt_version
    cal.lookup(signature_of(d, version, model, readout), msha, readout, None if fam is None else str(fam),
               d.option_ids)


def apply_records(cal: Calibration, records: Iterable[dict[str, Any]],
                  on_uncovered: str = "error") -> Iterator[dict[str, Any]]:
    """Every record with its ``calibrated`` block (:meth:`Calibration.apply`); with ``on_uncovered="raw"`` a
    record whose signature no entry covers gets a block with the raw numbers, ``applied: false`` and
    ``uncovered: true`` instead of an error (a record for another model is still an error)."""
    for rec in records:
        if on_uncovered != "raw":
            yield cal.apply(rec)
            continue
        model_sha = cal.check_model(rec.get("model") or {})
        try:
            yield cal.apply(rec)
        except InputError as exc:
            sig = str(rec["signature"])
            skip = Skipped(sig, model_sha, 0, f"uncovered (on_uncovered=raw): {exc.problem}")
            yield {**rec, "calibrated": {**cal.block(rec, skip, sig), "uncovered": True}}


def expected_identity(cfg: BackendConfig) -> dict[str, Any] | None:
    """The parts of the model identity (:func:`model_identity`) a backend config fixes before its model loads:
    the backend, the torch dtype, and the weights of a registry model (its pinned GGUF sha256) or of a hub model
    (name and commit). None for a remote engine (what it serves is only known once it answers)."""
    if cfg.backend not in ("torch", "llamacpp"):
        return None
    ident: dict[str, Any] = {"backend": cfg.backend}
    if cfg.backend == "torch":
        ident["dtype"] = cfg.dtype or {"cuda": "bfloat16", "mps": "float16"}.get(cfg.device, "float32")
    if cfg.gguf is None and cfg.model in store.REGISTRY:
        ident.update(gguf_sha256=store.REGISTRY[cfg.model].sha256, revision=None, local_sha256=None, hub=None)
    elif cfg.revision is not None and cfg.model.count("/") == 1 and not cfg.model.endswith(".gguf"):
        ident.update(revision=cfg.revision.lower(), hub=cfg.model, gguf_sha256=None, local_sha256=None)
    return ident


def check_config(cal: Calibration, cfg: BackendConfig) -> None:
    """Refuse, before the model loads, a calibration that holds no entry for the model ``cfg`` names (the
    parts of its identity known before loading: :func:`expected_identity`); the full identity is checked again
    once the model is loaded."""
    want = expected_identity(cfg)
    if want is None:
        return
    if any(all(m.get(k) == v for k, v in want.items()) for m in cal.models.values()):
        return
    have = "; ".join(describe_identity(m) for m in cal.models.values()) or "none"
    shown = {k: (str(v)[:12] if k in ("gguf_sha256", "revision") and v else v) for k, v in want.items()}
    raise InputError(str(cal.source.get("path") or "in-run calibration"), None, "models",
                     f"no calibration for the model this run would load ({cfg.model}: {shown}); the file was fitted "
                     f"on: {have}", "a calibration fitted on records of this very model, backend and dtype "
                     "(checked before the model loads)")
