"""``semif mcp``: typed decisions as MCP tools (``decide``, ``ask``, ``models``) over stdio or streamable HTTP on
loopback."""

from __future__ import annotations

import argparse
from typing import Any

from scorer.cli.arguments import add_max_batch_tokens_arg, add_mode_arg, add_model_args, backend_config, choice
from scorer.cli.score import add_echo_arg

TRANSPORTS = ("stdio", "http")


def register(sub: Any) -> None:
    """Add ``semif mcp``."""
    p = sub.add_parser("mcp", help="MCP server: the decide, ask and models tools (stdio, or streamable HTTP on "
                                   "loopback)")
    p.add_argument("--transport", type=choice(TRANSPORTS), choices=TRANSPORTS, default="stdio",
                   help="stdio (default: the MCP client starts this command) or http (streamable HTTP at /mcp)")
    p.add_argument("--host", default="127.0.0.1", help="http: loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001, help="http: TCP port (default 8001; 0 picks a free one)")
    add_mode_arg(p, "shared")
    add_max_batch_tokens_arg(p)
    p.add_argument("--calibration", metavar="FILE",
                   help="a prior or bias file (semif calibrate prior|bias): every answer gets its calibrated block")
    add_echo_arg(p)  # the server's default; a tool call's echo argument overrides it for its own records
    add_model_args(p)
    p.set_defaults(func=_cmd_mcp, stop_note="the server stopped (it keeps no state to resume)")


def _cmd_mcp(args: argparse.Namespace) -> int:
    from scorer.serving.mcp import serve_mcp

    serve_mcp(backend_config(args), args.transport, host=args.host, port=args.port, mode=args.mode,
              max_batch_tokens=args.max_batch_tokens, calibration=args.calibration, echo=args.echo)
    return 0
