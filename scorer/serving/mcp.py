"""``semif mcp``: typed decisions as MCP tools (the official ``mcp`` Python SDK), over stdio or streamable HTTP.

Tools (:data:`TOOLS`; each is one :class:`McpTool`: its name, JSON Schemas for input and output, and one function
of the :class:`~scorer.api.Scorer` and the arguments):

* ``decide`` — one decision: ``state``, ``question``, ``options`` (``{id: description}`` or the row form
  ``[{"id", "description"}, …]``), optional ``id`` and ``extra`` (carried into the record, never into the prompt).
  Answers the typed readout (``choice``, ``final_choice``, ``probabilities`` by option id, ``margin``, ``tie``,
  ``allowed_token_mass``, the ``calibrated`` block when the server has a calibration) and the whole
  ``semif-record-v2`` ``record``, the one :meth:`Scorer.decide` returns for the same arguments.
* ``ask`` — several named questions about one state (``questions``: name -> ``{type: choice|yesno|score,
  question, options}``): :meth:`Scorer.ask` (one prefill, the questions packed), name -> typed answer, and every
  question's record; a bad question is a tool error naming ``questions.NAME.FIELD``.
* ``models`` — the loaded model's record ``model`` block, the mode, the calibration file, the server's echo and the
  tool names.

``decide`` and ``ask`` take ``echo`` (``true`` or ``"digest"``: each record keeps its question, options and the
state's sha256; ``"full"``: the state too; ``false``: none; absent or null: the server's ``--echo``), exactly as the
API's per-call ``echo=``; a bad value is a tool error naming the field ``echo``.

A new tool (``ask``, once :meth:`Scorer.ask` exists) is one more :class:`McpTool` in :data:`TOOLS`: a function
``(scorer, arguments) -> (structured answer, text)`` and its two schemas; listing, dispatch, errors and both
transports come with it.

Errors: arguments are validated by the same code as rows (:func:`scorer.formats.rows.parse_decision`), so a bad one is a
tool error (``isError``) whose text names the field as ``semif score`` would
(``decision: field 'options': 1 options (expected 2 to 255 options)``); an unexpected failure is a tool error
``internal error`` (the traceback goes to the server's stderr, never to the client). Scoring runs in a worker
thread, one call at a time (the scorer is serialised), so the event loop keeps answering.

Transports: ``stdio`` (the client starts ``semif mcp``; stdout carries the protocol only) and streamable HTTP on
a loopback address only (``--transport http``, endpoint ``/mcp``): an MCP client on another host would need the
authentication this server does not have.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from scorer import __version__
from scorer.api import DECIDE_SOURCE, DecisionRecord, Scorer, ask_call
from scorer.core.errors import InputError, SemifError
from scorer.decision.questions import normalize_options
from scorer.formats.echo import request_echo
from scorer.formats.record_schema import record_schema
from scorer.scoring.options import ScorerOptions
from scorer.serving.http_server import Limits, uvicorn_config
from scorer.serving.mcp_wire import gate_http, gated_stdio
from scorer.serving.service import is_loopback, row_schema

if TYPE_CHECKING:
    from scorer.backends import BackendConfig

SERVER_NAME = "semif"
MCP_PATH = "/mcp"
"""The streamable HTTP endpoint."""
_DECIDE_KEYS = ("state", "question", "options", "id", "extra", "echo")
_ROW_KEYS = ("id", "state", "question", "options", "echo")
"""What ``extra`` may not hold: the decision's own fields, and ``echo`` (an argument of the call, never a field)."""
_ECHO_ARG: dict[str, Any] = {
    "enum": [True, False, None, "digest", "full"],
    "description": "echo the inputs into the record(s): true or 'digest' (question, options, the state's sha256), "
                   "'full' (the state too), false (none); absent or null: the server's --echo"}


@dataclass(frozen=True)
class McpTool:
    """One MCP tool: what ``tools/list`` shows and the function ``tools/call`` runs (on a worker thread)."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Scorer, Mapping[str, Any]], tuple[dict[str, Any], str]]
    """``(scorer, arguments) -> (structured answer, text)``; raises :class:`SemifError` for bad arguments."""


# --- decide ---------------------------------------------------------------------------------------------------------
def _decide_input_schema() -> dict[str, Any]:
    """The row schema's fields (``scorer/formats/schemas/row-v1.json``), ``id`` optional; its options already take every
    form (ids, ``{id: description}``, the row list)."""
    row = row_schema()["properties"]
    return {
        "type": "object", "required": ["state", "question", "options"], "additionalProperties": False,
        "properties": {
            "state": row["state"], "question": row["question"], "options": row["options"],
            "id": {**row["id"], "description": "the decision's id in its record (default 'decision')"},
            "extra": {"type": "object", "description": "fields carried into the record's extra block, never into "
                                                       "the prompt"},
            "echo": _ECHO_ARG,
        },
    }


def _readout_schema() -> dict[str, Any]:
    record = {k: v for k, v in record_schema().items() if k not in ("$schema", "$id")}
    prob = {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}
    choice = {"type": ["string", "null"]}
    return {
        "type": "object", "additionalProperties": False,
        "required": ["id", "choice", "final_choice", "probabilities", "margin", "tie", "allowed_token_mass",
                     "calibrated", "record"],
        "properties": {
            "id": {"type": "string"},
            "choice": {**choice, "description": "the raw readout's option id (null on a tie)"},
            "final_choice": {**choice, "description": "the choice to act on: the calibrated one when the server "
                                                      "has a calibration, else the raw one"},
            "probabilities": {**prob, "description": "softmax over the declared options' answer-slot logits"},
            "margin": {"type": "number"}, "tie": {"type": "boolean"},
            "allowed_token_mass": {"type": "number", "description": "share of the full-vocabulary softmax on the "
                                                                    "option letters (low: a weak answer)"},
            "calibrated": {"type": ["object", "null"], "description": "the record's calibrated block, or null"},
            "record": {**record, "description": "the whole semif-record-v2 record (how it was computed)"},
        },
    }


def readout(d: DecisionRecord) -> dict[str, Any]:
    """The structured answer of ``decide``: the typed readout and the whole record."""
    return {"id": d.id, "choice": d.choice, "final_choice": d.final_choice, "probabilities": dict(d.probabilities),
            "margin": d.margin, "tie": d.tie, "allowed_token_mass": d.allowed_token_mass,
            "calibrated": d.record.get("calibrated"), "record": d.record}


def _text(answer: Mapping[str, Any]) -> str:
    """The answer as a model reads it: compact JSON without the record (its bulk is for audits, not prompts)."""
    return orjson.dumps({k: v for k, v in answer.items() if k != "record"}).decode()


def decision_row(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The row ``decide``'s arguments stand for (as :meth:`Scorer.decide` builds it); keys that are not arguments,
    and ``extra`` keys that would replace a row field, raise :class:`InputError` naming them."""
    for key in arguments:
        if key not in _DECIDE_KEYS:
            raise InputError(DECIDE_SOURCE, None, str(key), "not an argument of decide", ", ".join(_DECIDE_KEYS))
    extra = arguments.get("extra", {})
    if not isinstance(extra, Mapping):
        raise InputError(DECIDE_SOURCE, None, "extra", f"a {type(extra).__name__}", "an object")
    for key in extra:
        if key in _ROW_KEYS:
            raise InputError(DECIDE_SOURCE, None, f"extra.{key}", "a field of the decision itself, or its echo",
                             "extra fields other than id, state, question, options, echo")
    row: dict[str, Any] = {"id": arguments.get("id", "decision")}
    row.update({k: arguments[k] for k in ("state", "question") if k in arguments})
    if "options" in arguments:
        row["options"] = normalize_options(arguments["options"], DECIDE_SOURCE, None)
    return {**row, **extra}


def _decide(scorer: Scorer, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    row = decision_row(arguments)
    answer = readout(scorer.decide_row(row, DECIDE_SOURCE, echo=request_echo(arguments.get("echo"), DECIDE_SOURCE)))
    return answer, _text(answer)


# --- ask ------------------------------------------------------------------------------------------------------------
_ASK_INPUT: dict[str, Any] = {
    "type": "object", "required": ["state", "questions"], "additionalProperties": False,
    "properties": {
        "state": {"description": "text, or a non-empty JSON object/array: prefilled once for every question"},
        "questions": {
            "type": "object", "minProperties": 1,
            "description": "name -> question; each answered by name",
            "additionalProperties": {
                "type": "object", "required": ["type", "question"],
                "properties": {
                    "type": {"enum": ["choice", "yesno", "score"],
                             "description": "choice: one of the options; yesno: p_yes; score: ordered labels, "
                                            "lowest first (distribution, expected value, argmax)"},
                    "question": {"type": "string", "pattern": "\\S"},
                    "options": {"description": "a list of ids, an object id -> description, or [{id, description}]"
                                               "; optional for yesno (default yes/no wording)"}}}},
        "id": {"type": "string", "description": "record ids are ID/NAME (default NAME)"},
        "extra": {"type": "object", "description": "fields carried into every record's extra block"},
        "echo": _ECHO_ARG,
    },
}
_ASK_OUTPUT: dict[str, Any] = {
    "type": "object", "required": ["answers", "records"],
    "properties": {"answers": {"type": "object", "description": "name -> typed answer (the readout to act on, "
                                                                  "calibrated when the server has a calibration)"},
                   "records": {"type": "array", "items": {"type": "object"},
                               "description": "the semif-record-v2 record of every question"}},
}


def _ask(scorer: Scorer, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    args = dict(arguments)
    echo = request_echo(args.pop("echo", None), "ask")
    state, questions, rid, extra = ask_call(args, "ask")  # validated, errors name questions.NAME.FIELD
    answers = scorer.ask(state, questions, rid, echo=echo, **extra)
    doc = {"answers": answers.to_json(), "records": [dict(r) for r in answers.records]}
    return doc, orjson.dumps(doc["answers"]).decode()


# --- models ---------------------------------------------------------------------------------------------------------
def _models(scorer: Scorer, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    if arguments:
        raise InputError("models", None, str(next(iter(arguments))), "not an argument of models", "no arguments")
    cal = scorer.calibration
    doc = {"models": [scorer.model_info()], "mode": scorer.mode,
           "calibration": None if cal is None else {"method": cal.method, **cal.source}, "echo": scorer.echo,
           "tools": [t.name for t in TOOLS]}
    return doc, orjson.dumps(doc).decode()


_MODELS_OUTPUT = {
    "type": "object", "required": ["models", "mode", "calibration", "tools"],
    "properties": {"models": {"type": "array", "items": {"type": "object"},
                              "description": "the records' model block of the loaded model"},
                   "mode": {"enum": ["direct", "serial", "shared"]},
                   "calibration": {"type": ["object", "null"], "description": "the calibration file (method, path, "
                                                                              "sha256), or null"},
                   "echo": {"enum": [None, "digest", "full"], "description": "what every record echoes unless a "
                                                                            "call's echo argument says otherwise"},
                   "tools": {"type": "array", "items": {"type": "string"}}},
}

TOOLS: tuple[McpTool, ...] = (
    McpTool("decide", "Typed decision",
            "Decide a question about a state among 2-255 declared options, read from one forward pass of a local "
            "model: a probability per option (softmax over the option letters' logits), the choice, the margin and "
            "how much of the model's probability the options hold, with the full record of how it was computed.",
            _decide_input_schema(), _readout_schema(), _decide),
    McpTool("ask", "Named questions about one state",
            "Ask several named questions (choice, yesno, score) about one state, answered from one prefill of the "
            "state with the questions packed: name -> typed answer (probabilities, the choice to act on, p_yes, "
            "the expected value of a score), with every question's full record.",
            _ASK_INPUT, _ASK_OUTPUT, _ask),
    McpTool("models", "Loaded model", "The model this server decides with (its identity and sha256s), the scoring "
            "mode and the calibration file, if any.",
            {"type": "object", "properties": {}, "additionalProperties": False}, _MODELS_OUTPUT, _models),
)
"""The tools ``semif mcp`` serves, in the order ``tools/list`` gives them."""


def call_tool(scorer: Scorer, name: str, arguments: Mapping[str, Any] | None,
              tools: tuple[McpTool, ...] = TOOLS) -> tuple[dict[str, Any] | None, str, bool]:
    """Run tool ``name``: ``(structured answer, text, is_error)``. Bad arguments and refused decisions are tool
    errors naming the field; anything unexpected is ``internal error`` (traceback on stderr only)."""
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        return None, f"unknown tool {name!r} (expected one of {', '.join(t.name for t in tools)})", True
    try:
        structured, text = tool.run(scorer, arguments or {})
    except SemifError as exc:
        return None, str(exc), True
    except Exception:
        traceback.print_exc(file=sys.stderr)
        return None, "internal error (the server's log has the details)", True
    return structured, text, False


def check_http_host(host: str) -> None:
    """Streamable HTTP is served on loopback only (raises :class:`SemifError` before any model loads)."""
    if not is_loopback(host):
        raise SemifError(f"--host {host} is not a loopback address: semif mcp serves streamable HTTP on loopback "
                         "only (it has no authentication); use --transport stdio, or put an authenticating proxy "
                         "in front of a loopback server")


def build_server(scorer: Scorer, tools: tuple[McpTool, ...] = TOOLS) -> Any:
    """The SDK's low-level ``Server`` serving ``tools`` with ``scorer`` (the ``mcp`` package: ``semif mcp``'s
    extra). Each call runs on a worker thread; its answer is a ``CallToolResult`` with the text and, when it
    succeeded, the structured answer that the tool's output schema describes."""
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server


    listed = [types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema,
                         output_schema=t.output_schema) for t in tools]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        structured, text, is_error = await anyio.to_thread.run_sync(call_tool, scorer, params.name, params.arguments,
                                                                     tools)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured,
                                    is_error=is_error)

    return Server(SERVER_NAME, version=__version__, title="SemIf typed decisions",
                  instructions="decide: a typed decision among declared options, read from one forward pass of a "
                               "local model; act on final_choice, and treat a low margin or allowed_token_mass as "
                               "no answer.",
                  on_list_tools=list_tools, on_call_tool=call)


def _mcp_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise SemifError(f"semif mcp needs the mcp extra ({exc}); install it with `pip install -e '.[mcp]'` "
                         "(the official MCP Python SDK, mcp==2.3.0)") from None


async def _serve_stdio(server: Any) -> None:
    async with gated_stdio() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Any, host: str) -> Any:
    """The streamable HTTP ASGI app of ``server`` at :data:`MCP_PATH`, answering only requests addressed to
    ``host`` or another loopback name (the SDK's DNS-rebinding protection: a web page cannot reach it)."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = dict.fromkeys([f"[{host}]" if ":" in host else host, "127.0.0.1", "localhost", "[::1]"])
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=[f"{n}:*" for n in names],
                                         allowed_origins=[f"http://{n}:*" for n in names])
    return gate_http(server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security,
                                                host=host), MCP_PATH, Limits().max_body_bytes)


def serve_mcp(model: BackendConfig, transport: str, host: str = "127.0.0.1", port: int = 8001,
              options: ScorerOptions | None = None) -> None:
    """``semif mcp``: load ``model`` and serve :data:`TOOLS` over ``transport`` (``stdio`` or ``http``) until the
    client closes stdin (stdio) or the process is interrupted (http), scoring as ``options`` say (the options every
    face shares; default: :class:`ScorerOptions`'s). The SDK, the host, the options and the calibration file are
    checked before the model loads."""
    import anyio

    _mcp_sdk()
    if transport == "http":
        check_http_host(host)
    scorer = Scorer.from_options(model, options or ScorerOptions())
    with contextlib.closing(scorer):
        with contextlib.redirect_stdout(sys.stderr):  # whatever a model load prints, stdout is the protocol's
            scorer.load()
        server = build_server(scorer)
        if transport == "stdio":
            print(f"[semif] MCP over stdio: {model.model} ({scorer.mode})", file=sys.stderr)
            anyio.run(_serve_stdio, server)
            return
        import uvicorn

        print(f"[semif] MCP over streamable HTTP: {model.model} ({scorer.mode}) on http://{host}:{port}{MCP_PATH}",
              file=sys.stderr)
        uvicorn.Server(uvicorn_config(http_app(server, host), Limits(), host=host, port=port)).run()
