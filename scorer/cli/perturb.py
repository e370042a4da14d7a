"""``semif perturb``: deterministic perturbations of a decision file (reverse, wrap, distract, rotate)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    """Add ``semif perturb``."""
    p = sub.add_parser("perturb", help="deterministic perturbations of a decision file (reverse, wrap, distract)")
    p.add_argument("--input", required=True, help="decisions (JSONL) to perturb")
    p.add_argument("--kind", required=True, help="comma list of reverse, wrap, distract, rotate-S (applied in order)")
    p.add_argument("--output", required=True, help="the perturbed decisions (JSONL)")
    p.add_argument("--force", action="store_true", help="overwrite the output (rebuilds are byte-identical)")
    p.set_defaults(func=_cmd_perturb)


def _cmd_perturb(args: argparse.Namespace) -> int:
    from scorer.evaluation.perturb import parse_kinds, perturb_file

    n = perturb_file(Path(args.input), parse_kinds(args.kind), Path(args.output), args.force)
    print(f"[semif] wrote {n} rows ({args.kind}) to {args.output}", file=sys.stderr)
    return 0
