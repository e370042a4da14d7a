"""``semif mcp``: typed decisions as MCP tools (``decide``, ``ask``, ``models``) over stdio or streamable HTTP on
loopback."""

from __future__ import annotations

import argparse
from typing import Any

from scorer.cli.arguments import add_model_args, add_scorer_args, backend_config, choice, scorer_options

TRANSPORTS = ("stdio", "http")


def register(sub: Any) -> None:
    """Add ``semif mcp``."""
    p = sub.add_parser("mcp", help="MCP server: the decide, ask and models tools (stdio, or streamable HTTP on "
                                   "loopback)")
    p.add_argument("--transport", type=choice(TRANSPORTS), choices=TRANSPORTS, default="stdio",
                   help="stdio (default: the MCP client starts this command) or http (streamable HTTP at /mcp)")
    p.add_argument("--host", default="127.0.0.1", help="http: loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001, help="http: TCP port (default 8001; 0 picks a free one)")
    add_scorer_args(p)  # the server's; a tool call's echo argument overrides its echo for its own records
    add_model_args(p)
    p.set_defaults(func=_cmd_mcp, stop_note="the server stopped (it keeps no state to resume)")


def _cmd_mcp(args: argparse.Namespace) -> int:
    from scorer.serving.mcp import serve_mcp

    serve_mcp(backend_config(args), args.transport, host=args.host, port=args.port, options=scorer_options(args))
    return 0
