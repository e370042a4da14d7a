"""The models one ``semif serve`` answers for, by name: every ``--model`` as a loaded :class:`~scorer.api.Scorer`, the
aliases that name one of them (``jev-latest`` and ``gpt-6-luna``, the names the TypeSafe and OpenAI SDKs send when
a script names the hosted model, answer with the default model unless told otherwise), and the **routes**: a served
name that asks a fast model first and re-asks, on an accurate one, the questions the one escalation rule
(:func:`scorer.decision.policy.escalates`, on the acting — calibrated when there is one — margin) sends up.

The wire endpoints (``/v1/systemone``, ``/v1/decisions``) pick by the request's ``model``; the semif dialect
(``/v1/decide``, ``/v1/ask``) always uses the default model (the first ``--model``). An unknown name is an error that
lists the served ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from scorer.api import Scorer
from scorer.core.errors import InputError, SemifError
from scorer.decision.policy import unit_interval

DEFAULT_ALIASES = ("jev-latest", "gpt-6-luna")
"""Names the official SDKs send for the hosted models (typesafe-sdk's default model; the one model OpenAI Decisions
lists): served as the default model, so a script written for them runs with only its base URL changed."""
ROUTE_FORM = "NAME=FAST>ACCURATE@THRESHOLD (e.g. auto=qwen2.5-0.5b>qwen2.5-1.5b@0.2)"


@dataclass(frozen=True)
class Route:
    """A served name that asks ``fast`` first and re-asks on ``accurate`` what escalates at ``threshold``."""

    name: str
    fast: str
    accurate: str
    threshold: float


@dataclass
class ServedModels:
    """The server's models by served name (the first is the default), with aliases and routes."""

    scorers: dict[str, Scorer]
    aliases: dict[str, str] | None = None
    """Alias -> served name; None: :data:`DEFAULT_ALIASES` for the default model."""
    routes: dict[str, Route] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.scorers:
            raise InputError("--model", None, None, "no model", "at least one --model")
        if self.aliases is None:
            self.aliases = {a: self.default for a in DEFAULT_ALIASES if a not in self.scorers}
        for alias, target in self.aliases.items():
            if target not in self.scorers and target not in self.routes:
                raise InputError("--alias", None, None, f"{alias}={target}: {target!r} is not served",
                                 f"one of {', '.join(self.names())}")
        for r in self.routes.values():
            for end in (r.fast, r.accurate):
                if end not in self.scorers:
                    raise InputError("--route", None, None, f"{r.name}: {end!r} is not a served --model",
                                     f"one of {', '.join(self.scorers)}")

    @property
    def default(self) -> str:
        """The first ``--model``'s served name."""
        return next(iter(self.scorers))

    def names(self) -> list[str]:
        """Every name a request may use: the models, the routes, the aliases."""
        return [*self.scorers, *self.routes, *(self.aliases or {})]

    def resolve(self, name: str) -> str:
        """The model or route ``name`` stands for (an alias is followed once)."""
        name = (self.aliases or {}).get(name, name)
        if name in self.scorers or name in self.routes:
            return name
        raise KeyError(name)

    def __iter__(self) -> Iterator[tuple[str, Scorer]]:
        return iter(self.scorers.items())


def parse_alias(text: str) -> tuple[str, str]:
    """``NAME=SERVED`` (``--alias``)."""
    name, eq, target = text.partition("=")
    if not eq or not name.strip() or not target.strip():
        raise InputError("--alias", None, None, f"{text!r}", "NAME=SERVED_NAME (e.g. jev-1=qwen2.5-1.5b)")
    return name.strip(), target.strip()


def parse_route(text: str) -> Route:
    """``NAME=FAST>ACCURATE@THRESHOLD`` (``--route``)."""
    m = re.fullmatch(r"\s*([^=\s]+)\s*=\s*([^>\s]+)\s*>\s*([^@\s]+)\s*@\s*([0-9.]+)\s*", text)
    if m is None:
        raise InputError("--route", None, None, f"{text!r}", ROUTE_FORM)
    try:
        threshold = unit_interval(float(m.group(4)), "threshold")
    except (ValueError, SemifError):
        raise InputError("--route", None, None, f"{text!r}: threshold {m.group(4)}", "a margin from 0 to 1") from None
    return Route(m.group(1), m.group(2), m.group(3), threshold)


def served_aliases(given: list[str], default: str, taken: Mapping[str, object]) -> dict[str, str]:
    """The aliases of a server: :data:`DEFAULT_ALIASES` for the default model (unless one is a served name), then
    the ``--alias`` ones (which win)."""
    out = {a: default for a in DEFAULT_ALIASES if a not in taken}
    for text in given:
        name, target = parse_alias(text)
        out[name] = target
    return out
