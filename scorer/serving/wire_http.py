"""The HTTP side of the decision-API dialects: ``POST /v1/systemone`` (:mod:`scorer.serving.systemone`) and
``POST /v1/decisions`` (:mod:`scorer.serving.decisions`) in ``semif serve``, and the ``GET /v1/models`` body both
SDKs read.

For every request: the bearer token (when the server has one), the body (:func:`scorer.serving.bodies.read_json`:
size limit, gzip/zstd, strict JSON), the dialect's protocol model (pydantic), the model it names
(:class:`~scorer.serving.served.ServedModels`; unknown: 404 listing the served names), the questions validated as
``/v1/ask`` validates them — all before anything is queued; then one job on the server's scoring worker.

**Safe to retry**: a request identical to one still being answered (same path, same model, same canonical JSON body)
joins it instead of being scored again — the SDKs retry on their own timeouts (typesafe-sdk after 10 s), and the
retry then gets the first request's answer as soon as it is ready. A full queue answers 503 with ``Retry-After``
(both SDKs wait that long and retry); there is no server-side deadline: a request is answered when it is scored.

**Errors** in each dialect's own shape, never a traceback: System One 422 ``{"detail": [{loc, msg, type, …}]}``
(with an ``error`` object too), OpenAI ``{"error": {message, type, param, code}}`` (400 for a request that breaks
the schema); 401 bad token, 404 unknown model, 413 too large, 415 unknown encoding, 503 busy, 500 ``internal error``
(the traceback on the server's stderr only).
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import ValidationError

from scorer.api import ask_decisions
from scorer.core.errors import InputError, SemifError
from scorer.core.hashing import canonical_json
from scorer.serving import decisions, systemone
from scorer.serving.bodies import Refused, drain, json_response, read_json
from scorer.serving.http_server import Limits
from scorer.serving.queue import QueueFull
from scorer.serving.served import ServedModels
from scorer.serving.wire import AskResult, ask

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

RELEASE_DATE = ""
"""``release_date`` of a served model in ``GET /v1/models`` (required by typesafe-sdk): unknown for local files."""
_TAGS = frozenset({"choice", "score", "noul", "box", "predicate", "message", "function_call", "function_call_output",
                   "custom_tool_call", "custom_tool_call_output", "input_text", "input_image", "input_json",
                   "output_text", "refusal", "str", "bool"})
"""pydantic's union tags in an error's ``loc`` (the member a value was tried as): dropped from the JSON path an
OpenAI ``param`` names, with every part that spells a type (``list[…]``)."""


@dataclass
class WireContext:
    """What the dialect endpoints need from the app that serves them."""

    models: ServedModels
    limits: Limits
    authorised: Callable[[Request], bool]
    submit: Callable[[Callable[[], Any]], Awaitable[Any]]
    inflight: dict[str, asyncio.Future[Any]] = field(default_factory=dict)


# --- errors ------------------------------------------------------------------------------------------------------
def error_body(message: str, *, status: int, param: str | None = None, code: str | None = None,
               detail: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One error body both SDKs read: OpenAI's ``error`` object, and TypeSafe's ``detail`` (its validation list on
    422, else the message)."""
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 413:
            "invalid_request_error", 415: "invalid_request_error", 422: "invalid_request_error", 503:
            "server_overloaded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code},
            "detail": detail if detail is not None else message}


def _respond(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> Response:
    return json_response(body, status, headers)


def _jsonable(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value, default=str))


def _path(loc: tuple[Any, ...] | list[Any]) -> str:
    """A pydantic ``loc`` as a JSON path (``questions[1].choices``), union tags left out."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _TAGS or any(c in str(part) for c in "[](),='"):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def _detail(exc: ValidationError) -> list[dict[str, Any]]:
    """pydantic's errors in FastAPI's (and TypeSafe's) shape: ``loc`` from ``"body"``."""
    out = []
    for e in exc.errors(include_url=False):
        item: dict[str, Any] = {"loc": ["body", *e["loc"]], "msg": e["msg"], "type": e["type"]}
        if "input" in e:
            item["input"] = _jsonable(e["input"])
        if e.get("ctx"):
            item["ctx"] = _jsonable(e["ctx"])
        out.append(item)
    return out


def _relevant(exc: ValidationError) -> list[Any]:
    """The errors worth a message: where a value fits none of a union's members, pydantic reports one error per
    member; those that only say the value is of another type (``string_type``…) are left out when another member
    says what is wrong inside the value."""
    errors = exc.errors(include_url=False)
    inner = [e for e in errors if not str(e["type"]).endswith("_type")]
    return inner or errors


def _refused(status: int, exc: InputError, dialect: str) -> Response:
    """A SemIf refusal (field-named) in the dialect's shape: ``path: what (expected …)``."""
    msg = f"{exc.problem} (expected {exc.expected})"
    loc = ["body", *(exc.field.replace("[", ".").replace("]", "").split(".") if exc.field else [])]
    detail = [{"loc": [int(x) if x.isdigit() else x for x in loc], "msg": msg, "type": "value_error"}]
    body = error_body(f"{exc.field}: {msg}" if exc.field else msg, status=status, param=exc.field,
                      code="invalid_value", detail=detail if dialect == "systemone" and status == 422 else None)
    return _respond(body, status)


# --- the endpoints -----------------------------------------------------------------------------------------------
def routes(ctx: WireContext) -> list[Route]:
    """The two dialects' routes."""
    from starlette.routing import Route

    async def systemone_endpoint(request: Request) -> Response:
        return await _answer(ctx, request, "systemone")

    async def decisions_endpoint(request: Request) -> Response:
        return await _answer(ctx, request, "decisions")

    return [Route("/v1/systemone", systemone_endpoint, methods=["POST"]),
            Route("/v1/decisions", decisions_endpoint, methods=["POST"])]


async def _answer(ctx: WireContext, request: Request, dialect: str) -> Response:
    """One request of ``dialect``, answered or refused in its own shape (module docstring)."""
    from starlette.requests import ClientDisconnect

    rid = uuid.uuid4().hex
    ids = {"x-request-id": rid, "x-typesafe-request-id": rid}
    if not ctx.authorised(request):
        return _respond(error_body("missing or wrong bearer token (Authorization: Bearer <token>)", status=401,
                                   code="invalid_api_key"), 401, {"WWW-Authenticate": "Bearer", **ids})
    try:
        if dialect == "systemone" and request.headers.get("content-type", "").startswith("multipart/"):
            await drain(request.stream(), ctx.limits)  # the SDK sends images as multipart parts
            raise systemone.Unsupported(["body", "assets"],
                                        "image assets are not supported: SemIf serves text models")
        doc = await read_json(request, ctx.limits)
        job, key = _prepare(ctx, doc, dialect)
    except Refused as r:
        return _respond(error_body(str(r.exc), status=r.status, param=r.exc.field, code="invalid_body"),
                        r.status, ids)
    except ClientDisconnect:
        return _respond(error_body("the client disconnected before its body was read", status=400), 400, ids)
    except ValidationError as exc:
        status = 422 if dialect == "systemone" else 400
        errors = _relevant(exc)
        message = "; ".join(f"{_path(e['loc']) or 'body'}: {e['msg']}" for e in errors)
        detail = _detail(exc) if dialect == "systemone" else None
        return _respond(error_body(message, status=status, param=_path(errors[0]["loc"]) or None,
                                   code=str(errors[0]["type"]), detail=detail), status, ids)
    except systemone.Unsupported as u:
        detail = [{"loc": u.loc, "msg": u.msg, "type": "unsupported"}]
        return _respond(error_body(u.msg, status=422, param=".".join(map(str, u.loc[1:])), code="unsupported",
                                   detail=detail), 422, ids)
    except decisions.Unsupported as u:
        return _respond(error_body(u.msg, status=400, param=u.param, code="unsupported"), 400, ids)
    except _UnknownModel as m:
        return _respond(error_body(str(m), status=404, param="model", code="model_not_found"), 404, ids)
    except InputError as exc:
        return _refused(422 if dialect == "systemone" else 400, exc, dialect)
    try:
        body = await _run_once(ctx, key, job)
    except QueueFull:
        return _respond(error_body(f"busy: {ctx.limits.queue_size} requests are waiting; retry after "
                                   f"{ctx.limits.retry_after_s} s", status=503), 503,
                        {"Retry-After": str(ctx.limits.retry_after_s), **ids})
    except InputError as exc:  # found only while scoring (a calibration that does not cover a question…)
        return _refused(422 if dialect == "systemone" else 400, exc, dialect)
    except SemifError as exc:  # a prompt longer than the model's context, a refused tokenizer check…
        status = 422 if dialect == "systemone" else 400
        return _respond(error_body(str(exc), status=status), status, ids)
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return _respond(error_body("internal error (the server's log has the details)", status=500), 500,
                        {"x-should-retry": "false", **ids})
    return _respond(body, 200, ids)


class _UnknownModel(Exception):
    pass


def _served(ctx: WireContext, name: str) -> str:
    try:
        return ctx.models.resolve(name)
    except KeyError:
        raise _UnknownModel(f"model {name!r} is not served here (served: {', '.join(ctx.models.names())})") from None


def _prepare(ctx: WireContext, doc: Any, dialect: str) -> tuple[Callable[[], dict[str, Any]], str]:
    """Validate ``doc`` for ``dialect`` (protocol model, model name, every question as ``/v1/ask`` would) and return
    the job that answers it with the key identical requests share."""
    key = hashlib.sha256(dialect.encode() + b"\0" + canonical_json(doc)).hexdigest()
    if dialect == "systemone":
        sreq = systemone.SystemOneRequest.model_validate(doc)
        served = _served(ctx, sreq.model)
        squestions = systemone.to_ask(sreq)
        _check(sreq.state, squestions, lambda name: f"questions.{name}", "criteria")

        def run_systemone() -> dict[str, Any]:
            result: AskResult = ask(ctx.models, served, sreq.state, squestions)
            return systemone.response(sreq, result)

        return run_systemone, key
    dreq = decisions.DecisionsRequest.model_validate(doc)
    served = _served(ctx, dreq.model)
    state = decisions.render_input(dreq.input)
    dquestions, refused = decisions.to_ask(dreq)
    _check(state, dquestions, lambda name: f"questions[{name[1:]}]", "choices")

    def run_decisions() -> dict[str, Any]:
        result = ask(ctx.models, served, state, dquestions) if dquestions else AskResult({}, [], served)
        return decisions.response(dreq, result, refused)

    return run_decisions, key


def _check(state: Any, questions: dict[str, dict[str, Any]], where: Callable[[str], str], options: str) -> None:
    """Every question validated as :meth:`Scorer.ask` will (nothing scored); an error names the question as the
    dialect does (``questions.NAME`` or ``questions[i]``) and its options as the dialect calls them (``options``:
    ``criteria``, ``choices``)."""
    if not questions:
        return
    try:
        ask_decisions(state, questions)
    except InputError as exc:
        field_ = exc.field or ""
        if field_.startswith("questions."):
            name, _, rest = field_.removeprefix("questions.").partition(".")
            rest = rest.replace("options", options, 1)
            field_ = where(name) + (f".{rest}" if rest else "")
        raise InputError("body", None, field_ or None, exc.problem, exc.expected) from None


async def _run_once(ctx: WireContext, key: str, job: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``job`` on the scoring worker, or the answer of an identical request already being scored (joined)."""
    running = ctx.inflight.get(key)
    if running is not None:
        return dict(await asyncio.shield(running))
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    ctx.inflight[key] = fut
    try:
        body = await ctx.submit(job)
        fut.set_result(body)
        return dict(body)
    except BaseException as exc:
        fut.set_exception(exc)
        fut.exception()  # retrieved here: a request that nobody joined must not warn at shutdown
        raise
    finally:
        ctx.inflight.pop(key, None)


def models_body(ctx_models: ServedModels, info: dict[str, dict[str, Any]], created: int) -> dict[str, Any]:
    """The ``GET /v1/models`` lists both SDKs read: ``models`` (typesafe-sdk: ``name``, ``description``,
    ``release_date``; the semif dialect's model blocks extend each real model's entry) and ``object``/``data``
    (openai: ``id``, ``object``, ``created``, ``owned_by``)."""
    entries: list[dict[str, Any]] = []
    for name in ctx_models.names():
        target = ctx_models.resolve(name)
        if name in ctx_models.scorers:
            block = info[name]
            what = f"{block.get('key')} ({block.get('backend')}, {block.get('dtype')}) served by SemIf"
            entries.append({**block, "name": name, "description": what, "release_date": RELEASE_DATE})
        elif name in ctx_models.routes:
            r = ctx_models.routes[name]
            entries.append({"name": name, "description": f"route: {r.fast}, re-asked on {r.accurate} when the margin "
                                                         f"is under {r.threshold:g}", "release_date": RELEASE_DATE,
                            "route": {"fast": r.fast, "accurate": r.accurate, "threshold": r.threshold}})
        else:
            entries.append({"name": name, "description": f"alias of {target}", "release_date": RELEASE_DATE,
                            "alias_of": target})
    data = [{"id": e["name"], "object": "model", "created": created, "owned_by": "semif"} for e in entries]
    return {"object": "list", "data": data, "models": entries}
