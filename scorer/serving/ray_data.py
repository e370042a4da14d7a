"""``semif score --engine ray``: the local engine's records, scored by a pool of Ray Data actors.

* Rows are cut into work units on the driver: in ``serial``/``shared`` mode one unit per distinct state
  (the text that opens every prompt's shared head, :func:`scorer.prompting.prompt.state_text`), so a state's rows
  are never split across actors and each actor's shared-prefix grouping, packing and prefixes are the
  local run's; in ``direct`` mode runs of up to :data:`DIRECT_UNIT_ROWS` consecutive rows.
* Each actor loads one backend once through the public API (:class:`scorer.api.Scorer`), fetching and
  verifying the model by sha256 itself (no shared disk assumed), and scores whole units with
  :meth:`~scorer.api.Scorer.score_decisions` (the same core, run parts and input indices as the CLI).
* The driver writes records in input order into the create-only, locked output
  (:class:`scorer.core.io.RecordsOutput`); a resumed run skips units whose rows are all written and re-scores
  a partly written unit whole (as the local shared mode does), writing only the missing rows. Nothing is
  written before the first record names the run's configuration, which every kept record must share.
* Ray Data restarts a dead actor and retries its unit (its actor-pool defaults, ``max_restarts`` and
  ``max_task_retries`` -1); the driver keeps each input index once, so nothing is lost or duplicated.
* Fail closed: if two units ever yield the same non-empty prefix (two state texts that tokenise to one
  shared head, which the local run would have scored as one group), the run stops with an error rather
  than writing records that differ from the local engine's.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import orjson

from scorer.api import Scorer
from scorer.backends import BackendConfig
from scorer.core.errors import SemifError, ValidationError
from scorer.core.io import RecordsOutput
from scorer.formats.records import dumps_record
from scorer.formats.rows import Decision
from scorer.prompting.prompt import state_text
from scorer.scoring.file_run import resume_point
from scorer.scoring.options import ScoreConfig, ScorerOptions

DIRECT_UNIT_ROWS = 16
"""Rows per work unit in direct mode (no prefix to keep together; small units balance the actors)."""


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide the Ray engine runs."""

    address: str | None = None
    """Ray cluster address (``ray start --head`` prints it; ``auto`` finds a local one); None starts a local
    cluster for this run (or uses the one this process already joined)."""
    actors: int = 1
    """Scoring actors, each holding one loaded model."""
    cpus_per_actor: float = 1.0
    """CPUs Ray reserves per actor; also the torch/llama.cpp threads when ``--threads`` is not given."""
    gpus_per_actor: float = 0.0
    """GPUs Ray reserves per actor (use with ``--device cuda``)."""


def work_units(decisions: Sequence[Decision], mode: str) -> list[list[int]]:
    """Input indices cut into units that are scored whole by one actor, in order of first appearance."""
    if mode == "direct":
        n = len(decisions)
        return [list(range(i, min(i + DIRECT_UNIT_ROWS, n))) for i in range(0, n, DIRECT_UNIT_ROWS)]
    units: dict[str, list[int]] = {}
    for i, d in enumerate(decisions):
        units.setdefault(state_text(d.state), []).append(i)
    return list(units.values())


class _UnitScorer:
    """A Ray Data actor: loads one model on construction, then scores whole work units."""

    def __init__(self, cfg: dict[str, Any], mode: str, max_batch_tokens: int, run_parts: dict[str, Any],
                 resumed_from: int) -> None:

        # a records run's readout (ScoreConfig's: letters, no label-free correction), not the scorer's request
        # defaults, so the actors write what `semif score` writes in this process
        options = ScorerOptions(mode=mode, max_batch_tokens=max_batch_tokens, slots=ScoreConfig.slots,
                                label_free="none")
        self.scorer = Scorer.from_options(BackendConfig(**cfg), options)
        self.scorer.load()
        self.run_parts, self.resumed_from = run_parts, resumed_from

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = []
        for payload in batch["unit"]:
            indices, decisions = pickle.loads(payload)
            recs = self.scorer.score_decisions(decisions, self.run_parts, self.resumed_from, indices)
            out.append(b"".join(dumps_record(r) for r in recs))
        return {"records": np.array(out, dtype=object)}


def run_score_ray(decisions: list[Decision], cfg: BackendConfig, sink: RecordsOutput, mode: str,
                  run_parts: dict[str, Any], max_batch_tokens: int, opts: RayOptions,
                  on_record: Callable[[dict[str, Any]], None] | None = None,
                  on_start: Callable[[int, int], None] | None = None) -> int:
    """Score ``decisions`` into ``sink`` (already created, or opened for resume) on Ray; returns the records
    written. The records equal :func:`scorer.scoring.file_run.run_score`'s for the same rows and configuration,
    apart from timings and ``run.started_unix``."""
    try:
        import ray
    except ImportError as exc:
        raise SemifError(f"--engine ray needs the ray extra ({exc}); install it with "
                         "`pip install -e '.[ray]'`") from None
    point = resume_point(sink.read(), sink.path, None, decisions)
    skip = len(point.lines)
    units = [u for u in work_units(decisions, mode) if max(u) >= skip]
    if on_start:
        on_start(len(decisions), skip)
    if not units:  # everything is written already
        sink.accept(point)
        return 0
    threads = cfg.threads or max(1, int(opts.cpus_per_actor))
    started_here = not ray.is_initialized()
    if started_here:
        _init_keeping_sigterm(ray, opts.address)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        items = [{"unit": pickle.dumps((u, [decisions[i] for i in u]))} for u in units]
        ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _UnitScorer, batch_size=1, batch_format="numpy",
            fn_constructor_kwargs={"cfg": {**asdict(cfg), "threads": threads}, "mode": mode,
                                   "max_batch_tokens": max_batch_tokens, "run_parts": run_parts,
                                   "resumed_from": skip},
            compute=ray.data.ActorPoolStrategy(size=opts.actors), num_cpus=opts.cpus_per_actor,
            num_gpus=opts.gpus_per_actor or None)  # Ray Data's actor pools default to max_restarts=-1,
        # max_task_retries=-1: a dead actor is restarted and its unit retried (tests/serving/test_ray.py kills one)
        return _write_in_order(ds.iter_rows(), decisions, sink, point, skip, on_record)
    finally:
        if started_here:
            ray.shutdown()


def _init_keeping_sigterm(ray: Any, address: str | None) -> None:
    """``ray.init`` without its SIGTERM handler (``sys.exit(15)``): semif's own handler stays, so SIGTERM
    still stops the run between records, reports what it kept and exits 143 (rerun with ``--resume``)."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    ray.init(address=address, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    if main and previous is not None:
        signal.signal(signal.SIGTERM, previous)


def _write_in_order(rows: Any, decisions: list[Decision], sink: RecordsOutput, point: Any, skip: int,
                    on_record: Callable[[dict[str, Any]], None] | None) -> int:
    pending: dict[int, dict[str, Any]] = {}
    prefix_unit: dict[str, int] = {}
    next_out, written, accepted = skip, 0, False
    for row in rows:
        recs = [orjson.loads(line) for line in bytes(row["records"]).splitlines()]
        unit = recs[0]["run"]["index"] if recs else -1  # a unit's identity (a retried unit comes back the same)
        for rec in recs:
            if not accepted:  # every kept record must be this very configuration's, before anything is written
                sink.accept(resume_point(sink.read(), sink.path, rec["run"]["config_sha256"], decisions))
                accepted = True
            pre = rec.get("prefix_sha256")
            if pre is not None and prefix_unit.setdefault(pre, unit) != unit:
                raise ValidationError(f"row {rec['id']!r}: its shared prefix {pre[:12]}… was also built for another "
                                      "state, so a local run would have grouped these states; score this input with "
                                      "the local engine (records would differ otherwise)")
            i = rec["run"]["index"]
            if i >= skip and i not in pending:
                pending[i] = rec
        while next_out in pending:
            rec = pending.pop(next_out)
            sink.write_line(dumps_record(rec))
            next_out += 1
            written += 1
            if on_record:
                on_record(rec)
    if next_out != len(decisions):
        raise SemifError(f"the Ray engine returned {next_out} of {len(decisions)} records; rerun with --resume")
    return written


