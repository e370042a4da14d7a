"""Build-time charts as inline SVG: horizontal bars and reliability diagrams. Every text is escaped; the
numbers drawn are the ones given."""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

from scorer.site.formatting import finite, fmt_value


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def svg_bars(bars: list[tuple[str, float, str]], unit: str, title: str, *, label_w: int = 150,
             ref: tuple[str, float] | None = None) -> Markup:
    """A horizontal bar chart as inline SVG: one bar per (label, value, note); labels are escaped text.

    ``label_w`` widens the label column for long labels (the plot keeps its width; a label longer than the
    column is cut with "…", its full text kept as a tooltip). ``ref`` draws a dashed line across the bars at a
    reference value, named below the chart (``("raw", 0.63)``: the value every bar is compared with)."""
    row_h, top = 30, 26
    width = label_w + 330
    plot_w = width - label_w - 70
    max_chars = label_w * 10 // 72  # 7.2 px a character at 13 px system-ui: a cut label never runs off the left
    vmax = max([v for _, v, _ in bars] + ([ref[1]] if ref else []), default=0.0) or 1.0
    height = top + row_h * len(bars) + 8
    if ref:
        height += 14
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(title)}" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<title>{_esc(title)}</title>',
             f'<text x="0" y="16" class="chart-title">{_esc(unit)}</text>']
    for i, (label, value, note) in enumerate(bars):
        y = top + i * row_h
        w = max(0.0, value / vmax * plot_w)
        short = label if len(label) <= max_chars else label[:max_chars - 1] + "…"
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" class="chart-label">'
                     f'<title>{_esc(label)}</title>{_esc(short)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{w:.2f}" height="14" rx="2" class="chart-bar"/>')
        parts.append(f'<text x="{label_w + w + 4:.2f}" y="{y + 14}" class="chart-value">'
                     f'{_esc(fmt_value(value))}</text>')
        if note:
            parts.append(f'<text x="{label_w}" y="{y + 27}" class="chart-note">{_esc(note)}</text>')
    if ref:
        x = label_w + max(0.0, ref[1] / vmax * plot_w)
        parts.append(f'<line x1="{x:.2f}" y1="{top - 4}" x2="{x:.2f}" y2="{height - 18}" class="chart-diagonal"/>')
        parts.append(f'<text x="{x:.2f}" y="{height - 4}" text-anchor="middle" class="chart-note">'
                     f'{_esc(ref[0])} {_esc(fmt_value(ref[1]))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def with_caption(chart: Markup, caption: str) -> Markup:
    """A chart followed by its one-line caption in plain words (escaped text, shown under the chart)."""
    return Markup(f'{chart}<p class="small muted">{escape(caption)}</p>')


_AXIS_MARGIN = 6
"""Units left of x = 0 in the charts with a rotated y-axis name: its 13 px text, centred on x = 10, reaches x = 1.5
and needs room for the glyphs' overhang."""


def svg_reliability(series: list[tuple[str, list[dict[str, Any]]]], title: str) -> Markup:
    """Reliability diagram as inline SVG: per series, a point per non-empty bin at (mean confidence,
    accuracy), sized by its row count, joined by a line; the diagonal is perfect calibration."""
    size, pad = 260, 34
    plot = size - 2 * pad
    width = size + 120

    def xy(c: float, a: float) -> tuple[float, float]:
        return pad + c * plot, size - pad - a * plot

    # The view box starts left of 0 so the rotated axis name (centred on x = 10) clears the tick labels and the edge.
    parts = [f'<svg class="chart" viewBox="{-_AXIS_MARGIN} 0 {width + _AXIS_MARGIN} {size}" role="img" '
             f'aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg">', f'<title>{_esc(title)}</title>',
             f'<rect x="{pad}" y="{pad}" width="{plot}" height="{plot}" class="chart-frame"/>',
             f'<line x1="{pad}" y1="{size - pad}" x2="{size - pad}" y2="{pad}" class="chart-diagonal"/>',
             f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle" class="chart-label">confidence</text>',
             f'<text x="10" y="{size / 2}" transform="rotate(-90 10 {size / 2})" text-anchor="middle" '
             f'class="chart-label">accuracy</text>']
    for tick in (0.0, 0.5, 1.0):
        x, y = xy(tick, tick)
        parts.append(f'<text x="{x:.1f}" y="{size - pad + 12}" text-anchor="middle" class="chart-note">{tick:g}</text>')
        parts.append(f'<text x="{pad - 4}" y="{y + 3:.1f}" text-anchor="end" class="chart-note">{tick:g}</text>')
    total = max(1.0, max((finite(b.get("n")) or 0.0) for _, bins in series for b in bins))
    for i, (name, bins) in enumerate(series):
        pts: list[tuple[float, float, float]] = []
        for b in bins:
            c, a, n = finite(b.get("confidence")), finite(b.get("accuracy")), finite(b.get("n")) or 0.0
            if c is not None and a is not None and n > 0:
                pts.append((c, a, n))
        cls = f"chart-series-{i % 2}"
        if len(pts) > 1:
            path = " ".join(f"{xy(c, a)[0]:.1f},{xy(c, a)[1]:.1f}" for c, a, _ in pts)
            parts.append(f'<polyline points="{path}" class="chart-line {cls}"/>')
        for c, a, n in pts:
            x, y = xy(c, a)
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{2.5 + 5 * math.sqrt(n / total):.1f}" '
                         f'class="chart-dot {cls}"><title>{_esc(name)}: {int(n)} rows, confidence {c:.2f}, '
                         f'accuracy {a:.2f}</title></circle>')
        parts.append(f'<circle cx="{size + 8}" cy="{pad + 6 + 18 * i}" r="5" class="chart-dot {cls}"/>'
                     f'<text x="{size + 18}" y="{pad + 10 + 18 * i}" class="chart-label">{_esc(name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def svg_scatter(points: list[tuple[str, float, float, int]], x_unit: str, y_unit: str, title: str) -> Markup:
    """A scatter plot as inline SVG: one labelled point per (label, x, y, series); x from 0 to the largest x,
    y (a share such as accuracy) from 0 to 1. ``series`` picks the marker's colour (0 or 1); labels are
    escaped and each point's exact values are its tooltip."""
    height, left, bottom, top = 300, 46, 38, 14
    plot_w, plot_h = 284, height - top - bottom
    # The legend column holds the longest "N. label" (11 px notes: under 6.4 px a character), at least 150 wide.
    longest = max((len(f"{i + 1}. {label}") for i, (label, _, _, _) in enumerate(points)), default=0)
    width = left + plot_w + 10 + max(140, math.ceil(longest * 6.4) + 6)
    xmax = max([x for _, x, _, _ in points], default=0.0) or 1.0

    def xy(x: float, y: float) -> tuple[float, float]:
        return left + x / xmax * plot_w, top + (1 - y) * plot_h

    parts = [f'<svg class="chart" viewBox="{-_AXIS_MARGIN} 0 {width + _AXIS_MARGIN} {height}" role="img" '
             f'aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg">', f'<title>{_esc(title)}</title>',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="chart-frame"/>',
             f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle" class="chart-label">'
             f'{_esc(x_unit)}</text>',
             f'<text x="10" y="{top + plot_h / 2}" transform="rotate(-90 10 {top + plot_h / 2})" '
             f'text-anchor="middle" class="chart-label">{_esc(y_unit)}</text>']
    for tick in (0.0, 0.5, 1.0):
        _, y = xy(0.0, tick)
        parts.append(f'<text x="{left - 4}" y="{y + 3:.1f}" text-anchor="end" class="chart-note">{tick:g}</text>')
        x, _ = xy(tick * xmax, 0.0)
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 12}" text-anchor="middle" class="chart-note">'
                     f'{_esc(fmt_value(tick * xmax))}</text>')
    for i, (label, xv, yv, series) in enumerate(points):
        x, y = xy(xv, min(max(yv, 0.0), 1.0))
        cls = f"chart-series-{series % 2}"
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" class="chart-dot {cls}"><title>{_esc(label)}: '
                     f'{_esc(fmt_value(xv))} {_esc(x_unit)}, {_esc(fmt_value(yv))} {_esc(y_unit)}</title></circle>')
        parts.append(f'<text x="{x + 7:.1f}" y="{y + 4:.1f}" class="chart-note">{i + 1}</text>')
        parts.append(f'<text x="{left + plot_w + 10}" y="{top + 10 + 15 * i}" class="chart-note">{i + 1}. '
                     f'{_esc(label)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
