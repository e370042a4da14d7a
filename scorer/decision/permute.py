"""The order-averaged readout behind ``semif score --permute K``: which cyclic orderings a row is scored
under, and how the records of those orderings merge into one record.

Plain data in, plain data out (no backend): the passes themselves are scored by
:func:`scorer.scoring.permuted.score_permuted`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Two averaged probabilities closer than this are a tie (far above float64 rounding, about the size of
# the float32 logit resolution the probabilities come from).
PERMUTE_TIE_TOL = 1e-6
PERMUTE_READOUT = ("mean of the option probabilities over K cyclic orderings of the options, aligned by "
                   "option id; option_logits = ln(mean probability), so softmax(option_logits) = probabilities")


def permute_shifts(n_options: int, k: int) -> list[int]:
    """The cyclic shifts used for a row with ``n_options`` options: ``k`` evenly spaced ones (at most n)."""
    k = max(1, min(k, n_options))
    return [(j * n_options) // k for j in range(k)]


def merge_permuted(passes: list[dict[str, Any]], k: int, shifts: list[int], index: int) -> dict[str, Any]:
    """One record from the records of the same row under several cyclic orderings (first = identity).

    Probabilities are averaged aligned by option id; the merged timing is the sum of the passes
    (that is the cost of the debiased readout).
    """
    base = passes[0]
    ids = base["option_ids"]
    aligned = []
    for rec in passes:
        pos = {o: i for i, o in enumerate(rec["option_ids"])}
        aligned.append([rec["probabilities"][pos[o]] for o in ids])
    mean = np.mean(np.asarray(aligned, dtype=np.float64), axis=0)
    mean = mean / mean.sum()
    order = np.argsort(-mean, kind="stable")
    top, second = float(mean[order[0]]), float(mean[order[1]])
    tied = sorted(int(i) for i in order if top - mean[i] <= PERMUTE_TIE_TOL)
    tie = len(tied) > 1
    timing: dict[str, float] = {}
    for rec in passes:
        for key, v in rec["timing"].items():
            timing[key] = timing.get(key, 0.0) + float(v)
    timing = {key: round(v, 6) for key, v in timing.items()}
    timing["permute_passes"] = len(passes)
    out = dict(base)
    out.update({
        "probabilities": [float(v) for v in mean],
        "option_logits": [float(v) for v in np.log(np.maximum(mean, 1e-300))],
        "choice": None if tie else ids[int(order[0])],
        "margin": top - second,
        "tie": tie,
        "tied_option_ids": [ids[i] for i in tied] if tie else [],
        "allowed_token_mass": float(np.mean([r["allowed_token_mass"] for r in passes])),
        "score_kind": f"order-averaged ({len(passes)} cyclic orderings) {base['score_kind']}",
        "timing": timing,
        "permute": {"k": k, "shifts": shifts, "readout": PERMUTE_READOUT,
                    "option_ids": [r["option_ids"] for r in passes],
                    "probabilities": aligned, "choices": [r["choice"] for r in passes],
                    "prompt_sha256": [r["prompt_sha256"] for r in passes],
                    "input_tokens": [r["input_tokens"] for r in passes]},
        "run": {**base["run"], "index": index},
    })
    return out
