"""The logit evidence of a run checked against itself: top-k lists, greedy choices, slot and yes/no shares.

Every probability a run records is a softmax of the same logits, so the ones recorded twice must agree:

* a generated token's ``p`` is float32 ``exp(logit - logsumexp)``; its ``top_k`` probabilities are the
  float64 ones of the same logits. Decoding is greedy, so the model's own argmax — the chosen token, or
  ``free_argmax`` where the grammar overruled it — is ``top_k[0]``: same id, same ``p`` (within
  :data:`GREEDY_P_RTOL`), or a token tied with it;
* a typed decision's ``top_k`` is over the full vocabulary: ``full_vocab_argmax`` is its first entry (or
  tied with it), and an entry that is an answer slot has ``p = probabilities[slot] * allowed_token_mass``
  (also where a remote engine's log-probabilities know only some ids: the mass is then taken against 1);
* a generated token's ``yes_no`` split: where the token (or a top-k entry) is the yes or the no token,
  its ``p`` is that share times ``mass``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

# Generated tokens: measured |p - top_k p| / p in the committed traces is at most 1.02e-6 (float32 exp of
# (logit - lse), whose rounding grows with |logit|); 1e-4 leaves room for logits ~100x larger.
GREEDY_P_RTOL = 1e-4
# float64 against float64 of the same logits (measured: a few ulp, < 3e-15).
F64_RTOL = 1e-9


def _close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def check_top_k(top_k: list[dict[str, Any]], k: int) -> list[str]:
    """A top-k list: ``k`` distinct tokens, probabilities in [0, 1], sorted, summing to at most 1."""
    out = []
    if len(top_k) != k:
        out.append(f"top_k has {len(top_k)} entries, protocol.top_k is {k}")
    ids = [e["id"] for e in top_k]
    if len(set(ids)) != len(ids):
        out.append(f"top_k lists a token twice: {ids}")
    ps = [e["p"] for e in top_k]
    if any(not 0.0 <= p <= 1.0 for p in ps) or any(b > a for a, b in pairwise(ps)):
        out.append(f"top_k probabilities {ps} are not in [0, 1] and in decreasing order")
    elif sum(ps) > 1.0 + F64_RTOL:
        out.append(f"top_k probabilities sum to {sum(ps)} > 1")
    return out


def _entry(top_k: list[dict[str, Any]], tid: int) -> dict[str, Any] | None:
    return next((e for e in top_k if e["id"] == tid), None)


def check_greedy_token(t: dict[str, Any]) -> list[str]:
    """A generated token of a greedy run against its own ``top_k`` (see the module's docstring)."""
    top_k = t["top_k"]
    if not top_k:
        return []
    out = []
    masked = t.get("free_argmax") is not None
    best = t["free_argmax"] if masked else t
    what = "free_argmax (the model's own choice)" if masked else "the chosen token"
    top, entry = top_k[0], _entry(top_k, best["id"])
    if entry is None or not _close(best["p"], entry["p"], GREEDY_P_RTOL) \
            or not _close(entry["p"], top["p"], GREEDY_P_RTOL):
        out.append(f"greedy decoding picks the model's top-1, but top_k[0] is token {top['id']} (p {top['p']}) "
                   f"and {what} is token {best['id']} (p {best['p']})")
    if masked:
        if entry is not None and best["text"] != entry["text"]:
            out.append(f"free_argmax text {best['text']!r} is not its top_k entry's {entry['text']!r}")
        chosen = _entry(top_k, t["id"])
        if chosen is not None and not _close(t["p"], chosen["p"], GREEDY_P_RTOL):
            out.append(f"the chosen token {t['id']} has p {t['p']} but its top_k entry has p {chosen['p']}")
        if chosen is not None and t["text"] != chosen["text"]:
            out.append(f"the chosen token {t['id']} has text {t['text']!r} but its top_k entry {chosen['text']!r}")
        # top_k lists the k most probable tokens, so one outside it is no more probable than the k-th. (A masked
        # token outside top_k and below it is bound to its text by nothing in the trace: no vocabulary is kept.)
        if chosen is None and t["p"] > top_k[-1]["p"] * (1 + GREEDY_P_RTOL):
            out.append(f"the chosen token {t['id']} is not in top_k, yet its p {t['p']} is above the k-th entry's "
                       f"{top_k[-1]['p']}")
        if t["p"] > top["p"] * (1 + GREEDY_P_RTOL):
            out.append(f"the chosen token's p {t['p']} is above the model's top-1 p {top['p']}")
    return out + _check_yes_no(t)


def _check_yes_no(t: dict[str, Any]) -> list[str]:
    yn = t["yes_no"]
    if yn is None:
        return []
    if yn["yes_id"] == yn["no_id"]:
        return [f"yes_no names token {yn['yes_id']} for both yes and no"]
    out = []
    for share, key in (("yes", "yes_id"), ("no", "no_id")):
        want = yn[share] * yn["mass"]
        if t["id"] == yn[key] and not _close(t["p"], want, GREEDY_P_RTOL):
            out.append(f"the chosen token is the {share} token {t['id']} with p {t['p']}, but yes_no gives it "
                       f"{yn[share]} x mass {yn['mass']} = {want}")
        entry = _entry(t["top_k"], yn[key])
        if entry is not None and not _close(entry["p"], want, F64_RTOL):
            out.append(f"top_k gives the {share} token {yn[key]} p {entry['p']}, but yes_no gives it "
                       f"{yn[share]} x mass {yn['mass']} = {want}")
    return out


def check_decision_evidence(d: dict[str, Any], slot_ids: list[int]) -> list[str]:
    """A typed decision's full-vocabulary evidence against its slot probabilities (see the module's docstring)."""
    out = []
    top_k, arg, mass = d["top_k"], d["full_vocab_argmax"], d["allowed_token_mass"]
    entry = _entry(top_k, arg["token_id"])
    if top_k and (entry is None or entry["text"] != arg["text"] or not _close(entry["p"], top_k[0]["p"], F64_RTOL)):
        # the argmax is top_k[0], or a token exactly tied with it (the two sorts may order a tie differently)
        out.append(f"full_vocab_argmax is token {arg['token_id']} {arg['text']!r} but top_k[0] is token "
                   f"{top_k[0]['id']} {top_k[0]['text']!r}")
    if arg["is_slot"] != (arg["token_id"] in slot_ids):
        out.append(f"full_vocab_argmax.is_slot is {arg['is_slot']} for token {arg['token_id']} (slots {slot_ids})")
    if not 0.0 <= mass <= 1.0:
        return [*out, f"allowed_token_mass {mass} is not in [0, 1]"]
    others = sum(e["p"] for e in top_k if e["id"] not in slot_ids)
    if mass > 1.0 - others + F64_RTOL:
        out.append(f"allowed_token_mass {mass} leaves less than the {others} that the top_k's other tokens hold")
    floor = top_k[-1]["p"] if top_k else 1.0
    for slot, p in zip(slot_ids, d["probabilities"], strict=False):
        want = p * mass
        entry = _entry(top_k, slot)
        if entry is not None and not _close(entry["p"], want, F64_RTOL):
            out.append(f"top_k gives slot token {slot} p {entry['p']}, but probabilities x allowed_token_mass "
                       f"give {want}")
        elif entry is None and want > floor * (1 + F64_RTOL):
            out.append(f"slot token {slot} has p {want} (probabilities x allowed_token_mass), more than the last "
                       f"top_k entry's {floor}, yet it is not in top_k")
    return out
