"""lm-eval driver: runs INSIDE lm-eval's own virtualenv (never imports semif).

    python lmeval_driver.py --model FOLDER --tasks DIR --task NAME --out RESULT.json [--batch-size 1]

Loads the model with lm-eval's ``HFLM`` (timed: ``load_s``), runs ``simple_evaluate`` on the task written by
``task.write_lmeval_task`` with samples logged (timed: ``score_s``), and writes every logged sample's
arguments and responses, plus ``encoded``: lm-eval's own ``_encode_pair`` of each argument, i.e. the token
ids it scored. The identity check and the probabilities are computed by the caller from that.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from driver_io import run_driver, timed

DISTS = ["lm-eval", "torch", "transformers", "accelerate", "datasets", "numpy"]


def _body(args: argparse.Namespace, result: dict[str, Any]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder and a local JSON file: nothing to fetch
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    def _imports() -> Any:
        from lm_eval import simple_evaluate
        from lm_eval.models.huggingface import HFLM
        from lm_eval.tasks import TaskManager

        return simple_evaluate, HFLM, TaskManager

    simple_evaluate, hflm, task_manager = timed(result, "import_s", _imports)
    result["stage"] = "load"
    lm = timed(result, "load_s", lambda: hflm(pretrained=args.model, dtype=args.dtype, device=args.device,
                                              batch_size=args.batch_size, add_bos_token=args.add_bos))
    result["stage"] = "score"
    tm = task_manager(include_path=args.tasks, include_defaults=False)
    res = timed(result, "score_s", lambda: simple_evaluate(
        model=lm, tasks=[args.task], task_manager=tm, log_samples=True, bootstrap_iters=0,
        batch_size=args.batch_size))
    samples = sorted(res["samples"][args.task], key=lambda s: s["doc_id"])
    result["samples"] = [{
        "doc_id": s["doc_id"], "id": s["doc"]["id"],
        "arguments": [list(a) for a in s["arguments"]],
        "filtered_resps": [[float(r[0]), bool(r[1])] for r in s["filtered_resps"]],
        "encoded": [list(map(list, lm._encode_pair(a[0], a[1]))) for a in s["arguments"]],
    } for s in samples]
    result["settings"] = {"batch_size": args.batch_size, "dtype": args.dtype, "device": args.device,
                          "add_bos_token": args.add_bos, "num_fewshot": 0, "bootstrap_iters": 0,
                          "torch_threads": __import__("torch").get_num_threads()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="a Hugging Face model folder")
    ap.add_argument("--tasks", required=True, help="folder holding the task YAML")
    ap.add_argument("--task", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--add-bos", action="store_true",
                    help="prepend BOS; given exactly when semif does, so lm-eval encodes with add_special_tokens "
                         "equal to it (HFLM add_bos_token=True/False, never its model-dependent default)")
    args = ap.parse_args()
    return run_driver("lm-eval", DISTS, Path(args.out), lambda r: _body(args, r))


if __name__ == "__main__":
    sys.exit(main())
