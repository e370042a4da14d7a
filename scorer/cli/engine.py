"""``semif engine start|stop|status``: inference engines (vLLM, llama.cpp's server) to score through with
``--backend openai``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from scorer.cli.arguments import positive_int, threads_arg
from scorer.core.errors import InputError
from scorer.engines import ENGINES
from scorer.models import store


def register(sub: Any) -> None:
    """Add ``semif engine``."""
    p = sub.add_parser("engine", help="start, stop or list inference engines (vLLM, llama.cpp server)")
    acts = p.add_subparsers(dest="action", required=True, metavar="start|stop|status")
    s = acts.add_parser("start", help="start an engine on loopback and wait until it is ready")
    s.add_argument("engine", choices=ENGINES, help="the engine to start")
    s.add_argument("--model", default=store.DEFAULT_MODEL,
                   help=f"registry key ({', '.join(store.REGISTRY)}), .gguf (llama-server) or HF folder (vllm)")
    s.add_argument("--host", default="127.0.0.1", help="interface (default loopback)")
    s.add_argument("--port", type=positive_int, help="port (default: a free one)")
    s.add_argument("--threads", type=threads_arg, metavar="N|auto",
                   help="CPU threads of the engine: N >= 1, or auto (the cores free now); default: the engine's "
                        "choice. Its threads wait passively (OMP_WAIT_POLICY=PASSIVE in its environment) unless "
                        "OMP_WAIT_POLICY or SEMIF_WAIT_POLICY says otherwise")
    s.add_argument("--ctx", type=positive_int, default=4096, help="tokens per request (default 4096)")
    s.add_argument("--parallel", type=positive_int, default=4, help="llama-server: concurrent slots (default 4)")
    s.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"), help="vllm: dtype")
    s.add_argument("--kv-cache-gib", type=positive_int, default=4, help="vllm CPU: KV cache GiB (default 4)")
    s.add_argument("--ready-timeout", type=float, default=600.0, help="seconds to wait for readiness (default 600)")
    s.set_defaults(func=_cmd_start)
    t = acts.add_parser("stop", help="stop engines started here (all of them, or those named)")
    _engine_filter(t)
    t.add_argument("--port", type=positive_int, help="only the engine on this port")
    t.set_defaults(func=_cmd_stop)
    u = acts.add_parser("status", help="list engines started here (all of them, or those named)")
    _engine_filter(u)
    u.add_argument("--json", action="store_true", help="one JSON object per engine")
    u.set_defaults(func=_cmd_status)


def _engine_filter(p: Any) -> None:
    """The engine kind as ``start`` takes it (``semif engine stop llama-server``), or as ``--engine KIND``."""
    p.add_argument("engine", nargs="?", choices=ENGINES, help="only engines of this kind (as given to start)")
    p.add_argument("--engine", dest="engine_flag", choices=ENGINES, metavar="ENGINE",
                   help="the same as the positional ENGINE")


def _engine_kind(args: argparse.Namespace) -> str | None:
    """The kind asked for by position or by ``--engine`` (both given: they must agree)."""
    if args.engine and args.engine_flag and args.engine != args.engine_flag:
        raise InputError("engine", None, None, f"{args.engine} and --engine {args.engine_flag}",
                         "one engine kind, given once (semif engine stop llama-server)")
    return args.engine or args.engine_flag


def _cmd_start(args: argparse.Namespace) -> int:
    from scorer.engines.launcher import EngineSpec, start

    st = start(EngineSpec(engine=args.engine, model=args.model, host=args.host, port=args.port,
                          threads=args.threads, ctx=args.ctx, parallel=args.parallel, dtype=args.dtype,
                          kv_cache_gib=args.kv_cache_gib, ready_timeout_s=args.ready_timeout))
    print(f"{st['engine']} ready: {st['base_url']} (model {st.get('served_model')}, pid {st['pid']}, log {st['log']})")
    print(f"score through it: semif score --backend openai --base-url {st['base_url']} --model {args.model} ...")
    return 0


def _cmd_stop(args: argparse.Namespace) -> int:
    from scorer.engines.launcher import stop

    kind = _engine_kind(args)
    done = stop(port=args.port, engine=kind)
    if not done:
        print("no engine recorded" + (f" on port {args.port}" if args.port else "") + (f" of kind {kind}" if kind
                                                                                          else ""))
    for st in done:
        word = "stopped" if st["stopped"] else "STILL RUNNING"
        print(f"{st['engine']} on {st['base_url']} (pid {st['pid']}): {word}")
    return 0 if all(st["stopped"] for st in done) else 1


def _cmd_status(args: argparse.Namespace) -> int:
    from scorer.engines.launcher import status

    kind = _engine_kind(args)
    rows = [st for st in status() if kind is None or st["engine"] == kind]
    if args.json:
        for st in rows:
            print(json.dumps(st, sort_keys=True))
        return 0
    if not rows:
        print("no engine recorded (start one: semif engine start llama-server|vllm --model KEY)")
    for st in rows:
        state = "ready" if st["ready"] else ("starting or unhealthy" if st["alive"] else "gone (stale record)")
        print(f"{st['engine']:<13} {st['base_url']:<24} {state:<22} model {st.get('served_model')} pid {st['pid']} "
              f"log {st['log']}")
    return 0
