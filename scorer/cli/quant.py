"""``semif quant``: the quantization ladder, measured against the torch fp32 reference."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scorer import store
from scorer.cli.options import add_mode_arg, comma_list, positive_int
from scorer.runs.quant import DEFAULT_RUNGS
from scorer.runs.score import DEFAULT_MAX_BATCH_TOKENS


def register(sub: Any) -> None:
    """Add ``semif quant``."""
    p = sub.add_parser("quant", help="quantization ladder: F32 GGUF → Q8_0 … 3-bit, each scored against torch fp32")
    p.add_argument("--model", default=store.TEST_MODEL, help=f"registry key or .gguf (default {store.TEST_MODEL})")
    p.add_argument("--input", required=True, help="decisions (JSONL) to score on the reference and every rung")
    p.add_argument("--output", help="JSON report (default data/results/quant-MODEL.json); never overwritten")
    p.add_argument("--force", action="store_true", help="overwrite --output and the --records-dir files")
    p.add_argument("--rungs", default=",".join(DEFAULT_RUNGS),
                   help=f"llama.cpp types, comma-separated (default {','.join(DEFAULT_RUNGS)})")
    add_mode_arg(p, "shared", help="scoring mode for every run (default shared)")
    p.add_argument("--max-batch-tokens", type=positive_int, default=DEFAULT_MAX_BATCH_TOKENS)
    p.add_argument("--threads", type=positive_int, help="CPU threads (torch and llama.cpp), >= 1")
    p.add_argument("--workdir", help="folder for the written GGUFs (default: under the model cache)")
    p.add_argument("--keep-files", action="store_true", help="keep the F32 and quantized GGUFs")
    p.add_argument("--records-dir", help="also write every run's records (JSONL) here, for semif compare "
                                        "(existing files are refused before any work, unless --force)")
    p.add_argument("--no-generation", action="store_true", help="skip the generation path (JSON arrays)")
    p.add_argument("--max-new-tokens", type=int, help="generation limit per array (default 4 per criterion + 16)")
    p.add_argument("--no-source", action="store_true", help="do not measure the model's original GGUF as a rung")
    p.set_defaults(func=_cmd_quant)


def _cmd_quant(args: argparse.Namespace) -> int:
    from scorer.runs.quant import QuantConfig, quant

    key = Path(args.model).stem if args.model.endswith(".gguf") else args.model
    out = Path(args.output or f"data/results/quant-{key}.json")
    cfg = QuantConfig(model=args.model, input=Path(args.input), output=out, rungs=tuple(comma_list(args.rungs)),
                      mode=args.mode, max_batch_tokens=args.max_batch_tokens, threads=args.threads,
                      workdir=Path(args.workdir) if args.workdir else None, keep_files=args.keep_files,
                      generation=not args.no_generation, max_new_tokens=args.max_new_tokens,
                      include_source=not args.no_source,
                      records_dir=Path(args.records_dir) if args.records_dir else None, overwrite=args.force,
                      command="semif " + " ".join(sys.argv[1:]))
    quant(cfg)
    return 0
