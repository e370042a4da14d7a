"""Finding, parsing and validating every trace and report under a data directory, in a stable order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scorer import trace as trace_mod
from scorer.core.hashing import sha256_hex
from scorer.site.files import load_json, unique_slug
from scorer.site.inputs import BuildError, ReportFile, TraceFile
from scorer.site.labels import distinct_labels, is_control, trace_label
from scorer.site.lanes import lane_paths, trace_lanes
from scorer.site.reports import load_report
from scorer.site.schemas import TRACE_FORMATS


def validate_trace(rel: str, obj: Any) -> None:
    """The trace module's full verification (schema, checksums, consistency), then what the replay relies on;
    raise :class:`BuildError` naming the file."""
    problems = trace_mod.verify(obj)
    if problems:
        shown = "; ".join(problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise BuildError(f"{rel}: trace failed verification: {shown}{more}")
    _check_renderable(rel, obj)


def _check_renderable(rel: str, obj: dict[str, Any]) -> None:
    """What the replay itself relies on beyond the schema: every lane in one repeat, criteria ids known."""
    runs = [r for r in obj["runs"] if not r.get("warmup")]
    common = set.intersection(*({r["repeat"] for r in runs if r["path"] == path} for _, path in lane_paths(obj)))
    if not common:
        raise BuildError(f"{rel}: no repeat has a measured run of every path (nothing to replay)")
    ids = [c["id"] for c in obj["inputs"]["criteria"]]
    if len(set(ids)) != len(ids):
        raise BuildError(f"{rel}: duplicate criterion ids in inputs.criteria")
    for i, r in enumerate(obj["runs"]):
        for d in r.get("decisions") or []:
            if d["criterion_id"] not in ids:
                raise BuildError(f"{rel}: runs[{i}].decisions: unknown criterion_id {d['criterion_id']!r}")


def _featured(data_dir: Path) -> str | None:
    """``traces/<name>.json`` from ``data_dir/traces/FEATURED`` (one file name; ``#`` starts a comment), if any.

    The showcase is chosen by name, never by result; a name that is not there stops the build."""
    path = data_dir / "traces" / "FEATURED"
    if not path.is_file():
        return None
    names = [ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    names = [n for n in names if n]
    if len(names) != 1:
        raise BuildError(f"traces/FEATURED: {len(names)} file names (expected exactly one trace file name)")
    if not (data_dir / "traces" / names[0]).is_file():
        raise BuildError(f"traces/FEATURED: {names[0]!r} is not a file under traces/ (expected a trace's file name)")
    return f"traces/{names[0]}"


def discover(data_dir: Path) -> tuple[list[TraceFile], list[ReportFile]]:
    """Find, parse and validate every trace and report under ``data_dir`` (sorted, so the build is stable)."""
    if not data_dir.is_dir():
        raise BuildError(f"{data_dir}: data directory not found")
    traces: list[TraceFile] = []
    reports: list[ReportFile] = []
    trace_slugs: set[str] = set()
    report_slugs: set[str] = set()
    # The trace named in traces/FEATURED opens the replay; then the other published traces (under traces/),
    # then the rest.
    featured = _featured(data_dir)

    def _order(p: Path) -> tuple[bool, bool, str]:
        rel = p.relative_to(data_dir).as_posix()
        return (rel != featured, not rel.startswith("traces/"), rel)

    for path in sorted(data_dir.rglob("*.json"), key=_order):
        if not path.is_file():
            continue
        rel = path.relative_to(data_dir).as_posix()
        raw = path.read_bytes()
        in_results = rel.startswith("results/")
        in_traces = rel.startswith("traces/")
        obj = load_json(raw, rel)
        is_trace = isinstance(obj, dict) and obj.get("format") in TRACE_FORMATS
        if isinstance(obj, dict) and str(obj.get("format", "")).startswith("semif-trace") and not is_trace:
            raise BuildError(f"{rel}: trace format {obj.get('format')!r} is not supported (expected one of "
                             f"{', '.join(repr(f) for f in TRACE_FORMATS)})")
        if in_traces and not is_trace:
            raise BuildError(f"{rel}: files under traces/ must be traces (\"format\": {' or '.join(TRACE_FORMATS)})")
        if is_trace:
            validate_trace(rel, obj)
            traces.append(TraceFile(rel, unique_slug(rel, trace_slugs), raw, sha256_hex(raw), obj,
                                    trace_label(obj), trace_lanes(obj), is_control(obj)))
        elif in_results:
            reports.append(load_report(rel, raw, obj, report_slugs))
    distinct_labels(traces)
    # A report rebuilt from its run's records by a later version (``inputs.recomputed_from``, e.g. benchmarks/
    # engines.py --recompute) is shown once: as the rebuilt one, which cites the original by sha256.
    superseded = {r.obj["inputs"]["recomputed_from"].get("sha256") for r in reports
                  if isinstance(r.obj.get("inputs"), dict) and isinstance(r.obj["inputs"].get("recomputed_from"), dict)}
    return traces, [r for r in reports if r.sha256 not in superseded]
