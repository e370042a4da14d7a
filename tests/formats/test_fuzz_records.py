"""Property-based fuzzing of record files through every command that reads them.

Start from valid record files of real shapes (the fake backend's plain, calibrated and ``--permute`` runs,
and committed runs of real models from ``data/results/runs``, schema v1 and v2), plant one fault at a known
line, and run a command of :data:`COMMANDS` in process (``cli.main`` with argv) on the file. Faults: a field
dropped, renamed or retyped (every constraint of the record schema the record names), strings for
numbers, wrong lengths, numbers too large for a double, ``NaN``/``Infinity`` text, non-option choices and
ties that do not agree, probabilities that are not the softmax of the logits, margins, letters, duplicate
ids, broken ``calibrated`` and ``permute`` blocks, truncated lines, invalid UTF-8, blank lines, lines that
are not objects, wrong schema names, JSON nested too deep, empty files.

Every bad file must give exit 2 and one ``semif: error: FILE:LINE: field 'F': …`` line (no field for faults
below the field level, no line for an empty file), no traceback, a message under 1,200 characters, nothing
on stdout and no output file. Every neutral edit (timings, unknown fields, key order, formatting, optional
fields dropped) keeps the file valid: exit 0, or exit 2 with one error line, never a traceback. Every
command reads every unedited base with exit 0 (else the refusals would prove nothing), and the reader's
compiled schema check gives the ``jsonschema`` package's verdict on edited records. At least
:data:`BAD_EXAMPLES` + :data:`NEUTRAL_EXAMPLES` + :data:`AGREEMENT_EXAMPLES` generated cases per run.

Adding a command that reads records is one line in :data:`COMMANDS`. (``score --resume`` reads records
too, with its own rules for a torn last line and an empty file: ``test_resume_kill.py`` and
``test_records_read.py``.)
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import shutil
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import jsonschema
import orjson
import pytest
from fakes import FakeBackend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorer import cli
from scorer.calibration import methods_report as report
from scorer.formats.record_schema import record_schema
from scorer.formats.records import RECORD_MAX_DEPTH
from scorer.formats.rows import load_decisions
from scorer.scoring.file_run import run_score
from scorer.scoring.options import ScoreConfig

pytestmark = pytest.mark.fuzz  # thousands of generated inputs: make test runs them, make test-fast does not

BAD_EXAMPLES = 1000
NEUTRAL_EXAMPLES = 150
_SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture]}
ROOT = Path(__file__).resolve().parents[2]
AUTHORED = ROOT / "data" / "eval" / "authored.jsonl"
BOUNDARY = ROOT / "data" / "eval" / "boundary.jsonl"
RUNS = ROOT / "data" / "results" / "runs"
_REPS = ["--reps", "10"]

# --- the commands: name -> argv, given the file under test (`f`), the base's valid file (`good`), its rows
# (`rows`, labelled), a prior fitted on it (`prior`) and a fresh output folder (`o`) ------------------------------
Argv = Callable[[dict[str, str]], list[str]]
COMMANDS: dict[str, Argv] = {
    "show": lambda p: ["show", p["f"]],
    "show --policy": lambda p: ["show", p["f"], "--policy", "0.2", "--min-mass", "0.1"],
    "eval": lambda p: ["eval", p["f"], "--output", f"{p['o']}/eval.json", *_REPS],
    "eval --compare": lambda p: ["eval", p["good"], "--compare", p["f"], "--output", f"{p['o']}/eval.json", *_REPS],
    "compare A": lambda p: ["compare", p["f"], p["good"], "--output", f"{p['o']}/cmp.json"],
    "compare B": lambda p: ["compare", p["good"], p["f"]],
    "order": lambda p: ["order", "--base", p["good"], "--reversed", p["f"], "--output", f"{p['o']}/o.json", *_REPS],
    "route fast": lambda p: ["route", "--fast", p["f"], "--reference", p["good"], "--output", f"{p['o']}/r.json",
                             "--apply", "0.1", "--routed-output", f"{p['o']}/routed.jsonl", *_REPS],
    "route reference": lambda p: ["route", "--fast", p["good"], "--reference", p["f"], "--output",
                                  f"{p['o']}/r.json", *_REPS],
    "route threshold": lambda p: ["route", "--fast", p["f"], "--reference", p["good"], "--output", f"{p['o']}/r.json",
                                  "--threshold-output", f"{p['o']}/t.json", "--folds", "2", *_REPS],
    "calibrate prior": lambda p: ["calibrate", "prior", p["f"], "--input", p["rows"], "--min-rows", "1",
                                  "--output", f"{p['o']}/prior.json"],
    "calibrate bias": lambda p: ["calibrate", "bias", p["f"], "--labels", p["rows"], "--min-rows", "2", "--folds",
                                 "2", "--output", f"{p['o']}/bias.json", *_REPS],
    "calibrate apply": lambda p: ["calibrate", "apply", p["f"], "--calibration", p["prior"], "--input", p["rows"],
                                  "--output", f"{p['o']}/applied.jsonl"],
    "calibrate temperature": lambda p: ["calibrate", "temperature", p["f"], "--folds", "2", "--output",
                                        f"{p['o']}/t.json", "--apply", f"{p['o']}/t.jsonl", *_REPS],
    "calibrate report": lambda p: ["calibrate", "report", "--run", p["f"], "--labels", p["rows"], "--folds", "2",
                                   "--label-free", "--output", f"{p['o']}/rep.json", *_REPS],
    "calibrate thresholds": lambda p: ["calibrate", "thresholds", p["f"], "--labels", p["rows"], "--precision", "0.8",
                                       "--min-accepted", "1", "--folds", "2", "--output", f"{p['o']}/thr.json"],
}
"""Every command that reads records."""


# --- the valid bases ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Base:
    name: str
    records: list[dict[str, Any]]
    """The valid records, as a reader sees them."""
    paths: dict[str, str]
    """``good`` (the valid file), ``rows`` (their labelled rows) and ``prior`` (a prior fitted on them)."""


def _rows_subset(path: Path, per_family: int) -> list[Any]:
    out: list[Any] = []
    seen: dict[str, int] = {}
    for d in load_decisions(path):
        fam = str(d.extra.get("family"))
        if seen.get(fam, 0) < per_family:
            seen[fam] = seen.get(fam, 0) + 1
            out.append(d)
    return out


def _write_rows(path: Path, rows: list[Any]) -> None:
    path.write_bytes(b"".join(orjson.dumps({"id": d.id, "state": d.state, "question": d.question,
                                            "options": [{"id": o.id, "description": o.description}
                                                        for o in d.options], **d.extra}) + b"\n" for d in rows))


def _main(argv: list[str]) -> int:
    with mock.patch.object(cli, "build_parser", _PARSER), contextlib.redirect_stdout(io.StringIO()):
        return cli.main(argv)


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> list[Base]:
    """Fake-backend runs (plain, calibrated, permuted) and the first rows of committed real-model runs."""
    root = tmp_path_factory.mktemp("bases")
    out: list[Base] = []

    def add(name: str, good: Path, rows: Path) -> None:
        prior = root / f"{name}-prior.json"
        assert _main(["calibrate", "prior", str(good), "--input", str(rows), "--min-rows", "1", "--output",
                      str(prior)]) == 0, name
        recs = [orjson.loads(x) for x in good.read_bytes().splitlines()]
        out.append(Base(name, recs, {"good": str(good), "rows": str(rows), "prior": str(prior)}))

    rows = _rows_subset(AUTHORED, 2)  # 8 rows: 2 to 6 options
    rows_path = root / "rows.jsonl"
    _write_rows(rows_path, rows)
    plain = root / "plain.jsonl"
    run_score(rows, FakeBackend(), plain, ScoreConfig(run_parts={"input": "fuzz"}))
    add("fake-plain", plain, rows_path)
    cal = root / "calibrated.jsonl"
    assert _main(["calibrate", "apply", str(plain), "--calibration", out[0].paths["prior"], "--output", str(cal)]) == 0
    add("fake-calibrated", cal, rows_path)
    perm = root / "permuted.jsonl"
    run_score(rows, FakeBackend(), perm, ScoreConfig(run_parts={"input": "fuzz-p"}, permute=2))
    add("fake-permuted", perm, rows_path)
    for name, run, src, n in (("q05-torch-v1", "q05-torch-authored.jsonl", AUTHORED, 8),
                              ("q05-llamacpp-v1", "q05-llamacpp-t1-boundary.jsonl", BOUNDARY, 6),
                              ("q05-permute-v1", "q05-torch-permute2-boundary.jsonl", BOUNDARY, 6),
                              ("q15-shared-v2", "q15-torch-shared-shape-full.jsonl", None, 6)):
        lines = (RUNS / run).read_bytes().splitlines()[:n]
        good = root / f"{name}.jsonl"
        good.write_bytes(b"".join(x + b"\n" for x in lines))
        ids = {orjson.loads(x)["id"] for x in lines}
        if src is None:  # shape-full rows carry no labels: give the records' own rows a label each
            src = ROOT / "data" / "workloads" / "shape-full.jsonl"
        sub = [d for d in load_decisions(src) if d.id in ids]
        for d in sub:
            d.extra.setdefault("label", d.options[0].id)
        rp = root / f"{name}-rows.jsonl"
        _write_rows(rp, sub)
        add(name, good, rp)
    return out


_PARSER = functools.lru_cache(maxsize=1)(cli.build_parser)
"""The argument parser, built once: building it is most of an in-process run's cost (parsing is stateless)."""


_schema = functools.cache(record_schema)


# --- schema-driven faults -----------------------------------------------------------------------------------------
Path_ = tuple[Any, ...]
_ODD_VALUES: list[Any] = [None, False, 7, 2.5, "s", "0.5", [1], {"a": 1}, [], {}]


def _nodes(schema: dict[str, Any], rec: Any, at: Path_ = ()) -> list[tuple[Path_, dict[str, Any]]]:
    """``(path, schema node)`` of every value of ``rec`` the schema constrains (properties, array items)."""
    out: list[tuple[Path_, dict[str, Any]]] = []
    if isinstance(rec, dict):
        for k, node in schema.get("properties", {}).items():
            if k in rec:
                out.append(((*at, k), node))
                out += _nodes(node, rec[k], (*at, k))
    elif isinstance(rec, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(rec):
            out.append(((*at, i), schema["items"]))
            out += _nodes(schema["items"], v, (*at, i))
    return out


def _required(schema: dict[str, Any], rec: Any, at: Path_ = ()) -> list[Path_]:
    """Paths of every required field present in ``rec``."""
    out: list[Path_] = []
    if isinstance(rec, dict):
        out += [(*at, k) for k in schema.get("required", []) if k in rec]
        for k, node in schema.get("properties", {}).items():
            if k in rec:
                out += _required(node, rec[k], (*at, k))
    return out


def _field(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _get(obj: Any, path: Path_) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _set(obj: Any, path: Path_, value: Any) -> None:
    _get(obj, path[:-1])[path[-1]] = value


def _copy(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _types(node: dict[str, Any]) -> list[str]:
    t = node.get("type", [])
    return [t] if isinstance(t, str) else list(t)


def _softmax(z: list[float]) -> list[float]:
    top = max(z)
    e = [math.exp(v - top) for v in z]
    return [v / sum(e) for v in e]


def _numbers(rec: Any, at: Path_ = ()) -> list[Path_]:
    """Paths of every number in ``rec``."""
    if isinstance(rec, dict):
        return [p for k, v in rec.items() for p in _numbers(v, (*at, k))]
    if isinstance(rec, list):
        return [p for i, v in enumerate(rec) for p in _numbers(v, (*at, i))]
    return [at] if _is_number(rec) else []


_INF = "\u0000inf\u0000"


def _dumps(rec: Any) -> bytes:
    """One line; a value ``_INF`` becomes the number ``1e999`` (a double's overflow: infinity when read)."""
    return orjson.dumps(rec).replace(orjson.dumps(_INF), b"1e999")


@dataclass(frozen=True)
class Case:
    """One generated file with one planted fault (or one neutral edit)."""

    base: str
    command: str
    data: bytes
    line: int | None
    """1-based line the message must name (None: no line, e.g. an empty file)."""
    fields: tuple[str, ...] | None
    """Fields one of which the message must name (() for faults below the field level; None: any)."""
    kind: str


KINDS = ("drop", "rename", "retype", "string-number", "wrong-length", "overflow", "nan-text", "non-option-choice",
         "other-choice", "tie-flip", "tied-ids", "letters", "duplicate-option", "probabilities", "logits", "margin",
         "duplicate-id", "schema-name", "version-swap", "deep", "calibrated", "permute", "truncated", "bad-utf8",
         "blank-line", "not-object", "empty-file", "huge")


@st.composite
def bad_case(draw: st.DrawFn, bases: list[Base]) -> Case:
    kind = draw(st.sampled_from(KINDS))
    block = kind if kind in ("calibrated", "permute") else None
    base = draw(st.sampled_from([b for b in bases if block is None or block in b.records[0]]))
    command = draw(st.sampled_from(sorted(COMMANDS)))
    recs = _copy(base.records)
    j = draw(st.integers(0, len(recs) - 1))
    rec = recs[j]
    version = rec["schema"]
    schema = _schema(version)
    ids = rec["option_ids"]
    n = len(ids)
    fields: tuple[str, ...] | None = None
    line: int | None = j + 1
    line_bytes: bytes | None = None
    lines: list[bytes] | None = None
    if kind in ("drop", "rename"):
        path = draw(st.sampled_from(_required(schema, rec)))
        value = _get(rec, path[:-1]).pop(path[-1])
        if kind == "rename":
            _get(rec, path[:-1])[draw(st.sampled_from([f"{path[-1]}_", path[-1].upper(), f" {path[-1]}"]))] = value
        fields = (_field(path),)
    elif kind == "retype":
        path, node = draw(st.sampled_from([(p, nd) for p, nd in _nodes(schema, rec)
                                           if any(k in nd for k in ("type", "enum", "const"))]))
        bad = [v for v in _ODD_VALUES if not jsonschema.Draft202012Validator(node).is_valid(v)]
        _set(rec, path, draw(st.sampled_from(bad)))
        fields = (_field(path),)
    elif kind == "string-number":
        path = draw(st.sampled_from([p for p, nd in _nodes(schema, rec) if _is_number(_get(rec, p))
                                     and set(_types(nd)) & {"number", "integer"}]))
        _set(rec, path, str(_get(rec, path)))
        fields = (_field(path),)
    elif kind == "wrong-length":
        key = draw(st.sampled_from(["probabilities", "option_logits", "letters"]))
        grow = draw(st.booleans())
        if grow:
            rec[key] = [*rec[key], "P" if key == "letters" else 0.0]
        else:
            rec[key] = rec[key][:-1]
        fields = (key,)
    elif kind == "overflow":
        path = draw(st.sampled_from(_numbers(rec)))
        _set(rec, path, _INF)
        fields = ()  # 1e999 is not a double: orjson refuses the line as JSON
    elif kind == "nan-text":
        path = draw(st.sampled_from(["margin", "allowed_token_mass"]))
        word = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf"]))
        rec[path] = _INF
        line_bytes = _dumps(rec).replace(b"1e999", word)
        fields = ()
    elif kind == "non-option-choice":
        rec["choice"] = draw(st.text(min_size=0, max_size=6).filter(lambda s: s not in ids))
        fields = ("choice",)
    elif kind == "other-choice":
        others = [o for o in ids if o != rec["choice"]]
        if rec["choice"] is not None:  # the most probable other option is still not the choice
            rec["choice"] = draw(st.sampled_from(others))
        else:
            rec["choice"] = draw(st.sampled_from(ids))
        fields = ("choice", "tie")
    elif kind == "tie-flip":
        rec["tie"] = not rec["tie"]
        fields = ("tie",)
    elif kind == "tied-ids":
        extra = draw(st.sampled_from(["zz-not-an-option", *ids]))
        rec["tied_option_ids"] = [*rec["tied_option_ids"], extra]
        fields = ("tied_option_ids",)  # [k] names the bad entry; without a tie, the list itself
    elif kind == "letters":
        rec["letters"] = draw(st.sampled_from([rec["letters"][::-1], ["A"] * n, [chr(ord("B") + i) for i in range(n)]]))
        fields = ("letters",)
    elif kind == "duplicate-option":
        k = draw(st.integers(1, n - 1))
        rec["option_ids"][k] = rec["option_ids"][draw(st.integers(0, k - 1))]
        fields = (f"option_ids[{k}]",)
    elif kind == "probabilities":
        i = draw(st.integers(0, n - 1))
        rec["probabilities"][i] += draw(st.sampled_from([-1, 1])) * draw(st.floats(1e-4, 0.6))
        fields = ("probabilities", f"probabilities[{i}]")
    elif kind == "logits":  # moved so far that the probabilities no longer are their softmax (beyond 1e-5)
        i = draw(st.integers(0, n - 1))
        z = list(rec["option_logits"])
        sign = -1 if rec["probabilities"][i] > 0.5 else 1
        z[i] += sign * draw(st.floats(1e-3, 5))
        t = rec.get("temperature") or 1.0
        if max(abs(a - b) for a, b in zip(_softmax([v / t for v in z]), rec["probabilities"], strict=True)) < 1e-5:
            z[i] = rec["option_logits"][i] + sign * 60 * t
        rec["option_logits"] = z
        fields = ("probabilities", "calibrated")
    elif kind == "margin":
        rec["margin"] += draw(st.sampled_from([-1, 1])) * draw(st.floats(1e-4, 0.9))
        fields = ("margin",)
    elif kind == "duplicate-id":
        j = max(j, 1)
        line = j + 1
        recs[j]["id"] = recs[draw(st.integers(0, j - 1))]["id"]
        fields = ("id",)
    elif kind == "schema-name":
        rec["schema"] = draw(st.sampled_from(["semif-record-v3", "semif-record", "SEMIF-RECORD-V2", "", None, 2,
                                              ["semif-record-v2"]]))
        fields = ("schema",)
    elif kind == "version-swap":  # v2 -> v1 keeps a signature v1 never had; v1 -> v2 lacks one
        rec["schema"] = "semif-record-v1" if version == "semif-record-v2" else "semif-record-v2"
        fields = ("signature",)
    elif kind == "deep":
        depth = draw(st.integers(RECORD_MAX_DEPTH - 1, 600))
        rec["extra"]["deep"] = _INF  # spliced below
        line_bytes = _dumps(rec).replace(b"1e999", b"[" * depth + b"]" * depth)
        fields = ("extra.deep",)
    elif kind == "calibrated":
        blk = rec["calibrated"]
        what = draw(st.sampled_from(["offsets", "choice", "signature", "logits", "unseen", "probabilities"]))
        if what == "offsets":
            blk["offsets"] = [*blk["offsets"], 0.0]
            fields = ("calibrated.offsets",)
        elif what == "choice":
            blk["choice"] = "zz-not-an-option"
            fields = ("calibrated.choice",)
        elif what == "signature":
            blk["signature"] = "0" * 64
            fields = ("calibrated.signature",)
        elif what == "logits":
            i = draw(st.integers(0, n - 1))
            blk["option_logits"][i] += draw(st.floats(1e-3, 5))
            fields = ("calibrated",)  # its probabilities, choice or option_logits[i]
        elif what == "unseen":
            blk["unseen_option_ids"] = ["zz-not-an-option"]
            fields = ("calibrated.unseen_option_ids[0]",)
        else:
            blk["probabilities"] = blk["probabilities"][::-1] if len(set(blk["probabilities"])) > 1 else [2.0] * n
            fields = ("calibrated",)
    elif kind == "permute":
        perm = rec["permute"]
        what = draw(st.sampled_from(["row-length", "order", "drop-row", "nudge"]))
        m = len(perm["probabilities"])
        k = draw(st.integers(0, m - 1))
        if what == "row-length":
            perm["probabilities"][k] = [*perm["probabilities"][k], 0.0]
            fields = (f"permute.probabilities[{k}]",)
        elif what == "order":
            perm["option_ids"][k] = ["zz-not-an-option", *perm["option_ids"][k][1:]]
            fields = (f"permute.option_ids[{k}]",)
        elif what == "drop-row":
            perm["probabilities"] = perm["probabilities"][:k] + perm["probabilities"][k + 1:]
            fields = ("permute.probabilities",)
        else:  # mass moved between two options of one ordering: its row still sums to 1, the mean moves
            row = perm["probabilities"][k]
            b = max(range(n), key=lambda i: row[i])
            a = draw(st.sampled_from([i for i in range(n) if i != b]))
            # at most 0.9 of it: moving all of it can round the other option to 1.0000000000000002, outside [0, 1],
            # which is refused as such (permute.probabilities[k]) before the mean is looked at
            delta = draw(st.floats(0.1, 0.9)) * row[b]
            row[a], row[b] = row[a] + delta, row[b] - delta
            fields = ("probabilities",)
    elif kind == "truncated":
        full = _dumps(rec)
        line_bytes = full[: draw(st.integers(1, len(full) - 1))]
        fields = ()
    elif kind == "bad-utf8":
        full = _dumps(rec)
        at = draw(st.integers(1, len(full) - 1))
        line_bytes = full[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe9", b"\xed\xa0\x80"])) + full[at:]
        fields = ()
    elif kind == "blank-line":
        lines = [_dumps(r) for r in recs]
        lines.insert(j, draw(st.sampled_from([b"", b" ", b"\t", b"\r", b"  \r"])))
        fields = ()
    elif kind == "not-object":
        line_bytes = orjson.dumps(draw(st.sampled_from([[1, 2], "record", 3, None, True, [rec]])))
        fields = ()
    elif kind == "empty-file":
        lines, line, fields = [], None, ()
    else:  # huge: a long bad value, never echoed whole
        size = draw(st.integers(1_000, 200_000))
        key = draw(st.sampled_from(["choice", "margin", "probabilities", "id"]))
        rec[key] = "x" * size if key != "id" else ["x" * size]
        fields = (key,)
    if lines is None:
        lines = [_dumps(r) for r in recs]
        if line_bytes is not None:
            lines[j] = line_bytes
    data = b"".join(x + b"\n" for x in lines)
    return Case(base.name, command, data, line, fields, kind)


# --- neutral edits: the file stays valid --------------------------------------------------------------------------
NEUTRAL_KINDS = ("timing", "unknown-field", "key-order", "format", "drop-optional", "no-final-newline", "extra-text",
                 "escalated", "run")


@st.composite
def neutral_case(draw: st.DrawFn, bases: list[Base]) -> Case:
    base = draw(st.sampled_from(bases))
    command = draw(st.sampled_from(sorted(COMMANDS)))
    recs = _copy(base.records)
    j = draw(st.integers(0, len(recs) - 1))
    rec = recs[j]
    kind = draw(st.sampled_from(NEUTRAL_KINDS))
    lines = [_dumps(r) for r in recs]
    final = b"\n"
    if kind == "timing":
        key = draw(st.sampled_from(["total_s", "encode_s", "forward_s", "extra_s"]))
        rec["timing"][key] = draw(st.floats(0, 1e6))
    elif kind == "unknown-field":
        rec[draw(st.sampled_from(["note", "x-tool", "_meta", "日本語"]))] = draw(st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.text(max_size=5)),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3), max_leaves=6))
    elif kind == "key-order":
        keys = draw(st.permutations(list(rec)))
        recs[j] = {k: rec[k] for k in keys}
    elif kind == "format":
        lines[j] = json.dumps(rec, ensure_ascii=draw(st.booleans()), separators=(", ", ": ")).encode()
    elif kind == "drop-optional":
        for key in ("gguf", "route"):
            rec.pop(key, None)
        if rec.get("temperature", 0) is None:
            del rec["temperature"]
    elif kind == "no-final-newline":
        final = b""
    elif kind == "extra-text":
        rec["extra"]["note"] = draw(st.sampled_from(["a\u2028b", "x\x85y", "café", "emoji 🙂", "<|im_end|>", ""]))
    elif kind == "escalated":
        rec["escalated"] = not rec["escalated"]
    else:
        rec["run"]["started_unix"] = draw(st.floats(0, 2e9))
    if kind not in ("format",):
        lines[j] = _dumps(recs[j])
    data = b"\n".join(lines) + final
    return Case(base.name, command, data, None, None, kind)


_BOUND = functools.partial(report.family_offset_bound, steps=5)
"""`calibrate report`'s offset bound on a 5-step grid instead of 161 (the same code; 161 steps cost 5 s a run)."""


# --- running a command --------------------------------------------------------------------------------------------
def _run(argv: list[str]) -> tuple[int, str, str]:
    """``cli.main(argv)`` in process: exit code, stdout, stderr (an escaped exception is a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(cli, "build_parser", _PARSER), mock.patch.object(report, "family_offset_bound", _BOUND), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except Exception:  # the suite's finding, reported with its traceback
            code = -1
            err.write(traceback.format_exc())
    return code, out.getvalue(), err.getvalue()


def _case_run(case: Case, bases: list[Base], tmp_path: Path) -> tuple[int, str, str, Path, Path]:
    """Run ``case`` in a fresh folder: (exit, stdout, stderr, the file, the output folder after the run)."""
    base = next(b for b in bases if b.name == case.base)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    f, outdir = folder / "run.jsonl", folder / "out"
    f.write_bytes(case.data)
    outdir.mkdir()
    code, out, err = _run(COMMANDS[case.command]({**base.paths, "f": str(f), "o": str(outdir)}))
    return code, out, err, f, outdir


def _names_field(line: str, where: str, fields: tuple[str, ...]) -> bool:
    """``line`` names one of ``fields`` (or a field inside one: ``calibrated.offsets`` is inside ``calibrated``)."""
    if not line.startswith(where + "field '"):
        return False
    got = line[len(where + "field '"):].split("': ", 1)[0]
    return any(got == f or got.startswith((f"{f}.", f"{f}[")) for f in fields)


def test_every_command_reads_every_valid_base(bases, tmp_path):
    """The bases are valid for every command (else the refusals below would prove nothing)."""
    for base in bases:
        for name in COMMANDS:
            case = Case(base.name, name, Path(base.paths["good"]).read_bytes(), None, None, "valid")
            code, _, err, f, _ = _case_run(case, bases, tmp_path)
            assert code == 0 and "semif: error" not in err, (base.name, name, err[-3000:])
            shutil.rmtree(f.parent)


def test_every_generated_bad_record_file_is_refused_with_file_line_field(bases, tmp_path):
    seen: dict[str, int] = {}
    commands: dict[str, int] = {}

    @settings(max_examples=BAD_EXAMPLES, **_SETTINGS)
    @given(case=bad_case(bases))
    def check(case: Case) -> None:
        code, out, err, f, outdir = _case_run(case, bases, tmp_path)
        written = sorted(p.name for p in outdir.iterdir())
        shutil.rmtree(f.parent)
        ctx = (case.kind, case.command, case.base, case.line, case.fields, err[-3000:])
        assert not written, (*ctx, written)
        assert "Traceback" not in err and code == 2, ctx
        lines = err.splitlines()
        assert len(lines) == 1 and len(err) < 1200, ctx
        where = f"semif: error: {f}:{case.line}: " if case.line else f"semif: error: {f}: "
        assert lines[0].startswith(where), ctx
        if case.fields:
            assert _names_field(lines[0], where, case.fields), ctx
        elif case.fields == ():
            assert not lines[0].startswith(where + "field "), ctx
        assert out == "", ctx
        seen[case.kind] = seen.get(case.kind, 0) + 1
        commands[case.command] = commands.get(case.command, 0) + 1

    check()
    assert sum(seen.values()) >= BAD_EXAMPLES, seen
    assert set(seen) == set(KINDS), set(KINDS) - set(seen)
    assert set(commands) == set(COMMANDS), set(COMMANDS) - set(commands)


def test_neutral_edits_never_end_in_a_traceback(bases, tmp_path):
    seen: dict[str, int] = {}

    @settings(max_examples=NEUTRAL_EXAMPLES, **_SETTINGS)
    @given(case=neutral_case(bases))
    def check(case: Case) -> None:
        code, _, err, f, _ = _case_run(case, bases, tmp_path)
        shutil.rmtree(f.parent)
        ctx = (case.kind, case.command, case.base, err[-3000:])
        assert "Traceback" not in err and code in (0, 2), ctx
        if code == 2:
            lines = err.splitlines()
            assert len(lines) == 1 and lines[0].startswith("semif: error: "), ctx
        else:
            assert "semif: error" not in err, ctx
        seen[case.kind] = seen.get(case.kind, 0) + 1

    check()
    assert sum(seen.values()) >= NEUTRAL_EXAMPLES and set(seen) == set(NEUTRAL_KINDS), seen


# --- the reader's compiled schema gives the verdicts of the jsonschema package -----------------------------------
AGREEMENT_EXAMPLES = 300
_POOL: list[Any] = [None, True, False, 0, 1, -1, 0.5, 1.5, -0.25, 1e300, "", "A", "P", "Q", "yes", "0" * 64, "x" * 64,
                    "semif-record-v1", "semif-record-v2", "direct", "prior", "file", [], [0.5, 0.5], ["A", "B"], {},
                    {"kind": "file"}, {"k": 2, "shifts": [0], "probabilities": [[1.0]]}]


@settings(max_examples=AGREEMENT_EXAMPLES, **_SETTINGS)
@given(data=st.data())
def test_compiled_record_schema_agrees_with_jsonschema(bases, data):
    """Valid records edited anywhere (a value replaced, a field removed or added): the reader's schema
    check (:func:`scorer.formats.record_schema.compile_schema`) and ``jsonschema`` accept and refuse the same records,
    and
    the path the reader names is one that ``jsonschema`` reports."""
    from scorer.formats.record_schema import _record_checks

    base = data.draw(st.sampled_from(bases))
    rec = _copy(data.draw(st.sampled_from(base.records)))
    version = data.draw(st.sampled_from([rec["schema"], "semif-record-v1", "semif-record-v2"]))
    rec["schema"] = version
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _all_paths(rec) if p]
        path = data.draw(st.sampled_from(paths))
        what = data.draw(st.sampled_from(["replace", "remove", "add"]))
        parent = _get(rec, path[:-1])
        if what == "remove" and isinstance(parent, dict):
            del parent[path[-1]]
        elif what == "add" and isinstance(parent, dict):
            key = data.draw(st.sampled_from(["x", "k", "path", "sha256", "reason"]))
            parent[key] = data.draw(st.sampled_from(_POOL))
        else:
            parent[path[-1]] = _copy(data.draw(st.sampled_from(_POOL)))
    ours = _record_checks()[version](rec)
    theirs = list(jsonschema.Draft202012Validator(_schema(version)).iter_errors(rec))
    assert (ours is None) == (not theirs), (ours, [e.message for e in theirs])
    if ours is not None:
        assert list(reversed(ours[0])) in [list(e.absolute_path) for e in theirs], (ours, theirs)


def _all_paths(obj: Any, at: Path_ = ()) -> list[Path_]:
    out = [at]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _all_paths(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _all_paths(v, (*at, i))
    return out
