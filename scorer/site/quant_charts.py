"""The quantization-schemes report (``kind: quant-schemes``, ``semif quant --schemes``): per scheme and where it
ran, how far it moves the decisions from the fp32 reference, drawn next to the llama.cpp ladder."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, with_caption


def _schemes(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    v = obj.get("schemes")
    if not isinstance(v, list) or not v or not all(isinstance(x, dict) for x in v):
        raise BuildError(f"{rel}: a quant-schemes report needs 'schemes' (a non-empty list of objects)")
    for i, s in enumerate(v):
        if not isinstance(s.get("scheme"), str) or not isinstance(s.get("runs"), list):
            raise BuildError(f"{rel}: schemes[{i}] needs 'scheme' (a name such as 'w8a8') and 'runs' (a list)")
    return v


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _rate(rate: float | None, load: Any) -> str:
    """A speed, with the 1-minute load average around its run: a number taken on a busy machine says so."""
    if rate is None:
        return ""
    span = _obj(load)
    before, after = span.get("before"), span.get("after")
    if isinstance(before, list) and isinstance(after, list) and before and after:
        return f"{fmt_value(rate)} (load {fmt_value(before[0])} → {fmt_value(after[0])})"
    return fmt_value(rate)


def _bits(s: dict[str, Any]) -> tuple[str, str]:
    """The whole file's bits per weight and its quantized layers'. A report written before it carried ``bits``
    (the qwen2.5-0.5b ones of 2026-12-02) has neither for an llm-compressor checkpoint: the cells say so rather
    than stand blank, as if the scheme had no such figure (a GGUF's quantizer states the whole file's only)."""
    whole = finite(s.get("bits_per_weight"))
    layers = finite(_obj(_obj(s.get("bits")).get("quantized_linear")).get("bits_per_weight"))
    if whole is None and not str(s["scheme"]).startswith("gguf:"):
        return "not in this report", "not in this report"
    return fmt_value(whole), fmt_value(layers)


def _how(run: dict[str, Any]) -> str:
    if not run.get("ran"):
        return f"not run: {run.get('skipped') or run.get('error') or 'no reason given'}"
    return "its own kernels (native)" if run.get("execution") == "native" else "emulated in transformers"


def draw_quant_schemes(rel: str, rep: ReportFile) -> None:
    """A bar per scheme and runner: max |Δp| against the reference, with the changed choices; then the table."""
    schemes = _schemes(rel, rep.obj)
    bars: list[tuple[str, float, str]] = []
    rows: list[list[str]] = []
    for s in schemes:
        mib = finite(s.get("weight_bytes"))
        for run in s["runs"]:
            if not isinstance(run, dict):
                raise BuildError(f"{rel}: {s['scheme']}: every run must be an object")
            label = f"{s['scheme']} on {run.get('runner')}"
            labels = _obj(run.get("labels"))
            boundary = _obj(run.get("boundary_decisions"))
            dp = finite(run.get("max_abs_dp"))
            flips = run.get("changed_choices")
            if run.get("ran") and dp is not None:
                bars.append((label, dp, f"{flips} changed" if isinstance(flips, int) else ""))
            rate = finite(run.get("decisions_per_s")) if run.get("execution") == "native" else None
            rows.append([fmt_value(s["scheme"]), fmt_value(run.get("runner")), _how(run), *_bits(s),
                         fmt_value(round(mib / 2**20)) if mib else "",
                         fmt_value(finite(s.get("produce_s"))),
                         fmt_value(flips) if run.get("ran") else "",
                         (f"{fmt_value(boundary.get('changed'))} of {fmt_value(boundary.get('decisions'))}"
                          if boundary else ""),
                         fmt_value(dp) if run.get("ran") else "",
                         fmt_value(finite(run.get("median_abs_dp"))) if run.get("ran") else "",
                         fmt_value(finite(labels.get("balanced_accuracy"))),
                         fmt_value(finite(labels.get("balanced_accuracy_calibrated"))),
                         _rate(rate, run.get("load_average"))])
    ref = _obj(rep.obj.get("reference"))
    ref_labels = _obj(ref.get("labels"))
    rows.insert(0, ["fp32 (reference)", fmt_value(ref.get("runner")), "the reference every row is compared with",
                    "32", "", "", "", "—", "—", "0", "0", fmt_value(finite(ref_labels.get("balanced_accuracy"))),
                    fmt_value(finite(ref_labels.get("balanced_accuracy_calibrated"))),
                    fmt_value(finite(ref.get("decisions_per_s")))])
    if bars:
        rep.charts.append(with_caption(
            svg_bars(bars, "max |Δp| vs fp32", "How far each scheme moves the option probabilities",
                     label_w=270),
            "Each bar is one quantization scheme where it ran: the largest change, over every decision and option, "
            "of the probability SemIf reads, against the same model in fp32. Shorter is closer to the original; "
            "'changed' counts the decisions whose chosen option differs."))
    rep.tables.insert(0, {
        "caption": "every scheme, where it ran, against the fp32 reference on the same decisions",
        "columns": ["scheme", "ran on", "how", "bits/weight", "bits/weight of the quantized layers", "MiB",
                    "seconds to make", "changed choices", "changed boundary decisions", "max |Δp|", "median |Δp|",
                    "balanced acc. raw", "balanced acc. calibrated",
                    "decisions/s (native only; load average around the run)"],
        "rows": rows,
        "note": "bits/weight: every stored byte of the weights file, in bits, over the weights the model computes "
                "with (llama.cpp's own BPW for a GGUF; read from the safetensors headers for an llm-compressor "
                "checkpoint, which keeps its embeddings and lm_head in fp32 and so stands far above the bits of its "
                "quantized layers, the next column; '—' there for a GGUF, whose quantizer states the whole file's "
                "figure only; 'not in this report' where the report was written before it recorded them); "
                "boundary decisions: the reference's margin is below 0.1, where a few hundredths of "
                "drift can flip the choice; calibrated: after the label-free in-batch prior; an emulated run "
                "simulates the scheme in fp32, so no speed is claimed for it; a scheme that could not run on this "
                "machine says why; a speed measured while the 2-core machine was busy (load well above 2) is slower "
                "than a quiet one"})
