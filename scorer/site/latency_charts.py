"""The decision-latency report (``kind: decision-latency``, benchmarks/decision_latency.py): per model and cache
(cold, warm), the p50 latency of one request with N questions for every lane (semif serve, typed-gguf, llama-server
generating under a grammar), and in words how the latency grows from the smallest N to the largest."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, with_caption

_CACHES = ("cold", "warm")


def _cells(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    cells = obj.get("results")
    if not isinstance(cells, list) or not cells or not all(isinstance(c, dict) for c in cells):
        raise BuildError(f"{rel}: a decision-latency report needs 'results' (a non-empty list of objects)")
    for i, c in enumerate(cells):
        if not isinstance(c.get("model"), str) or not isinstance(c.get("lane"), str):
            raise BuildError(f"{rel}: results[{i}] needs 'model' and 'lane' (strings)")
        if not isinstance(c.get("size"), int) or isinstance(c.get("size"), bool) or c["size"] < 1:
            raise BuildError(f"{rel}: results[{i}].size: {c.get('size')!r} (expected a number of questions >= 1)")
        if c.get("cache") not in _CACHES:
            raise BuildError(f"{rel}: results[{i}].cache: {c.get('cache')!r} (expected one of {list(_CACHES)})")
        p50 = c.get("latency_p50_s")
        if p50 is not None and finite(p50) is None:
            raise BuildError(f"{rel}: results[{i}].latency_p50_s: {p50!r} (expected a finite number or null)")
    ratios = obj.get("ratios", [])
    if not isinstance(ratios, list) or not all(isinstance(r, dict) for r in ratios):
        raise BuildError(f"{rel}: 'ratios' must be a list of objects")
    return cells


def _ratio_words(obj: dict[str, Any], model: str, cache: str) -> str:
    words = []
    for r in obj.get("ratios", []):
        if r.get("model") != model or r.get("cache") != cache:
            continue
        ratio = finite(r.get("p50_ratio"))
        words.append(f"{r.get('lane')} {'—' if ratio is None else f'{ratio:.1f}×'}")
    if not words:
        return ""
    r0 = next(r for r in obj["ratios"] if r.get("model") == model and r.get("cache") == cache)
    return (f" From {r0.get('from_size')} to {r0.get('to_size')} questions the p50 latency grows "
            f"{', '.join(words)} (asking them one request each would cost about {fmt_value(r0.get('size_ratio'))}×).")


def draw_decision_latency(rel: str, rep: ReportFile) -> None:
    """One bar chart per model and cache: a bar per lane and size (p50 latency of one request), its p95, decisions/s
    and whether it was measured on a quiet machine beneath it; the growth from the smallest size to the largest in
    the caption."""
    cells = _cells(rel, rep.obj)
    quiet_all = rep.obj.get("quiet") is True
    for model in dict.fromkeys(c["model"] for c in cells):
        for cache in _CACHES:
            mine = [c for c in cells if c["model"] == model and c["cache"] == cache]
            if not mine:
                continue
            bars = []
            for c in sorted(mine, key=lambda c: (str(c["lane"]), c["size"])):
                p50 = finite(c.get("latency_p50_s"))
                if p50 is None:
                    continue
                note = (f"p95 {fmt_value(c.get('latency_p95_s'))} s · {fmt_value(c.get('decisions_per_s'))} "
                        f"decisions/s · {c.get('valid')}/{c.get('requests')} valid"
                        + ("" if c.get("quiet") else " · NOT QUIET"))
                bars.append((f"{c['lane']} · {c['size']} q", p50, note))
            if not bars:
                continue
            title = f"{model}, {cache}: seconds per request by lane and number of questions (lower is faster)"
            caption = (f"{model}, {cache} state ("
                       + ("a state no server had seen" if cache == "cold" else
                          "the same request again: a tool that caches prefixes has the state cached")
                       + "): each bar is the median latency of one request answering that many questions about one "
                         "state, client-side."
                       + _ratio_words(rep.obj, model, cache)
                       + ("" if quiet_all else " Some measurements were taken on a busy machine (NOT QUIET): do not "
                                               "quote those."))
            rep.charts.append(with_caption(svg_bars(bars, "seconds per request (p50)", title, label_w=200), caption))
