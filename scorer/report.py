"""Readable tables of records for people (stdout); the files hold the full records."""

from __future__ import annotations

from typing import Any


def _fmt_p(p: float) -> str:
    return f"{p:.3f}"


def print_table(records: list[dict[str, Any]]) -> None:
    """One line per decision: id, choice, its probability, margin, allowed mass, label if any."""
    if not records:
        print("(no records)")
        return
    m = records[0]["model"]
    print(f"model {m.get('key')} · backend {m.get('backend')} · {m.get('dtype')} on {m.get('device')} · "
          f"mode {records[0]['mode']} · {len(records)} decisions")
    print("probabilities are uncalibrated conditional option scores (softmax over the declared options)")
    w = max(len(r["id"]) for r in records)
    cw = max(len(str(r["choice"])) for r in records)
    print(f"{'id':<{w}}  {'choice':<{cw}}  {'p':>5}  {'margin':>6}  {'mass':>5}  {'ms':>7}  label")
    correct = labelled = 0
    for r in records:
        label = r.get("extra", {}).get("label")
        p = max(r["probabilities"])
        mark = ""
        if label is not None:
            labelled += 1
            ok = r["choice"] == label
            correct += ok
            mark = f"{label} {'✓' if ok else '✗'}"
        choice = r["choice"] if r["choice"] is not None else f"TIE{r['tied_option_ids']}"
        print(f"{r['id']:<{w}}  {choice:<{cw}}  {_fmt_p(p):>5}  {r['margin']:>6.3f}  "
              f"{r['allowed_token_mass']:>5.3f}  {1000 * r['timing']['total_s']:>7.1f}  {mark}")
    total_s = sum(r["timing"]["total_s"] for r in records)
    tail = f" · {correct}/{labelled} match their label" if labelled else ""
    print(f"total {total_s:.2f} s, {len(records) / total_s:.2f} decisions/s{tail}")
    line = cache_line(records)
    if line:
        print(line)


def cache_line(records: list[dict[str, Any]]) -> str | None:
    """How the records' prefixes came out of the radix prefix cache (their ``cache`` blocks), or None when none
    has one (direct mode, older records)."""
    blocks = [r["cache"] for r in records if isinstance(r.get("cache"), dict)]
    if not blocks:
        return None
    n = {k: sum(1 for b in blocks if b["lookup"] == k) for k in ("hit", "partial", "miss", "group")}
    reused = sum(int(b["reused_tokens"]) for b in blocks if b["lookup"] != "group")
    filled = sum(int(b["prefilled_tokens"]) for b in blocks)
    total = reused + filled
    share = f" ({100 * reused / total:.0f}%)" if total else ""
    group = f", {n['group']} rows on their group's state" if n["group"] else ""
    return (f"prefix cache: {n['hit']} hits, {n['partial']} partial, {n['miss']} misses{group}; reused "
            f"{reused:,} of {total:,} prefix tokens looked up{share}, prefilled {filled:,}")
