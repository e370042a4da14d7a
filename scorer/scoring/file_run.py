"""A scoring run into a records file (``semif score``): the records already there continued, if every one is this
run's (:func:`resume_point`), the rows scored and each record passed through the run's post-processing (temperature,
calibration, echo, preset) and written as it comes; and the two-phase batch-calibrated run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from scorer.backends.base import Backend
from scorer.calibration import batch
from scorer.calibration.apply import apply_records
from scorer.calibration.temperature import apply_temperature
from scorer.core.errors import InputError, brief
from scorer.core.io import RecordsOutput, ResumePoint, read_resume
from scorer.formats.echo import with_echo
from scorer.formats.record_schema import RECORD_SCHEMA
from scorer.formats.records import check_record, dumps_record
from scorer.formats.rows import Decision
from scorer.prompting.layouts import LayoutChoice
from scorer.scoring.modes import prepare, refuse_continuations, score_items
from scorer.scoring.options import ScoreConfig, checked_config_parts, config_sha256, resolve_layout
from scorer.scoring.permuted import score_permuted
from scorer.scoring.presets import with_preset

if TYPE_CHECKING:
    from scorer.calibration.batch import BatchResult

RECORD_LINE_PREFIX = b'{"schema":"' + RECORD_SCHEMA.encode() + b'"'
"""How every record line starts: a torn tail must be a piece of one for ``--resume`` to cut it."""


ProgressFn = Callable[[dict[str, Any]], None]


def resume_point(data: bytes, path: Path | str, config_hash: str | None, decisions: list[Decision]) -> ResumePoint:
    """Where a resumed run continues: the complete records already in ``data`` (the output's bytes),
    all of which must belong to this very run configuration, in input order.

    Only reads: a torn last line (the run was killed mid-write) is reported, not cut, and anything
    that does not match (another configuration, another input, records out of order, a file that is
    not a records file) raises :class:`InputError` or :class:`~scorer.core.errors.OutputError`.
    ``config_hash`` None checks everything but the configuration (possible before the model loads).
    """
    name = str(path)
    point = read_resume(data, name, RECORD_LINE_PREFIX)
    for lineno, raw in enumerate(point.lines, start=1):
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise InputError(name, lineno, None, "not a JSON record", "records of an earlier run; nothing was "
                             "changed") from None
        if not isinstance(rec, dict) or rec.get("schema") != RECORD_SCHEMA:
            raise InputError(name, lineno, "schema", f"not a {RECORD_SCHEMA} record",
                             "records of an earlier run; nothing was changed")
        run = rec.get("run")
        got = run.get("config_sha256") if isinstance(run, dict) else None
        if config_hash is not None and got != config_hash:
            raise InputError(name, lineno, "run.config_sha256",
                             f"{brief(got)} differs from this run's {config_hash!r}",
                             "the same input, model, backend, mode and options as the run being resumed; "
                             "nothing was changed")
        n = lineno - 1
        if n >= len(decisions) or rec.get("id") != decisions[n].id:
            raise InputError(name, lineno, "id", f"{brief(rec.get('id'))} is not input row {n + 1}",
                             "records in input order; nothing was changed")
        try:  # the run's records are kept as they are: each must be a valid record (issue #21)
            check_record(rec, name, lineno)
        except InputError as exc:
            raise InputError(name, lineno, exc.field, exc.problem, f"{exc.expected}; nothing was changed") from None
    return point



def run_score(decisions: list[Decision], backend: Backend, output: Path | RecordsOutput, cfg: ScoreConfig,
              on_record: ProgressFn | None = None, on_start: Callable[[int, int], None] | None = None,
              on_layout: Callable[[LayoutChoice], None] | None = None) -> int:
    """Score ``decisions`` into ``output`` (JSONL, one record handed to the kernel at a time). Returns the
    records written.

    ``output`` is a path (opened here: created exclusively, or continued with ``cfg.resume``) or an
    already locked :class:`~scorer.core.io.RecordsOutput` (the CLI takes the lock before the model loads;
    ``cfg.resume`` is then how it was opened). Existing records are kept only if every one belongs to this
    run's configuration; otherwise the file is refused unchanged. ``cfg.run_parts`` identifies the run
    (input hash, options); the model block is added here, so a resumed run is refused unless it loads
    the very same weights the same way. With ``cfg.calibration`` every row's signature is checked against
    it before anything is scored. ``on_start(total, skip)`` runs once the rows are ready to score,
    ``on_record(record)`` after each record is written, ``on_layout(choice)`` once ``--layout auto`` has chosen.
    """
    from dataclasses import replace

    layout, choice = resolve_layout(backend, decisions, cfg.layout, cfg.demos, cfg.slots)
    if choice is not None:
        cfg = replace(cfg, layout=layout)
        if on_layout is not None:
            on_layout(choice)
    parts = checked_config_parts(backend.model_info(), decisions, cfg.run_parts, cfg.mode, cfg.max_batch_tokens,
                                 permute=cfg.permute, temperature=cfg.temperature, calibration=cfg.calibration,
                                 exact=cfg.exact, route=cfg.route, on_uncovered=cfg.on_uncovered, echo=cfg.echo,
                                 layout=cfg.layout, demos=cfg.demos, slots=cfg.slots, sequence_norm=cfg.sequence_norm,
                                 preset=None if cfg.preset is None else cfg.preset.sha256)
    chash = config_sha256(parts)
    if isinstance(output, RecordsOutput):
        return _score_into(output, decisions, backend, cfg, chash, on_record, on_start)
    with RecordsOutput.resume(output) if cfg.resume else RecordsOutput.create(output) as sink:
        return _score_into(sink, decisions, backend, cfg, chash, on_record, on_start)


def _score_into(sink: RecordsOutput, decisions: list[Decision], backend: Backend, cfg: ScoreConfig, chash: str,
                on_record: ProgressFn | None, on_start: Callable[[int, int], None] | None) -> int:
    point = resume_point(sink.read(), sink.path, chash, decisions)
    sink.accept(point)
    skip = len(point.lines)
    run = {"config_sha256": chash, "started_unix": round(time.time(), 3), "resumed_from": skip}
    mode, exact = cfg.mode, cfg.exact
    records: Iterator[dict[str, Any]]
    if cfg.permute > 1:
        records = score_permuted(backend, decisions, cfg.permute, mode, run, skip, cfg.max_batch_tokens, cfg.layout,
                                 cfg.slots, cfg.prefix_cache)
        if on_start:
            on_start(len(decisions), skip)
    else:
        items = prepare(backend, decisions, with_prefix=mode != "direct", layout=cfg.layout, demos=cfg.demos,
                        slots=cfg.slots)
        if exact is not None:  # the bound is set (probe or drift report) before any record is written
            refuse_continuations(items, "--exact")
            exact.calibrate(backend, items, mode, cfg.max_batch_tokens)
        if cfg.route is not None:  # the accurate engine's prompts validated before any record is written
            cfg.route.calibrate(backend, items, mode, cfg.max_batch_tokens)
        if on_start:
            on_start(len(items), skip)
        records = score_items(backend, items, mode, run, skip, cfg.max_batch_tokens, cfg.prefix_cache,
                              cfg.sequence_norm)
        if exact is not None:
            records = exact.apply(backend, items, mode, records)
        if cfg.route is not None:
            records = cfg.route.apply(backend, items, mode, records)
    if cfg.temperature is not None:
        temperature = cfg.temperature
        records = (apply_temperature(r, temperature) for r in records)
    if cfg.calibration is not None:
        records = apply_records(cfg.calibration, records, cfg.on_uncovered)
    if cfg.echo is not None:
        records = with_echo(records, decisions, cfg.echo)
    if cfg.preset is not None:
        records = with_preset(records, cfg.preset)
    written = 0
    for rec in records:
        sink.write_line(dumps_record(rec))
        written += 1
        if on_record:
            on_record(rec)
    return written


def run_batch_calibrated(decisions: list[Decision], backend: Backend, output: Path, cfg: ScoreConfig,
                         estimator: str = "mean", min_rows: int = 8, fallback: str = "none",
                         raw_sink: RecordsOutput | None = None, on_record: ProgressFn | None = None,
                         on_start: Callable[[int, int], None] | None = None,
                         on_layout: Callable[[LayoutChoice], None] | None = None) -> BatchResult:
    """``semif score --batch-calibrate``: the raw phase is :func:`run_score` under ``cfg`` into
    ``OUT.raw.jsonl``, then the in-run prior is fitted and applied into ``output``
    (:mod:`scorer.calibration.batch`). ``raw_sink``: the raw phase's records file, already opened and locked
    by the caller (the CLI takes the lock before the model loads); without it the raw file is opened here."""
    from dataclasses import replace


    raw = batch.check_outputs(output, cfg.resume, raw_sink is not None)
    raw_cfg = replace(cfg, run_parts=batch.run_parts(cfg.run_parts, estimator, min_rows, fallback))
    written = run_score(decisions, backend, raw_sink if raw_sink is not None else raw, raw_cfg,
                        on_record=on_record, on_start=on_start, on_layout=on_layout)
    return batch.finish(raw, output, written, estimator, min_rows, fallback)
