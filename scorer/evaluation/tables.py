"""Readable tables of records for people (stdout); the files hold the full records.

The ``choice`` column is the choice to act on: the calibrated one when a record carries a ``calibrated``
block, else the raw one; the raw choice stands beside it whenever any record is calibrated, and the label
counts are given for both. With an abstention policy (:class:`scorer.decision.policy.Policy`) each row also says
whether it would be acted on, and the counts say how many were and how many of those match their label.
"""

from __future__ import annotations

from typing import Any

from scorer.decision.policy import Policy, acting


def _fmt_p(p: float) -> str:
    return f"{p:.3f}"


def _fmt_mass(mass: float | None) -> str:
    """The mass column: ``-`` for a remote decision record (no token distribution seen)."""
    return f"{'-':>5}" if mass is None else f"{mass:>5.3f}"


def _typed(r: dict[str, Any]) -> str:
    """The typed answer of a record of a ``yesno`` or ``score`` row (its acting readout), else empty."""
    p = acting(r)["probabilities"]
    if r.get("type") == "yesno":
        return f"p_yes {p[r['option_ids'].index('yes')]:.3f}"
    if r.get("type") == "score":
        return f"E {sum(i * v for i, v in enumerate(p)):.2f}"
    return ""


def _shown(choice: Any, tied: list[str]) -> str:
    return str(choice) if choice is not None else f"TIE{tied}"


def print_table(records: list[dict[str, Any]], policy: Policy | None = None) -> None:
    """One line per decision: id, the choice to act on (raw beside it when any record is calibrated), its
    probability, margin, allowed mass, time, typed answer, label if any; then the counts."""
    if not records:
        print("(no records)")
        return
    m = records[0]["model"]
    print(f"model {m.get('key')} · backend {m.get('backend')} · {m.get('dtype')} on {m.get('device')} · "
          f"mode {records[0]['mode']} · {len(records)} decisions")
    calibrated = any(isinstance(r.get("calibrated"), dict) for r in records)
    if calibrated:
        print("choice, p and margin are the calibrated readout (the choice to act on); raw is the model's "
              "uncalibrated choice")
    elif any("remote" in r for r in records):
        print("probabilities are a remote decision API's, as its server answered them (renormalised over the "
              "declared options; no token-level audit: no mass)")
    else:
        print("probabilities are uncalibrated conditional option scores (softmax over the declared options)")
    w = max(len(r["id"]) for r in records)
    cw = max(len(_shown(acting(r)["choice"], acting(r)["tied_option_ids"])) for r in records)
    rw = max(len(_shown(r["choice"], r["tied_option_ids"])) for r in records) if calibrated else 0
    raw_head = f"  {'raw':<{rw}}" if calibrated else ""
    act_head = "  act    " if policy is not None else ""
    print(f"{'id':<{w}}  {'choice':<{cw}}{raw_head}  {'p':>5}  {'margin':>6}  {'mass':>5}  {'ms':>7}{act_head}"
          f"  {'answer':<11}  label")
    n = {"labelled": 0, "acting": 0, "raw": 0, "uncovered": 0, "confident": 0, "confident_ok": 0,
         "confident_labelled": 0}
    for r in records:
        a = acting(r)
        label = r.get("extra", {}).get("label")
        block = r.get("calibrated")
        n["uncovered"] += bool(isinstance(block, dict) and block.get("uncovered"))
        mark = ""
        if label is not None:
            n["labelled"] += 1
            n["acting"] += a["choice"] == label
            n["raw"] += r["choice"] == label
            mark = f"{label} {'✓' if a['choice'] == label else '✗'}"
        act = ""
        if policy is not None:
            ok = policy.verdict(r).confident
            n["confident"] += ok
            if ok and label is not None:
                n["confident_labelled"] += 1
                n["confident_ok"] += a["choice"] == label
            act = f"  {'act' if ok else 'abstain':<7}"
        raw = f"  {_shown(r['choice'], r['tied_option_ids']):<{rw}}" if calibrated else ""
        print(f"{r['id']:<{w}}  {_shown(a['choice'], a['tied_option_ids']):<{cw}}{raw}  "
              f"{_fmt_p(max(a['probabilities'])):>5}  {a['margin']:>6.3f}  {_fmt_mass(r['allowed_token_mass'])}  "
              f"{1000 * r['timing']['total_s']:>7.1f}{act}  {_typed(r):<11}  {mark}")
    total_s = sum(r["timing"]["total_s"] for r in records)
    tail = ""
    if n["labelled"]:
        what = " calibrated choices" if calibrated else ""
        tail = f" · {n['acting']}/{n['labelled']}{what} match their label"
        if calibrated:
            tail += f" (raw: {n['raw']}/{n['labelled']})"
    rate = f"{len(records) / total_s:.2f} decisions/s" if total_s > 0 else "n/a decisions/s"
    print(f"total {total_s:.2f} s, {rate}{tail}")
    if n["uncovered"]:
        print(f"{n['uncovered']} decisions uncovered by the calibration (on_uncovered=raw): their numbers are raw")
    if policy is not None:
        prec = (f"; {n['confident_ok']}/{n['confident_labelled']} of the labelled ones match their label"
                if n["confident_labelled"] else "")
        print(f"policy {policy.describe()}: act on {n['confident']}/{len(records)}{prec}")
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
