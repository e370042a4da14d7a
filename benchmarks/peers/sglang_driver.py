"""SGLang driver: runs INSIDE SGLang's own virtualenv (SGLang 0.5.23 wheels need CUDA).

    python sglang_driver.py --model FOLDER --prompts PROMPTS.jsonl --out RESULT.json [--dtype float32]

Offline ``sglang.Engine`` with its radix (prefix) cache on; feeds semif's exact token ids (``input_ids``) and
asks for the log-probabilities of exactly the letters' token ids at the answer position
(``token_ids_logprob``; ``meta_info["output_token_ids_logprobs"][0]`` holds ``(logprob, token_id, text)``).
Log-softmax differs from the logits by one constant per row, so the softmax over the letters is the option
distribution either way.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver_io import engine_args, read_prompts, run_driver, timed

DISTS = ["sglang", "torch", "transformers"]


def _body(args: argparse.Namespace, result: dict[str, Any]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = read_prompts(Path(args.prompts))

    def _imports() -> Any:
        import sglang

        return sglang

    sgl = timed(result, "import_s", _imports)
    result["readout"] = "token_ids_logprob (log-softmax of the letters' ids)"
    result["stage"] = "load"
    engine = timed(result, "load_s", lambda: sgl.Engine(model_path=args.model, tokenizer_path=args.model,
                                                        dtype=args.dtype, random_seed=0, device=args.device,
                                                        log_level="error"))
    result["stage"] = "score"
    try:
        outs = timed(result, "score_s", lambda: engine.generate(
            input_ids=[r["ids"] for r in rows],
            sampling_params=[{"max_new_tokens": 1, "temperature": 0.0} for _ in rows],
            return_logprob=True, token_ids_logprob=[r["slot_ids"] for r in rows]))
    finally:
        engine.shutdown()
    out_rows = []
    for r, o in zip(rows, outs, strict=True):
        got = {int(tid): float(lp) for lp, tid, *_ in o["meta_info"]["output_token_ids_logprobs"][0]}
        missing = [s for s in r["slot_ids"] if s not in got]
        if missing:
            raise RuntimeError(f"row {r['id']}: SGLang returned no log-probability for slot ids {missing}")
        n_in = o["meta_info"].get("prompt_tokens")
        out_rows.append({"id": r["id"], "scores": [got[s] for s in r["slot_ids"]], "score_kind": "logprob",
                         "token_ids_identical": None if n_in is None else int(n_in) == len(r["ids"])})
    result["rows"] = out_rows
    result["settings"] = {"dtype": args.dtype, "device": args.device, "radix_cache": True,
                          "identity": "input_ids passed verbatim; SGLang reports only the prompt's token count"}


def main() -> int:
    ap = engine_args(__doc__, default_device="cuda")
    args = ap.parse_args()
    return run_driver("sglang", DISTS, Path(args.out), lambda r: _body(args, r))


if __name__ == "__main__":
    sys.exit(main())
