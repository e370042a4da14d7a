"""``semif score --backend systemone``: decisions asked of a remote TypeSafe System One server, records out.

A System One server is a *decision* API: it answers option probabilities, not logits, so it is no
:class:`~scorer.backends.base.Backend` (nothing here prefills, packs or reads a token) but an engine of its own for a
records run, as the Ray engine is. What it does:

* Rows are grouped by state (the state exactly as it is sent: text, or JSON with its key order); each state is one
  ``POST {base}/v1/systemone`` whose questions are its rows (:mod:`scorer.scoring.systemone_wire` says how a row
  becomes a question), at most ``concurrency`` requests in flight, records written in input order as they come.
* The API key is read from the environment variable ``api_key_env`` names (sent as ``Authorization: Bearer``; never
  recorded). ``GET /v1/models`` is asked first: it checks the server answers and speaks System One, and names the
  model when ``model`` is not given and the server lists exactly one.
* A request that meets 408, 429 or 5xx, a timeout or a lost connection is retried (``retries`` times) with
  exponential backoff, honouring ``retry-after-ms`` and ``Retry-After`` (seconds or an HTTP date) up to
  :data:`MAX_RETRY_AFTER_S`; any other 4xx is a :class:`RemoteRefusal` (exit 2) with the server's own message
  (found as the SDK finds it), naming the rows asked; a server that stays down is an
  :class:`~scorer.core.errors.EngineError` (exit 1). Either way the records written so far are kept and
  ``--resume`` continues; a resumed run asks only the rows not yet written.
* Each record is a ``semif-record-v2`` remote decision record (:func:`make_record`): the caller's option ids, the
  served probabilities renormalised, ``option_logits`` their natural logs, choice, margin and tie read by SemIf's own
  rules (:func:`scorer.decision.readout.read_probabilities`), mode ``remote``, null token-level fields, and a
  ``remote`` block with the endpoint, the request's canonical-JSON sha256, the served model, usage and answer.
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson

from scorer import __version__
from scorer.calibration.temperature import apply_temperature
from scorer.core.errors import EngineError, InputError, SemifError, ValidationError
from scorer.core.hashing import canonical_sha256
from scorer.core.io import RecordsOutput
from scorer.decision.readout import read_probabilities
from scorer.formats.echo import with_echo
from scorer.formats.record_schema import RECORD_SCHEMA
from scorer.formats.records import check_record, dumps_record
from scorer.formats.rows import Decision
from scorer.formats.signature import signature_of
from scorer.scoring.file_run import resume_point
from scorer.scoring.options import config_sha256
from scorer.scoring.systemone_wire import (
    API,
    MODELS_PATH,
    PATH,
    PROMPT_VERSIONS,
    QUESTION_TYPES,
    REQUEST_ID_HEADER,
    WireError,
    error_message,
    listed_models,
    normalize_base_url,
    question_of,
    question_type,
    request_body,
    served_probabilities,
)

KERNEL = f"{API}.remote-decision"
"""A remote decision record's ``kernel``: no kernel ran here; the server's decision API answered."""
SCORE_KIND = ("remote decision API probability: the probabilities a TypeSafe System One server ({endpoint}, model "
              "{model}) answered for the declared options of a {qtype} question, renormalised over them, computed by "
              "a procedure SemIf cannot see; no token-level audit (no prompt, tokens, logits or allowed_token_mass); "
              "not a calibrated probability of correctness")
RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
"""Statuses a request is retried on (the SDK's); any other 4xx is final."""
MAX_RETRY_AFTER_S = 120.0
"""The longest ``Retry-After`` waited for; a server asking for more is reported instead (as the OpenAI SDK does)."""
MAX_BACKOFF_S = 8.0


class RemoteRefusal(SemifError):
    """The server refused a request for good (a 4xx other than 408/429: bad key, unknown model, questions it cannot
    take): the configuration or the rows must change, so exit 2."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SystemOneConfig:
    """Which System One server, and how to ask it."""

    base_url: str
    """The server's root (``http://127.0.0.1:8080``; a trailing ``/v1`` is accepted)."""
    model: str | None = None
    """The model name requests carry (None: the only one ``GET /v1/models`` lists)."""
    api_key_env: str | None = None
    """The environment variable holding the API key (None: no Authorization header)."""
    concurrency: int = 4
    """Requests in flight at once."""
    retries: int = 5
    """Retries of a request that met 408/429/5xx, a timeout or a lost connection."""
    timeout_s: float = 60.0
    """Seconds one HTTP request may take (connect, send, wait, read)."""
    question_types: str = "native"
    """How rows become questions (:data:`scorer.scoring.systemone_wire.QUESTION_TYPES`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", normalize_base_url(self.base_url))
        if self.question_types not in QUESTION_TYPES:
            raise ValidationError(f"--question-types {self.question_types!r} (expected one of "
                                  f"{', '.join(QUESTION_TYPES)})")
        if self.concurrency < 1 or self.retries < 0 or not self.timeout_s > 0:
            raise ValidationError("concurrency >= 1, retries >= 0 and a timeout > 0 are needed")

    def api_key(self) -> str | None:
        """The key from ``api_key_env`` (refused when that variable is unset or empty, or not one printable line)."""
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key.strip():
            raise ValidationError(f"--api-key-env {self.api_key_env}: that environment variable is not set (or empty)")
        if not key.isprintable() or any(c.isspace() for c in key):
            raise ValidationError(f"--api-key-env {self.api_key_env}: the key holds spaces or control characters")
        return key


@dataclass
class Reply:
    """One answered request."""

    body: Any
    request_id: str | None
    attempts: int
    seconds: float


class Transport:
    """HTTP to one System One server: bounded retries with backoff, one-line errors."""

    def __init__(self, cfg: SystemOneConfig, wire: Any = None):
        """``wire``: an ``httpx`` transport instead of the network (tests)."""
        import httpx

        self.base = cfg.base_url
        self.cfg = cfg
        key = cfg.api_key()
        self.keyed = key is not None
        headers = {"accept": "application/json", "user-agent": f"semif/{__version__}"}
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=cfg.concurrency + 1, max_keepalive_connections=cfg.concurrency + 1)
        self._client = httpx.Client(base_url=self.base, headers=headers, timeout=cfg.timeout_s, limits=limits,
                                    transport=wire, follow_redirects=False)
        self._httpx = httpx
        self.requests = self.retried = 0
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def call(self, method: str, path: str, body: bytes | None = None, what: str = "") -> Reply:
        """The JSON answer of one request (``what``: the rows it asks, for messages)."""
        httpx = self._httpx
        attempts = self.cfg.retries + 1
        last = ""
        t0 = time.perf_counter()
        where = f"{method} {self.base}{path}"
        for attempt in range(attempts):
            if attempt:
                with self._lock:
                    self.retried += 1
            try:
                r = self._client.request(method, path, content=body,
                                         headers={"content-type": "application/json"} if body is not None else None)
            except httpx.TimeoutException:
                last = f"no answer within {self.cfg.timeout_s:g} s (--request-timeout)"
                self._backoff(attempt, attempts, None, where, what)
                continue
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
                self._backoff(attempt, attempts, None, where, what)
                continue
            with self._lock:
                self.requests += 1
            if r.status_code in RETRY_STATUS:
                last = f"HTTP {r.status_code}: {error_message(_json_or_none(r), r.text)}"
                self._backoff(attempt, attempts, r.headers, where, what)
                continue
            if r.status_code >= 300:
                hint = ""
                if r.status_code in (401, 403) and not self.keyed:
                    hint = " (no API key was sent: name the variable holding it with --api-key-env NAME)"
                raise RemoteRefusal(f"the System One server refused {where}{what}: HTTP {r.status_code}: "
                                    f"{error_message(_json_or_none(r), r.text)}{hint}", r.status_code)
            body_json = _json_or_none(r)
            if body_json is None:
                raise EngineError(f"the System One server answered {where}{what} with non-JSON: "
                                  f"{' '.join(r.text.split())[:200]!r}")
            return Reply(body_json, r.headers.get(REQUEST_ID_HEADER), attempt + 1, time.perf_counter() - t0)
        raise EngineError(f"the System One server did not answer {where}{what} after {attempts} tries ({last}); "
                          "records written so far are kept, continue with --resume")

    def _backoff(self, attempt: int, attempts: int, headers: Any, where: str, what: str) -> None:
        if attempt + 1 >= attempts:
            return
        wait = min(MAX_BACKOFF_S, 0.5 * 2 ** attempt) * (1 - random.random() / 4)
        asked = retry_after(headers) if headers is not None else None
        if asked is not None:
            if asked > MAX_RETRY_AFTER_S:
                raise EngineError(f"the System One server asked to retry {where}{what} after {asked:g} s (more than "
                                  f"{MAX_RETRY_AFTER_S:g} s); records written so far are kept, continue with --resume "
                                  "later")
            wait = asked
        if self._closed.wait(wait):  # the run ended meanwhile (an error elsewhere, SIGINT): no more tries
            raise EngineError(f"the run stopped while {where}{what} waited to be retried")

    def close(self) -> None:
        """End the client; a request waiting to be retried stops waiting (a stopped run exits at once)."""
        self._closed.set()
        self._client.close()


def _json_or_none(r: Any) -> Any:
    try:
        return r.json()
    except ValueError:
        return None


def retry_after(headers: Any) -> float | None:
    """Seconds a server asked to wait: ``retry-after-ms`` (milliseconds) first, then ``Retry-After`` (seconds or an
    HTTP date); None when it asked nothing readable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        with contextlib.suppress(ValueError):
            v = float(ms) / 1000
            if v >= 0:
                return v
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        v = float(ra)
        return v if v >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def resolve_model(t: Transport, model: str | None) -> tuple[str, dict[str, Any] | None]:
    """The model name requests carry and its ``/v1/models`` entry (None when the server does not list it: an alias
    such as ``jev-latest`` that the server resolves itself, or a server without a model list when ``model`` is
    given)."""
    try:
        models = listed_models(t.call("GET", MODELS_PATH).body)
    except RemoteRefusal as exc:
        if exc.status == 404 and model is not None:
            return model, None
        raise
    except WireError as exc:
        raise EngineError(f"the server at {t.base} is not a System One server: {exc}") from None
    names = [m["name"] for m in models]
    if model is None:
        if len(models) != 1:
            raise ValidationError(f"the System One server at {t.base} lists {len(models)} models "
                                  f"({', '.join(names) or 'none'}): name one with --served-model")
        return names[0], models[0]
    return model, next((m for m in models if m["name"] == model), None)


def config_parts(cfg: SystemOneConfig, model: str, run_parts: dict[str, Any], temperature: float | None,
                 echo: str | None) -> dict[str, Any]:
    """What names a remote run (its records' ``run.config_sha256``, what ``--resume`` must match): the input and
    version (``run_parts``), the server, the model asked for, how rows become questions, and the options that change
    the records. The API key, concurrency, retries and timeout change no record, so they are left out."""
    parts = {**run_parts, "engine": API, "base_url": cfg.base_url, "model": model,
             "question_types": cfg.question_types}
    if temperature is not None:
        parts["temperature"] = temperature
    if echo is not None:
        parts["echo"] = echo
    return parts


def state_groups(decisions: list[Decision], skip: int = 0) -> list[list[int]]:
    """Input indices from ``skip`` on, grouped by state (the state as sent: its JSON with key order kept), in order
    of first appearance: one request each."""
    groups: OrderedDict[bytes, list[int]] = OrderedDict()
    for i in range(skip, len(decisions)):
        groups.setdefault(orjson.dumps(decisions[i].state), []).append(i)
    return list(groups.values())


def _rows_text(decisions: list[Decision], group: list[int]) -> str:
    """`` (rows 'a', 'b' … of the state at file:line)``: what a request asked, for messages."""
    ids = [decisions[i].id for i in group]
    shown = ", ".join(repr(x) for x in ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    src = decisions[group[0]].source
    return f" (row{'s' if len(ids) > 1 else ''} {shown}{f' of the state at {src}' if src else ''})"


def ask(t: Transport, decisions: list[Decision], group: list[int], model: str, listed: dict[str, Any] | None,
        question_types: str, run: dict[str, Any]) -> list[dict[str, Any]]:
    """One request for the rows ``group`` (one state), and their records in group order."""
    t0 = time.perf_counter()
    qtypes = {i: question_type(decisions[i], question_types) for i in group}
    body = request_body(model, decisions[group[0]].state,
                        {decisions[i].id: question_of(decisions[i], qtypes[i]) for i in group})
    data = orjson.dumps(body)
    request_sha = canonical_sha256(body)
    encode_s = time.perf_counter() - t0
    what = _rows_text(decisions, group)
    reply = t.call("POST", PATH, data, what)
    resp = reply.body
    served_model = resp.get("model") if isinstance(resp, dict) else None
    if not isinstance(served_model, str) or not served_model:
        raise EngineError(f"the System One server answered POST {t.base}{PATH}{what} without a model name "
                          f"(got {' '.join(str(resp).split())[:200]!r})")
    usage = resp.get("usage")
    if not isinstance(usage, dict):
        raise EngineError(f"the System One server answered POST {t.base}{PATH}{what} without a usage object")
    block = model_block(t.base, model, served_model, listed)
    share = reply.seconds / len(group)
    out = []
    for i in group:
        d = decisions[i]
        try:
            served, answer = served_probabilities(resp.get("answers", {}), d.id, qtypes[i], d.option_ids)
        except WireError as exc:
            raise EngineError(f"the System One server's answer to POST {t.base}{PATH}{what} does not hold row "
                              f"{d.id!r}'s decision: {exc}") from None
        remote = {"api": API, "endpoint": f"{t.base}{PATH}", "question": d.id, "question_type": qtypes[i],
                  "request_sha256": request_sha, "questions": len(group), "served_model": served_model,
                  "usage": usage, "answer": answer, "probability_sum": sum(served), "request_id": reply.request_id,
                  "attempts": reply.attempts}
        timing = {"encode_s": encode_s / len(group), "forward_s": share, "total_s": encode_s / len(group) + share,
                  "request_s": reply.seconds}
        out.append(make_record(d, i, qtypes[i], served, remote, block, timing, run))
    return out


def model_block(base: str, requested: str, served: str, listed: dict[str, Any] | None) -> dict[str, Any]:
    """A remote record's ``model``: the model the server says answered (``key``), where (``base_url``), what was asked
    for and its ``/v1/models`` entry. No weights, dtype or device are known: ``remote`` stands for them."""
    import httpx

    return {"key": served, "source": "remote", "dtype": "remote", "device": "remote", "backend": "systemone",
            "versions": {"semif": __version__, "httpx": httpx.__version__, "api": API}, "base_url": base,
            "requested": requested, "listed": listed}


def make_record(d: Decision, index: int, qtype: str, served: list[float], remote: dict[str, Any],
                model: dict[str, Any], timing: dict[str, float], run: dict[str, Any]) -> dict[str, Any]:
    """One remote decision record (module docstring; the schema's ``remote`` block)."""
    try:
        r = read_probabilities(served)
    except ValueError as exc:
        raise EngineError(f"row {d.id!r}: the System One server's probabilities {served} cannot be read: {exc}") \
            from None
    ids = d.option_ids
    prompt_version = PROMPT_VERSIONS[qtype]
    return {
        "schema": RECORD_SCHEMA,
        "id": d.id,
        "signature": signature_of(d, prompt_version, model),
        "option_ids": ids,
        "letters": [chr(ord("A") + k) for k in range(len(ids))],
        "probabilities": r.probabilities,
        "option_logits": r.option_logits,
        "choice": None if r.choice_index is None else ids[r.choice_index],
        "margin": r.margin,
        "tie": r.tie,
        "tied_option_ids": [ids[k] for k in r.tied_indices],
        "allowed_token_mass": None,
        "full_vocab_argmax": None,
        "score_kind": SCORE_KIND.format(endpoint=remote["endpoint"], model=remote["served_model"], qtype=qtype),
        "input_tokens": None,
        "prompt_version": prompt_version,
        "prompt_template": None,
        "prompt_sha256": None,
        "tokens_sha256": None,
        "mode": "remote",
        "kernel": KERNEL,
        "prefix_tokens": None,
        "suffix_tokens": None,
        "cache_hit": None,
        "prefix_sha256": None,
        "escalated": False,
        "remote": remote,
        "timing": {k: round(v, 6) for k, v in timing.items()},
        "model": model,
        "extra": d.extra,
        "run": {**run, "index": index},
        **({"type": d.type} if d.type is not None else {}),
    }


def run_systemone(decisions: list[Decision], cfg: SystemOneConfig, sink: RecordsOutput, run_parts: dict[str, Any],
                  temperature: float | None = None, echo: str | None = None,
                  on_record: Callable[[dict[str, Any]], None] | None = None,
                  on_start: Callable[[int, int], None] | None = None, wire: Any = None) -> int:
    """Ask ``decisions`` of the System One server ``cfg`` names and write their records into ``sink`` (created, or
    opened for ``--resume``), in input order; returns the records written. ``temperature`` and ``echo`` are applied
    to each record as a local run applies them. ``wire``: an ``httpx`` transport instead of the network (tests)."""
    t = Transport(cfg, wire)
    try:
        model, listed = resolve_model(t, cfg.model)
        chash = config_sha256(config_parts(cfg, model, run_parts, temperature, echo))
        point = resume_point(sink.read(), sink.path, chash, decisions)
        sink.accept(point)
        skip = len(point.lines)
        if on_start:
            on_start(len(decisions), skip)
        run = {"config_sha256": chash, "started_unix": round(time.time(), 3), "resumed_from": skip}
        records: Iterator[dict[str, Any]] = _asked(t, decisions, state_groups(decisions, skip), model, listed,
                                                   cfg, run, skip)
        if temperature is not None:
            records = (apply_temperature(r, temperature) for r in records)
        records = with_echo(records, decisions, echo)
        written = 0
        for rec in records:
            try:  # what the server sent is written only as a record that reads back (its answer is kept in it)
                check_record(rec, f"{t.base}{PATH}", None)
            except InputError as exc:
                raise EngineError(f"row {rec['id']!r}: the System One server's answer makes no valid record ({exc}); "
                                  "records written so far are kept") from None
            sink.write_line(dumps_record(rec))
            written += 1
            if on_record:
                on_record(rec)
        return written
    finally:
        t.close()


def _asked(t: Transport, decisions: list[Decision], groups: list[list[int]], model: str,
           listed: dict[str, Any] | None, cfg: SystemOneConfig, run: dict[str, Any], skip: int
           ) -> Iterator[dict[str, Any]]:
    """The records of ``groups``, in input order: requests sent in order of the groups' first rows, at most
    ``cfg.concurrency`` in flight, each group's records held until every earlier row's is out."""
    pending: dict[int, dict[str, Any]] = {}
    next_out = skip
    pool = ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="semif-systemone")
    flight: deque[Future[list[dict[str, Any]]]] = deque()
    todo = iter(groups)
    try:
        while True:
            while len(flight) < cfg.concurrency:
                g = next(todo, None)
                if g is None:
                    break
                flight.append(pool.submit(ask, t, decisions, g, model, listed, cfg.question_types, run))
            if not flight:
                break
            for rec in flight.popleft().result():
                pending[rec["run"]["index"]] = rec
            while next_out in pending:
                yield pending.pop(next_out)
                next_out += 1
    finally:
        for f in flight:
            f.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
    if next_out != len(decisions):  # every group was asked: a row missing here is a bug, never silent
        raise SemifError(f"the System One run wrote {next_out} of {len(decisions)} records; rerun with --resume")
