"""Every chart of the site built from the committed data, drawn by Chromium: no label, value or note runs outside
its chart (a bar label cut at the left edge was on the quantization-schemes charts until 2026-12-02)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import site_helpers as sh
from site_helpers import ROOT, build

pytestmark = sh.BROWSER_MARKS
browser, open_page = sh.browser, sh.open_page

# Each text's drawn box (rotation included) against its svg's, in CSS pixels (a cut label starts left of it).
OUTSIDE = """() => [...document.querySelectorAll('svg.chart')].flatMap((svg, i) => {
  const s = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].map(t => ({text: t.textContent, b: t.getBoundingClientRect()}))
    .filter(({b}) => b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5
            || b.bottom > s.bottom + 0.5)
    .map(({text, b}) => `chart ${i}: ${JSON.stringify(text)} spans x ${(b.left - s.left).toFixed(1)}..`
         + `${(b.right - s.left).toFixed(1)}, y ${(b.top - s.top).toFixed(1)}..${(b.bottom - s.top).toFixed(1)} `
         + `of ${s.width.toFixed(1)} x ${s.height.toFixed(1)}`);
})"""


def test_no_chart_text_runs_outside_its_chart(open_page: Any, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build.build(ROOT / "data", out)
    pages = ["index.html", *sorted(f"results/{p.name}" for p in (out / "results").glob("*.html"))]
    assert len(pages) > 50
    page, log = open_page((out / pages[0]).as_uri())
    bad: list[str] = []
    charts = 0
    for rel in pages:
        page.goto((out / rel).as_uri())
        charts += page.locator("svg.chart").count()
        bad += [f"{rel}: {x}" for x in page.evaluate(OUTSIDE)]
    assert charts > 50 and bad == [] and log.errors == [], bad[:20]
