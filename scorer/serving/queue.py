"""The scoring queue of ``semif serve``: one worker thread fed by a bounded queue, batching single-row requests.

Every request becomes a job on one bounded queue (a full queue raises :class:`QueueFull`: the service answers
503); one thread runs the jobs, so the event loop only parses, validates and waits. Two kinds of job:

* a plain job (a callable: ``POST /v1/decide/batch``, or any request when batching is off) runs alone, in order;
* a :class:`RowJob` (one validated row of ``POST /v1/decide``) may be **batched across requests**: with a window
  ``W > 0`` the worker, on taking a row job, also takes every row job already queued and those that arrive until
  ``W`` after the first one was queued (at most ``max_rows``), and scores them in one
  :meth:`~scorer.api.Scorer.score_decisions` call (:func:`score_together`). In shared mode that call groups the
  rows by their state prefix, so requests about one state are prefilled once and scored in one packed
  ``fan_out`` pass, as ``semif score --mode shared`` scores a file's rows. Plain jobs taken out of the queue
  while collecting run right after the batch, in their order.

With ``W = 0`` every job runs alone, in arrival order (the service's behaviour before batching).

What a batched record says (every other field is what an unbatched request gets for the same row, up to the
packed pass's float noise): ``batch = {"requests": N, "group_requests": G, "window_ms": W}``, N the requests
scored in this call, G those in this record's prefix group (one ``fan_out``); the prefix bookkeeping
(``prefix_tokens``, ``cache_hit``…) and ``timing`` of the group it was in; and ``run`` naming the request's own
run (``config_sha256`` of its own row, ``index`` 0), so the same row names the same run batched or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scorer import __version__
from scorer.api import DecisionRecord, Scorer, rows_sha256
from scorer.core.checks import OptionError, non_negative_float
from scorer.core.errors import SemifError
from scorer.formats.echo import echo_block
from scorer.formats.rows import Decision
from scorer.scoring.options import config_sha256

DEFAULT_BATCH_WINDOW_MS = 0.0
"""``semif serve``'s window when none is given: off. Measured on a 2-core CPU
(``data/results/serve-batching-qwen2.5-0.5b-shape-small.json``) a 5 ms window was 16-28 % slower at 4 and 8
clients than none: the radix cache already makes every request about a cached state cost only its suffix, so
packing the suffixes saves little while the window and the packed pass add latency. Batching stays one flag away
(``--batch-window-ms 5``) for engines where a pass over many rows costs about one row's; measure it there."""
MAX_BATCH_WINDOW_MS = 1000.0
"""The longest window accepted: a longer one only adds latency (a batch forms in the time one pass takes)."""


def check_batch_window(value: float | None, mode: str, layout: str = "state-major") -> float:
    """The window to serve ``mode`` with: ``None`` is :data:`DEFAULT_BATCH_WINDOW_MS` in shared mode and 0 otherwise
    (the default is 0 too, so no batching unless asked for); an explicit window > 0 needs shared mode (batching
    packs requests into shared mode's passes) and a fixed layout (``auto`` chooses per request: over a batch it
    would choose from other clients' rows, so a request's answer would depend on who else asked; its default window
    is 0)."""
    if value is None:
        return DEFAULT_BATCH_WINDOW_MS if mode == "shared" and layout != "auto" else 0.0
    ms = non_negative_float(value, "batch_window_ms")
    if ms > MAX_BATCH_WINDOW_MS:
        raise OptionError("batch_window_ms", f"{ms:g} is more than {MAX_BATCH_WINDOW_MS:g} ms")
    if ms > 0 and mode != "shared":
        raise OptionError("batch_window_ms", f"{ms:g} ms needs mode shared, not {mode} (requests are batched into "
                                             "shared mode's packed passes; use 0 with direct or serial mode)")
    if ms > 0 and layout == "auto":
        raise OptionError("batch_window_ms", f"{ms:g} ms needs a fixed layout, not auto (auto chooses per request; "
                                             "use --layout state-major or question-major, or a window of 0)")
    return ms


class QueueFull(Exception):
    """The worker's queue holds ``queue_size`` jobs already."""


@dataclass(frozen=True)
class RowJob:
    """One request's validated row, which the worker may score together with other requests' rows."""

    decision: Decision
    line: bytes
    """The row as its JSON line (its run's ``input_sha256``, as :meth:`Scorer.decide_row` names it)."""
    echo: bool | str | None = None
    """The request's echo (None: the scorer's), as :meth:`Scorer.decide_row` takes it."""


@dataclass
class _Queued:
    job: Callable[[], Any] | RowJob
    loop: asyncio.AbstractEventLoop
    fut: asyncio.Future[Any]
    queued_at: float = field(default_factory=time.monotonic)


BatchFn = Callable[[Sequence[RowJob]], list[Any]]
"""Scores row jobs together: one result per job, in order, each a value or the exception that job raises."""


class ScoringQueue:
    """One thread that runs scoring jobs from a bounded queue; results go back to the waiting event loop.

    ``window_s`` > 0 batches row jobs with ``batch`` (:func:`score_together`); 0 runs every job alone.
    """

    def __init__(self, size: int, window_s: float = 0.0, batch: BatchFn | None = None, max_rows: int = 1024) -> None:
        if window_s > 0 and batch is None:
            raise ValueError("a batching window needs a batch function")
        self._jobs: queue.Queue[_Queued | None] = queue.Queue(maxsize=size)
        self._window_s, self._batch, self._max_rows = window_s, batch, max_rows
        self._thread = threading.Thread(target=self._run, name="semif-scorer", daemon=True)
        self._thread.start()

    @property
    def queued(self) -> int:
        return self._jobs.qsize()

    async def submit(self, job: Callable[[], Any] | RowJob) -> Any:
        """Run ``job`` on the worker thread and await its result (or exception); :class:`QueueFull` when full.
        A :class:`RowJob` without batching is scored alone by the batch function (or must not be given)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        try:
            self._jobs.put_nowait(_Queued(job, loop, fut))
        except queue.Full:
            raise QueueFull() from None
        return await fut

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            if not isinstance(item.job, RowJob):
                self._run_plain(item)
                continue
            rows, plain, stop = self._collect(item)
            self._run_rows(rows)
            for p in plain:
                self._run_plain(p)
            if stop:
                return

    def _collect(self, first: _Queued) -> tuple[list[_Queued], list[_Queued], bool]:
        """The row jobs to score with ``first``: those queued now and those arriving within the window of
        ``first``'s arrival; plain jobs met on the way (run after the batch); whether the stop sentinel was met."""
        rows: list[_Queued] = [first]
        plain: list[_Queued] = []
        deadline = first.queued_at + self._window_s
        while len(rows) < self._max_rows and self._window_s > 0:
            left = deadline - time.monotonic()
            try:  # past the deadline only what is already waiting is taken: a busy worker never waits more
                nxt = self._jobs.get(timeout=left) if left > 0 else self._jobs.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                return rows, plain, True
            (rows if isinstance(nxt.job, RowJob) else plain).append(nxt)
        return rows, plain, False

    def _run_plain(self, item: _Queued) -> None:
        assert not isinstance(item.job, RowJob)
        try:
            result, exc = item.job(), None
        except BaseException as e:  # handed to the waiting request, which decides what the client sees
            result, exc = None, e
        _hand_back(item, result, exc)

    def _run_rows(self, items: list[_Queued]) -> None:
        assert self._batch is not None, "a row job reached a queue without a batch function"
        jobs = [it.job for it in items if isinstance(it.job, RowJob)]
        try:
            results = self._batch(jobs)
        except BaseException as e:  # the batch function hands each job its own error; this is a bug in it
            results = [e] * len(items)
        for it, res in zip(items, results, strict=True):
            if isinstance(res, BaseException):
                _hand_back(it, None, res)
            else:
                _hand_back(it, res, None)

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=30)


def _hand_back(item: _Queued, result: Any, exc: BaseException | None) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed while the job ran (server shut down)
        item.loop.call_soon_threadsafe(_settle, item.fut, result, exc)


def _settle(fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if fut.cancelled():  # the client went away; the result is dropped
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


# --- scoring requests together ------------------------------------------------------------------------------------
def score_together(scorer: Scorer, jobs: Sequence[RowJob], window_ms: float) -> list[DecisionRecord | Exception]:
    """Score the rows of ``jobs`` (one request each) in one :meth:`Scorer.score_decisions` call.

    Each job's run is named as if it were scored alone (its own ``input_sha256`` and echo, hence ``config_sha256``),
    and each is checked alone first (a calibration that does not cover its row), so one request's bad row is that
    request's error only; each record gets the echo block its own request asked for. Should the call itself fail
    (a prompt over the context, say), every job is scored alone instead, so each gets its own record or error,
    exactly as without batching. Returns one record or exception per job, in order.
    """
    info = scorer.model_info()
    out: list[DecisionRecord | Exception | None] = [None] * len(jobs)
    run_hash: dict[int, str] = {}
    for k, job in enumerate(jobs):
        try:
            parts = scorer.run_config([job.decision], _run_parts(job), info, echo=job.echo)
        except SemifError as exc:
            out[k] = exc
            continue
        run_hash[k] = config_sha256(parts)
    todo = list(run_hash)
    if todo:
        try:
            records = scorer.score_decisions([jobs[k].decision for k in todo],
                                             {"input_sha256": rows_sha256([jobs[k].line for k in todo]),
                                              "semif": __version__}, echo=False)  # each its own, below
        except Exception:
            return [o if o is not None else _alone(scorer, job, window_ms) for o, job in zip(out, jobs, strict=True)]
        for k, rec in zip(todo, records, strict=True):
            rec["run"] = {**rec["run"], "config_sha256": run_hash[k], "index": 0}
            level = scorer.echo_level(jobs[k].echo)
            if level is not None:
                rec["echo"] = echo_block(jobs[k].decision, level)
            group = rec["timing"].get("group_rows", 1)
            rec["batch"] = {"requests": len(todo), "group_requests": int(group), "window_ms": window_ms}
            out[k] = DecisionRecord.from_record(rec)
    return [o for o in out if o is not None]


def _run_parts(job: RowJob) -> dict[str, Any]:
    """What names a one-row request's run (as :meth:`Scorer.decide_row` names it)."""
    return {"input_sha256": rows_sha256([job.line]), "semif": __version__}


def _alone(scorer: Scorer, job: RowJob, window_ms: float) -> DecisionRecord | Exception:
    """``job`` scored by itself (the batch it came in could not be scored together)."""
    try:
        rec = scorer.score_decisions([job.decision], _run_parts(job), echo=job.echo)[0]
    except Exception as exc:
        return exc
    rec["batch"] = {"requests": 1, "group_requests": 1, "window_ms": window_ms}
    return DecisionRecord.from_record(rec)
