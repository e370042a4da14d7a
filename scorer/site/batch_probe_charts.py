"""The llama.cpp batch-shape probe (``kind: llamacpp-batch-probe``, benchmarks/llamacpp_batch_probe.py): for each
variant of the backend's canonical rules, the largest |Δp| of serial and shared scoring against direct (0 = the same
logits to the last bit), then the variants in a table."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, with_caption

_MODES = ("serial", "shared")


def _results(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    rows = obj.get("results")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise BuildError(f"{rel}: a llamacpp-batch-probe report needs 'results' (a non-empty list of objects)")
    for i, r in enumerate(rows):
        modes = r.get("modes")
        if not isinstance(r.get("variant"), str) or not isinstance(modes, dict):
            raise BuildError(f"{rel}: results[{i}] needs 'variant' (a string) and 'modes' (an object)")
        for m in _MODES:
            dp = (modes.get(m) or {}).get("max_abs_dp") if isinstance(modes.get(m), dict) else None
            if finite(dp) is None:
                raise BuildError(f"{rel}: results[{i}].modes.{m}.max_abs_dp: {dp!r} (expected a finite number)")
    return rows


def draw_batch_probe(rel: str, rep: ReportFile) -> None:
    """One bar per variant and fast mode (its largest |Δp| against direct), then the table."""
    rows = _results(rel, rep.obj)
    bars = [(f"{r['variant']} · {m}", float(r["modes"][m]["max_abs_dp"]),
             f"max |Δlogit| {fmt_value(finite(r['modes'][m].get('max_abs_dlogit')))}; "
             f"{len(r['modes'][m].get('flips') or [])} flipped choice(s)") for r in rows for m in _MODES]
    exact = [r["variant"] for r in rows if all(float(r["modes"][m]["max_abs_dp"]) == 0.0 for m in _MODES)]
    words = ("bit-identical to direct scoring: " + ", ".join(exact)) if exact else "no variant is bit-identical"
    rows_n = (rep.obj.get("rows") or {}).get("count") if isinstance(rep.obj.get("rows"), dict) else None
    chart = svg_bars(bars, "largest |Δp| against direct scoring", "Drift of the fast paths by variant", label_w=220)
    rep.charts.append(with_caption(chart, (
        f"The same {fmt_value(rows_n)} rows scored direct, serial and shared under each variant of the llama.cpp "
        "backend's canonical rules (canonical: as shipped; each other variant turns rules off); a bar is the largest "
        f"change of any option probability against direct scoring, 0 where the logits are the same to the last bit; "
        f"{words}.")))
    table = [[fmt_value(r.get("variant")), fmt_value(r.get("settings")),
              *(fmt_value(finite(r["modes"][m]["max_abs_dp"])) for m in _MODES),
              *(fmt_value(finite((r.get("wall_s") or {}).get(m))) for m in ("direct", *_MODES))] for r in rows]
    rep.tables.insert(0, {"caption": "every variant (wall seconds include preparing the rows)",
                          "columns": ["variant", "settings changed", "serial max |Δp|", "shared max |Δp|",
                                      "direct s", "serial s", "shared s"],
                          "rows": table,
                          "note": "settings: the backend module's rules the variant changes (REPACK_WEIGHTS, "
                                  "UNIFIED_KV, MIN_PIECE, MIN_OUTPUTS); none for the shipped one"})
