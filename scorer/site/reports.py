"""A result report as the site shows it: its kind, the index section it is listed under, its title, its charts
(:mod:`scorer.site.charts`) and every field as tables."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from scorer.site.charts import RENDERERS
from scorer.site.files import unique_slug
from scorer.site.formatting import fmt_value
from scorer.site.inputs import BuildError, ReportFile

_GENERIC_MAX_ROWS = 200


def _report_kind(rel: str, obj: dict[str, Any]) -> str:
    """What a report is: its own ``kind``/``report`` field, else its ``schema``, else its file name's prefix."""
    for key in ("kind", "report", "schema"):
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    name = rel.rsplit("/", 1)[-1]
    for prefix in ("shape", "quant", "eval", "compare", "drift"):
        if name.startswith((prefix + "-", prefix + "_")):
            return prefix
    return "generic"


def _kind_family(kind: str, obj: dict[str, Any]) -> str:
    """The chart family: ``shape`` (decisions/s per mode, drift), ``quant`` (the ladder) or the kind itself."""
    k = kind.lower()
    workload = obj.get("workload")
    if k.startswith("shape") or ("bench" in k and (not isinstance(workload, dict) or workload.get("name") == "shape")):
        return "shape"
    if "quant" in k:
        return "quant"
    for family in ("drift", "compare"):
        if family in k:
            return family
    return k


def _default_title(kind: str, family: str, rel: str, obj: dict[str, Any]) -> str:
    name = rel.rsplit("/", 1)[-1]
    m = obj.get("model") if isinstance(obj.get("model"), dict) else {}
    mach = obj.get("machine") if isinstance(obj.get("machine"), dict) else {}
    who = " · ".join(str(x) for x in (m.get("key"), m.get("backend"), m.get("dtype"),
                                       mach.get("gpu") or mach.get("cpu")) if x)
    what = {"shape": "Shape benchmark", "quant": "Quantization ladder", "compare": "Cross-backend comparison",
            "drift": "Fast-path drift"}.get(family, f"{kind} report")
    ident = obj.get("identity") if isinstance(obj.get("identity"), dict) else {}
    if family == "drift" and isinstance(ident.get("mode"), str):
        what += f" ({ident['mode']} mode vs fresh)"
    if family == "shape" and isinstance(obj.get("workload"), dict) and obj["workload"].get("size"):
        what += f" ({obj['workload']['size']})"
    return f"{what} · {who}" if who else f"{what} · {name}"


def load_report(rel: str, raw: bytes, obj: Any, taken: set[str]) -> ReportFile:
    if not isinstance(obj, dict):
        raise BuildError(f"{rel}: a result report must be a JSON object, found {type(obj).__name__}")
    if not obj:
        raise BuildError(f"{rel}: empty report")
    kind = _report_kind(rel, obj)
    family = _kind_family(kind, obj)
    rep = ReportFile(rel, unique_slug(rel, taken), raw, hashlib.sha256(raw).hexdigest(), obj, kind, family)
    title = obj.get("title")
    rep.title = title if isinstance(title, str) and title else _default_title(kind, family, rel, obj)
    renderer = RENDERERS.get(family)
    if renderer is not None:
        renderer(rel, rep)
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


# Index-page sections, in reading order: speed first, then agreement between paths, then quality.
_SECTIONS = (
    ("shape", "Fast paths (shape benchmark)"), ("drift", "Drift of the fast paths against fresh scoring"),
    ("quant", "Quantization ladder"), ("compare", "Cross-backend parity"), ("eval", "Decision quality"),
    ("calibrate", "Calibration"), ("order", "Order robustness"), ("route", "Two-path routing"),
    ("peers", "Compared with other tools (lm-eval, vLLM, SGLang)"),
)


def report_sections(reports: list[ReportFile]) -> list[dict[str, Any]]:
    """Reports grouped for the index page: the known families in ``_SECTIONS`` order, then any other kind."""
    titles = dict(_SECTIONS)
    order = [f for f, _ in _SECTIONS]
    families = sorted({r.family for r in reports}, key=lambda f: (order.index(f) if f in order else len(order), f))
    return [{"id": "s-" + re.sub(r"[^a-z0-9]+", "-", f.lower()).strip("-"), "title": titles.get(f, f"Other: {f}"),
             # Reports kept in sub-folders (e.g. results/gpu-h200/) after the top-level ones of their family.
             "reports": sorted((r for r in reports if r.family == f), key=lambda r: (r.rel.count("/"), r.rel))}
            for f in families]
