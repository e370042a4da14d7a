"""Build the static SemIf site from traces and result reports.

    python build.py [--data DIR] [--out DIR]

Reads every trace (``*.json`` with ``"format"`` ``semif-trace-v1`` or ``semif-trace-v2``) anywhere under the
data directory and every result report (``*.json`` under ``results/``), validates them all before writing
anything (a bad file stops the build with a message that names it), and renders the Jinja2 templates in
``templates/`` into the output directory:

* ``index.html`` — what SemIf is, each showcase trace's verdict in words, results charts, links;
* ``demo/index.html`` — the replay, its first trace rendered server-side (verdict, numbers, lanes, rows);
* ``traces/`` — every trace byte for byte, its sha256, a listing page, and per trace a JS data file
  (``<slug>.js``: the verdict and numbers written here, and the trace's JSON text) that the replay loads
  with a ``<script>`` element: the first one at load, the others when picked, so ``file://`` works too;
* ``assets/`` — the replay's scripts, and the in-page checker with the trace schemas (loaded on demand);
* ``results/`` — every report byte for byte, and a page per report with all its tables.

Pages make no request outside the site, carry no inline script (their CSP allows scripts from the site
only, and the one inline stylesheet by hash), and the output is deterministic: the same inputs give
byte-identical files. Building needs neither torch nor a model: a trace is plain data.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

ROOT = Path(__file__).resolve().parent
TEMPLATES = ROOT / "templates"
TRACE_FORMATS = ("semif-trace-v1", "semif-trace-v2")
SCHEMA_DIR = ROOT / "scorer" / "schema"
SITE_MARKER = ".semif-site"
"""A file the build leaves in its output directory: only a directory holding it is ever emptied."""

# JSON Schema keywords that the in-page validator (templates/validate.js) implements; the build refuses a
# schema that needs any other, so the check a reader's browser runs is the same check the build runs.
_JS_SCHEMA_KEYWORDS = frozenset({
    "type", "enum", "const", "required", "properties", "additionalProperties", "patternProperties", "items",
    "prefixItems", "minItems", "maxItems", "uniqueItems", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "anyOf", "oneOf", "allOf", "not",
    "$ref", "$defs", "definitions", "minProperties", "maxProperties", "if", "then", "else", "contains",
    "propertyNames", "dependentRequired",
})
_ANNOTATION_KEYWORDS = frozenset({
    "$schema", "$id", "$comment", "$anchor", "title", "description", "examples", "default", "format",
    "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
})
_SUBSCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LIST_KEYWORDS = ("prefixItems", "anyOf", "oneOf", "allOf")
_SUBSCHEMA_KEYWORDS = ("additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames")

_GENERIC_MAX_ROWS = 200


class BuildError(Exception):
    """The site cannot be built as asked; the message names the file and what is wrong with it."""


# --- data ------------------------------------------------------------------------------------------------
@dataclass
class Lane:
    """One path of a trace as the replay and its verdict show it (v1's ``generated`` path is the free lane).

    Times are medians over the lane's measured runs; answers, right/wrong and agreement are those of the
    first measured repeat (the trace summary's own basis)."""

    key: str
    """``typed``, ``free`` or ``constrained``."""
    path: str
    """The ``runs[].path`` value of this lane's runs (``generated`` in v1)."""
    name: str
    """What readers call it (``Free generation``)."""
    run: dict[str, Any]
    """The first measured repeat's run."""
    runs: int
    """Measured runs."""
    median_s: float | None
    """Median wall time, from the lane's t0 (before prompt rendering) to its last output."""
    first_s: float | None
    """Median time of the first decision (typed) or the first generated token."""
    ratio: float | None = None
    """Generated lanes: median time ÷ typed median time."""
    valid_runs: int | None = None
    """Generated lanes: runs that wrote a complete, valid array."""
    capped_runs: int | None = None
    """Generated lanes: runs stopped by the token limit before the model ended its turn."""
    limit: int | None = None
    """Generated lanes: the token limit (``max_new_tokens``)."""
    verdict: str = ""
    """Generated lanes: the first run's outcome in words (``valid: 21 values``, ``capped: …``, ``invalid: …``)."""
    correct: int | None = None
    """Values equal to their label (typed: the raw choices); None without labels or without a usable array."""
    calibrated_correct: int | None = None
    """Typed, v2 with calibration: calibrated choices equal to their label."""
    labelled: int = 0
    """Criteria with a label."""
    agree: int | None = None
    """Generated lanes with a usable array: values equal to the raw typed choice of the same repeat."""
    output_tokens: float | None = None
    """Median output tokens (0 for typed)."""
    masked_tokens: float | None = None
    """Constrained lane: median tokens where the grammar refused the model's own argmax."""

    @property
    def usable(self) -> bool:
        """A generated lane's first run wrote a complete, valid array (typed: always)."""
        return self.key == "typed" or bool(self.run.get("complete") and self.run.get("valid"))


@dataclass
class TraceFile:
    """One validated trace, ready to render."""

    rel: str
    """Path relative to the data directory, with forward slashes (shown to readers)."""
    slug: str
    """Unique, URL- and id-safe name: the picker key, the share-link key and the download file name."""
    raw: bytes
    """The file's bytes, copied unchanged to ``traces/``."""
    sha256: str
    """sha256 of ``raw`` (what a reader checks the download against)."""
    obj: dict[str, Any]
    """The parsed trace."""

    label: str = ""
    """Short picker label: model, engine, machine (and the date, then the file's name, when two would match)."""
    lanes: list[Lane] = field(default_factory=list)
    """The trace's paths as the replay shows them: typed, then the generated lanes."""
    control: bool = False
    """A timing control (random weights): listed and replayable, kept out of the headline numbers."""
    workload: str = ""
    """For calibrated typed decisions on one state of a labelled workload: how the same label-free calibration
    does on the whole workload (from a committed calibration report), so one state's count is seen in context."""


@dataclass
class ReportFile:
    """One result report (shape benchmark, quant ladder, eval, compare, or a kind this build does not know)."""

    rel: str
    """Path relative to the data directory."""
    slug: str
    """Unique id-safe name (anchor on the index page, file name under ``results/``)."""
    raw: bytes
    """The file's bytes, copied unchanged to ``results/``."""
    sha256: str
    """sha256 of ``raw``."""
    obj: dict[str, Any]
    """The parsed report (a JSON object)."""
    kind: str
    """``shape``, ``quant`` or the report's own ``kind``/``report`` field (``generic`` when it has none)."""
    family: str = ""
    """The section of the index page it is listed under (``shape``, ``quant``, ``eval``…; see ``_SECTIONS``)."""
    title: str = ""
    """Heading on the index page."""
    charts: list[Markup] = field(default_factory=list)
    """Inline SVG charts for the kinds this build knows."""
    tables: list[dict[str, Any]] = field(default_factory=list)
    """Tables: ``{"caption", "columns", "rows", "note"}`` with every cell already a string."""


# --- reading and validating --------------------------------------------------------------------------------
def _loads(path: Path, raw: bytes, rel: str) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity (a browser's JSON.parse would refuse them too)."""

    def _reject(const: str) -> Any:
        raise BuildError(f"{rel}: non-standard JSON constant {const} (expected null or a finite number)")

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BuildError(f"{rel}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_reject)
    except json.JSONDecodeError as exc:
        raise BuildError(f"{rel}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _slug(rel: str, taken: set[str]) -> str:
    """``traces/Qwen 0.5B.json`` → ``qwen-0.5b``; the folder joins in only to tell equal file names apart."""

    def clean(text: str) -> str:
        text = text[:-5] if text.endswith(".json") else text
        return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.") or "file"

    s = clean(rel.rsplit("/", 1)[-1])
    if s in taken:
        s = clean(rel)
    out, n = s, 2
    while out in taken:
        out, n = f"{s}-{n}", n + 1
    taken.add(out)
    return out


def load_trace_schemas() -> dict[str, dict[str, Any]]:
    """The trace JSON Schemas by format (owned by the trace module), each checked to use only keywords the
    page's checker implements."""
    out = {}
    for fmt in TRACE_FORMATS:
        path = SCHEMA_DIR / f"{fmt.removeprefix('semif-')}.json"
        rel = str(path.relative_to(ROOT))
        if not path.is_file():
            raise BuildError(f"{rel}: trace schema not found")
        schema = _loads(path, path.read_bytes(), rel)
        unsupported = sorted(_schema_keywords(schema) - _JS_SCHEMA_KEYWORDS - _ANNOTATION_KEYWORDS)
        if unsupported:
            raise BuildError(f"{rel}: uses JSON Schema keywords {unsupported} that the in-page validator "
                             "(templates/validate.js) does not implement")
        out[fmt] = schema
    return out


def _schema_keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in a schema (property names under ``properties`` are not keywords)."""
    found: set[str] = set()
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        found.add(key)
        if key in _SUBSCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            for sub in value.values():
                found |= _schema_keywords(sub)
        elif key in _SUBSCHEMA_LIST_KEYWORDS and isinstance(value, list):
            for sub in value:
                found |= _schema_keywords(sub)
        elif key in _SUBSCHEMA_KEYWORDS:
            found |= _schema_keywords(value)
        elif key == "dependentSchemas" and isinstance(value, dict):
            for sub in value.values():
                found |= _schema_keywords(sub)
    return found


def validate_trace(rel: str, obj: Any) -> None:
    """The trace module's full verification (schema, checksums, consistency), then what the replay relies on;
    raise :class:`BuildError` naming the file."""
    from scorer import trace as trace_mod  # plain data checks: no torch, no model

    problems = trace_mod.verify(obj)
    if problems:
        shown = "; ".join(problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise BuildError(f"{rel}: trace failed verification: {shown}{more}")
    _check_renderable(rel, obj)


def _lane_paths(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """``(lane key, runs[].path)`` of a trace's lanes, typed first."""
    if obj["format"] == "semif-trace-v1":
        return [("typed", "typed"), ("free", "generated")]
    return [("typed", "typed"), ("free", "free"), ("constrained", "constrained")]


def _check_renderable(rel: str, obj: dict[str, Any]) -> None:
    """What the replay itself relies on beyond the schema: every lane in one repeat, criteria ids known."""
    runs = [r for r in obj["runs"] if not r.get("warmup")]
    common = set.intersection(*({r["repeat"] for r in runs if r["path"] == path} for _, path in _lane_paths(obj)))
    if not common:
        raise BuildError(f"{rel}: no repeat has a measured run of every path (nothing to replay)")
    ids = [c["id"] for c in obj["inputs"]["criteria"]]
    if len(set(ids)) != len(ids):
        raise BuildError(f"{rel}: duplicate criterion ids in inputs.criteria")
    for i, r in enumerate(obj["runs"]):
        for d in r.get("decisions") or []:
            if d["criterion_id"] not in ids:
                raise BuildError(f"{rel}: runs[{i}].decisions: unknown criterion_id {d['criterion_id']!r}")


_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _is_control(obj: dict[str, Any]) -> bool:
    """A random-weights run (timing only): its model or experiment says so in its name."""
    names = " ".join(str(x) for x in ((obj.get("model") or {}).get("key"), (obj.get("experiment") or {}).get("id")))
    return "random" in names.lower()


def _trace_label(obj: dict[str, Any]) -> str:
    """``qwen2.5-1.5b · torch fp32 · CPU``: short enough for a phone's picker."""
    m, mach = obj.get("model") or {}, obj.get("machine") or {}
    model = str(m.get("key", "?"))
    if model.startswith(("/", "./", "~")):  # a local directory: its name says enough
        model = model.rstrip("/").rsplit("/", 1)[-1]
    if _is_control(obj):
        model = re.split(r"-arch|-random", model, flags=re.IGNORECASE)[0] + ", random weights"
    backend = str(m.get("backend", "?"))
    if backend == "llamacpp":
        quant = re.search(r"(q\d\w*|f16|f32|bf16)\.gguf$", str(m.get("gguf_file") or ""), flags=re.IGNORECASE)
        engine = "llama.cpp" + (f" {quant.group(1).upper()}" if quant else "")
    else:
        engine = f"{backend} {_DTYPES.get(str(m.get('dtype')), m.get('dtype', '?'))}"
    gpu = mach.get("gpu")
    where = re.sub(r"^(NVIDIA|AMD|Intel)\s+", "", str(gpu)) if gpu else "CPU"
    return f"{model} · {engine} · {where}"


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
        obj = _loads(path, raw, rel)
        is_trace = isinstance(obj, dict) and obj.get("format") in TRACE_FORMATS
        if isinstance(obj, dict) and str(obj.get("format", "")).startswith("semif-trace") and not is_trace:
            raise BuildError(f"{rel}: trace format {obj.get('format')!r} is not supported (expected one of "
                             f"{', '.join(repr(f) for f in TRACE_FORMATS)})")
        if in_traces and not is_trace:
            raise BuildError(f"{rel}: files under traces/ must be traces (\"format\": {' or '.join(TRACE_FORMATS)})")
        if is_trace:
            validate_trace(rel, obj)
            traces.append(TraceFile(rel, _slug(rel, trace_slugs), raw, hashlib.sha256(raw).hexdigest(), obj,
                                    _trace_label(obj), trace_lanes(obj), _is_control(obj)))
        elif in_results:
            reports.append(_load_report(rel, raw, obj, report_slugs))
    _distinct_labels(traces)
    return traces, reports


def _distinct_labels(traces: list[TraceFile]) -> None:
    """Labels that match get the input's id, then the run's date, then (still matching) the file's name; a
    detail is added only where it tells the matching traces apart (so names stay short)."""
    for extra in (lambda t: str((t.obj.get("inputs") or {}).get("id", "")),
                  lambda t: str((t.obj.get("experiment") or {}).get("created_utc", ""))[:10], lambda t: t.slug):
        groups: dict[str, list[TraceFile]] = {}
        for t in traces:
            groups.setdefault(t.label, []).append(t)
        for same in groups.values():
            if len(same) > 1 and len({extra(t) for t in same}) > 1:
                for t in same:
                    if extra(t):
                        t.label = f"{t.label} · {extra(t)}"


# --- traces: lanes, the verdict in words, the numbers ----------------------------------------------------
_LANE_NAMES = {"typed": "Typed decisions", "free": "Free generation", "constrained": "Constrained generation"}


def _first_repeat(obj: dict[str, Any]) -> int:
    """The repeat the summary's answers and right/wrong counts come from (the first measured one)."""
    return min(r["repeat"] for r in obj["runs"] if not r["warmup"])


def trace_lanes(obj: dict[str, Any]) -> list[Lane]:
    """A trace's lanes (v1 or v2) with the numbers the verdict and the replay show, from its own summary."""
    from scorer import trace as trace_mod

    s, rep0 = obj["summary"], _first_repeat(obj)
    run0 = {r["path"]: r for r in obj["runs"] if not r["warmup"] and r["repeat"] == rep0}
    criteria = obj["inputs"]["criteria"]
    labelled = sum(1 for c in criteria if c.get("label") is not None)
    labels = s.get("labels") or {}
    lanes = []
    for key, path in _lane_paths(obj):
        run = run0[path]
        if obj["format"] == "semif-trace-v1":
            ls = {"median_s": s["typed_median_s"], "first_decision_median_s": s["typed_first_decision_median_s"]} \
                if key == "typed" else {
                "median_s": s["generated_median_s"], "wall_ratio": s["wall_ratio"], "ttft_median_s": s["ttft_median_s"],
                "valid_runs": s["generated_valid_runs"], "capped_runs": s["generated_limit_runs"],
                "agreement": s["agreement"], "correct": labels.get("generated_correct"),
                "tokens": {"output_median": s["generated_tokens"]["output_median"]}}
        else:
            ls = s[key]
        lane = Lane(key, path, _LANE_NAMES[key], run, s["runs"], _num(ls.get("median_s")),
                    _num(ls.get("first_decision_median_s" if key == "typed" else "ttft_median_s")), labelled=labelled)
        if key == "typed":
            lane.output_tokens = 0
            lane.correct = labels.get("typed_correct") if labelled else None
            lane.calibrated_correct = labels.get("typed_calibrated_correct") if labelled else None
        else:
            lane.ratio = _num(ls.get("wall_ratio"))
            lane.valid_runs, lane.capped_runs = ls.get("valid_runs"), ls.get("capped_runs")
            lane.limit = obj["prompts"]["constrained" if key == "constrained" else "generated"]["max_new_tokens"]
            lane.verdict = run.get("verdict") or trace_mod.verdict(
                run["valid"], run["complete"], run["stop_reason"] == "max_new_tokens", run["parsed"],
                readable_error(run["error"]), lane.limit)
            usable = bool(run["complete"] and run["valid"])
            lane.correct = ls.get("correct") if usable and labelled else None
            lane.agree = ls["agreement"]["agree"] if usable else None
            lane.output_tokens = _num(ls["tokens"]["output_median"])
            lane.masked_tokens = _num(ls.get("masked_tokens_median"))
        lanes.append(lane)
    return lanes


def readable_error(msg: str | None) -> str | None:
    """Python's message for an unclosed string ends in "starting at", to which v1 traces appended
    " at char N": say it once (the trace itself keeps its bytes)."""
    return None if msg is None else re.sub(r"\bstarting at at char\b", "starting at character", msg)


def _answers(values: list[str | None]) -> str:
    """``yes to all 21`` / ``no to 12 and yes to 9`` / ``… and a tie on 2`` (a tie is a ``None`` choice)."""
    counts: dict[str, int] = {}
    for v in values:
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    ties = len(values) - sum(counts.values())
    if len(counts) == 1 and not ties:
        (value, n), = counts.items()
        return f"{value} to all {n}" if n > 1 else f"{value} to the one criterion"
    parts = [f"{v} to {n}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if ties:
        parts.append(f"a tie on {ties}")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _s(x: float | None) -> str:
    return "—" if x is None else _fmt_s(x)


def _runs_phrase(n: int, of: int) -> str:
    return f"all {of} runs" if n == of and of > 1 else f"{n} of {of} run{'' if of == 1 else 's'}"


def verdict_sentences(t: TraceFile) -> list[dict[str, str]]:
    """The replay's verdict in plain words, one sentence per lane: what it answered, how many were right,
    how long it took (median), and, where a lane was capped or invalid, what that does to its numbers.
    Each item is ``{"lane", "name", "text"}``: the lane's name, then the rest of its sentence."""
    out = []
    n = len(t.obj["inputs"]["criteria"])
    if t.control:
        out.append({"lane": "note", "name": "Timing control:",
                    "text": "this model has random weights, so its answers mean nothing; only its times do."})
    for lane in t.lanes:
        if lane.key == "typed":
            decisions = lane.run["decisions"]
            raw = _answers([d["choice"] for d in decisions])
            cal = [d.get("calibrated") for d in decisions]
            if all(cal):
                text = f"answered {_answers([c['choice'] for c in cal])} after calibration (raw: {raw})"
            else:
                text = f"answered {raw}"
            text += f" in {_s(lane.median_s)}, with no output tokens"
            if lane.correct is not None:
                right = lane.calibrated_correct if lane.calibrated_correct is not None else lane.correct
                text += f"; {right} of {lane.labelled} match the labels"
                if lane.calibrated_correct is not None:
                    text += f" ({lane.correct} before calibration)"
            out.append({"lane": lane.key, "name": lane.name, "text": text + "."})
            if t.workload and all(cal):
                out.append({"lane": "note", "name": "On the whole workload:", "text": t.workload})
            continue
        runs = lane.runs
        if lane.usable:
            text = f"wrote a valid array ({_answers(lane.run['parsed'])}) in {_s(lane.median_s)}"
            if lane.ratio is not None:
                text += f", {lane.ratio:.2f}× the typed time"
            if lane.correct is not None:
                text += f"; {lane.correct} of {lane.labelled} match the labels"
            if lane.agree is not None:
                text += f", and it agrees with the typed decisions on {lane.agree} of {n}"
            if lane.masked_tokens:
                text += f"; the grammar overruled the model on {_count(lane.masked_tokens)} token" + \
                        ("" if lane.masked_tokens == 1 else "s")
            if lane.valid_runs is not None and lane.valid_runs < runs:
                text += f" (valid in {_runs_phrase(lane.valid_runs, runs)})"
            text += "."
        elif lane.capped_runs:
            text = (f"never finished its array: the model did not end its turn and was stopped at the "
                    f"{lane.limit}-token limit in {_runs_phrase(lane.capped_runs, runs)}, so none of its values "
                    f"count, and its {_s(lane.median_s)}")
            text += f" ({lane.ratio:.2f}× the typed time)" if lane.ratio is not None else ""
            text += " is the time of a failed, capped run."
        else:
            why = lane.verdict.removeprefix("invalid: ")
            bad = runs - (lane.valid_runs or 0)
            text = (f"wrote no usable array ({why}) in {_runs_phrase(bad, runs)}, so none of its values count; "
                    f"it took {_s(lane.median_s)}.")
        out.append({"lane": lane.key, "name": lane.name, "text": text})
    runs = t.lanes[0].runs
    out.append({"lane": "basis", "name": "",
                "text": f"(Times are medians of {runs} runs per lane; answers and matches are the first run's.)"
                if runs > 1 else "(One measured run per lane.)"})
    return out


def _cell(text: str, note: str = "", warn: bool = False) -> dict[str, Any]:
    return {"text": text, "note": note, "warn": warn}


def numbers_table(t: TraceFile) -> dict[str, Any]:
    """The replay's numbers: one column per lane, one row per measure; a number a failed or capped run
    distorts carries the reason beside it (``note``, with ``warn``)."""
    lanes = t.lanes
    runs = lanes[0].runs
    rows: list[tuple[str, list[dict[str, Any]]]] = []

    def caveat(lane: Lane) -> str:
        if lane.key == "typed" or lane.usable:
            return ""
        return f"capped at {lane.limit} tokens, no answer" if lane.capped_runs else "no usable array"

    rows.append((f"wall time (median of {runs})", [_cell(_s(x.median_s), caveat(x), bool(caveat(x))) for x in lanes]))
    rows.append(("÷ typed time", [_cell("—") if x.key == "typed" else
                                  _cell("—" if x.ratio is None else f"{x.ratio:.2f}×",
                                        f"vs a {'capped' if x.capped_runs else 'failed'} run" if caveat(x) else "",
                                        bool(caveat(x))) for x in lanes]))
    rows.append(("first decision / first token", [_cell(_s(x.first_s)) for x in lanes]))
    rows.append(("output tokens (median)", [_cell(_fmt(_count(x.output_tokens)),
                                                  "the limit" if x.capped_runs and not x.usable else "",
                                                  bool(x.capped_runs and not x.usable)) for x in lanes]))
    rows.append(("valid arrays", [_cell("—") if x.key == "typed" else
                                  _cell(f"{x.valid_runs} of {runs}",
                                        f"{x.capped_runs} capped" if x.capped_runs else "", not x.valid_runs)
                                  for x in lanes]))
    if lanes[0].labelled:
        def right(x: Lane) -> dict[str, Any]:
            if x.key == "typed":
                if x.calibrated_correct is not None:
                    return _cell(f"{x.calibrated_correct} of {x.labelled}", f"calibrated; {x.correct} raw")
                return _cell(f"{x.correct} of {x.labelled}")
            return _cell(f"{x.correct} of {x.labelled}") if x.usable else _cell("—", "no usable array", True)
        rows.append(("match the labels (first run)", [right(x) for x in lanes]))
    rows.append(("agree with typed (first run)", [_cell("—") if x.key == "typed" else
                                                  _cell(f"{x.agree} of {len(t.obj['inputs']['criteria'])}")
                                                  if x.usable else _cell("—", "no usable array", True)
                                                  for x in lanes]))
    if any(x.masked_tokens is not None for x in lanes):
        rows.append(("tokens the grammar overruled", [_cell("—" if x.masked_tokens is None else
                                                            _fmt(_count(x.masked_tokens))) for x in lanes]))
    account = ((t.obj["summary"].get("token_account") or {}).get("line")) or ""
    return {"columns": [x.name for x in lanes], "keys": [x.key for x in lanes],
            "rows": [{"label": label, "cells": cells} for label, cells in rows], "account": account,
            "basis": "Times are medians over the measured runs of each lane (warm-ups excluded); answers, "
                     "matches and agreement are those of the first measured run."}


def replay_end(obj: dict[str, Any], repeat: int) -> float:
    """When the replay of one repeat ends: its last timestamp on any lane (as replay.js computes it)."""
    end = 0.0
    for r in obj["runs"]:
        if r["warmup"] or r["repeat"] != repeat:
            continue
        tokens = r["tokens"] if r["path"] != "typed" else []  # a typed run's "tokens" are its counts
        times = [r["total_s"]] + [e["t"] for e in r["events"]] + [x["t"] for x in tokens]
        times += [d["t_available"] for d in r.get("decisions") or []]
        end = max(end, *times)
    return end


def trace_view(t: TraceFile) -> dict[str, Any]:
    """Everything the replay shows about a built-in trace that this build writes rather than the page:
    the verdict, the numbers, the lanes' names."""
    return {"slug": t.slug, "label": t.label, "control": t.control, "verdict": verdict_sentences(t),
            "numbers": numbers_table(t), "lanes": [{"key": x.key, "path": x.path, "name": x.name} for x in t.lanes]}


# --- reports ----------------------------------------------------------------------------------------------
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


def _load_report(rel: str, raw: bytes, obj: Any, taken: set[str]) -> ReportFile:
    if not isinstance(obj, dict):
        raise BuildError(f"{rel}: a result report must be a JSON object, found {type(obj).__name__}")
    if not obj:
        raise BuildError(f"{rel}: empty report")
    kind = _report_kind(rel, obj)
    family = _kind_family(kind, obj)
    rep = ReportFile(rel, _slug(rel, taken), raw, hashlib.sha256(raw).hexdigest(), obj, kind, family)
    title = obj.get("title")
    rep.title = title if isinstance(title, str) and title else _default_title(kind, family, rel, obj)
    renderer = _REPORT_RENDERERS.get(family)
    if renderer is not None:
        renderer(rel, rep)
    rep.tables.extend(_generic_tables(rel, obj))
    return rep


def _fmt(v: Any) -> str:
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
            return ", ".join(_fmt(x) for x in v)
        return f"[{len(v)} items]"
    if isinstance(v, dict):
        if len(v) <= 4 and all(not isinstance(x, (dict, list)) for x in v.values()):
            return ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items())
        return f"{{{len(v)} fields}}"
    return str(v)


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


def _generic_tables(rel: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
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
                fields.append([fk, _fmt(fv)])
        else:
            fields.append([k, _fmt(v)])
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
        tables.append({"caption": name, "columns": cols, "rows": [[_fmt(r.get(c)) for c in cols] for r in shown],
                       "note": note})
    return tables


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _find_rows(obj: dict[str, Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return v
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            return [{"name": kk, **vv} for kk, vv in v.items()]
    return []


def _first(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return None


def _require_rows(rel: str, obj: dict[str, Any], keys: tuple[str, ...], what: str) -> list[dict[str, Any]]:
    rows = _find_rows(obj, keys)
    if not rows:
        raise BuildError(f"{rel}: a {what} report needs one of {', '.join(keys)} (a list or map of objects)")
    return rows


def _render_shape(rel: str, rep: ReportFile) -> None:
    """Shape benchmark: decisions/s per pass, annotated with its drift against the fresh path."""
    rows = _require_rows(rel, rep.obj, ("passes", "modes", "results", "rows"), "shape benchmark")
    bars = []
    for i, r in enumerate(rows):
        label = _first(r, ("name", "mode", "key"))
        rate = _num(_first(r, ("decisions_per_s", "decisions_s", "rate")))
        if label is None or rate is None:
            raise BuildError(f"{rel}: pass {i} needs a name/mode and a finite decisions_per_s")
        vs = r.get("vs_fresh") if isinstance(r.get("vs_fresh"), dict) else r
        drift = _num(_first(vs, ("max_abs_dp", "drift_max_abs_dp")))
        flips = _first(vs, ("n_flips",))
        notes = []
        if _num(r.get("speedup_vs_fresh")) is not None:
            notes.append(f"{r['speedup_vs_fresh']:.2f}× fresh")
        if drift is not None:
            notes.append(f"max |Δp| {_fmt(drift)}")
        if isinstance(flips, int):
            notes.append(f"{flips} flip{'' if flips == 1 else 's'}")
        if isinstance(r.get("escalated"), int):
            notes.append(f"{r['escalated']} escalated")
        bars.append((str(label), rate, " · ".join(notes)))
    rep.charts.append(svg_bars(bars, "decisions/s", "Decisions per second by pass (higher is faster); max |Δp| = "
                               "largest probability change against fresh scoring; flips = changed choices"))


def _nested(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first of ``keys`` in ``d`` or, failing that, in one of its object values (``vs_f32.max_abs_dp``)."""
    hit = _first(d, keys)
    if hit is not None:
        return hit
    for v in d.values():
        if isinstance(v, dict):
            hit = _first(v, keys)
            if hit is not None:
                return hit
    return None


def _render_quant(rel: str, rep: ReportFile) -> None:
    """Quant ladder: speed and drift per rung (whichever the report measured). Its format is matched
    loosely: a report without recognisable rungs is shown as tables only."""
    rows = _find_rows(rep.obj, ("rungs", "ladder", "levels", "results", "rows", "quants"))
    speed_bars, drift_bars = [], []
    for r in rows:
        label = _first(r, ("quant", "ftype", "type", "level", "name", "dtype"))
        if label is None:
            continue
        size = _num(_nested(r, ("bytes", "size_bytes", "file_bytes")))
        tail = f" ({size / 1e6:.0f} MB)" if size else ""
        rate = _num(_nested(r, ("decisions_per_s", "decisions_s")))
        drift = _num(_nested(r, ("max_abs_dp", "drift_max_abs_dp")))
        flips = _nested(r, ("n_flips",))
        agree = _num(_nested(r, ("choice_agreement", "agreement", "argmax_agreement")))
        note = f"{flips} flip{'' if flips == 1 else 's'}" if isinstance(flips, int) else (
            f"choices agree {_fmt(agree)}" if agree is not None else "")
        if rate is not None:
            speed_bars.append((f"{label}{tail}", rate, ""))
        if drift is not None:
            drift_bars.append((f"{label}{tail}", drift, note))
    if speed_bars:
        rep.charts.append(svg_bars(speed_bars, "decisions/s", "Speed per quantization level (higher is faster)"))
    if drift_bars:
        rep.charts.append(svg_bars(drift_bars, "max |Δp| vs reference", "Drift per quantization level against "
                                   "the reference weights (lower is closer); flips = changed choices"))


def _val(v: Any) -> float | None:
    """A metric that is either a number or ``{"value": …, "ci_lo": …, "ci_hi": …}``."""
    return _num(v.get("value")) if isinstance(v, dict) else _num(v)


def _ci_note(v: Any) -> str:
    if isinstance(v, dict) and _num(v.get("ci_lo")) is not None and _num(v.get("ci_hi")) is not None:
        return f"CI [{v['ci_lo']:.2f}, {v['ci_hi']:.2f}]"
    return ""


def _reliability_chart(rep: ReportFile, series: list[tuple[str, Any]], title: str) -> None:
    """Reliability diagram(s) from 10-bin tables (lists of {lo, hi, n, confidence, accuracy})."""
    usable = [(name, bins) for name, bins in series if isinstance(bins, list) and bins
              and all(isinstance(b, dict) for b in bins)]
    if usable:
        rep.charts.append(svg_reliability(usable, title))


def _coverage_label(c: float | None) -> str:
    if c is None:
        return "?"
    return "all rows" if c >= 1 else f"{c:.0%} most confident"


def _render_eval(rel: str, rep: ReportFile) -> None:
    """Quality report: per-family balanced accuracy, risk–coverage and the reliability diagram."""
    fams = _find_rows(rep.obj, ("per_family",))
    bars = []
    for f in fams:
        ba = _num(f.get("balanced_accuracy"))
        if ba is not None:
            bars.append((str(f.get("family") or f.get("name")), ba,
                         f"accuracy {_fmt(_num(f.get('accuracy')))} · {f.get('rows', '?')} rows · "
                         f"chance {_fmt(_num(f.get('chance_accuracy')))}"))
    if bars:
        rep.charts.append(svg_bars(bars, "balanced accuracy", "Balanced accuracy per family (1 = every class "
                                   "right; chance is 1 / number of options)"))
    rc = [(_coverage_label(_num(r.get("coverage"))), _num(r.get("accuracy")),
           f"{r.get('rows', '?')} rows, confidence ≥ {_fmt(_num(r.get('min_confidence')))}")
          for r in _find_rows(rep.obj, ("risk_coverage",))]
    rc = [(label, v, note) for label, v, note in rc if v is not None]
    if rc:
        rep.charts.append(svg_bars(rc, "accuracy", "Risk–coverage: accuracy on the most confident share of the "
                                   "rows (a useful score is more accurate where it is more confident)"))
    _reliability_chart(rep, [("top-label", rep.obj.get("reliability"))], "Reliability: accuracy per confidence "
                       "bin (on the diagonal = calibrated)")


def _render_calibrate(rel: str, rep: ReportFile) -> None:
    """Temperature scaling: ECE/NLL before and after, out of fold, and both reliability diagrams."""
    oof = rep.obj.get("out_of_fold") if isinstance(rep.obj.get("out_of_fold"), dict) else {}
    bars = []
    for metric in ("ece", "nll", "brier"):
        for side in ("before", "after"):
            v = (oof.get(side) or {}).get(metric) if isinstance(oof.get(side), dict) else None
            if _val(v) is not None:
                bars.append((f"{metric.upper() if metric == 'ece' else metric} {side}", _val(v), _ci_note(v)))
    if bars:
        fit = rep.obj.get("fit_all_rows")
        t = _num(fit.get("temperature")) if isinstance(fit, dict) else None
        rep.charts.append(svg_bars(bars, "lower is better", "Before vs after temperature scaling, out of fold "
                                   f"(group-disjoint folds){'' if t is None else f'; T on all rows = {_fmt(t)}'}"))
    _reliability_chart(rep, [("before", oof.get("reliability_before")), ("after", oof.get("reliability_after"))],
                       "Reliability before and after calibration, out of fold")


def _render_order(rel: str, rep: ReportFile) -> None:
    """Order robustness: flips under option reversal and accuracy, plain vs the order-averaged readout."""
    bars = []
    for side in ("plain", "permuted"):
        d = rep.obj.get(side)
        if not isinstance(d, dict) or not isinstance(d.get("flips"), int):
            continue
        rows = _num(rep.obj.get("rows")) or 0
        share = f" ({d['flips'] / rows:.0%})" if rows else ""
        bars.append((f"{side} readout", float(d["flips"]),
                     f"flips{share} · accuracy {_fmt(_val(d.get('accuracy_original')))} original / "
                     f"{_fmt(_val(d.get('accuracy_reversed')))} reversed"))
    if bars:
        cost = rep.obj.get("cost") if isinstance(rep.obj.get("cost"), dict) else {}
        ratio = _num(cost.get("time_ratio"))
        rep.charts.append(svg_bars(bars, "decisions whose choice flips when the options are reversed",
                                   "Flips under option reversal (lower is more robust)"
                                   + ("" if ratio is None else f"; the averaged readout costs {ratio:.2f}× the time")))


def _render_route(rel: str, rep: ReportFile) -> None:
    """Two-path routing: accuracy per policy, with the share escalated and the time against the reference."""
    bars = []
    for r in _find_rows(rep.obj, ("table",)):
        acc = _val(r.get("accuracy"))
        if acc is None:
            continue
        share, tv = _num(r.get("escalated_share")), _num(r.get("time_vs_reference"))
        note = " · ".join(x for x in (_ci_note(r.get("accuracy")),
                                      "" if share is None else f"{share:.0%} escalated",
                                      "" if tv is None else f"{tv:.2f}× ref. time") if x)
        bars.append((str(r.get("policy")), acc, note))
    if bars:
        rep.charts.append(svg_bars(bars, "accuracy", "Accuracy per routing policy: fast path alone, escalating "
                                   "decisions whose margin is below a threshold, reference path alone"))


def _render_peers(rel: str, rep: ReportFile) -> None:
    """Peer benchmark (``kind: peers``): semif against lm-eval / vLLM / SGLang on the same prompts — speed per
    tool, agreement with semif direct, token identity, and every peer that did not run with its reason."""
    tools = rep.obj.get("tools")
    if not isinstance(tools, dict) or not tools or not all(isinstance(t, dict) for t in tools.values()):
        raise BuildError(f"{rel}: a peers report needs 'tools' (an object of tool blocks)")
    agree = rep.obj.get("agreement") if isinstance(rep.obj.get("agreement"), dict) else {}
    speed, whole, rows, missing = [], [], [], []
    for name, t in tools.items():
        a = agree.get(name) if isinstance(agree.get(name), dict) else {}
        ident = t.get("identity") if isinstance(t.get("identity"), dict) else {}
        same = f"{ident['identical']}/{ident['rows']}" if "identical" in ident and "rows" in ident else None
        rate = _num(t.get("decisions_per_s"))
        if t.get("status") == "ok" and rate is not None:
            dp = _num(a.get("max_abs_dp"))
            speed.append((str(name), rate, "" if dp is None else f"max |Δp| {_fmt(dp)} · "
                          f"{_fmt(a.get('differing_choices'))} choices differ"))
        proc, load = _num(t.get("process_s")), _num(t.get("load_s"))
        if t.get("status") == "ok" and proc is not None:
            whole.append((str(name), proc, "" if load is None else f"of which loading the model {_fmt(load)} s"))
        rss = _num(t.get("peak_rss_bytes"))
        rows.append([str(name), _fmt(t.get("status")), _fmt(_num(t.get("load_s"))), _fmt(_num(t.get("score_s"))),
                     _fmt(_num(t.get("process_s"))), _fmt(rate), _fmt(same), _fmt(_num(a.get("max_abs_dp"))),
                     _fmt(a.get("differing_choices")), "—" if rss is None else f"{rss / 2**30:.2f}"])
        if t.get("status") != "ok":
            fail = t.get("failure") if isinstance(t.get("failure"), dict) else {}
            missing.append([str(name), _fmt(t.get("status")), _fmt(fail.get("stage")),
                            _fmt(t.get("reason") or fail.get("error"))])
    ref = agree.get("reference", "the reference")
    if speed:
        rep.charts.append(svg_bars(speed, "decisions/s while scoring (higher is faster)",
                                   f"Scoring speed per tool on the same prompts and weights; max |Δp| and differing "
                                   f"choices against {ref}"))
    if whole:
        rep.charts.append(svg_bars(whole, "seconds, whole process (lower is faster)",
                                   "Whole process per tool: interpreter start, imports, model load and scoring"))
    rep.tables.append({"caption": "tools (medians over the repeats)",
                       "columns": ["tool", "status", "load s", "score s", "process s", "decisions/s",
                                   "identical tokens", f"max |Δp| vs {agree.get('reference', 'reference')}",
                                   "differing choices", "peak RSS GiB"], "rows": rows,
                       "note": "process s: the whole process, interpreter start and imports included"})
    ratio_rows = [[_fmt(r.get("peer")), _fmt(r.get("semif")), _fmt(_num(r.get("score"))),
                   _fmt(_num(r.get("process"))), _fmt(_num(r.get("load")))]
                  for r in rep.obj.get("ratios") or [] if isinstance(r, dict)]
    if ratio_rows:
        rep.tables.append({"caption": "peer time ÷ semif time (> 1: semif is that many times faster)",
                           "columns": ["peer", "semif", "scoring", "whole process", "load"], "rows": ratio_rows,
                           "note": ""})
    if missing:
        rep.tables.append({"caption": "tools that did not run here, and why", "columns": ["tool", "status", "stage",
                                                                                       "reason (the error's text)"],
                           "rows": missing, "note": ""})


_REPORT_RENDERERS = {"shape": _render_shape, "quant": _render_quant, "eval": _render_eval,
                     "calibrate": _render_calibrate, "order": _render_order, "route": _render_route,
                     "peers": _render_peers}


# --- SVG (build-time charts) ------------------------------------------------------------------------------
def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def svg_bars(bars: list[tuple[str, float, str]], unit: str, title: str) -> Markup:
    """A horizontal bar chart as inline SVG: one bar per (label, value, note); labels are escaped text."""
    width, label_w, row_h, top = 480, 150, 30, 26
    plot_w = width - label_w - 70
    vmax = max((v for _, v, _ in bars), default=0.0) or 1.0
    height = top + row_h * len(bars) + 8
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(title)}" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<title>{_esc(title)}</title>',
             f'<text x="0" y="16" class="chart-title">{_esc(unit)}</text>']
    for i, (label, value, note) in enumerate(bars):
        y = top + i * row_h
        w = max(0.0, value / vmax * plot_w)
        short = label if len(label) <= 24 else label[:23] + "…"
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" class="chart-label">'
                     f'<title>{_esc(label)}</title>{_esc(short)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{w:.2f}" height="14" rx="2" class="chart-bar"/>')
        parts.append(f'<text x="{label_w + w + 4:.2f}" y="{y + 14}" class="chart-value">{_esc(_fmt(value))}</text>')
        if note:
            parts.append(f'<text x="{label_w}" y="{y + 27}" class="chart-note">{_esc(note)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def svg_reliability(series: list[tuple[str, list[dict[str, Any]]]], title: str) -> Markup:
    """Reliability diagram as inline SVG: per series, a point per non-empty bin at (mean confidence,
    accuracy), sized by its row count, joined by a line; the diagonal is perfect calibration."""
    size, pad = 260, 34
    plot = size - 2 * pad
    width = size + 120

    def xy(c: float, a: float) -> tuple[float, float]:
        return pad + c * plot, size - pad - a * plot

    parts = [f'<svg class="chart" viewBox="0 0 {width} {size}" role="img" aria-label="{_esc(title)}" '
             f'xmlns="http://www.w3.org/2000/svg">', f'<title>{_esc(title)}</title>',
             f'<rect x="{pad}" y="{pad}" width="{plot}" height="{plot}" class="chart-frame"/>',
             f'<line x1="{pad}" y1="{size - pad}" x2="{size - pad}" y2="{pad}" class="chart-diagonal"/>',
             f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle" class="chart-label">confidence</text>',
             f'<text x="10" y="{size / 2}" transform="rotate(-90 10 {size / 2})" text-anchor="middle" '
             f'class="chart-label">accuracy</text>']
    for tick in (0.0, 0.5, 1.0):
        x, y = xy(tick, tick)
        parts.append(f'<text x="{x:.1f}" y="{size - pad + 12}" text-anchor="middle" class="chart-note">{tick:g}</text>')
        parts.append(f'<text x="{pad - 4}" y="{y + 3:.1f}" text-anchor="end" class="chart-note">{tick:g}</text>')
    total = max(1.0, max((_num(b.get("n")) or 0.0) for _, bins in series for b in bins))
    for i, (name, bins) in enumerate(series):
        pts = [(_num(b.get("confidence")), _num(b.get("accuracy")), _num(b.get("n")) or 0.0) for b in bins]
        pts = [(c, a, n) for c, a, n in pts if c is not None and a is not None and n > 0]
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


# --- rendering -------------------------------------------------------------------------------------------
def script_json(obj: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` element: ``<``, ``>``, ``&`` and the JS line
    separators escaped, so no text in the data (``</script>``, ``<!--``) can end the element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, rep in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, rep)
    return Markup(text)


def _asset(name: str) -> str:
    """A CSS/JS file from templates/ (the stylesheet is inlined: it must not be able to end its element)."""
    text = (TEMPLATES / name).read_text("utf-8")
    if name.endswith(".css") and (re.search(r"</(script|style)", text, re.IGNORECASE) or "<!--" in text):
        raise BuildError(f"templates/{name}: contains '</style' or '<!--', which would break inlining")
    return text


def _headline(t: TraceFile) -> dict[str, Any]:
    """A trace's card on the index page: its verdict in words and the numbers a reader looks for first."""
    typed, gens = t.lanes[0], t.lanes[1:]
    return {"slug": t.slug, "label": t.label, "title": (t.obj.get("experiment") or {}).get("title") or "",
            "verdict": verdict_sentences(t), "typed": _s(typed.median_s),
            "gens": [{"name": g.name, "time": _s(g.median_s),
                      "ratio": "—" if g.ratio is None else f"{g.ratio:.2f}×",
                      "caveat": "" if g.usable else ("capped, no answer" if g.capped_runs else "no usable array")}
                     for g in gens],
            "criteria": len(t.obj["inputs"]["criteria"])}


def _count(v: Any) -> Any:
    """A token count (a median, so possibly x.5) without a trailing ``.0`` when it is whole."""
    x = _num(v)
    return int(x) if x is not None and x.is_integer() else v


def _fmt_s(v: Any) -> str:
    """Seconds as the replay writes them (fmtS in templates/replay.js)."""
    x = _num(v)
    if x is None:
        return "—"
    return (f"{x * 1000:.2f} ms" if x < 0.01 else f"{x * 1000:.0f} ms") if x < 1 else f"{x:.2f} s"


def _csp(styles: list[str], scripts: bool) -> str:
    """A Content-Security-Policy: the page's own inline stylesheet (by hash), scripts only from this site
    (the replay's code and data files; ``'self'`` also matches sibling files under ``file://`` in Chromium),
    or none at all; no other request of any kind, and injected markup could not run even if it got in."""

    def h(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    style_src = " ".join(h(s) for s in styles)
    script_src = "'self'" if scripts else "'none'"
    return (f"default-src 'none'; script-src {script_src}; style-src {style_src}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def trace_data_js(t: TraceFile) -> bytes:
    """``traces/<slug>.js``: the replay's data for one trace, as a script the page can load from ``file://``.

    It holds what this build writes about the trace (verdict, numbers) and the trace's JSON text (compact:
    the same values, so the same checksums, as the file beside it), as JS literals that no trace text can
    break out of."""
    text = json.dumps(t.obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    payload = script_json({"view": trace_view(t), "text": text})
    return (f"/* SemIf replay data for traces/{t.slug}.json (written by build.py) */\n"
            f"(window.SemifTraces = window.SemifTraces || {{}})[{script_json(t.slug)}] = {payload};\n").encode()


def _speeds() -> list[dict[str, str]]:
    """The replay's speed choices (the same list as SPEEDS in templates/replay.js)."""
    out = []
    for s in (4, 2, 1, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01):
        label = "real time" if s == 1 else f"{s:g}× faster" if s > 1 else f"{round(1 / s)}× slower"
        out.append({"value": f"{s:g}", "label": label})
    return out


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


def render_site(traces: list[TraceFile], reports: list[ReportFile],
                schemas: dict[str, dict[str, Any]]) -> dict[str, bytes]:
    """Every output file (relative path → bytes), rendered in memory so a failure writes nothing."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["script_json"] = script_json
    css = _asset("site.css")
    index_meta = [{"slug": t.slug, "label": t.label, "file": f"{t.slug}.json", "js": f"{t.slug}.js",
                   "sha256": t.sha256, "bytes": len(t.raw), "source": t.rel} for t in traces]
    # The headline cards: published traces, timing controls (random weights) apart.
    shown = [t for t in traces if t.rel.startswith("traces/") and not t.control] or \
        [t for t in traces if not t.control]
    common = {"css": Markup(css), "traces": traces, "reports": reports, "sections": report_sections(reports),
              "headlines": [_headline(t) for t in shown], "controls": [t for t in traces if t.control]}
    static_csp = _csp([css], scripts=False)
    first = traces[0] if traces else None
    files: dict[str, bytes] = {}
    files["index.html"] = env.get_template("index.html.j2").render(root="", csp=static_csp, **common).encode()
    files["demo/index.html"] = env.get_template("demo.html.j2").render(
        root="../", csp=_csp([css], scripts=True), index_meta=index_meta, first=first,
        view=trace_view(first) if first else None, speeds=_speeds(),
        lanes=[{"key": x.key, "name": x.name, "ttft": _fmt_s(x.run.get("ttft_s"))}
               for x in (first.lanes if first else [])],
        repeats=sorted({r["repeat"] for r in first.obj["runs"] if not r["warmup"]}) if first else [],
        t_end=replay_end(first.obj, _first_repeat(first.obj)) if first else 0.0,
        **common).encode()
    files["traces/index.html"] = env.get_template("traces.html.j2").render(root="../", csp=static_csp,
                                                                           **common).encode()
    files["assets/replay.js"] = (_asset("details.js") + "\n" + _asset("replay.js")).encode()
    files["assets/check.js"] = (_asset("validate.js") + "\nwindow.SemifSchemas = " + str(script_json(schemas))
                                + ";\n").encode()
    sums = []
    for t in traces:
        files[f"traces/{t.slug}.json"] = t.raw
        files[f"traces/{t.slug}.js"] = trace_data_js(t)
        sums.append(f"{t.sha256}  {t.slug}.json\n")
    files["traces/SHA256SUMS"] = "".join(sums).encode()
    report_page = env.get_template("report.html.j2")
    for r in reports:
        files[f"results/{r.slug}.json"] = r.raw
        files[f"results/{r.slug}.html"] = report_page.render(root="../", csp=static_csp, report=r,
                                                             **common).encode()
    files[SITE_MARKER] = b"semif site build output; build.py empties this directory on each build\n"
    return files


def write_site(files: dict[str, bytes], out_dir: Path) -> None:
    """Replace the output directory's contents; refuse a non-empty directory that is not a previous build.

    A symbolic link is followed: the link stays and the directory it names is rebuilt (under the same
    rules); a link to nothing is refused."""
    if out_dir.is_symlink():
        if not out_dir.exists():
            raise BuildError(f"{out_dir}: a symbolic link to {os.readlink(out_dir)}, which does not exist")
        out_dir = out_dir.resolve()
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BuildError(f"{out_dir}: output path exists and is not a directory")
        if any(out_dir.iterdir()):
            if not (out_dir / SITE_MARKER).is_file():
                raise BuildError(f"{out_dir}: not empty and not a previous site build (no {SITE_MARKER}); "
                                 "choose an empty or new directory")
            shutil.rmtree(out_dir)
    for rel, data in sorted(files.items()):
        p = out_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


_STORED_PRIOR = "prior mean · stored (fitted on the other folds) · plain"


def workload_context(t: TraceFile, reports: list[ReportFile], data_dir: Path) -> str:
    """The whole-workload accuracy of the calibration a trace's typed lane used, or "" when none is committed.

    A match needs a ``calibration`` report on the same model file, backend and dtype whose labelled rows
    hold this trace's state, and a calibration of the same kind (a mean prior fitted on the other groups)."""
    model = t.obj.get("model") or {}
    state = (t.obj.get("inputs") or {}).get("state")
    for r in reports:
        run = (r.obj.get("run") or {}) if r.kind == "calibration" else {}
        m = run.get("model") or {}
        if not m or any(m.get(k) != model.get(k) for k in ("gguf_sha256", "backend", "dtype")):
            continue
        labels = data_dir.parent / str((r.obj.get("labels") or {}).get("path", ""))
        if not labels.is_file():
            continue
        rows = [json.loads(ln) for ln in labels.read_text(encoding="utf-8").splitlines() if ln.strip()]
        if not any(row.get("state") == state for row in rows):
            continue
        for meth in r.obj.get("methods") or []:
            if meth.get("method") == _STORED_PRIOR:
                raw = next((x for x in r.obj["methods"] if x.get("method") == "raw · plain"), None)
                acc = meth["accuracy"]["value"]
                n = r.obj.get("rows", len(rows))
                before = f" (raw readout {raw['accuracy']['value']:.3f})" if raw else ""
                return (f"the same label-free calibration, each state's prior fitted on the other states, is right on "
                        f"{acc:.3f} of all {n} decisions of {labels.name}{before}; report {r.rel}.")
    return ""


def build(data_dir: Path, out_dir: Path) -> tuple[list[TraceFile], list[ReportFile]]:
    """Validate everything under ``data_dir``, then render and write the site to ``out_dir``."""
    traces, reports = discover(data_dir)
    for t in traces:
        t.workload = workload_context(t, reports, data_dir)
    schemas = load_trace_schemas()
    files = render_site(traces, reports, schemas)
    write_site(files, out_dir)
    return traces, reports


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="build.py", description="Build the static SemIf site (traces and reports).")
    ap.add_argument("--data", type=Path, default=ROOT / "data", help="input directory (default: data/)")
    ap.add_argument("--out", type=Path, default=ROOT / "site", help="output directory (default: site/)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        traces, reports = build(args.data, args.out)
    except BuildError as exc:
        print(f"build.py: error: {exc}", file=sys.stderr)
        return 2
    print(f"built {args.out} from {len(traces)} trace(s) and {len(reports)} report(s) "
          f"in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
