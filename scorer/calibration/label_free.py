"""Label-free calibration of ONE request: a question never seen before, corrected without labels and without a batch,
from a few more prompts about the same question (:mod:`scorer.scoring.label_free` scores them; this module is the
math and the record block).

A small model's readout leans: towards the option at some position (letter A, or the last), and towards some answers
whatever the state (a yes/no question answered "yes" on every ticket). Each method estimates that lean from prompts
that carry no answer and divides it out (probabilities renormalised over the declared options):

* ``rotations`` — the options shown in every cyclic order, the probabilities averaged by option id (the
  order-averaged readout of ``semif score --permute K``): a position's pull is spread over every option;
* ``position-prior`` — those rotations, each divided by the question's own position prior (the mean probability
  served at each position over the rotations), then averaged (callo's correction, per question);
* ``content-free`` — the question asked about content-free states (:data:`CONTENT_FREE_STATES`), its mean
  distribution the prior (Zhao et al. 2021); cached per question signature, so a repeated question costs nothing;
* ``rotations+content-free`` — every rotation divided by its own content-free prior, then averaged;
* ``domain`` — the question asked about the request's own state with its words shuffled (:data:`DOMAIN_SAMPLES`
  seeded shuffles: the domain's words, none of its meaning; Fei et al. 2023), the mean distribution the prior;
* ``rotations+domain`` — the rotations' mean divided by the domain prior.

A method may also be one per kind of question (:func:`by_kind`: ``by-kind:choice=M1,score=M2,yesno=M3``, kinds as
:func:`scorer.decision.questions.answer_kind` tells them apart): each question is corrected by its kind's method
(:func:`method_for`), and its record names that method. The measured defaults are such (``label_free="auto"``).

The calibrated block keeps the raw readout untouched beside it (``offsets`` are what was subtracted from the raw
option logits: ``option_logits − offsets`` gives the calibrated log-probabilities up to a constant).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.decision.questions import ANSWER_KINDS
from scorer.decision.readout import read_probabilities

METHODS = ("none", "rotations", "position-prior", "content-free", "rotations+content-free", "domain",
           "rotations+domain")
"""Every method (``none``: the raw readout)."""
CONTENT_FREE_STATES = ("N/A", "[MASK]", "None")
"""The content-free states of the ``content-free`` methods."""
DOMAIN_SAMPLES = 2
"""Shuffles of the state for the ``domain`` methods."""
FLOOR = 1e-12
BY_KIND = "by-kind:"
"""What starts a method that is one per kind of question (:func:`by_kind`)."""


@dataclass(frozen=True)
class Needs:
    """The prompts a method needs besides the row's own."""

    rotations: bool
    """Every cyclic rotation of the options (the identity is the row's own prompt)."""
    content_free: bool
    """The question about each content-free state, in each order the method reads (every rotation, or the
    identity)."""
    domain: bool
    """The question about the shuffled state, identity order."""


def needs(method: str) -> Needs:
    """What :func:`calibrate` needs for ``method``."""
    rot = method in ("rotations", "position-prior", "rotations+content-free", "rotations+domain")
    return Needs(rotations=rot, content_free="content-free" in method, domain="domain" in method)


def by_kind(methods: Mapping[str, str]) -> str:
    """One method per kind of question (every kind of :data:`~scorer.decision.questions.ANSWER_KINDS` named, each a
    method of :data:`METHODS`) as one method's name: ``by-kind:choice=M1,score=M2,yesno=M3`` (kinds in that order)."""
    if set(methods) != set(ANSWER_KINDS):
        raise ValueError(f"a method per kind names every kind ({', '.join(ANSWER_KINDS)}), not {sorted(methods)}")
    for kind, m in methods.items():
        if m not in METHODS:
            raise ValueError(f"unknown label-free method {m!r} for {kind} questions (expected one of "
                             f"{', '.join(METHODS)})")
    return BY_KIND + ",".join(f"{k}={methods[k]}" for k in sorted(ANSWER_KINDS))


def method_for(method: str, kind: str) -> str:
    """The method a question of ``kind`` (:func:`scorer.decision.questions.answer_kind`) is corrected by under
    ``method``: ``method`` itself, or its kind's part of a method per kind (:func:`by_kind`)."""
    if not method.startswith(BY_KIND):
        return method
    pairs = [part.partition("=")[::2] for part in method[len(BY_KIND):].split(",")]
    parts = dict(pairs)
    if len(parts) < len(pairs):
        raise ValueError(f"a kind is named twice in {method!r}")
    by_kind(parts)  # a malformed name fails here, naming what it lacks
    return parts[kind]


def shuffled_state(state: Any, seed: str) -> str:
    """``state``'s words (a JSON state: its text) in a seeded random order: its domain, none of its meaning."""
    text = state if isinstance(state, str) else str(state)
    words = re.findall(r"\S+", text)
    random.Random(seed).shuffle(words)
    return " ".join(words) or CONTENT_FREE_STATES[0]


def _normalise(p: np.ndarray) -> np.ndarray:
    p = np.maximum(np.asarray(p, dtype=np.float64), FLOOR)
    return p / p.sum()


def _divide(p: np.ndarray, prior: np.ndarray) -> np.ndarray:
    return _normalise(np.asarray(p) / np.maximum(prior, FLOOR))


def _by_option(served: np.ndarray, shift: int) -> np.ndarray:
    """Probabilities served in rotation ``shift`` (position k shows option ``(shift + k) % n``) by option."""
    n = len(served)
    out = np.zeros(n)
    for k in range(n):
        out[(shift + k) % n] = served[k]
    return out


def calibrate(method: str, by_position: Sequence[np.ndarray], content_free: Sequence[Sequence[np.ndarray]] | None,
              domain: Sequence[np.ndarray] | None) -> np.ndarray:
    """The calibrated probabilities by option (declared order) of one row.

    ``by_position[s]``: the probabilities rotation ``s`` served, by position (``by_position[0]`` is the row's own
    readout, identity order; only it is given when the method needs no rotations); ``content_free[s][j]``: the
    content-free state ``j``'s probabilities in rotation ``s``, by position; ``domain[j]``: the shuffled state ``j``'s
    probabilities, identity order."""
    raw = _normalise(by_position[0])
    rot = [_normalise(_by_option(np.asarray(p), s)) for s, p in enumerate(by_position)]
    if method == "none":
        return raw
    if method == "rotations":
        return _normalise(np.mean(rot, axis=0))
    if method == "position-prior":
        prior = _normalise(np.mean([np.asarray(p) for p in by_position], axis=0))  # by position
        fixed = [_by_option(_divide(np.asarray(p), prior), s) for s, p in enumerate(by_position)]
        return _normalise(np.mean(fixed, axis=0))
    if method in ("content-free", "rotations+content-free"):
        assert content_free is not None
        priors = [_by_option(_normalise(np.mean(cf, axis=0)), s) for s, cf in enumerate(content_free)]
        if method == "content-free":
            return _divide(raw, priors[0])
        return _normalise(np.mean([_divide(p, q) for p, q in zip(rot, priors, strict=True)], axis=0))
    if method in ("domain", "rotations+domain"):
        assert domain is not None
        prior = _normalise(np.mean(domain, axis=0))
        return _divide(raw if method == "domain" else _normalise(np.mean(rot, axis=0)), prior)
    raise ValueError(f"unknown label-free method {method!r} (expected one of {', '.join(METHODS)})")


def block(record: dict[str, Any], method: str, probabilities: np.ndarray, prompts: int, cached: bool,
          signature: str, chosen: dict[str, Any]) -> dict[str, Any]:
    """A record's ``calibrated`` block for a label-free correction (the record's raw fields stay as they are):
    ``method`` ``label-free``, its estimator the method, the offsets it amounts to, the calibrated readout, and how
    many more prompts it took (``prompts``; ``cached``: a content-free prior taken from the cache); ``chosen`` says
    how the method was chosen (:meth:`scorer.calibration.label_free_defaults.Resolved.describe`)."""
    ids = list(record["option_ids"])
    r = read_probabilities([float(x) for x in _normalise(probabilities)])
    offsets = np.asarray(record["option_logits"], dtype=np.float64) - np.asarray(r.option_logits)
    return {"method": "label-free", "estimator": method, "applied": True, "level": "request",
            "signature": signature, "source": {"kind": "request"}, "rows": 1, "temperature": 1.0,
            "offsets": [float(x) for x in offsets], "unseen_option_ids": [],
            "label_free": {"prompts": prompts, "content_free_cached": cached,
                           "chosen": chosen},
            "probabilities": r.probabilities, "option_logits": r.option_logits,
            "choice": None if r.choice_index is None else ids[r.choice_index], "margin": r.margin, "tie": r.tie,
            "tied_option_ids": [ids[i] for i in r.tied_indices]}
