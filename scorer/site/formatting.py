"""How the site writes a number: table cells, seconds (as the replay's ``fmtS`` does), token counts, metrics
that carry a confidence interval."""

from __future__ import annotations

import math
from typing import Any


def finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def fmt_value(v: Any) -> str:
    """A table cell: numbers compact and stable, text as is, short lists joined, deeper values summarized."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1e6 or a < 1e-4:
            return f"{v:.3e}"
        if a >= 100:
            return f"{v:.1f}"
        return f"{v:.4g}"
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        if len(v) <= 8 and all(not isinstance(x, (dict, list)) for x in v):
            return ", ".join(fmt_value(x) for x in v)
        return f"[{len(v)} items]"
    if isinstance(v, dict):
        if len(v) <= 4 and all(not isinstance(x, (dict, list)) for x in v.values()):
            return ", ".join(f"{k}: {fmt_value(x)}" for k, x in v.items())
        return f"{{{len(v)} fields}}"
    return str(v)


def fmt_percent(v: Any, digits: int = 0) -> str:
    """A share in [0, 1] as a percentage (``—`` when it is not a finite number)."""
    f = finite(v)
    return "—" if f is None else f"{100 * f:.{digits}f} %"


def fmt_seconds(v: Any) -> str:
    """Seconds as the replay writes them (fmtS in scorer/site/assets/replay/format.js)."""
    x = finite(v)
    if x is None:
        return "—"
    return (f"{x * 1000:.2f} ms" if x < 0.01 else f"{x * 1000:.0f} ms") if x < 1 else f"{x:.2f} s"


def fmt_count(v: Any) -> Any:
    """A token count (a median, so possibly x.5) without a trailing ``.0`` when it is whole."""
    x = finite(v)
    return int(x) if x is not None and x.is_integer() else v


def metric_value(v: Any) -> float | None:
    """A metric that is either a number or ``{"value": …, "ci_lo": …, "ci_hi": …}``."""
    return finite(v.get("value")) if isinstance(v, dict) else finite(v)


def ci_note(v: Any) -> str:
    if isinstance(v, dict) and finite(v.get("ci_lo")) is not None and finite(v.get("ci_hi")) is not None:
        return f"CI [{v['ci_lo']:.2f}, {v['ci_hi']:.2f}]"
    return ""
