"""``semif quant``: the quantization ladder, measured against the torch fp32 reference; ``--schemes`` adds
llm-compressor's W8A8/AWQ/GPTQ beside llama.cpp types, each scored where it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scorer.cli.arguments import add_mode_arg, comma_list, positive_int
from scorer.core.errors import ValidationError
from scorer.models import store
from scorer.scoring.modes import DEFAULT_MAX_BATCH_TOKENS
from scorer.studies.quant import DEFAULT_RUNGS
from scorer.studies.quant_schemes import DEFAULT_SCHEMES

_SCHEMES_DEFAULT = ",".join(DEFAULT_SCHEMES)
_LADDER_ONLY = ("rungs", "workdir", "keep_files", "no_generation", "max_new_tokens", "no_source")
_SCHEMES_ONLY = ("calibration", "calibration_samples", "max_seq_length", "group_size", "produce_threads",
                 "no_engines")


def register(sub: Any) -> None:
    """Add ``semif quant``."""
    p = sub.add_parser("quant", help="quantization ladder: F32 GGUF → Q8_0 … 3-bit, each scored against torch fp32; "
                                     "--schemes: also W8A8, AWQ, GPTQ (llm-compressor)")
    p.add_argument("--model", default=store.TEST_MODEL, help=f"registry key or .gguf (default {store.TEST_MODEL})")
    p.add_argument("--input", required=True, help="decisions (JSONL) to score on the reference and every rung")
    p.add_argument("--output", help="JSON report (default data/results/quant-MODEL.json, with --schemes "
                                    "data/results/quant-schemes-MODEL.json); never overwritten")
    p.add_argument("--force", action="store_true", help="overwrite --output and the --records-dir files")
    p.add_argument("--rungs", help=f"llama.cpp types, comma-separated (default {','.join(DEFAULT_RUNGS)})")
    add_mode_arg(p, "shared", help="scoring mode for every run (default shared)")
    p.add_argument("--max-batch-tokens", type=positive_int, default=DEFAULT_MAX_BATCH_TOKENS,
                   help=f"tokens per packed pass in shared mode (default {DEFAULT_MAX_BATCH_TOKENS})")
    p.add_argument("--threads", type=positive_int, help="CPU threads (torch and llama.cpp), >= 1")
    p.add_argument("--workdir", help="folder for the written GGUFs (default: under the model cache)")
    p.add_argument("--keep-files", action="store_true", help="keep the F32 and quantized GGUFs")
    p.add_argument("--records-dir", help="also write every run's records (JSONL) here, for semif compare "
                                        "(existing files are refused before any work, unless --force); with "
                                        "--schemes always written (default: beside --output, OUTPUT.records/)")
    p.add_argument("--no-generation", action="store_true", help="skip the generation path (JSON arrays)")
    p.add_argument("--max-new-tokens", type=int, help="generation limit per array (default 4 per criterion + 16)")
    p.add_argument("--no-source", action="store_true", help="do not measure the model's original GGUF as a rung")
    g = p.add_argument_group("schemes (llama.cpp types and llm-compressor's, all from the same fp32 reference)")
    g.add_argument("--schemes", nargs="?", const=_SCHEMES_DEFAULT,
                   help=f"comma-separated: gguf:TYPE[,TYPE…], w8a8 (SmoothQuant 0.8 + int8), awq-w4a16, gptq-w4a16 "
                        f"(group size 128); bare --schemes = {_SCHEMES_DEFAULT}")
    g.add_argument("--calibration", help="calibration text, samples separated by blank lines "
                                         "(default scorer/data/quant/calibration.txt)")
    g.add_argument("--calibration-samples", type=positive_int, help="use only the first N samples (default all)")
    g.add_argument("--max-seq-length", type=positive_int, help="tokens per calibration sample (default 512)")
    g.add_argument("--group-size", type=positive_int, help="group size of awq-w4a16 and gptq-w4a16 (default 128; "
                                                         "it must divide every quantized layer's input width)")
    g.add_argument("--produce-threads", type=positive_int, help="CPU threads for llm-compressor")
    g.add_argument("--no-engines", action="store_true", help="do not start vLLM (its runs reported as skipped)")
    p.set_defaults(func=_cmd_quant)


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) not in (None, False)]


def _cmd_quant(args: argparse.Namespace) -> int:
    key = Path(args.model).stem if args.model.endswith(".gguf") else args.model
    if args.schemes is not None:
        return _cmd_schemes(args, key)
    if _given(args, _SCHEMES_ONLY):
        raise ValidationError(f"{', '.join(_given(args, _SCHEMES_ONLY))} apply to --schemes only (expected them "
                              "with --schemes, or none)")
    from scorer.studies.quant import QuantConfig, quant

    out = Path(args.output or f"data/results/quant-{key}.json")
    rungs = tuple(comma_list(args.rungs)) if args.rungs is not None else DEFAULT_RUNGS
    cfg = QuantConfig(model=args.model, input=Path(args.input), output=out, rungs=rungs,
                      mode=args.mode, max_batch_tokens=args.max_batch_tokens, threads=args.threads,
                      workdir=Path(args.workdir) if args.workdir else None, keep_files=args.keep_files,
                      generation=not args.no_generation, max_new_tokens=args.max_new_tokens,
                      include_source=not args.no_source,
                      records_dir=Path(args.records_dir) if args.records_dir else None, overwrite=args.force,
                      command="semif " + " ".join(sys.argv[1:]))
    quant(cfg)
    return 0


def _cmd_schemes(args: argparse.Namespace, key: str) -> int:
    from scorer.engines.llmcompressor import GROUP_SIZE
    from scorer.studies.quant_schemes import (
        DEFAULT_CALIBRATION,
        DEFAULT_MAX_SEQ_LENGTH,
        SchemesConfig,
        parse_schemes,
        quant_schemes,
    )

    if _given(args, _LADDER_ONLY):
        raise ValidationError(f"{', '.join(_given(args, _LADDER_ONLY))} apply to the ladder, not to --schemes "
                              "(expected llama.cpp types as gguf:TYPE inside --schemes)")
    schemes = parse_schemes(args.schemes)  # before anything loads: a bad name exits 2 naming the valid ones
    out = Path(args.output or f"data/results/quant-schemes-{key}.json")
    cfg = SchemesConfig(model=args.model, input=Path(args.input), output=out, schemes=schemes,
                        records_dir=Path(args.records_dir) if args.records_dir else None,
                        calibration=Path(args.calibration) if args.calibration else DEFAULT_CALIBRATION,
                        calibration_samples=args.calibration_samples,
                        max_seq_length=args.max_seq_length or DEFAULT_MAX_SEQ_LENGTH,
                        group_size=args.group_size or GROUP_SIZE, mode=args.mode,
                        max_batch_tokens=args.max_batch_tokens, threads=args.threads,
                        produce_threads=args.produce_threads, engines=not args.no_engines, overwrite=args.force,
                        command="semif " + " ".join(sys.argv[1:]))
    quant_schemes(cfg)
    return 0
