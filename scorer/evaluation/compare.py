"""``semif compare A.jsonl B.jsonl``: line-for-line parity of two runs over the same decisions.

Any two record files of the same input can be compared (torch vs llama.cpp, fp32 vs a quantized
rung, direct vs shared…). Records are aligned by id; the two runs must cover exactly the same ids with
the same option ids, or the comparison is refused. Per decision: the largest |Δp| over its options,
whether the choice flipped, ties on either side, and the margins of flipped rows (how close to the
boundary they were). Probabilities are uncalibrated conditional option scores on both sides.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from scorer.core.errors import InputError
from scorer.core.hashing import sha256_file
from scorer.formats.envelope import carried_inputs, make_report
from scorer.formats.records import read_records

REPORT_FORMAT = "semif-compare-v2"
"""v2: the report envelope, whose ``machine`` replaces v1's ``compared_on``."""
DEFAULT_TOLERANCE = 0.01
SHOW = 20
_NOTE = ("probabilities on both sides are uncalibrated conditional option scores (softmax over the declared "
         "options' answer-slot logits); |dp| is the largest absolute difference over a decision's options")


def _index(records: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line, rec in enumerate(records, start=1):
        if rec["id"] in out:
            raise InputError(name, line, "id", f"duplicate id {rec['id']!r}", "one record per decision")
        out[rec["id"]] = rec
    return out


def _quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default), 0 for an empty list."""
    if not values:
        return 0.0
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _same(a: str | None, b: str | None) -> bool | None:
    """Two hashes equal; None when either record has none (a remote decision API's record: nothing to compare)."""
    return None if a is None or b is None else a == b


def _median_mass(records: list[dict[str, Any]]) -> float | None:
    """The median ``allowed_token_mass`` of the records that have one (None when none has: a remote run)."""
    mass = [r["allowed_token_mass"] for r in records if r["allowed_token_mass"] is not None]
    return _quantile(mass, 0.5) if mass else None


def run_summary(records: list[dict[str, Any]], path: str | None = None) -> dict[str, Any]:
    """Who produced a run: model, backend, weights, mode, kernel."""
    m = records[0].get("model", {}) if records else {}
    out = {"records": len(records), "key": m.get("key"), "backend": m.get("backend"), "dtype": m.get("dtype"),
           "device": m.get("device"), "gguf_sha256": m.get("gguf_sha256"), "threads": m.get("threads"),
           "versions": m.get("versions"), "modes": sorted({str(r.get("mode")) for r in records}),
           "kernels": sorted({str(r.get("kernel")) for r in records})}  # str: a None never meets a str in sorted
    if path is not None:
        out["path"] = path
        out["sha256"] = sha256_file(Path(path))
    return out


def _label_accuracy(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    labelled = [r for r in records if isinstance(r.get("extra", {}).get("label"), str)]
    if not labelled:
        return None
    right = sum(1 for r in labelled if r["choice"] == r["extra"]["label"])
    return {"labelled": len(labelled), "correct": right, "accuracy": right / len(labelled)}


def compare_records(a: list[dict[str, Any]], b: list[dict[str, Any]], name_a: str = "A", name_b: str = "B",
                    tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """Summary and differing rows of two runs (in A's order). Raises :class:`InputError` on a mismatch."""
    ia, ib = _index(a, name_a), _index(b, name_b)
    only_a, only_b = sorted(set(ia) - set(ib)), sorted(set(ib) - set(ia))
    if only_a or only_b:
        raise InputError(name_b, None, "id", f"the runs cover different decisions: {len(only_a)} id(s) only in "
                         f"{name_a} {only_a[:3]}, {len(only_b)} only in {name_b} {only_b[:3]}",
                         "two runs of the same input")
    rows: list[dict[str, Any]] = []
    dps: list[float] = []
    for rid, ra in ia.items():
        rb = ib[rid]
        if ra["option_ids"] != rb["option_ids"]:
            raise InputError(name_b, None, "option_ids", f"decision {rid!r} has options {rb['option_ids']} here "
                             f"but {ra['option_ids']} in {name_a}", "the same option ids in the same order")
        dp = max(abs(x - y) for x, y in zip(ra["probabilities"], rb["probabilities"], strict=True))
        dps.append(dp)
        label = ra.get("extra", {}).get("label")
        rows.append({
            "id": rid, "max_abs_dp": dp, "choice_a": ra["choice"], "choice_b": rb["choice"],
            "flip": ra["choice"] != rb["choice"], "tie_a": ra["tie"], "tie_b": rb["tie"],
            "margin_a": ra["margin"], "margin_b": rb["margin"],
            "p_a": ra["probabilities"], "p_b": rb["probabilities"],
            "prompt_same": _same(ra["prompt_sha256"], rb["prompt_sha256"]),
            "tokens_same": _same(ra["tokens_sha256"], rb["tokens_sha256"]),
            **({"label": label} if isinstance(label, str) else {}),
        })
    flipped = [r for r in rows if r["flip"]]
    differ = [r for r in rows if r["flip"] or r["tie_a"] != r["tie_b"] or r["max_abs_dp"] > tolerance
              or r["prompt_same"] is False or r["tokens_same"] is False]
    differ.sort(key=lambda r: (not r["flip"], -r["max_abs_dp"]))
    summary = {
        "decisions": len(rows), "flips": len(flipped), "ties_a": sum(r["tie_a"] for r in rows),
        "ties_b": sum(r["tie_b"] for r in rows), "tie_changes": sum(r["tie_a"] != r["tie_b"] for r in rows),
        "max_abs_dp": max(dps), "median_abs_dp": _quantile(dps, 0.5), "p95_abs_dp": _quantile(dps, 0.95),
        "mean_abs_dp": statistics.fmean(dps), "tolerance": tolerance,
        "rows_over_tolerance": sum(1 for d in dps if d > tolerance),
        "prompt_sha256_equal": sum(r["prompt_same"] is True for r in rows),
        "tokens_sha256_equal": sum(r["tokens_same"] is True for r in rows),
        "prompt_sha256_unknown": sum(r["prompt_same"] is None for r in rows),
        "flipped_margin_a_max": max((r["margin_a"] for r in flipped), default=None),
        "flipped_margin_b_max": max((r["margin_b"] for r in flipped), default=None),
        "flipped_margin_a_median": _quantile([r["margin_a"] for r in flipped], 0.5) if flipped else None,
        "median_allowed_mass_a": _median_mass(a),
        "median_allowed_mass_b": _median_mass(b),
        "labels_a": _label_accuracy(a), "labels_b": _label_accuracy(b),
    }
    return {"summary": summary, "rows": differ}


def compare_files(path_a: str, path_b: str, tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """The full ``semif compare`` report of two record files."""
    a, b = read_records(path_a), read_records(path_b)
    if not a or not b:
        raise InputError(path_a if not a else path_b, None, None, "no records", "a non-empty run")

    cmp = compare_records(a, b, path_a, path_b, tolerance)
    body = {"a": run_summary(a, path_a), "b": run_summary(b, path_b), "note": _NOTE, **cmp}
    return make_report("compare", REPORT_FORMAT, carried_inputs(body), body)


def _fmt(v: float | None, spec: str = ".4f") -> str:
    return "-" if v is None else format(v, spec)


def print_report(rep: dict[str, Any], show: int = SHOW) -> None:
    """A readable summary and the rows that differ most (stdout)."""
    s = rep["summary"]
    for side in ("a", "b"):
        r = rep[side]
        print(f"{side.upper()}: {r.get('path', '')}  {r['key']} · {r['backend']} · {r['dtype']} on {r['device']} · "
              f"mode {','.join(map(str, r['modes']))} · {r['records']} records")
    print(rep["note"])
    print(f"decisions {s['decisions']}  flips {s['flips']}  ties A/B {s['ties_a']}/{s['ties_b']}  "
          f"tie changes {s['tie_changes']}")
    print(f"|dp| max {s['max_abs_dp']:.4f}  median {s['median_abs_dp']:.4f}  p95 {s['p95_abs_dp']:.4f}  "
          f"mean {s['mean_abs_dp']:.4f}  over {s['tolerance']}: {s['rows_over_tolerance']}")
    unknown = s.get("prompt_sha256_unknown", 0)
    print(f"prompt_sha256 equal {s['prompt_sha256_equal']}/{s['decisions']}  "
          f"tokens_sha256 equal {s['tokens_sha256_equal']}/{s['decisions']}"
          + (f"  ({unknown} rows answered by a remote decision API: no prompt to compare)" if unknown else ""))
    if s["flips"]:
        print(f"flipped rows' margin in A: max {_fmt(s['flipped_margin_a_max'])}, "
              f"median {_fmt(s['flipped_margin_a_median'])}")
    for side in ("a", "b"):
        lab = s[f"labels_{side}"]
        if lab:
            print(f"labels {side.upper()}: {lab['correct']}/{lab['labelled']} correct ({lab['accuracy']:.3f})")
    rows = rep["rows"][:show]
    if not rows:
        print("no row differs beyond the tolerance")
        return
    w = max(len(r["id"]) for r in rows)
    print(f"\n{'id':<{w}}  {'|dp|':>6}  {'choice A':<12} {'choice B':<12} {'margin A':>8} {'margin B':>8}  flags")
    for r in rows:
        flags = " ".join(f for f, on in (("FLIP", r["flip"]), ("tieA", r["tie_a"]), ("tieB", r["tie_b"]),
                                          ("prompt≠", r["prompt_same"] is False),
                                          ("tokens≠", r["tokens_same"] is False))
                         if on)
        print(f"{r['id']:<{w}}  {r['max_abs_dp']:>6.4f}  {r['choice_a']!s:<12} {r['choice_b']!s:<12} "
              f"{r['margin_a']:>8.4f} {r['margin_b']:>8.4f}  {flags}")
    if len(rep["rows"]) > show:
        print(f"… {len(rep['rows']) - show} more differing rows in the JSON report")
