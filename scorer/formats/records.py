"""Decision records (the output): one JSONL line each (:func:`dumps_record`), and every record read back checked.

Every command that reads a records file reads it through :func:`read_records`, which validates each record the
same way (:func:`check_record`: the JSON Schema of the version the record names, :mod:`scorer.formats.record_schema`,
then the consistency between its numbers that the commands rely on).
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from scorer.core.errors import InputError, brief
from scorer.core.jsonl import decode_line, file_bytes, jsonl_lines
from scorer.decision.questions import check_option_ids
from scorer.formats.record_schema import RECORD_SCHEMAS, a_json_type, first_violation, message_field
from scorer.formats.rows import MAX_DEPTH, codes, nonempty_str

SCORE_KIND = (
    "uncalibrated conditional option score: softmax over the declared options' answer-slot logits "
    "at the answer position, conditional on the prompt; not a calibrated probability of correctness"
)
SEQUENCE_SCORE_KIND = (
    "uncalibrated conditional option score of the sequence readout: softmax over each option's {norm} of the "
    "log-probabilities of its id's tokens as a continuation of the prompt, conditional on the prompt ({backend} "
    "{dtype} weights); not a calibrated probability of correctness"
)
"""``score_kind`` of a ``--slots sequence`` record (filled with its normalisation and the model's backend and dtype)."""


def dumps_record(record: dict[str, Any]) -> bytes:
    """One record as one JSONL line (orjson; NaN is refused so a record is always valid JSON)."""
    return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a whole JSONL file of records: every command that reads records reads them here.

    Each line must be one record that :func:`check_record` accepts (the JSON Schema of the version it
    names, then the consistency the commands rely on); ids are unique within the file and the file holds
    at least one record. The first problem raises :class:`InputError` naming the file, the line, the
    field, what was wrong and what would be right.
    """
    name = str(path)
    data = file_bytes(Path(path), name, "a JSONL file of SemIf records")
    if name.endswith(".gz"):  # a large committed run is kept compressed (benchmarks/single_request_study.py)
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(name, None, None, f"not a gzip file ({exc})",
                             "a gzip-compressed JSONL file of SemIf records (.jsonl.gz), or a plain .jsonl") from None
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for lineno, raw in jsonl_lines(data, name):
        if not raw.strip():
            raise InputError(name, lineno, None, "empty line", "one record per line, no blank lines")
        rec = check_record(decode_line(raw, name, lineno, "one record per line"), name, lineno)
        first = seen.setdefault(rec["id"], lineno)
        if first != lineno:
            raise InputError(name, lineno, "id", f"duplicate id {brief(rec['id'])} (first on line {first})",
                             "one record per decision id")
        out.append(rec)
    if not out:
        raise InputError(name, None, None, "no records", "a JSONL file with at least one SemIf record")
    return out


def validate_records(records: Iterable[Any], name: str = "records") -> None:
    """Raise :class:`InputError` on the first record that :func:`check_record` refuses (``name``:1 is the
    first record); for records held in memory, e.g. a command's output in a test."""
    for i, rec in enumerate(records, start=1):
        check_record(rec, name, i)


# --- checking one record ------------------------------------------------------------------------------------------
READOUT_TOL = 1e-6
"""Tolerance of the consistency checks between a record's numbers (probabilities against the softmax of
its logits, the margin, the choice's probability, calibrated logits against raw logits and offsets): far
above float64 rounding in what SemIf writes, far below a difference a decision could turn on."""
LETTERS = "ABCDEFGHIJKLMNOP"
"""The answer letters of the prompt, in the order options are lettered."""
BY_ID = ("ids", "sequence", "json")
"""The readouts that read each option by its id: the model never sees letters."""
RECORD_MAX_DEPTH = MAX_DEPTH + 2
"""Deepest nesting in a record: a row's extra value (:data:`MAX_DEPTH`) sits under ``extra`` in the record."""


def _walk(rec: dict[str, Any], name: str, line: int | None) -> None:
    """Refuse a number that is not finite (possible in records built in memory; orjson refuses ``1e999`` and
    ``NaN`` as JSON) or nesting deeper than :data:`RECORD_MAX_DEPTH` anywhere in ``rec``, without recursion.
    Paths are only worked out once a problem is found (:func:`_locate`)."""
    stack: list[tuple[Any, int]] = [(rec, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > RECORD_MAX_DEPTH:
            _locate(rec, name, line)
        for v in (value.values() if isinstance(value, dict) else value):
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
            elif isinstance(v, float) and not math.isfinite(v):
                _locate(rec, name, line)


def _locate(rec: dict[str, Any], name: str, line: int | None) -> None:
    """The error of :func:`_walk`, with the field where it is."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(v, (k,)) for k, v in rec.items()]
    while stack:
        value, at = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(name, line, message_field(at), f"{value}", "a finite number")
        if isinstance(value, (dict, list)):
            if len(at) >= RECORD_MAX_DEPTH:
                raise InputError(name, line, message_field(at[:2]),
                                 f"JSON nested more than {RECORD_MAX_DEPTH} levels deep",
                                 f"at most {RECORD_MAX_DEPTH} levels of nested arrays/objects in a record")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((v, (*at, k)) for k, v in items)


def _softmax(z: list[float]) -> list[float]:
    top = max(z)
    e = [math.exp(v - top) for v in z]
    s = sum(e)
    return [v / s for v in e]


def _check_readout(blk: dict[str, Any], ids: list[str], where: str, temperature: float, name: str,
                   line: int | None) -> None:
    """The readout fields of a record or of its ``calibrated`` block agree with each other and the options."""
    n = len(ids)
    p, z = blk["probabilities"], blk["option_logits"]
    for key, values in (("probabilities", p), ("option_logits", z)):
        if len(values) != n:
            raise InputError(name, line, where + key, f"{len(values)} values for {n} options {brief(ids)}",
                             "one value per option id, in the order of option_ids")
    if any(not 0 <= v <= 1 for v in p):
        raise InputError(name, line, where + "probabilities", f"{brief(p)} has a value outside [0, 1]",
                         "probabilities between 0 and 1")
    soft = _softmax([v / temperature for v in z])
    worst = max(range(n), key=lambda i: abs(p[i] - soft[i]))
    if abs(p[worst] - soft[worst]) > READOUT_TOL:
        scaled = " / temperature" if temperature != 1.0 else ""
        raise InputError(name, line, where + "probabilities",
                         f"{brief(p)} is not the softmax of {where}option_logits{scaled} (value {worst} "
                         f"should be {soft[worst]:.9g})",
                         f"probabilities = softmax(option_logits{scaled}) within {READOUT_TOL:g}")
    choice, tie, tied = blk["choice"], blk["tie"], blk["tied_option_ids"]
    if choice is not None and choice not in ids:
        raise InputError(name, line, where + "choice", f"{brief(choice)} is not an option id",
                         f"one of {brief(ids)}, or null on a tie")
    if tie != (choice is None):
        raise InputError(name, line, where + "tie", f"{'true' if tie else 'false'} with choice {brief(choice)}",
                         "true exactly when choice is null")
    for i, t in enumerate(tied):
        if t not in ids or t in tied[:i]:
            raise InputError(name, line, f"{where}tied_option_ids[{i}]",
                             f"{brief(t)} is {'a repeated' if t in ids else 'not an'} option id",
                             f"distinct ids among {brief(ids)}")
    if tie and len(tied) < 2:
        raise InputError(name, line, where + "tied_option_ids", f"{len(tied)} tied options on a tie",
                         "the 2 or more options whose logits tie")
    if not tie and tied:
        raise InputError(name, line, where + "tied_option_ids", f"{brief(tied)} without a tie", "[] when tie is false")
    if choice is not None:
        c = ids.index(choice)
        rival = max((j for j in range(n) if j != c), key=lambda j: z[j])
        if z[c] <= z[rival]:
            raise InputError(name, line, where + "choice", f"{brief(choice)} has logit {z[c]!r}, not above the "
                             f"{z[rival]!r} of {ids[rival]!r}", "the option with the largest logit (on a tie, null)")
    top = sorted(p, reverse=True)
    if abs(blk["margin"] - (top[0] - top[1])) > READOUT_TOL:
        raise InputError(name, line, where + "margin", f"{blk['margin']!r} is not the top probability minus the "
                         f"second ({top[0] - top[1]:.9g})", f"top minus second probability within {READOUT_TOL:g}")


def _check_calibrated(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``calibrated`` block: its own readout, and its logits = raw logits / temperature - offsets."""
    blk = rec["calibrated"]
    n = len(ids)
    offsets = blk["offsets"]
    if len(offsets) != n:
        raise InputError(name, line, "calibrated.offsets", f"{len(offsets)} values for {n} options {brief(ids)}",
                         "one offset per option id, in the order of option_ids")
    for i, u in enumerate(blk["unseen_option_ids"]):
        if u not in ids:
            raise InputError(name, line, f"calibrated.unseen_option_ids[{i}]", f"{brief(u)} is not an option id",
                             f"ids among {brief(ids)}")
    if blk["signature"] != rec["signature"]:
        raise InputError(name, line, "calibrated.signature", f"{brief(blk['signature'])} differs from the record's "
                         f"signature {rec['signature']!r}", "the signature of the record it calibrates")
    applied, level = blk["applied"], blk["level"]
    if blk["method"] != "none" and applied != (level is not None):
        raise InputError(name, line, "calibrated.level", f"{brief(level)} with applied {str(applied).lower()}",
                         "the level of the entry that applied (signature, family, options or global); null exactly "
                         "when applied is false")
    if not applied and (blk["temperature"] != 1.0 or any(v != 0 for v in offsets)):
        raise InputError(name, line, "calibrated.offsets", f"{brief(offsets)} (temperature {blk['temperature']!r}) "
                         "with applied false", "offsets 0 and temperature 1 when applied is false (the raw readout)")
    _check_readout(blk, ids, "calibrated.", 1.0, name, line)
    t, z, c = blk["temperature"], rec["option_logits"], blk["option_logits"]
    for i in range(n):
        want = z[i] / t - offsets[i]
        if abs(c[i] - want) > READOUT_TOL * max(1.0, abs(want)):
            raise InputError(name, line, f"calibrated.option_logits[{i}]",
                             f"{c[i]!r} is not option_logits / temperature - offsets ({want:.9g})",
                             f"option_logits[i] / calibrated.temperature - calibrated.offsets[i] within "
                             f"{READOUT_TOL:g} (relative)")


def _check_slots(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``slots`` block: one distinct slot token per option, whose texts are the letters or the option ids (as
    its ``readout`` says), and the full vocabulary's argmax is a slot exactly when it is one of them."""
    slots = rec["slots"]
    texts, tokens = slots["texts"], slots["token_ids"]
    by_position = slots["readout"] in ("letters", "codes")
    want = rec["letters"] if by_position else ids
    if texts != want:
        raise InputError(name, line, "slots.texts", f"{brief(texts)} for readout {slots['readout']!r}",
                         f"{brief(want)}: the {'options letters or numbers' if by_position else 'option ids'}")
    if "closing" in slots:
        _check_closing(slots, ids, name, line)
    if slots["readout"] in ("sequence", "codes", "json"):
        _check_sequence(rec, ids, name, line)
        tokens = [t[0] for t in tokens]  # the argmax at the answer position is a slot when it starts an option
    elif len(tokens) != len(ids) or len(set(tokens)) != len(tokens) or not all(isinstance(t, int) for t in tokens):
        raise InputError(name, line, "slots.token_ids", f"{brief(tokens)} for {len(ids)} options",
                         "one distinct token id per option, in the order of option_ids")
    else:
        for key in ("normalisation", "token_counts", "token_logprobs"):
            if key in slots:
                raise InputError(name, line, f"slots.{key}", f"present with readout {slots['readout']!r}",
                                 "absent: only the sequence readout has it")
    arg = rec["full_vocab_argmax"]
    if arg["is_slot"] != (arg["token_id"] in tokens):
        raise InputError(name, line, "full_vocab_argmax.is_slot", f"{str(arg['is_slot']).lower()} for token "
                         f"{arg['token_id']} (slots {brief(tokens)})", "true exactly when the token is a slot")


def _check_sequence(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``--slots sequence`` block: per option a continuation (none the start of another's), its token count and its
    tokens' log-probabilities, whose sum or mean (``normalisation``) is the option's logit, and whose exponentiated sums
    add up to ``allowed_token_mass``."""
    slots = rec["slots"]
    for key in ("normalisation", "token_counts", "token_logprobs"):
        if key not in slots:
            raise InputError(name, line, f"slots.{key}", f"missing with readout {slots['readout']!r}",
                             "the sequence readout's normalisation, token counts and token log-probabilities")
    conts, counts, lps = slots["token_ids"], slots["token_counts"], slots["token_logprobs"]
    norm = slots["normalisation"]
    if len(conts) != len(ids) or not all(isinstance(c, list) for c in conts):
        raise InputError(name, line, "slots.token_ids", f"{brief(conts)} for {len(ids)} options",
                         "one list of token ids per option (its continuation), in the order of option_ids")
    for i, c in enumerate(conts):
        for j, other in enumerate(conts[:i]):
            short, long_ = (other, c) if len(other) <= len(c) else (c, other)
            if long_[: len(short)] == short:
                raise InputError(name, line, f"slots.token_ids[{i}]", f"{brief(c)} and option {j}'s {brief(other)}",
                                 "continuations none of which begins another")
    if counts != [len(c) for c in conts]:
        raise InputError(name, line, "slots.token_counts", f"{brief(counts)}",
                         f"{[len(c) for c in conts]}: the length of each option's continuation")
    for i, (lp, c) in enumerate(zip(lps, conts, strict=False)):
        if len(lp) != len(c) or any(v > READOUT_TOL for v in lp):
            raise InputError(name, line, f"slots.token_logprobs[{i}]", f"{brief(lp)} for {len(c)} tokens",
                             "one log-probability (<= 0) per token of the option's continuation")
    if len(lps) != len(ids):
        raise InputError(name, line, "slots.token_logprobs", f"{len(lps)} lists for {len(ids)} options",
                         "one list per option, in the order of option_ids")
    for i, lp in enumerate(lps):
        score = sum(lp) if norm == "sum" else sum(lp) / len(lp)
        z = rec["option_logits"][i]
        if abs(z - score) > READOUT_TOL * max(1.0, abs(score)):
            raise InputError(name, line, f"option_logits[{i}]", f"{z!r} is not the {norm} of slots.token_logprobs[{i}] "
                             f"({score:.9g})", f"the {norm} of the option's token log-probabilities within "
                             f"{READOUT_TOL:g} (relative)")
    mass = sum(math.exp(sum(lp)) for lp in lps)
    # relative: a multi-token continuation's probability may be far below any absolute tolerance
    if not math.isclose(rec["allowed_token_mass"], min(mass, 1.0), rel_tol=READOUT_TOL, abs_tol=1e-300):
        raise InputError(name, line, "allowed_token_mass", f"{rec['allowed_token_mass']!r} for continuations of "
                         f"total probability {mass:.9g}", "sum_i exp(sum slots.token_logprobs[i]) within "
                         f"{READOUT_TOL:g} (relative)")


def _check_closing(slots: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A json record's ``slots.closing`` (each entry's shape is the schema's): only the json readout has one, and it
    has one class per option."""
    closing = slots["closing"]
    if slots["readout"] != "json":
        raise InputError(name, line, "slots.closing", f"present with readout {slots['readout']!r}",
                         "no closing classes except with readout json")
    if len(closing) != len(ids):
        raise InputError(name, line, "slots.closing", f"{brief(closing)} for {len(ids)} options",
                         "one closing class per option, in the order of option_ids")


def _check_permute(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A ``permute`` block: one row of probabilities per ordering, aligned with option_ids, averaging to the
    record's probabilities (unless a temperature rescaled them since)."""
    perm = rec["permute"]
    passes, n = perm["probabilities"], len(ids)
    if not passes or len(passes) != len(perm["shifts"]):
        raise InputError(name, line, "permute.probabilities", f"{len(passes)} orderings for {len(perm['shifts'])} "
                         "shifts", "one list of probabilities per shift (at least one)")
    for j, row in enumerate(passes):
        if len(row) != n or any(not 0 <= v <= 1 for v in row):
            raise InputError(name, line, f"permute.probabilities[{j}]", f"{brief(row)}",
                             f"{n} probabilities between 0 and 1, aligned with option_ids")
    orders = perm.get("option_ids")
    if orders is not None:
        if not isinstance(orders, list) or len(orders) != len(passes):
            raise InputError(name, line, "permute.option_ids", f"{brief(orders)}",
                             f"a list of {len(passes)} orderings of option_ids, one per shift")
        for j, order in enumerate(orders):
            if not isinstance(order, list) or sorted(map(str, order)) != sorted(ids) \
                    or not all(isinstance(o, str) for o in order):
                raise InputError(name, line, f"permute.option_ids[{j}]", f"{brief(order)}",
                                 f"an ordering of {brief(ids)}")
    if rec.get("temperature") in (None, 1.0):
        mean = [sum(row[i] for row in passes) for i in range(n)]
        total = sum(mean)
        for i in range(n):
            if total <= 0 or abs(mean[i] / total - rec["probabilities"][i]) > READOUT_TOL:
                raise InputError(name, line, "probabilities", f"{brief(rec['probabilities'])} is not the mean of "
                                 "permute.probabilities", f"the mean over the orderings within {READOUT_TOL:g}")


REMOTE_NULLS = ("allowed_token_mass", "full_vocab_argmax", "input_tokens", "prompt_template", "prompt_sha256",
                "tokens_sha256", "prefix_tokens", "suffix_tokens", "cache_hit", "prefix_sha256")
"""The token-level fields a remote decision record holds null (no prompt, tokens or logits are seen here), and only
it: every other record fills the first six (the last four are null in direct mode too)."""
_TOKEN_LEVEL = REMOTE_NULLS[:6]


def served_probabilities(remote: dict[str, Any], ids: list[str]) -> list[float] | None:
    """The probabilities a remote decision record's ``remote.answer`` served for ``ids``, in their order (choice:
    by id; noul: P(yes), P(no) = noul, 1 - noul; score: by level index), or None where the answer does not hold one
    number per option."""
    ans, kind = remote.get("answer"), remote.get("question_type")
    if not isinstance(ans, dict):
        return None
    try:
        if kind == "noul":
            if type(ans.get("noul")) not in (int, float):
                return None
            p_yes = float(ans["noul"])
            return [p_yes if i == "yes" else 1.0 - p_yes for i in ids] if sorted(ids) == ["no", "yes"] else None
        probs = ans["probabilities"]
        keys = ids if kind == "choice" else [str(i) for i in range(len(ids))]
        if not isinstance(probs, dict) or sorted(probs) != sorted(keys):
            return None
        out = [probs[k] for k in keys]
        return [float(v) for v in out] if all(type(v) in (int, float) for v in out) else None
    except (KeyError, TypeError, ValueError):
        return None


def _check_remote(rec: dict[str, Any], ids: list[str], name: str, line: int | None) -> None:
    """A remote decision record (a ``remote`` block) has mode ``remote``, null token-level fields, no slots, cache
    or permute block, and probabilities that are the served ones renormalised (unless a temperature rescaled them);
    any other record has none of that: its token-level fields are filled and its mode is not ``remote``."""
    remote = rec.get("remote")
    if remote is None:
        if rec["mode"] == "remote":
            raise InputError(name, line, "mode", "'remote' without a remote block",
                             "direct, serial or shared (remote only in a remote decision record)")
        for key in _TOKEN_LEVEL:
            if rec[key] is None:
                raise InputError(name, line, key, "null in a record without a remote block",
                                 "the value the kernel read (null only in a remote decision record)")
        return
    if rec["mode"] != "remote":
        raise InputError(name, line, "mode", f"{brief(rec['mode'])} with a remote block", '"remote"')
    for key in REMOTE_NULLS:
        if rec[key] is not None:
            raise InputError(name, line, key, f"{brief(rec[key])} in a remote decision record",
                             "null: a remote decision API shows no prompt, tokens or logits")
    for key in ("slots", "cache", "permute"):
        if rec.get(key) is not None:
            raise InputError(name, line, key, "present in a remote decision record",
                             "absent: the block describes a token-level readout")
    served = served_probabilities(remote, ids)
    if served is None:
        raise InputError(name, line, "remote.answer", f"{brief(remote.get('answer'))} for options {brief(ids)}",
                         f"the served answer of a {remote.get('question_type')} question: one probability per option")
    total = sum(served)
    if total <= 0 or abs(total - remote["probability_sum"]) > READOUT_TOL * max(1.0, total):
        raise InputError(name, line, "remote.probability_sum", f"{brief(remote['probability_sum'])} for served "
                         f"probabilities summing to {total:.9g}", "the sum of the served probabilities")
    if rec.get("temperature") in (None, 1.0):
        for i, (p, s) in enumerate(zip(rec["probabilities"], served, strict=True)):
            if abs(p - s / total) > READOUT_TOL:
                raise InputError(name, line, f"probabilities[{i}]", f"{p!r} is not the served {s!r} / {total:.9g}",
                                 f"the server's probabilities renormalised, within {READOUT_TOL:g}")


def _check_cache(rec: dict[str, Any], name: str, line: int | None) -> None:
    """A ``cache`` block: its token counts add up to the record's prefix, and ``cache_hit`` agrees with its lookup."""
    blk, pre = rec["cache"], rec["prefix_tokens"]
    if pre is None:
        raise InputError(name, line, "cache", "a block with prefix_tokens null", "null in a direct record")
    reused, filled, kind = blk["reused_tokens"], blk["prefilled_tokens"], blk["lookup"]
    if reused + filled != pre:
        raise InputError(name, line, "cache.prefilled_tokens", f"{reused} reused + {filled} prefilled tokens for a "
                         f"{pre}-token prefix", "reused_tokens + prefilled_tokens = prefix_tokens")
    full = kind in ("hit", "group")
    if (full and filled) or (kind == "miss" and reused) or (kind == "partial" and not (reused and filled)):
        raise InputError(name, line, "cache.lookup", f"{kind!r} with {reused} reused and {filled} prefilled tokens",
                         "hit/group: nothing prefilled; miss: nothing reused; partial: some of each")
    if rec["cache_hit"] is not full:
        raise InputError(name, line, "cache_hit", f"{brief(rec['cache_hit'])} with cache.lookup {kind!r}",
                         "true exactly when cache.lookup is hit or group")


def check_record(rec: Any, name: str, line: int | None) -> dict[str, Any]:
    """Validate one decoded record, or raise :class:`InputError` naming ``name``, ``line`` and the field.

    Checked, in this order: a JSON object whose ``schema`` is one of :data:`RECORD_SCHEMAS`; no number that
    is not finite and no nesting deeper than :data:`RECORD_MAX_DEPTH`; the JSON Schema of the version the
    record names (``scorer/formats/schemas/record-v1.json`` or ``record-v2.json``); then what a schema cannot say
    and the commands rely on: option ids distinct and non-empty, the letters A, B, … one per option,
    probabilities and logits one per option, probabilities = softmax(option_logits / temperature),
    ``choice`` one of the option ids (the one with the largest logit) or null exactly on a tie, the tied ids among the
    options, the margin = top minus second probability; the same for a ``calibrated`` block, whose
    logits are the raw ones / temperature - offsets, whose signature is the record's and whose ``level`` is
    null exactly when it was not applied (then with offsets 0 and temperature 1); a ``slots`` block whose
    texts are the letters or the option ids as its readout says, one distinct token per option (v2 only: a v1
    record carries neither a signature nor a calibrated block); and a ``permute`` block whose
    per-ordering probabilities average to the record's; and a ``cache`` block whose reused and prefilled tokens
    add up to ``prefix_tokens``, as its lookup and ``cache_hit`` say; a ``remote`` block (a remote decision API's
    record) exactly with mode ``remote`` and null token-level fields (:data:`REMOTE_NULLS`), whose probabilities are
    the served ones renormalised. Returns ``rec``.
    """
    if not isinstance(rec, dict):
        raise InputError(name, line, None, f"a line holds {a_json_type(rec)}",
                         "one JSON object (a SemIf record) per line")
    version = rec.get("schema")
    if version not in RECORD_SCHEMAS:
        what = "missing" if "schema" not in rec else f"{brief(version)} is not a record schema this version reads"
        raise InputError(name, line, "schema", what, " or ".join(f'"{v}"' for v in RECORD_SCHEMAS))
    _walk(rec, name, line)
    problem = first_violation(rec, version)
    if problem is not None:
        raise InputError(name, line, *problem)
    ids: list[str] = rec["option_ids"]
    for i, o in enumerate(ids):
        if not nonempty_str(o) or o in ids[:i]:
            what = "a repeated id" if o in ids[:i] else "not a non-empty string"
            raise InputError(name, line, f"option_ids[{i}]", f"{brief(o)} is {what}", "distinct, non-empty option ids")
    readout = rec["slots"].get("readout") if isinstance(rec.get("slots"), dict) else None
    # a readout by id never shows the model letters: past 16 options its record numbers them, as codes does
    numbered = readout == "codes" or (readout in BY_ID and len(ids) > len(LETTERS))
    shown = list(codes(len(ids))) if numbered else list(LETTERS[:len(ids)])
    if rec["letters"] != shown or (not numbered and len(ids) > len(LETTERS)):
        raise InputError(name, line, "letters", f"{brief(rec['letters'])} for {len(ids)} options",
                         f"{brief(shown)}: options are numbered 1, 2, … in order (readout codes, or more than "
                         f"{len(LETTERS)} options read by id)" if numbered else
                         f"{list(LETTERS[:len(ids)])}: options are lettered A, B, … in order (more than "
                         f"{len(LETTERS)} options: numbered, readout codes, or read by id)")
    if version == "semif-record-v1":
        for key in ("signature", "calibrated"):
            if key in rec:
                raise InputError(name, line, key, "present in a semif-record-v1 record",
                                 'schema "semif-record-v2" (v1 records carry no signature and no calibrated block)')
    _check_readout(rec, ids, "", float(rec.get("temperature") or 1.0), name, line)
    if rec.get("type") is not None:  # what a typed answer is read from (scorer.decision.questions.answer_of)
        check_option_ids(rec["type"], ids, name, line, "option_ids")
    if "echo" in rec and [o["id"] for o in rec["echo"]["options"]] != ids:
        raise InputError(name, line, "echo.options", f"ids {brief([o['id'] for o in rec['echo']['options']])}",
                         f"the option_ids {brief(ids)}, in order")
    if version != "semif-record-v1":  # before the blocks whose checks read the token-level fields
        _check_remote(rec, ids, name, line)
    if "calibrated" in rec:
        if rec["calibrated"].get("uncovered") and rec["calibrated"]["applied"]:
            raise InputError(name, line, "calibrated.applied", "true with uncovered true",
                             "false: an uncovered decision keeps its raw numbers")
        _check_calibrated(rec, ids, name, line)
    if "slots" in rec:
        _check_slots(rec, ids, name, line)
    if "permute" in rec:
        _check_permute(rec, ids, name, line)
    if isinstance(rec.get("cache"), dict):
        _check_cache(rec, name, line)
    return rec
