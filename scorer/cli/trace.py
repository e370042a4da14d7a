"""``semif trace verify|summary|export``: check, summarise or convert a versus trace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from scorer import trace
from scorer.core.errors import ValidationError
from scorer.core.io import FORCE_HINT, write_atomic


def register(sub: Any) -> None:
    """Add ``semif trace verify|summary|export``."""
    p = sub.add_parser("trace", help=f"check, summarise or export a {' or '.join(trace.FORMATS)} trace")
    tsub = p.add_subparsers(dest="trace_command", required=True)
    v = tsub.add_parser("verify", help="schema + checksums + internal consistency (exit 2 on any problem)")
    v.add_argument("file", help="a trace (JSON)")
    v.set_defaults(func=_cmd_verify)
    s = tsub.add_parser("summary", help="print the medians, ratio, agreement and token counts")
    s.add_argument("file", help="a trace (JSON)")
    s.set_defaults(func=_cmd_summary)
    e = tsub.add_parser("export", help="convert to another trace format")
    e.add_argument("--chrome", action="store_true", required=True,
                   help="Chrome Trace Event Format (opens in Perfetto)")
    e.add_argument("file", help="a trace (JSON)")
    e.add_argument("--output", "-o", help="output file (default: stdout)")
    e.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    e.set_defaults(func=_cmd_export)


def _cmd_verify(args: argparse.Namespace) -> int:
    doc = trace.load(args.file)
    problems = trace.verify(doc)
    if problems:
        raise ValidationError(f"{args.file}: trace failed verification ({len(problems)} problem(s)):\n  "
                              + "\n  ".join(problems))
    s = doc["summary"]
    ratio = (s["wall_ratio"] if doc["format"] == trace.TRACE_FORMAT
             else ", ".join(f"{lane} {s[lane]['wall_ratio']}" for lane in trace.GENERATED_PATHS[doc["format"]]))
    print(f"{args.file}: ok ({doc['format']}; {len(doc['runs'])} runs; schema, checksums and consistency "
          f"verified; wall ratio {ratio})")
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
    print(trace.summary_text(trace.load_verified(args.file)))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    doc = trace.load_verified(args.file)
    data = orjson.dumps(trace.to_chrome(doc)) + b"\n"
    if args.output in (None, "-"):
        sys.stdout.buffer.write(data)
        return 0
    out = Path(args.output)
    write_atomic(out, data, args.force, FORCE_HINT)
    print(f"[semif] wrote {out} (open it in https://ui.perfetto.dev or chrome://tracing)", file=sys.stderr)
    return 0
