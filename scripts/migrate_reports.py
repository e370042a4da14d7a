"""Rewrite committed reports made before the report envelope into it (idempotent).

Usage (from the repository root)::

    python scripts/migrate_reports.py [--check] [PATH ...]     # default: data/results benchmarks/results

Every ``*.json`` under the paths that is a report of an older layout is rewritten in place (atomically) into
the current format of its kind (:data:`scorer.formats.envelope.KINDS`): the envelope (``kind``, ``format``,
``created_utc``, ``machine``, ``versions``, ``inputs``) leads, ``migrated_from`` gives the sha256 and format of
the bytes it replaced (records and traces cite reports by sha256: a drift report behind ``--exact``, a prior
behind ``--calibration``), then the body as it was. What changes in a body:

* ``schema``/``created_unix`` become ``format``/``created_utc``; a body's own ``machine``/``versions``/
  ``semif``/``compared_on`` move into the envelope;
* load averages take the one shape ``{"before": [1m, 5m, 15m], "after": [...]}`` (a value the old report did
  not record is ``null``; quant v1 recorded the 1-minute average only, so its lists hold one number);
* a calibration file's ``inputs`` (its row files) is renamed ``row_files`` (``inputs`` is the envelope's).

``inputs`` are the files the body cites with the sha256 it recorded when it was made (the files themselves
may be gone or changed since). A report that recorded no time gets ``created_utc`` from the git commit that
added the file, and says so in ``migrated_from``. Every number of the old body is checked to survive.

Traces (``format`` ``semif-trace-*``), reports already in their current format and other JSON files are left
alone. ``--check`` changes nothing and exits 1 if some report still needs migrating.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorer.formats.envelope import (  # noqa: E402
    ENVELOPE_KEYS,
    KINDS,
    carried_inputs,
    envelope_problems,
    report_bytes,
    utc_now,
)
from scorer.core.io import write_atomic  # noqa: E402

DEFAULT_PATHS = ("data/results", "benchmarks/results")
_NOT_RECORDED = {"note": "not recorded when the report was made"}

Old = dict[str, Any]
Migrated = tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]
"""(machine, versions, inputs, body) of a migrated report."""


def _without(obj: Old, *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def _span(before: Any, after: Any) -> dict[str, Any]:
    return {"before": before, "after": after}


def _bench(old: Old) -> Migrated:
    body = _without(old, "schema", "created_unix", "machine", "versions")
    la = old.get("load_average") or {}
    body["load_average"] = _span(la.get("start"), la.get("end"))
    return old["machine"], old["versions"], carried_inputs(body), body


def _drift(old: Old) -> Migrated:
    body = _without(old, "schema", "created_unix", "machine", "versions")
    timing = dict(body["timing"])
    # v1 took the load average once, when the report was assembled after the runs.
    timing["load_average"] = _span(None, timing.get("load_average"))
    body["timing"] = timing
    return old["machine"], old["versions"], carried_inputs(body), body


def _eval(old: Old) -> Migrated:
    body = _without(old, "schema", "kind", "created_unix", "machine", "semif")
    m = old.get("machine") or {}
    machine = {"platform": m.get("platform"), "arch": m.get("machine"), "cores": m.get("cpu_count")}
    versions = {k: m.get(k) for k in ("semif", "python", "numpy")}
    versions["semif"] = versions["semif"] or old.get("semif")
    return machine, versions, carried_inputs(body), body


def _calibration(old: Old) -> Migrated:
    body: dict[str, Any] = {}
    for k, v in old.items():
        if k in ("schema", "semif", "created_unix"):
            continue
        body["row_files" if k == "inputs" else k] = v
    return dict(_NOT_RECORDED), {"semif": old.get("semif")}, carried_inputs(body), body


def _quant(old: Old) -> Migrated:
    from scorer.studies.quant import quant_inputs

    def runs(block: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in block.items():
            if k == "loadavg_1m_before_after":
                out["load_average"] = _span([v[0]], [v[1]])
            else:
                out[k] = v
        return out

    body = _without(old, "format", "created_utc", "machine", "versions")
    body["reference"] = runs(body["reference"])
    body["rungs"] = [runs(r) for r in body["rungs"]]
    proto = dict(body["protocol"])
    proto["timing"] = proto["timing"].replace(
        "loadavg_1m_before_after shows other work on the machine",
        "load_average shows other work on the machine (1-minute average only before semif-quant-v2)")
    body["protocol"] = proto
    return old["machine"], old["versions"], quant_inputs(body), body


def _compare(old: Old) -> Migrated:
    body = _without(old, "format", "compared_on")
    return old["compared_on"], dict(_NOT_RECORDED), carried_inputs(body), body


def _load_pair(old: Old, *drop: str) -> dict[str, Any]:
    """``old`` without ``drop``, its ``loadavg_before``/``loadavg_after`` made one ``load_average`` in place."""
    body: dict[str, Any] = {}
    for k, v in old.items():
        if k in drop or k == "loadavg_after":
            continue
        if k == "loadavg_before":
            body["load_average"] = _span(v, old.get("loadavg_after"))
        else:
            body[k] = v
    return body


def _cache_verify(old: Old) -> Migrated:
    from benchmarks.cache_verify import cache_verify_inputs

    body = _load_pair(old, "kind", "created_utc", "machine", "versions")
    return old["machine"], old["versions"], cache_verify_inputs(body), body


def _enveloped_v1(old: Old) -> Migrated:
    """A report that had the envelope already (ray-scale, serve-load v1): only its load averages change."""
    return old["machine"], old["versions"], old["inputs"], _load_pair(old, *ENVELOPE_KEYS)


def _grammar_probe(old: Old) -> Migrated:
    m = old.get("machine") or {}
    body = _without(old, "kind", "machine")
    at = list(body).index("regex") + 1
    items = list(body.items())
    # v1 took the load average once, after the probes.
    body = dict([*items[:at], ("load_average", _span(None, m.get("load_average"))), *items[at:]])
    inputs = {"model.gguf": {"path": None, "sha256": None,
                             "note": f"the report names only the model's registry key, {old.get('model')!r}"}}
    return {k: v for k, v in m.items() if k != "load_average"}, dict(_NOT_RECORDED), inputs, body


# (old format, how to tell it, kind of the migrated report or None: the old report's kind field, migration)
_LAYOUTS: list[tuple[str, Callable[[Old], bool], Callable[[Old], str], Callable[[Old], Migrated]]] = [
    ("semif-bench-v1", lambda o: o.get("schema") == "semif-bench-v1", lambda o: "bench", _bench),
    ("semif-drift-v1", lambda o: o.get("schema") == "semif-drift-v1", lambda o: "drift", _drift),
    ("semif-eval-v1", lambda o: o.get("schema") == "semif-eval-v1", lambda o: str(o["kind"]), _eval),
    ("semif-calibration-v1", lambda o: o.get("schema") == "semif-calibration-v1", lambda o: str(o["method"]),
     _calibration),
    ("semif-quant-v1", lambda o: o.get("format") == "semif-quant-v1", lambda o: "quant", _quant),
    ("semif-compare-v1", lambda o: o.get("format") == "semif-compare-v1", lambda o: "compare", _compare),
    ("cache-verify (no format)", lambda o: o.get("kind") == "cache-verify" and "format" not in o,
     lambda o: "cache-verify", _cache_verify),
    ("semif-ray-scale-v1", lambda o: o.get("format") == "semif-ray-scale-v1", lambda o: "ray-scale", _enveloped_v1),
    ("semif-serve-load-v1", lambda o: o.get("format") == "semif-serve-load-v1", lambda o: "serve-load",
     _enveloped_v1),
    ("grammar-mask-probe (no format)", lambda o: o.get("kind") == "grammar-mask-probe" and "format" not in o,
     lambda o: "grammar-mask-probe", _grammar_probe),
]


def _numbers(obj: Any) -> Iterator[float]:
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return
    if isinstance(obj, (int, float)):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v)


def _added_utc(path: Path) -> str:
    """When git first added ``path`` (the file's modification time if git does not know it)."""
    out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%ct", "--", str(path)], cwd=ROOT,
                         capture_output=True, text=True, check=False).stdout.split()
    return utc_now(float(out[-1]) if out else path.stat().st_mtime)


def migrate(old: Old, raw: bytes, path: Path) -> dict[str, Any] | None:
    """The migrated report, or None if ``old`` is not a report of an older layout."""
    for fmt, matches, kind_of, convert in _LAYOUTS:
        if not matches(old):
            continue
        kind = kind_of(old)
        if kind not in KINDS:
            raise SystemExit(f"{path}: kind {kind!r} is not a known report kind ({', '.join(KINDS)})")
        machine, versions, inputs, body = convert(old)
        source = {"sha256": hashlib.sha256(raw).hexdigest(), "format": fmt}
        if isinstance(old.get("created_utc"), str):
            created = old["created_utc"]
        elif isinstance(old.get("created_unix"), (int, float)):
            created = utc_now(old["created_unix"])
        else:
            created = _added_utc(path)
            source["created_utc"] = "not recorded by the report: the time git first added the file"
        new = {"kind": kind, "format": KINDS[kind], "created_utc": created, "machine": machine,
               "versions": versions, "inputs": inputs, "migrated_from": source, **body}
        lost = Counter(_numbers(_without(old, "created_unix"))) - Counter(_numbers(new))
        if lost:
            raise SystemExit(f"{path}: the migration would lose the numbers {sorted(lost)[:10]} (nothing written)")
        problems = envelope_problems(new)
        if problems:
            raise SystemExit(f"{path}: the migrated report is not valid: {'; '.join(problems)} (nothing written)")
        return new
    return None


def reports(paths: list[Path]) -> Iterator[Path]:
    for p in paths:
        yield from sorted(p.rglob("*.json")) if p.is_dir() else [p]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS), help="files or folders (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a report needs migrating")
    args = ap.parse_args(argv)
    pending = 0
    for path in reports([Path(p) for p in args.paths]):
        raw = path.read_bytes()
        obj = orjson.loads(raw)
        if not isinstance(obj, dict) or str(obj.get("format", "")).startswith("semif-trace"):
            continue
        if not envelope_problems(obj):
            continue
        new = migrate(obj, raw, path)
        if new is None:
            print(f"{path}: not a report of a known layout; left alone", file=sys.stderr)
            continue
        pending += 1
        if args.check:
            print(f"{path}: needs migrating ({new['migrated_from']['format']} -> {new['format']})")
            continue
        write_atomic(path, report_bytes(new), overwrite=True)
        print(f"{path}: {new['migrated_from']['format']} -> {new['format']}", file=sys.stderr)
    if args.check:
        return 1 if pending else 0
    print(f"migrated {pending} report(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
