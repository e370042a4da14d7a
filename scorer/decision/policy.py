"""Abstention and escalation: when a decision may be acted on, and when it goes to a human or another path.

One rule (:func:`escalates`): a decision is escalated — not acted on, sent to a person (abstention) or re-asked on
the accurate engine (two-path routing, live or judged offline) — when it is missing, a tie, or its margin (top minus
second probability) is under the threshold. Which margin is its one parameter, ``readout``: ``acting`` (the
calibrated block when the record carries one, else the raw readout: :func:`acting`; abstention and live routing with
calibrated engines) or ``raw`` (the model's own readout: ``semif route`` on two runs and ``route_live``, which
measure the policy on uncalibrated runs).

A :class:`Policy` applies that rule to one record and says :class:`Verdict` confident or not, with the reason:

* never on a tie;
* never when ``allowed_token_mass`` is below ``min_allowed_token_mass`` (the model wanted to say something
  else than an option letter); a remote decision record has none (null: :func:`below_mass_floor`), so it clears
  only a floor of 0;
* a **margin** policy: confident when the acting margin is at least ``margin``;
* a **threshold** policy (``semif calibrate thresholds`` → ``T.json``, :func:`load_policy`): confident when
  the acting margin is at least the threshold chosen for the record's decision signature, out of fold, for a
  target precision. A signature the file has no threshold for uses the file's ``fallback`` (chosen on all
  signatures pooled); a threshold of ``null`` means no threshold reached the precision on the labelled
  runs, so that signature is never confident.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scorer.core.checks import OptionError
from scorer.core.errors import InputError, brief
from scorer.core.hashing import sha256_hex

THRESHOLDS_KIND = "abstain-thresholds"
"""The ``kind`` of a ``semif calibrate thresholds`` file."""
THRESHOLDS_FORMAT = "semif-thresholds-v1"
"""Its ``format``."""


def acting(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The readout a decision is acted on: the calibrated block when there is one, else the raw record."""
    cal = rec.get("calibrated")
    return cal if isinstance(cal, dict) else rec


READOUT_FIELDS = ("probabilities", "option_logits", "choice", "margin", "tie", "tied_option_ids")
"""A record's readout fields: what a ``calibrated`` block replaces for whoever acts on the calibrated decision."""


def calibrated_view(record: dict[str, Any]) -> dict[str, Any]:
    """The record as a consumer of calibrated decisions sees it: the top-level readout fields replaced by
    the calibrated block's (records without a block are returned unchanged)."""
    block = record.get("calibrated")
    if not isinstance(block, dict):
        return record
    return {**record, **{k: block[k] for k in READOUT_FIELDS}}


READOUTS = ("acting", "raw")
"""Which readout's margin :func:`escalates` and :class:`Policy` judge (module docstring)."""


def readout_of(record: Mapping[str, Any], readout: str = "acting") -> Mapping[str, Any]:
    """The readout of ``record`` a policy judges: its acting one (:func:`acting`) or its raw one."""
    if readout not in READOUTS:
        raise OptionError("readout", f"{brief(readout)} is not one of {', '.join(READOUTS)}")
    return acting(record) if readout == "acting" else record


def escalates(record: Mapping[str, Any] | None, threshold: float, readout: str = "acting") -> bool:
    """The one escalation rule (module docstring): True when ``record`` is missing (the fast path produced none), is
    a tie, or its ``readout``'s margin is below ``threshold``."""
    if record is None:
        return True
    r = readout_of(record, readout)
    return bool(r["tie"]) or float(r["margin"]) < threshold


@dataclass(frozen=True)
class Verdict:
    """A policy's judgement of one decision."""

    confident: bool
    """True: act on the decision's final choice."""
    reason: str
    """Why, in words (``margin 0.031 < 0.12 (threshold of signature 3f2a…)``)."""


def unit_interval(value: Any, option: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        raise OptionError(option, f"{brief(value)} is not a number from 0 to 1")
    return float(value)


@dataclass(frozen=True)
class Policy:
    """When a decision may be acted on (module docstring). ``Policy(margin=0.2, min_allowed_token_mass=0.5)``
    or :func:`load_policy` for per-signature thresholds."""

    margin: float = 0.0
    """Least acting margin (margin policy; ignored when ``thresholds`` is given)."""
    min_allowed_token_mass: float = 0.0
    """Least ``allowed_token_mass``; below it the decision is not confident whatever its margin."""
    thresholds: Mapping[str, float | None] | None = None
    """Least acting margin per decision signature (None: that signature is never confident)."""
    fallback: float | None = None
    """Threshold policy: the least margin of a signature not in ``thresholds`` (None: not confident)."""
    source: str = "given"
    """Where the policy came from (a threshold file's path and sha256)."""
    precision: float | None = None
    """The target precision the thresholds were chosen for (threshold files)."""
    readout: str = "acting"
    """Whose margin is judged: the acting readout (calibrated when there is a block) or the raw one."""
    _frozen: Mapping[str, float | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        readout_of({}, self.readout)  # a readout that is not one of READOUTS is refused here
        object.__setattr__(self, "margin", unit_interval(self.margin, "margin"))
        object.__setattr__(self, "min_allowed_token_mass",
                           unit_interval(self.min_allowed_token_mass, "min_allowed_token_mass"))
        if self.fallback is not None:
            object.__setattr__(self, "fallback", unit_interval(self.fallback, "fallback"))
        if self.thresholds is not None:
            if not isinstance(self.thresholds, Mapping):
                raise OptionError("thresholds", f"{brief(self.thresholds)} is not a mapping signature -> margin")
            checked = {str(k): None if v is None else unit_interval(v, f"thresholds.{k}")
                       for k, v in self.thresholds.items()}
            object.__setattr__(self, "_frozen", checked)

    def verdict(self, record: Mapping[str, Any]) -> Verdict:
        """Whether ``record`` (a SemIf record) may be acted on under this policy, and why: :func:`escalates`' rule,
        with the threshold of the record's signature (threshold policy) and the floor on ``allowed_token_mass``."""
        r = readout_of(record, self.readout)
        if r["tie"]:
            return Verdict(False, "a tie: no choice to act on")
        mass = record["allowed_token_mass"]
        if below_mass_floor(mass, self.min_allowed_token_mass):
            if mass is None:
                return Verdict(False, f"no allowed_token_mass (a remote decision API's record) to hold to the floor "
                                      f"{self.min_allowed_token_mass:g}")
            return Verdict(False, f"allowed_token_mass {float(mass):.3f} < floor {self.min_allowed_token_mass:g}")
        m = float(r["margin"])
        if self.thresholds is None:
            ok = not escalates(record, self.margin, self.readout)
            return Verdict(ok, f"margin {m:.4f} {'>=' if ok else '<'} {self.margin:g}")
        sig = str(record.get("signature"))
        if sig in self._frozen:
            t, what = self._frozen[sig], f"threshold of signature {sig[:12]}"
        else:
            t, what = self.fallback, f"fallback threshold ({sig[:12]} not in {self.source})"
        if t is None:
            return Verdict(False, f"no margin reached precision {self.precision} on the labelled runs ({what})")
        ok = not escalates(record, t, self.readout)
        return Verdict(ok, f"margin {m:.4f} {'>=' if ok else '<'} {t:g} ({what})")

    def describe(self) -> dict[str, Any]:
        """The policy as JSON (what ``semif ask`` prints beside its answers)."""
        if self.thresholds is None:
            return {"policy": "margin", "margin": self.margin, "min_allowed_token_mass": self.min_allowed_token_mass}
        return {"policy": "thresholds", "source": self.source, "precision": self.precision,
                "signatures": len(self._frozen), "fallback": self.fallback,
                "min_allowed_token_mass": self.min_allowed_token_mass}


def below_mass_floor(mass: Any, floor: float) -> bool:
    """``allowed_token_mass`` ``mass`` is under ``floor``. A record without one (None: a remote decision API's record,
    which sees no token distribution) is under every floor above 0: a floor it cannot be held to is not cleared."""
    return (floor > 0) if mass is None else float(mass) < floor


ANY_MARGIN = Policy()
"""Only a tie abstains."""


def load_policy(path: str | Path, min_allowed_token_mass: float | None = None) -> Policy:
    """The threshold policy of a ``semif calibrate thresholds`` file, checked (errors name the file and the
    field). ``min_allowed_token_mass`` overrides the file's floor."""

    p, name = Path(path), str(path)
    expected = "a file written by `semif calibrate thresholds`"
    if not p.is_file():
        raise InputError(name, None, None, "file not found" if not p.exists() else "not a regular file", expected)
    data = p.read_bytes()
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(name, None, None, f"invalid JSON ({exc})", expected) from None
    if not isinstance(doc, dict) or doc.get("kind") != THRESHOLDS_KIND:
        got = doc.get("kind") if isinstance(doc, dict) else doc
        raise InputError(name, None, "kind", brief(got), f'"{THRESHOLDS_KIND}" ({expected})')
    if doc.get("format") != THRESHOLDS_FORMAT:
        raise InputError(name, None, "format", brief(doc.get("format")), f'"{THRESHOLDS_FORMAT}"')
    raw = doc.get("thresholds")
    if not isinstance(raw, dict):
        raise InputError(name, None, "thresholds", brief(raw), "an object signature -> {threshold, …}")
    thresholds: dict[str, float | None] = {}
    for sig, entry in raw.items():
        t = entry.get("threshold", "missing") if isinstance(entry, dict) else entry
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 1):
            raise InputError(name, None, f"thresholds.{sig}.threshold", brief(t), "a margin from 0 to 1, or null")
        thresholds[sig] = None if t is None else float(t)
    fb = doc.get("fallback", {})
    fallback = fb.get("threshold", "missing") if isinstance(fb, dict) else fb
    if fallback is not None and (isinstance(fallback, bool) or not isinstance(fallback, int | float)
                                 or not 0 <= fallback <= 1):
        raise InputError(name, None, "fallback.threshold", brief(fallback), "a margin from 0 to 1, or null")
    floor = doc.get("min_allowed_token_mass", 0.0) if min_allowed_token_mass is None else min_allowed_token_mass
    try:
        return Policy(thresholds=thresholds, fallback=fallback, min_allowed_token_mass=floor,
                      source=f"{name} (sha256 {sha256_hex(data)[:12]})",
                      precision=_precision(doc.get("precision")))
    except OptionError as exc:
        raise InputError(name, None, exc.option, exc.problem) from None


def _precision(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def policy_of(text: str, where: str = "--policy", min_allowed_token_mass: float | None = None) -> Policy:
    """A policy named on a command line: a margin from 0 to 1, or a ``semif calibrate thresholds`` file."""
    floor = 0.0 if min_allowed_token_mass is None else min_allowed_token_mass
    try:
        value = float(text)
    except ValueError:
        if not Path(text).exists():
            raise InputError(where, None, None, f"{text!r} is neither a number nor a file",
                             "a margin from 0 to 1, or a `semif calibrate thresholds` file") from None
        return load_policy(text, min_allowed_token_mass)
    try:
        return Policy(margin=value, min_allowed_token_mass=floor)
    except OptionError as exc:
        raise InputError(where, None, None, exc.problem, "a margin from 0 to 1") from None
