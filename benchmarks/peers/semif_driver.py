"""semif driver: one process that loads the model and scores the workload once in one mode.

    python semif_driver.py --model KEY --input ROWS.jsonl --mode direct|shared --out RESULT.json

The same shape as the peers' drivers, so every tool is timed the same way: ``import_s`` (torch,
transformers, scorer), ``load_s`` (the backend: tokenizer and fp32 weights from the model cache) and
``score_s`` (rendering, encoding and scoring every row, as ``semif score`` does, without writing records).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver_io import run_driver, timed

DISTS = ["semif", "torch", "transformers", "numpy"]


def _body(args: argparse.Namespace, result: dict[str, Any]) -> None:
    def _imports() -> Any:
        import torch  # noqa: F401  (timed here, as the peers' drivers time their imports)

        from scorer.backends import BackendConfig, load_backend
        from scorer.formats.rows import load_decisions
        from scorer.scoring.modes import prepare, score_items

        return BackendConfig, load_backend, prepare, score_items, load_decisions

    backend_config, load_backend, prepare, score_items, load_decisions = timed(result, "import_s", _imports)
    decisions = load_decisions(Path(args.input))
    result["stage"] = "load"
    backend = timed(result, "load_s", lambda: load_backend(backend_config(model=args.model, device=args.device,
                                                                          dtype=args.dtype)))
    result["stage"] = "score"

    def _score() -> list[dict[str, Any]]:
        items = prepare(backend, decisions, with_prefix=args.mode != "direct")
        return list(score_items(backend, items, args.mode, {"config_sha256": "peers"}, 0, args.max_batch_tokens))

    records = timed(result, "score_s", _score)
    result["rows"] = [{"id": r["id"], "scores": r["option_logits"], "score_kind": "logit",
                       "probabilities": r["probabilities"], "tokens_sha256": r["tokens_sha256"],
                       "input_tokens": r["input_tokens"]} for r in records]
    result["settings"] = {"mode": args.mode, "kernel": records[0]["kernel"] if records else None,
                          "dtype": backend.logits_dtype, "device": args.device,
                          "max_batch_tokens": args.max_batch_tokens, "torch_threads": backend.torch.get_num_threads()}
    result["model"] = backend.model_info()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="registry key (or any --model semif accepts)")
    ap.add_argument("--input", required=True)
    ap.add_argument("--mode", required=True, choices=("direct", "serial", "shared"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--max-batch-tokens", type=int, default=4096)
    args = ap.parse_args()
    return run_driver(f"semif-{args.mode}", DISTS, Path(args.out), lambda r: _body(args, r))


if __name__ == "__main__":
    sys.exit(main())
