"""The busy-machine report (``kind: busy``, benchmarks/busy.py): per background load, how much each configuration
slowed beside a CPU-bound job (loaded over quiet wall time), SemIf's lanes beside the peer typed-gguf, with the
issue's 1.5x ceiling drawn across; then every configuration in a table."""

from __future__ import annotations

from typing import Any

from scorer.site.formatting import finite, fmt_percent, fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.svg import svg_bars, with_caption

CEILING = 1.5

_pct = fmt_percent


def _results(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    rows = obj.get("results")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise BuildError(f"{rel}: a busy report needs 'results' (a non-empty list of objects)")
    for i, r in enumerate(rows):
        if not isinstance(r.get("lane"), str) or not isinstance(r.get("load"), str):
            raise BuildError(f"{rel}: results[{i}] needs 'lane' and 'load' (strings)")
        for key in ("slowdown", "quiet_s", "loaded_s"):
            if r.get(key) is not None and finite(r.get(key)) is None:
                raise BuildError(f"{rel}: results[{i}].{key}: {r.get(key)!r} (expected a finite number or null)")
    return rows


def draw_busy(rel: str, rep: ReportFile) -> None:
    """One bar chart per background load (a bar per configuration: its slowdown), then the table."""
    rows = _results(rel, rep.obj)
    cores = (rep.obj.get("settings") or {}).get("job_cores", 1) if isinstance(rep.obj.get("settings"), dict) else 1
    for load in dict.fromkeys(r["load"] for r in rows):
        mine = [r for r in rows if r["load"] == load]
        bars = []
        for r in mine:
            s = finite(r.get("slowdown"))
            if s is None:
                continue
            # short: the note runs from the bars' left edge, inside the plot's width (the table has the rest)
            note = (f"{fmt_value(finite(r.get('quiet_s')))} s → {fmt_value(finite(r.get('loaded_s')))} s; job kept "
                    f"{_pct(r.get('background_share'))}" + ("" if r.get("quiet") else "; NOT QUIET"))
            bars.append((str(r["lane"]), s, note))
        if not bars:
            continue
        peer = next((finite(r.get("slowdown")) for r in mine if r.get("tool") == "typed-gguf"), None)
        semif = [(str(r["lane"]), finite(r.get("slowdown"))) for r in mine if r.get("tool") == "semif"]
        worst = max((s for _, s in semif if s is not None), default=None)
        words = (f"the slowest SemIf configuration slowed {fmt_value(worst)}x" if worst is not None else
                 "no SemIf configuration finished")
        words += f", typed-gguf {fmt_value(peer)}x" if peer is not None else ", typed-gguf did not run"
        quiet = all(bool(r.get("quiet")) for r in mine)
        chart = svg_bars(bars, "slowdown (loaded ÷ quiet wall time)",
                         f"Slowdown beside {cores} CPU-bound background job(s) ({load})", label_w=260,
                         ref=("ceiling", CEILING))
        rep.charts.append(with_caption(chart, (
            f"Beside {cores} CPU-bound background process(es) ({load}), each configuration scored the same rows: the "
            "bar is its median wall time with the job running over its median wall time without (1 = unaffected; "
            f"the dashed line is the issue's {CEILING:g}x ceiling); under each bar its quiet → loaded seconds and the "
            f"share of its core(s) the job kept; {words}."
            + ("" if quiet else " Some quiet runs started with other work on the machine: do not quote these."))))
    table = [[fmt_value(r.get("lane")), fmt_value(r.get("load")), fmt_value(r.get("policy")),
              fmt_value(r.get("threads")), fmt_value(finite(r.get("quiet_s"))), fmt_value(finite(r.get("loaded_s"))),
              fmt_value(finite(r.get("slowdown"))), fmt_value(finite(r.get("quiet_spread"))),
              fmt_value(finite(r.get("quiet_cpu_s"))), _pct(r.get("background_share")), fmt_value(r.get("quiet"))]
             for r in rows]
    rep.tables.insert(0, {"caption": "every configuration under every background load (medians over the rounds)",
                          "columns": ["configuration", "load", "wait policy", "threads", "quiet s", "loaded s",
                                      "slowdown", "quiet spread", "quiet CPU s", "job's share of its cores", "quiet"],
                          "rows": table,
                          "note": "quiet spread: slowest over fastest quiet run (the noise); quiet CPU s: CPU seconds "
                                  "the configuration's processes used in a quiet run (spinning threads show here); "
                                  "job's share: the CPU the background job got while the configuration ran"})
