"""``semif models list|fetch|verify``: the embedded model store."""

from __future__ import annotations

import argparse
from typing import Any

from scorer.models import store


def register(sub: Any) -> None:
    """Add ``semif models``."""
    p = sub.add_parser("models", help="the embedded model store")
    p.add_argument("action", choices=("list", "fetch", "verify"),
                   help="list: every registry model and whether it is cached; fetch: download and verify by sha256; "
                        "verify: re-hash a cached file against its pin")
    p.add_argument("keys", nargs="*", help=f"registry keys (default {store.DEFAULT_MODEL})")
    p.set_defaults(func=_cmd_models)


def _cmd_models(args: argparse.Namespace) -> int:
    keys = args.keys or ([] if args.action == "list" else [store.DEFAULT_MODEL])
    if args.action == "list":
        print(f"{'key':<14} {'status':<10} {'size':>12}  {'licence':<36} description")
        for e in store.REGISTRY.values():
            print(f"{e.key:<14} {store.status(e):<10} {e.size:>12,}  {e.licence:<36} {e.description}")
        print(f"cache: {store.cache_dir()}")
        return 0
    for key in keys:
        entry = store.get_entry(key)
        if args.action == "fetch":
            path = store.fetch(entry)
            print(f"{key}: ok {path}")
        else:
            sha = store.verify(entry)
            print(f"{key}: ok sha256 {sha}")
    return 0
