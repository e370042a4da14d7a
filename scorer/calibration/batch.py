"""``semif score --batch-calibrate``: fit the prior inside the run, over its own rows, then apply it.

A prior needs every row of a signature before it can be applied, so the run has two phases:

1. **raw phase** — the ordinary scoring run writes raw records to ``OUT.raw.jsonl`` (``out.jsonl`` →
   ``out.raw.jsonl``), flushed per record and resumable exactly like any run (``--resume``).
   A kill loses nothing: the raw records on disk are the run so far.
2. **calibration phase** — once the raw file is complete, the prior is fitted from the raw records *on
   disk* (not from memory), every record gets its ``calibrated`` block, and the result is written to a
   temporary file that is renamed onto ``OUT`` (an atomic step: ``OUT`` is either absent or complete).

The raw file stays next to ``OUT`` (it is the uncalibrated run). Resuming a killed run continues the
raw phase and then fits from the complete raw file, so the calibrated records equal an uninterrupted
run's: the fit depends only on the raw records' logits and order, which resume reproduces.
Resuming a finished run recomputes phase 2 and checks that ``OUT`` holds exactly those bytes; if not,
it refuses to overwrite it. Phase 2 costs no forward pass; its seconds are reported next to the
scoring time.

The run that strings the two phases together is :func:`scorer.scoring.file_run.run_batch_calibrated`; this module
is what it needs around the ordinary scoring run (the paths, their refusals, phase 2).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.calibration.core import Calibration
from scorer.calibration.prior import fit_prior
from scorer.core.errors import OutputExistsError
from scorer.core.io import refuse_overwrite, write_atomic
from scorer.formats.records import dumps_record, read_records
from scorer.formats.signature import record_signatures

# A signature whose calibrated choices put at least this share of its rows on one option (with at
# least MIX_MIN_ROWS rows) gets a warning: the in-run prior assumes a batch that is not heavily skewed.
MIX_WARN_SHARE = 0.8
MIX_MIN_ROWS = 8


@dataclass
class BatchResult:
    """What a batch-calibrated run did."""

    raw_path: Path
    """The raw phase's records."""
    written: int
    """Raw records scored by this invocation (0 when everything was already on disk)."""
    records: int
    """Calibrated records in the output."""
    fit_s: float
    """Seconds of the calibration phase (read, fit, apply, write)."""
    scoring_s: float
    """Sum of the raw records' ``timing.total_s`` (the model's time for the whole run)."""
    calibration: Calibration
    """The in-run calibration that was applied."""
    warnings: list[str] = field(default_factory=list)
    """One line per signature whose predicted class mix looks extreme, and per uncalibrated signature."""


def raw_path(output: Path) -> Path:
    """``out.jsonl`` → ``out.raw.jsonl`` (the raw phase's file)."""
    return output.with_name(f"{output.stem}.raw{output.suffix or '.jsonl'}")


def refuse_raw(output: Path) -> OutputExistsError:
    """The refusal of a new run whose raw phase's file (:func:`raw_path`) exists."""
    return refuse_overwrite(raw_path(output), "it holds the raw phase of a batch-calibrated run; pass --resume to "
                                              "continue that run, or choose another --output")


def mix_warnings(records: Sequence[dict[str, Any]], share: float = MIX_WARN_SHARE,
                 min_rows: int = MIX_MIN_ROWS) -> list[str]:
    """Warnings for signatures whose calibrated choices are dominated by one option.

    In-run calibration divides by the batch's own mean; on a batch whose true classes are heavily
    skewed that mean absorbs part of the real signal. A calibrated mix that is still extreme after the
    division is the visible symptom (measured in the calibration report: the same data subsampled to
    90/10 shows it); the fix is a stored prior from a balanced reference batch (``--calibration``).
    """
    by_sig: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        block = r.get("calibrated")
        if isinstance(block, dict) and block.get("applied"):
            by_sig[block["signature"]].append(r)
    out = []
    for sig, recs in by_sig.items():
        if len(recs) < min_rows:
            continue
        mix = Counter(r["calibrated"]["choice"] for r in recs)
        top, n = mix.most_common(1)[0]
        if n / len(recs) >= share:
            out.append(f"signature {sig[:12]}…: {n} of {len(recs)} calibrated choices are {top!r} "
                       f"(raw: {dict(Counter(r['choice'] for r in recs))}); in-run calibration assumes a batch that "
                       "is not heavily skewed — if this batch is, use a stored prior from a balanced batch "
                       "(--calibration)")
    return out


def uncovered_warnings(records: Sequence[dict[str, Any]]) -> list[str]:
    """One line per signature whose calibrated blocks were not applied (too few rows and no fallback pool that
    covers it), in order of first appearance."""
    out: dict[str, str] = {}
    for r in records:
        block = r.get("calibrated")
        if isinstance(block, dict) and not block.get("applied") and block["signature"] not in out:
            out[block["signature"]] = f"signature {block['signature'][:12]}… left uncalibrated: {block.get('reason')}"
    return list(out.values())


def in_batch_calibrated(records: Sequence[dict[str, Any]], estimator: str = "mean", min_rows: int = 1
                        ) -> list[dict[str, Any]]:
    """The records with the label-free prior fitted over themselves and applied (phase 2 of
    ``--batch-calibrate``, in memory): each record's ``choice``, ``probabilities``, ``margin`` and ``tie`` are
    its calibrated ones. For reports that put raw and calibrated quality side by side on the same records."""
    recs = list(records)
    cal = fit_prior(recs, record_signatures(recs, None, "records"), estimator, min_rows)
    keep = ("choice", "probabilities", "margin", "tie")
    return [{**r, **{k: v for k, v in cal.apply(r)["calibrated"].items() if k in keep}} for r in recs]


def calibrate_raw(raw: Path, estimator: str, min_rows: int, fallback: str) -> tuple[list[bytes], Calibration,
                                                                                   list[str], float]:
    """Phase 2 on the raw file: the calibrated record lines, the calibration, the warnings, and the scoring
    seconds the raw records account for (their ``timing.total_s``, which calibration leaves untouched)."""
    records = read_records(raw)
    sigs = record_signatures(records, None, str(raw))  # raw records of this version always carry one
    source = {"kind": "in-run", "estimator": estimator, "min_rows": min_rows, "fallback": fallback}
    cal = fit_prior(records, sigs, estimator, min_rows, fallback, source)
    out = list(cal.apply_all(records))
    warnings = mix_warnings(out) + uncovered_warnings(out)
    scoring_s = sum(float(r["timing"]["total_s"]) for r in records)
    return [dumps_record(r) for r in out], cal, warnings, scoring_s


def check_outputs(output: Path, resume: bool, raw_locked: bool) -> Path:
    """Refuse, before anything is scored, an ``output`` that exists (unless resuming) and a raw file that exists
    (unless resuming, or the caller already holds it open and locked). Returns the raw phase's path."""
    raw = raw_path(output)
    if output.exists() and not resume:
        raise refuse_overwrite(output, "pass --resume to continue that run, or choose another --output")
    if not raw_locked and raw.exists() and not resume:
        raise refuse_raw(output)
    return raw


def run_parts(parts: Mapping[str, Any], estimator: str, min_rows: int, fallback: str) -> dict[str, Any]:
    """The raw phase's run identity: the run's own parts plus the batch calibration's settings (a resumed raw
    phase must have been started with the same ones)."""
    return {**parts, "batch_calibrate": {"estimator": estimator, "min_rows": min_rows, "fallback": fallback}}


def finish(raw: Path, output: Path, written: int, estimator: str = "mean", min_rows: int = 8,
           fallback: str = "none") -> BatchResult:
    """Phase 2 (module docstring), once the raw file ``raw`` is complete: fit, apply, write ``output``
    atomically (or, when it exists, check that it holds exactly these bytes). ``written`` is what phase 1
    scored in this invocation."""
    t0 = time.perf_counter()
    lines, cal, warnings, scoring_s = calibrate_raw(raw, estimator, min_rows, fallback)
    data = b"".join(lines)
    if output.exists():
        if output.read_bytes() != data:
            raise refuse_overwrite(output, f"it differs from the calibration of {raw}")
    else:
        write_atomic(output, data)  # create-only: a file that appeared meanwhile is never overwritten
    fit_s = time.perf_counter() - t0
    return BatchResult(raw, written, len(lines), fit_s, scoring_s, cal, warnings)
