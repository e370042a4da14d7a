"""``semif serve``: the HTTP decision service (Starlette on uvicorn, or Ray Serve replicas)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from scorer.cli.arguments import (
    add_model_args,
    add_scorer_args,
    backend_configs,
    non_negative_float,
    positive_float,
    positive_int,
    scorer_options,
)
from scorer.core.checks import SEQUENCE_SLOTS
from scorer.core.errors import InputError
from scorer.serving.http_server import Limits
from scorer.serving.queue import DEFAULT_BATCH_WINDOW_MS
from scorer.serving.served import DEFAULT_ALIASES
from scorer.serving.service import TOKEN_ENV


def register(sub: Any) -> None:
    """Add ``semif serve``."""
    p = sub.add_parser("serve", help="HTTP decision service: the System One (/v1/systemone) and OpenAI Decisions "
                                     "(/v1/decisions) wire formats, and SemIf's own (/v1/decide, /v1/ask)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1; others need a token)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    add_scorer_args(p)  # how every request is scored: the options every face shares
    p.add_argument("--token", help=f"bearer token clients must send (prefer the {TOKEN_ENV} environment variable)")
    p.add_argument("--queue-size", type=positive_int, default=Limits.queue_size,
                   help="requests waiting for the scorer before 503")
    p.add_argument("--max-rows", type=positive_int, default=Limits.max_rows, help="rows per batch request")
    p.add_argument("--max-body-bytes", type=positive_int, default=Limits.max_body_bytes, help="bytes per request")
    p.add_argument("--header-timeout", type=positive_float, default=Limits.header_timeout_s, metavar="S",
                   help=f"seconds a request's line and headers may take (default {Limits.header_timeout_s:g}); "
                        "a slower client gets 408 and its connection closes")
    p.add_argument("--body-timeout", type=positive_float, default=Limits.body_timeout_s, metavar="S",
                   help=f"seconds a request's body may take once its headers are in "
                        f"(default {Limits.body_timeout_s:g})")
    p.add_argument("--max-connections", type=positive_int, default=Limits.max_connections, metavar="N",
                   help=f"open connections at once (default {Limits.max_connections}); one more gets 503")
    p.add_argument("--batch-window-ms", type=non_negative_float, metavar="MS",
                   help=f"batch one-row requests that arrive within MS of each other: those about one state are "
                        f"scored in one packed pass (shared mode only; default {DEFAULT_BATCH_WINDOW_MS:g}: "
                        f"each request alone, which measured faster on a 2-core CPU; try 5 on a GPU)")
    g = p.add_argument_group("ray serve")
    g.add_argument("--ray", action="store_true", help="deploy the same app as Ray Serve replicas (the ray extra)")
    g.add_argument("--replicas", type=positive_int, default=1, help="--ray: replicas, one model each")
    g.add_argument("--address", help="--ray: cluster address (default: start a local cluster)")
    g.add_argument("--cpus-per-replica", type=float, default=1.0, help="--ray: CPUs per replica")
    w = p.add_argument_group("served names (/v1/systemone, /v1/decisions)")
    w.add_argument("--alias", action="append", default=[], metavar="NAME=SERVED",
                   help=f"answer requests for NAME with the served model or route SERVED (default: "
                        f"{', '.join(DEFAULT_ALIASES)} for the first --model, the names the official SDKs send)")
    w.add_argument("--route", action="append", default=[], metavar="NAME=FAST>ACCURATE@M",
                   help="serve NAME as a route: ask the served model FAST, re-ask on ACCURATE the questions whose "
                        "(calibrated) margin is under M or that tie; answers say which model decided")
    add_model_args(p, many=True)
    p.set_defaults(func=_cmd_serve, stop_note="the server stopped (it keeps no state to resume)")


def _cmd_serve(args: argparse.Namespace) -> int:
    from scorer.serving.service import RayServeOptions, ServeConfig, serve, serve_on_ray

    options = scorer_options(args)  # a request's ?echo= overrides the server's echo for its own records
    if args.ray and (options.layout not in (None, "state-major") or options.demos is not None or options.preset):
        raise InputError("--ray", None, None, "given with --layout/--demos/--preset",
                         "the state-major layout without demonstrations on Ray Serve (for now)")
    if args.ray and options.slots in SEQUENCE_SLOTS:
        raise InputError("--ray", None, None, f"given with --slots {options.slots}",
                         "--slots letters or ids on Ray Serve (for now)")
    models = backend_configs(args)
    if args.ray and (len(models) > 1 or args.route):
        raise InputError("--ray", None, None, "given with several --model or a --route", "one model on Ray Serve")
    cfg = ServeConfig(host=args.host, port=args.port, options=options, aliases=tuple(args.alias),
                      routes=tuple(args.route),
                      token=args.token or os.environ.get(TOKEN_ENV) or None,
                      limits=Limits(max_body_bytes=args.max_body_bytes, max_rows=args.max_rows,
                                    queue_size=args.queue_size, header_timeout_s=args.header_timeout,
                                    body_timeout_s=args.body_timeout, max_connections=args.max_connections),
                      batch_window_ms=args.batch_window_ms)
    if args.ray:
        serve_on_ray(models[0], cfg, RayServeOptions(replicas=args.replicas, address=args.address,
                                                     cpus_per_replica=args.cpus_per_replica))
    else:
        serve(models, cfg)
    return 0
