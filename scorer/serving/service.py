"""``semif serve``: an HTTP decision service (Starlette on uvicorn) over one :class:`scorer.api.Scorer`.

Endpoints (JSON in, JSON out)::

    POST /v1/decide         body: one input row (schema semif-row-v1)   -> one record (semif-record-v1)
    POST /v1/decide/batch   body: {"rows": [row, ...]}                  -> {"records": [record, ...]}
    POST /v1/ask            body: {"state", "questions": {name: {type, question, options}}, "id"?, "extra"?}
                                                                        -> {"answers": {name: answer}, "records": [...]}
    GET  /v1/models         the loaded model's record ``model`` block, the mode and the limits
    GET  /v1/schema         JSON Schemas of the row and the record, and an OpenAPI 3.1 description
    GET  /healthz           {"status": "ok", "queued": N}

Contracts:

* Scoring runs on one worker thread fed by a bounded queue; the event loop only parses, validates and
  waits. A full queue answers 503 with ``Retry-After`` (nothing is scored for that request).
* Bad requests answer 4xx with ``{"error", "field", "row"}``: the same field-level messages as the CLI
  (``rows:3: field 'options': 256 options (expected 2 to 255 options)``); 413 for a body or a batch over the
  limits, 400 for a body that is not JSON, 422 for a row that breaks the schema, 401 for a missing or wrong
  bearer token. An unexpected error answers 500 ``internal error`` (the traceback goes to the server's
  stderr, never to the client).
* Binding to an address that is not loopback requires a bearer token (compared in constant time).
* Slow clients are bounded (``semif serve``'s own server, :func:`scorer.serving.http_server.bounded_protocol`): headers
within
  ``header_timeout_s``, the whole body within ``body_timeout_s`` of them, else 408 and the connection
  closes; at most ``max_connections`` open, one more answers 503 at once.
* ``--calibration FILE`` (a prior or bias file): every record carries the ``calibrated`` block that
  ``semif score --calibration FILE`` writes; a row whose signature the file does not cover answers 422
  naming the file and the signature; ``/v1/models`` names the file and its sha256.
* A batch is scored as one :meth:`~scorer.api.Scorer.decide_many` call (shared-prefix batching inside the
  request); its records equal ``semif score``'s for a file holding the same rows, apart from their ``cache``
  block: every request shares the scorer's radix prefix cache (``--prefix-cache-bytes``), so a request reuses
  the prefixes of earlier ones (records say how; ``/v1/models`` shows the cache's counters).
* ``/v1/ask`` is one :meth:`~scorer.api.Scorer.ask` call (the state prefilled once, the questions packed):
  its answers and records equal the Python API's and ``semif ask``'s; a bad question answers 422 naming
  ``questions.NAME.FIELD``; more questions than ``max_rows`` answer 413.
* ``--uncovered raw``: a row the calibration does not cover is scored with its raw numbers and flagged
  (``calibrated.uncovered``) instead of answering 422.
* Echo (:mod:`scorer.formats.echo`): ``--echo [full]`` makes every record carry its question, options and state digest
(or
  the state); a request's ``?echo=true|false|digest|full`` query parameter (any POST endpoint: the body stays the
  row, the batch or the ask request) overrides that for its own records, as the API's per-call ``echo=`` does; a
  bad value answers 422 with ``field`` ``echo``. A record equals the API's for the same row and echo.
* ``--batch-window-ms W`` (shared mode; default :data:`~scorer.serving.queue.DEFAULT_BATCH_WINDOW_MS`: off, as
  measured faster on a CPU): one-row requests queued within W ms of each other are scored in one call, those about
  one state in one packed pass (:mod:`scorer.serving.queue`); each such record carries ``batch`` (requests scored
  together, how many shared its prefix) and otherwise equals the unbatched record up to the packed pass's float
  noise.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import orjson

from scorer.api import Scorer, _parse_row, ask_call
from scorer.backends import BackendConfig
from scorer.core.checks import OptionError
from scorer.core.errors import InputError, SemifError
from scorer.formats.echo import QUERY_VALUES, request_echo
from scorer.formats.json_schemas import load_schema
from scorer.formats.record_schema import record_schema
from scorer.formats.records import dumps_record
from scorer.formats.rows import MAX_OPTIONS
from scorer.scoring.options import ScorerOptions
from scorer.serving.bodies import Refused, json_response, read_json
from scorer.serving.http_server import Limits, load_uvicorn, uvicorn_config
from scorer.serving.queue import QueueFull, RowJob, ScoringQueue, check_batch_window, score_together
from scorer.serving.served import ServedModels, parse_route, served_aliases
from scorer.serving.wire_http import WireContext, models_body
from scorer.serving.wire_http import routes as wire_routes

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response


TOKEN_ENV = "SEMIF_SERVE_TOKEN"
"""Environment variable holding the bearer token (preferred over ``--token``, which ``ps`` can show)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve off loopback without a bearer token (raises :class:`SemifError`)."""
    if not is_loopback(host) and not token:
        raise SemifError(f"--host {host} is not a loopback address: a bearer token is required "
                         f"(set {TOKEN_ENV} or pass --token) so that only its holders can use the model")


def row_schema() -> dict[str, Any]:
    """The JSON Schema of one input row (``scorer/formats/schemas/row-v1.json``)."""
    return load_schema("row-v1")


def openapi(limits: Limits) -> dict[str, Any]:
    """An OpenAPI 3.1 description of the service, with the row and record schemas as components."""
    ref = {"row": {"$ref": "#/components/schemas/Row"}, "record": {"$ref": "#/components/schemas/Record"}}
    err = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    errors = {"400": err, "401": err, "413": err, "422": err, "503": err}
    echo = [{"name": "echo", "in": "query", "required": False, "schema": {"enum": list(QUERY_VALUES)},
             "description": "this request's echo (default: the server's --echo): digest or true = the question, "
                            "options and the state's sha256 in every record; full = the state too; false = none"}]
    batch_in = {"type": "object", "required": ["rows"], "properties": {
        "rows": {"type": "array", "minItems": 1, "maxItems": limits.max_rows, "items": ref["row"]}}}
    batch_out = {"type": "object", "properties": {"records": {"type": "array", "items": ref["record"]}}}
    question = {"type": "object", "required": ["type", "question"], "properties": {
        "type": {"enum": ["choice", "yesno", "score"]}, "question": {"type": "string"},
        "options": {"description": "a list of ids, an object id -> description, or [{id, description}]; "
                                   "optional for yesno (default yes/no wording)"}}}
    ask_in = {"type": "object", "required": ["state", "questions"], "properties": {
        "state": {"description": "text or a non-empty JSON object/array"},
        "questions": {"type": "object", "minProperties": 1, "maxProperties": limits.max_rows,
                      "additionalProperties": question},
        "id": {"type": "string", "description": "record ids are ID/NAME (default NAME)"},
        "extra": {"type": "object", "description": "fields carried into every record's extra block"}}}
    ask_out = {"type": "object", "properties": {"answers": {"type": "object"},
                                                "records": {"type": "array", "items": ref["record"]}}}

    def body(schema: dict[str, Any]) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": schema}}}

    def ok(schema: dict[str, Any]) -> dict[str, Any]:
        return {"description": "ok", "content": {"application/json": {"schema": schema}}}

    def post(schema_in: dict[str, Any], schema_out: dict[str, Any]) -> dict[str, Any]:
        return {"post": {"parameters": echo, "requestBody": body(schema_in),
                         "responses": {"200": ok(schema_out), **errors}, "security": [{"bearer": []}]}}

    return {
        "openapi": "3.1.0",
        "info": {"title": "SemIf decision service", "version": "1"},
        "paths": {
            "/v1/decide": post(ref["row"], ref["record"]),
            "/v1/decide/batch": post(batch_in, batch_out),
            "/v1/ask": post(ask_in, ask_out),
            "/v1/models": {"get": {"responses": {"200": ok({"type": "object"})}}},
            "/healthz": {"get": {"responses": {"200": ok({"type": "object"})}}},
        },
        "components": {
            "schemas": {"Row": row_schema(), "Record": record_schema(), "Error": {
                "type": "object", "required": ["error"], "properties": {
                    "error": {"type": "string"}, "field": {"type": ["string", "null"]},
                    "row": {"type": ["integer", "null"]}}}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _error(status: int, message: str, field: str | None = None, row: int | None = None,
           headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": message, "field": field, "row": row}, status, headers)


def _query_echo(request: Request) -> str | bool | None:
    """The request's ``?echo=`` (:func:`scorer.formats.echo.request_echo`; None when absent: the server's echo)."""
    given = request.query_params.getlist("echo")
    if not given:
        return None
    if len(given) > 1:
        raise Refused(422, InputError("query", None, "echo", f"given {len(given)} times", "at most one ?echo="))
    return request_echo(QUERY_VALUES.get(given[0], given[0]), "query")


def build_app(served: Scorer | ServedModels, limits: Limits | None = None, token: str | None = None,
              batch_window_ms: float = 0.0) -> Starlette:
    """The ASGI app serving ``served`` (one scorer, or several models by name: :mod:`scorer.serving.served`; each
    loaded here if it is not yet). The semif dialect (``/v1/decide``, ``/v1/ask``…) uses the default (first) model;
    ``/v1/systemone`` and ``/v1/decisions`` (:mod:`scorer.serving.wire_http`) the model each request names. The app
    owns a worker thread for its lifespan; it does not close the scorers. ``batch_window_ms`` > 0 (shared mode only)
    batches one-row requests across clients (:mod:`scorer.serving.queue`); 0 scores each request alone."""
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect
    from starlette.routing import Route

    models = served if isinstance(served, ServedModels) else ServedModels({served.model: served})
    scorer = models.scorers[models.default]
    lim = limits or Limits()
    infos = {name: s.model_info() for name, s in models}  # now: later it would wait on a scorer's lock in the loop
    created = int(time.time())
    expected = f"Bearer {token}".encode() if token else None
    window_ms = check_batch_window(batch_window_ms, scorer.mode, scorer.layout)
    state: dict[str, ScoringQueue] = {}

    def authorised(request: Request) -> bool:
        if expected is None:
            return True
        got = request.headers.get("authorization", "").encode("utf-8", "replace")
        return hmac.compare_digest(got, expected)

    async def score(request: Request, parse: Callable[[Any, str | bool | None], Callable[[], Any] | RowJob],
                    render: Callable[[Any], Any]) -> Response:
        if not authorised(request):
            return _error(401, "missing or wrong bearer token (Authorization: Bearer <token>)",
                          headers={"WWW-Authenticate": "Bearer"})
        try:
            echo = _query_echo(request)
            job = parse(await read_json(request, lim), echo)
            result = await state["worker"].submit(job)
        except Refused as r:
            return _error(r.status, str(r.exc), r.exc.field, r.exc.line)
        except ClientDisconnect:  # the client went away, or its body was too slow (closed with a 408)
            return _error(400, "the client disconnected before its body was read")
        except QueueFull:
            return _error(503, f"busy: {lim.queue_size} requests are waiting; retry after {lim.retry_after_s} s",
                          headers={"Retry-After": str(lim.retry_after_s)})
        except InputError as exc:
            return _error(422, str(exc), exc.field, exc.line)
        except OptionError as exc:  # a refused option value: its name is the field
            return _error(422, str(exc), exc.option)
        except SemifError as exc:  # a prompt longer than the model's context, a refused tokenizer check…
            return _error(422, str(exc))
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return _error(500, "internal error (the server's log has the details)")
        return json_response(render(result))

    def parse_one(doc: Any, echo: str | bool | None) -> Callable[[], Any] | RowJob:
        if window_ms > 0:  # validated here, scored with whatever other requests the window brings
            return RowJob(*_parse_row(doc, "body", None), echo)
        return lambda: scorer.decide_row(doc, "body", echo=echo)

    def parse_batch(doc: Any, echo: str | bool | None) -> Callable[[], Any]:
        if not isinstance(doc, dict) or "rows" not in doc:
            raise Refused(422, InputError("body", None, "rows", "missing", 'an object {"rows": [row, ...]}'))
        rows = doc["rows"]
        if not isinstance(rows, list):
            raise Refused(422, InputError("body", None, "rows", f"a {type(rows).__name__}", "a list of rows"))
        if len(rows) > lim.max_rows:
            raise Refused(413, InputError("body", None, "rows", f"{len(rows)} rows",
                                           f"at most {lim.max_rows} rows per request"))
        return lambda: scorer.decide_many(rows, echo=echo)

    def parse_ask(doc: Any, echo: str | bool | None) -> Callable[[], Any]:
        if isinstance(doc, dict) and isinstance(doc.get("questions"), dict) and len(doc["questions"]) > lim.max_rows:
            raise Refused(413, InputError("body", None, "questions", f"{len(doc['questions'])} questions",
                                           f"at most {lim.max_rows} questions per request"))
        state, questions, rid, extra = ask_call(doc)  # a bad question: 422 here, nothing queued
        return lambda: scorer.ask(state, questions, rid, echo=echo, **extra)

    async def ask(request: Request) -> Response:
        return await score(request, parse_ask, lambda a: {
            "answers": a.to_json(), "records": [orjson.Fragment(dumps_record(dict(r))) for r in a.records]})

    async def decide(request: Request) -> Response:
        return await score(request, parse_one, lambda d: orjson.Fragment(dumps_record(d.record)))

    async def decide_batch(request: Request) -> Response:
        return await score(request, parse_batch,
                           lambda ds: {"records": [orjson.Fragment(dumps_record(d.record)) for d in ds]})

    async def list_models(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
        cal = scorer.calibration
        pc = scorer.prefix_cache  # plain counters, read without the scorer's lock (a request may be moving them)
        return json_response({**models_body(models, infos, created), "mode": scorer.mode, "slots": scorer.slots,
                              **({"sequence_norm": scorer.sequence_norm} if scorer.sequence_norm else {}),
                              "batch_window_ms": window_ms, "echo": scorer.echo,
                              "calibration": None if cal is None else {"method": cal.method, **cal.source},
                              "prefix_cache": {"kind": "radix", "budget_bytes": pc.budget_bytes,
                                               "held_bytes": pc.held_bytes, "states": pc.states,
                                               **pc.stats.as_dict()},
                              "limits": {"max_body_bytes": lim.max_body_bytes, "max_rows": lim.max_rows,
                                         "max_options": MAX_OPTIONS, "queue_size": lim.queue_size,
                                         "header_timeout_s": lim.header_timeout_s,
                                         "body_timeout_s": lim.body_timeout_s,
                                         "max_connections": lim.max_connections}})

    async def schema(request: Request) -> Response:
        return json_response({"row": row_schema(), "record": record_schema(), "openapi": openapi(lim)})

    async def healthz(request: Request) -> Response:
        return json_response({"status": "ok", "queued": state["worker"].queued})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["worker"] = ScoringQueue(lim.queue_size, window_ms / 1000,
                                       lambda jobs: score_together(scorer, jobs, window_ms), lim.max_rows)
        try:
            yield
        finally:
            state.pop("worker").stop()

    async def submit(job: Callable[[], Any]) -> Any:
        return await state["worker"].submit(job)

    wire = wire_routes(WireContext(models, lim, authorised, submit))
    routes = [*wire, Route("/v1/decide", decide, methods=["POST"]),
              Route("/v1/decide/batch", decide_batch, methods=["POST"]),
              Route("/v1/ask", ask, methods=["POST"]),
              Route("/v1/models", list_models, methods=["GET"]), Route("/v1/schema", schema, methods=["GET"]),
              Route("/openapi.json", schema, methods=["GET"]), Route("/healthz", healthz, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lifespan)


# --- serving ------------------------------------------------------------------------------------------
class _ServeReplica:
    """One Ray Serve replica: loads its own model (fetched and verified by sha256 on its node) and serves
    the same app as ``semif serve`` (its own worker thread and bounded queue)."""

    def __init__(self, cfg: dict[str, Any], options: ScorerOptions, limits: Limits, token: str | None,
                 batch_window_ms: float = 0.0) -> None:
        # Private names: Ray Serve's ingress wrapper subclasses this class and owns ``app`` itself.
        self._semif_scorer = Scorer.from_options(BackendConfig(**cfg), options)
        self._semif_scorer.load()
        self._semif_app = build_app(self._semif_scorer, limits, token, batch_window_ms)

    def __serve_build_asgi_app__(self) -> Starlette:
        return self._semif_app


@dataclass(frozen=True)
class ServeConfig:
    """Where and how ``semif serve`` serves one model: how it scores (:class:`ScorerOptions`, as every face) and
    what only a server has (address, token, limits, batching)."""

    host: str = "127.0.0.1"
    """Bind address; one that is not loopback needs ``token``."""
    port: int = 8000
    """TCP port (0 picks a free one)."""
    options: ScorerOptions = field(default_factory=ScorerOptions)
    """How every request is scored (mode, readout, layout, demonstrations, calibration, echo, preset…); a row the
    calibration does not cover answers 422 unless ``on_uncovered`` is ``raw``."""
    token: str | None = None
    """Bearer token clients must send (None: no token)."""
    limits: Limits = field(default_factory=Limits)
    """What one request may ask."""
    batch_window_ms: float | None = None
    """Batch one-row requests that arrive within this many ms (:mod:`scorer.serving.queue`); None: the default
    (:data:`~scorer.serving.queue.DEFAULT_BATCH_WINDOW_MS` in shared mode, 0 in the others); 0: each alone."""
    aliases: tuple[str, ...] = ()
    """``NAME=SERVED`` aliases besides the default ones (:func:`scorer.serving.served.served_aliases`)."""
    routes: tuple[str, ...] = ()
    """``NAME=FAST>ACCURATE@THRESHOLD`` routes (:func:`scorer.serving.served.parse_route`)."""


@dataclass(frozen=True)
class RayServeOptions:
    """``semif serve --ray``: the app as Ray Serve replicas."""

    replicas: int = 1
    """Replicas, one model each."""
    address: str | None = None
    """Cluster address (None: start a local cluster)."""
    cpus_per_replica: float = 1.0
    """CPUs Ray reserves per replica (also its threads when the model config sets none)."""


def _checked(models: Sequence[BackendConfig], cfg: ServeConfig) -> tuple[ServedModels, float]:
    """The served models (every scorer's options checked, a preset filled in, the calibration file read: nothing
    loaded yet) and the batch window, or the error that refuses ``cfg`` before any model loads."""
    check_bind(cfg.host, cfg.token)
    scorers = {m.model: Scorer.from_options(m, cfg.options) for m in models}
    default = next(iter(scorers))
    served = ServedModels(scorers, served_aliases(list(cfg.aliases), default, scorers),
                          {r.name: r for r in map(parse_route, cfg.routes)})
    first = scorers[default]
    return served, check_batch_window(cfg.batch_window_ms, first.mode, first.layout)  # None: the mode's default


def serve(models: BackendConfig | Sequence[BackendConfig], cfg: ServeConfig) -> None:
    """Serve ``models`` (the first is the default) over HTTP with uvicorn until interrupted (the serve extra).
    Refuses a non-loopback address without a token, and bad options, before any model loads."""
    uvicorn = load_uvicorn()
    served, window_ms = _checked([models] if isinstance(models, BackendConfig) else list(models), cfg)
    with contextlib.ExitStack() as stack:
        for _name, scorer in served:
            stack.enter_context(scorer)
        app = build_app(served, cfg.limits, cfg.token, window_ms)
        first = served.scorers[served.default]
        print(f"[semif] serving {', '.join(served.names())} ({first.mode}, batch window {window_ms:g} ms) on "
              f"http://{cfg.host}:{cfg.port}", file=sys.stderr)
        uvicorn.Server(uvicorn_config(app, cfg.limits, host=cfg.host, port=cfg.port)).run()


def serve_on_ray(model: BackendConfig, cfg: ServeConfig, ray_opts: RayServeOptions) -> None:
    """``semif serve --ray``: the app as ``ray_opts.replicas`` Ray Serve replicas behind Ray's HTTP proxy on
    ``cfg.host:cfg.port``; blocks until interrupted."""
    from dataclasses import asdict

    load_uvicorn()  # the app is the same Starlette app: the serve extra first, as plain `semif serve` asks
    served, window_ms = _checked([model], cfg)
    scorer = served.scorers[served.default]
    options = replace(cfg.options, calibration=scorer.calibration)  # the replicas get the file as read here
    try:
        import ray
        from ray import serve as ray_serve
    except ImportError as exc:
        raise SemifError(f"semif serve --ray needs the ray extra ({exc}); install it with "
                         "`pip install -e '.[ray]'`") from None
    ray.init(address=ray_opts.address, include_dashboard=False, logging_level=logging.WARNING)
    try:
        ray_serve.start(http_options={"host": cfg.host, "port": cfg.port})
        replica = ray_serve.deployment(ray_serve.ingress()(_ServeReplica), name="semif",
                                       num_replicas=ray_opts.replicas,
                                       ray_actor_options={"num_cpus": ray_opts.cpus_per_replica},
                                       max_ongoing_requests=cfg.limits.queue_size + 1)
        app = replica.bind(  # type: ignore[attr-defined]  # ray's stubs type deployment() as the decorator form
            {**asdict(model), "threads": model.threads or max(1, int(ray_opts.cpus_per_replica))},
            options, cfg.limits, cfg.token, window_ms)
        print(f"[semif] serving {model.model} ({scorer.mode}) on Ray Serve, {ray_opts.replicas} replicas, "
              f"http://{cfg.host}:{cfg.port}", file=sys.stderr)
        ray_serve.run(app, name="semif", route_prefix="/", blocking=True)
    finally:
        ray_serve.shutdown()
        ray.shutdown()
