"""A result report as the site shows it: its kind, the index section it is listed under, its title, its charts
(:mod:`scorer.site.charts`) and every field as tables."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scorer.core.hashing import sha256_hex
from scorer.site.batch_probe_charts import draw_batch_probe
from scorer.site.busy_charts import draw_busy
from scorer.site.calibration_charts import draw_calibration
from scorer.site.charts import draw_bench, draw_calibrate, draw_eval, draw_order, draw_peers, draw_quant, draw_route
from scorer.site.confidence_charts import draw_confidence
from scorer.site.engine_charts import draw_engines
from scorer.site.files import object_at, unique_slug
from scorer.site.formatting import fmt_value
from scorer.site.inputs import BuildError, ReportFile
from scorer.site.latency_charts import draw_decision_latency
from scorer.site.quant_charts import draw_quant_schemes
from scorer.site.single_request_charts import (
    draw_label_free_selection,
    draw_single_request_peer,
    draw_single_request_study,
)
from scorer.site.study_charts import draw_quality_study

_GENERIC_MAX_ROWS = 200


@dataclass(frozen=True)
class _Kind:
    """How the site shows one report kind."""

    section: str
    """The index section it is listed under (a key of ``_SECTIONS``)."""
    what: str
    """The first words of its title when the report has no ``title`` of its own."""
    draw: Callable[[str, ReportFile], None] | None = None
    """Adds its charts (and any table of its own) to the report, or raises :class:`BuildError`; None: tables only."""


# Every kind a report writer names in its envelope (scorer/formats/envelope.py). A report is drawn by its `kind` alone:
# never by its file name, never by guessing from other keys.
_KINDS: dict[str, _Kind] = {
    "bench": _Kind("shape", "Shape benchmark", draw_bench),
    "drift": _Kind("drift", "Fast-path drift"),
    "cache-verify": _Kind("cache-verify", "cache-verify report"),
    "quant": _Kind("quant", "Quantization ladder", draw_quant),
    "quant-schemes": _Kind("quant", "Quantization schemes (llama.cpp types, W8A8, AWQ, GPTQ)", draw_quant_schemes),
    "requant-grid": _Kind("quant", "Re-quantized llama.cpp types: bit-identical to their source, per tensor type"),
    "compare": _Kind("compare", "Cross-backend comparison"),
    "eval": _Kind("eval", "eval report", draw_eval),
    "calibrate": _Kind("calibrate", "calibrate report", draw_calibrate),
    "calibration": _Kind("calibration", "calibration report", draw_calibration),
    "prior": _Kind("calibration-files", "Label-free prior"),
    "bias": _Kind("calibration-files", "Fitted bias offsets"),
    "order": _Kind("order", "order report", draw_order),
    "route": _Kind("route", "route report", draw_route),
    "peers": _Kind("peers", "peers report", draw_peers),
    "ray-scale": _Kind("serving", "Ray Data scale-out"),
    "serve-load": _Kind("serving", "HTTP decision service under load"),
    "serve-batching": _Kind("serving", "HTTP decision service: cross-request batching, before/after"),
    "engines": _Kind("engines", "Engines side by side", draw_engines),
    "route-threshold": _Kind("route", "Routing threshold chosen out of fold"),
    "quality-study": _Kind("quality-study", "Decision quality study", draw_quality_study),
    "confidence": _Kind("confidence", "How far confidence can be trusted", draw_confidence),
    "decision-latency": _Kind("decision-latency", "One request, many questions: latency against peers",
                              draw_decision_latency),
    "busy": _Kind("busy", "Scoring on a busy machine", draw_busy),
    "single-request-peer": _Kind("single-request", "One request per state: SemIf beside typed-gguf",
                                 draw_single_request_peer),
    "single-request-study": _Kind("single-request", "Label-free corrections of one request",
                                  draw_single_request_study),
    "label-free-selection": _Kind("single-request", "The label-free default per kind of question, out of fold",
                                  draw_label_free_selection),
    "llamacpp-batch-probe": _Kind("drift", "llama.cpp: which rule keeps the fast paths exact", draw_batch_probe),
}

# Index-page sections, in reading order: speed first, then agreement between paths, then quality.
_SECTIONS = (
    ("shape", "Fast paths (shape benchmark)"), ("drift", "Drift of the fast paths against fresh scoring"),
    ("cache-verify", "Model cache verification"), ("quant", "Quantization ladder"),
    ("compare", "Cross-backend parity"), ("eval", "Decision quality"),
    ("calibrate", "Confidence calibration (temperature scaling)"),
    ("calibration", "Calibration that changes decisions (priors, fitted bias)"),
    ("calibration-files", "Calibration files (fitted priors and bias offsets)"),
    ("order", "Order robustness"), ("route", "Two-path routing"),
    ("peers", "Compared with other tools (lm-eval, vLLM, SGLang)"),
    ("serving", "Serving and scaling out (HTTP service, Ray Data)"),
    ("engines", "Engines side by side: throughput against decision quality (vLLM, llama.cpp, torch)"),
    ("quality-study", "Which way of asking gets decisions right (layout, examples, readout, calibration; out of fold)"),
    ("confidence", "What confidence means: how often answers at each confidence are right"),
    ("decision-latency", "Latency of one request with several questions on one state (semif serve, typed-gguf, "
                         "llama-server with a grammar)"),
    ("busy", "Scoring on a busy machine: slowdown beside a CPU-bound job (SemIf and typed-gguf)"),
    ("single-request", "Right on one request: SemIf beside typed-gguf, each state asked alone"),
)


def _report_kind(rel: str, obj: dict[str, Any]) -> str:
    """The report's own ``kind`` (the envelope's first field); a report without one is refused."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        found = "no 'kind' field" if "kind" not in obj else f"'kind' is {kind!r}"
        raise BuildError(f"{rel}: {found} (expected the report envelope of scorer/formats/envelope.py: a "
                         f"non-empty string 'kind' such as {', '.join(repr(k) for k in _KINDS)}, then 'format', "
                         "'created_utc', …)")
    return kind


def _default_title(kind: str, rel: str, obj: dict[str, Any]) -> str:
    name = rel.rsplit("/", 1)[-1]
    m = object_at(obj, "model")
    mach = object_at(obj, "machine")
    who = " · ".join(str(x) for x in (m.get("key"), m.get("backend"), m.get("dtype"),
                                       mach.get("gpu") or mach.get("cpu")) if x)
    what = _KINDS[kind].what if kind in _KINDS else f"{kind} report"
    ident = object_at(obj, "identity")
    if kind == "drift" and isinstance(ident.get("mode"), str):
        what += f" ({ident['mode']} mode vs fresh)"
    if kind == "bench" and isinstance(obj.get("workload"), dict) and obj["workload"].get("size"):
        what += f" ({obj['workload']['size']})"
    return f"{what} · {who}" if who else f"{what} · {name}"


def load_report(rel: str, raw: bytes, obj: Any, taken: set[str]) -> ReportFile:
    """A report ready to render: drawn by its kind's function, then every field as tables. A kind this build
    does not know is shown as tables with a note saying so; a report without a kind stops the build."""
    if not isinstance(obj, dict):
        raise BuildError(f"{rel}: a result report must be a JSON object, found {type(obj).__name__}")
    if not obj:
        raise BuildError(f"{rel}: empty report")
    kind = _report_kind(rel, obj)
    known = _KINDS.get(kind)
    rep = ReportFile(rel, unique_slug(rel, taken), raw, sha256_hex(raw), obj, kind,
                     known.section if known else kind)
    title = obj.get("title")
    rep.title = title if isinstance(title, str) and title else _default_title(kind, rel, obj)
    if known is None:
        rep.note = (f"This build does not know reports of kind '{kind}', so it draws no chart for this one: "
                    "every field is shown in the tables below.")
    elif known.draw is not None:
        known.draw(rel, rep)
    rep.tables.extend(generic_tables(rel, obj))
    return rep


def _flat(d: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """One level of nested objects flattened into dotted keys (``timing.total_s``)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and depth < 1 and v and len(v) <= 12:
            out.update(_flat(v, key + ".", depth + 1))
        else:
            out[key] = v
    return out


def generic_tables(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Any report as tables: top-level fields, then one table per list of objects (e.g. ``rows``, ``results``)."""
    tables: list[dict[str, Any]] = []
    fields = []
    lists: list[tuple[str, list[dict[str, Any]]]] = []
    for k, v in obj.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lists.append((k, v))
        elif isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()) and len(v) <= 200:
            lists.append((k, [{"key": kk, **vv} for kk, vv in v.items()]))
        elif isinstance(v, dict):
            for fk, fv in _flat(v, k + ".").items():
                fields.append([fk, fmt_value(fv)])
        else:
            fields.append([k, fmt_value(v)])
    if fields:
        tables.append({"caption": "fields", "columns": ["field", "value"], "rows": fields, "note": ""})
    for name, items in lists:
        flat = [_flat(x) for x in items]
        cols: list[str] = []
        for row in flat:
            for c in row:
                if c not in cols:
                    cols.append(c)
        shown = flat[:_GENERIC_MAX_ROWS]
        note = f"first {_GENERIC_MAX_ROWS} of {len(flat)} rows; the file has them all" if len(flat) > len(shown) else ""
        tables.append({"caption": name, "columns": cols, "rows": [[fmt_value(r.get(c)) for c in cols] for r in shown],
                       "note": note})
    return tables


def _created(r: ReportFile) -> str:
    """The envelope's ``created_utc`` (ISO 8601, so it sorts as text); "" for a report without one."""
    c = r.obj.get("created_utc")
    return c if isinstance(c, str) else ""


def report_sections(reports: list[ReportFile]) -> list[dict[str, Any]]:
    """Reports grouped for the index page: the known families in ``_SECTIONS`` order, then any other kind.

    Each section's ``lead`` is its newest report (by ``created_utc``; the first listed on a tie), drawn on the
    index with its first chart; ``rest`` are the others, listed with their links only. Drawing every report's
    chart made the index one long wall (2,882 elements with 88 reports on 2026-12-02) that grew by a chart per
    report; every chart stays on its report's own page."""
    titles = dict(_SECTIONS)
    order = [f for f, _ in _SECTIONS]
    families = sorted({r.family for r in reports}, key=lambda f: (order.index(f) if f in order else len(order), f))
    out: list[dict[str, Any]] = []
    for f in families:
        # Reports kept in sub-folders (e.g. results/gpu-h200/) after the top-level ones of their family.
        listed = sorted((r for r in reports if r.family == f), key=lambda r: (r.rel.count("/"), r.rel))
        newest = max(_created(r) for r in listed)
        lead = next(r for r in listed if _created(r) == newest)
        out.append({"id": "s-" + re.sub(r"[^a-z0-9]+", "-", f.lower()).strip("-"),
                    "title": titles.get(f, f"Other: {f}"),
                    "reports": listed, "lead": lead, "rest": [r for r in listed if r is not lead]})
    return out
