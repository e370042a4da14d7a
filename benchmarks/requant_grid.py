"""Which llama.cpp types land back on the source's grid when re-quantized from its dequantization, per tensor type.

``semif quant --schemes gguf:…`` re-quantizes each llama.cpp type from the fp32 reference, which is itself
dequantized from the store's GGUF. A type that lands back on the source's own grid reproduces the source bit for
bit and so is not a second quantization (the confound the quantization-schemes report states). Every report's
``against_source`` counts identical tensors in all; this script re-measures them per tensor type
(:func:`scorer.models.gguf_tools.same_grid`'s ``by_type``) for the GGUF schemes of committed quant-schemes reports, from
their verified cache entries (a missing or tampered entry stops it: rerun that report's ``semif quant`` first).

    .venv/bin/python benchmarks/requant_grid.py data/results/quant-schemes-*.json --output data/results/X.json

One report (kind ``requant-grid``); reads GGUFs only (no model is loaded, timings are not the point).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.core.machine import load_average, load_span  # noqa: E402
from scorer.formats.envelope import envelope, file_input, write_report  # noqa: E402
from scorer.models.gguf_tools import same_grid  # noqa: E402
from scorer.studies import quant_cache  # noqa: E402

FORMAT = "semif-requant-grid-v1"


def _measure(report_path: Path) -> list[dict[str, Any]]:
    rep = orjson.loads(report_path.read_bytes())
    if rep.get("kind") != "quant-schemes":
        raise SystemExit(f"{report_path}: kind {rep.get('kind')!r}, expected a quant-schemes report")
    source = Path(rep["inputs"]["model.source_gguf"]["path"])
    out = []
    for s in rep["schemes"]:
        if not str(s["scheme"]).startswith("gguf:"):
            continue
        entry = quant_cache.load(quant_cache.EntryKey(**s["cache"]["inputs"]))
        if entry is None:
            raise SystemExit(f"{report_path}: {s['scheme']}: no cache entry {s['cache']['key']}; rerun the report's "
                             f"command first: {rep['command']}")
        made = entry.folder / s["runs"][0]["gguf"]["file"]
        print(f"[requant-grid] {rep['model']['key']} {s['scheme']} against {source.name} …", file=sys.stderr,
              flush=True)
        t0 = time.perf_counter()
        grid = same_grid(source, made)
        out.append({"model": rep["model"]["key"], "scheme": s["scheme"], "source": source.name,
                    "source_sha256": rep["model"]["source_gguf"]["sha256"], "requantized": made.name,
                    "requantized_sha256": s["runs"][0]["gguf"]["sha256"], "seconds": round(time.perf_counter() - t0, 3),
                    **grid})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", type=Path, help="quant-schemes reports (semif quant --schemes)")
    ap.add_argument("--output", type=Path, required=True)
    args = ap.parse_args()
    if args.output.exists():
        raise SystemExit(str(refuse_overwrite(args.output)))
    load_before = load_average()
    rows = [row for path in args.reports for row in _measure(path)]
    report = {**envelope("requant-grid", FORMAT, {str(p): file_input(p) for p in args.reports}),
              "title": "llama.cpp types re-quantized from the dequantized reference: bit-identical to the source, "
                       "per tensor type", "load_average": load_span(load_before), "rows": rows,
              "notes": ["identical = same tensor type and the very same bytes as the store's GGUF (the source the "
                        "fp32 reference was dequantized from); by_type is keyed by the re-quantized tensor's type"]}
    write_report(args.output, report)
    print(f"[requant-grid] wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
