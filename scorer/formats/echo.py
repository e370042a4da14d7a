"""``--echo``: what a record says about its own input, so an audit needs nothing kept elsewhere.

A record always carries hashes of its prompt and tokens; with ``echo`` it also carries an ``echo`` block:

* ``digest`` (``--echo``, API ``echo=True``): the question, the options (ids and descriptions, in lettered
  order) and ``state_sha256``, the sha256 of the state (its UTF-8 text, or for a JSON state the compact JSON
  ``orjson.dumps`` writes, key order kept), so the state can be matched to the record without being stored;
* ``full`` (``--echo full``, API ``echo="full"``): the same and the state itself.

Where it is asked for: the :class:`~scorer.api.Scorer` (``echo=``, every call's default) or one call (``decide``,
``decide_row``, ``decide_many``, ``ask``: ``echo=``); ``semif score``/``ask``/``serve``/``mcp --echo [full]``; a
service request's ``?echo=`` query parameter and an MCP tool's ``echo`` argument (:func:`request_echo`), which
take the same values as the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from scorer.core.checks import OptionError
from scorer.core.errors import InputError, brief
from scorer.core.hashing import sha256_hex
from scorer.formats.rows import Decision

ECHO_LEVELS = ("digest", "full")
"""What ``echo`` may be (besides off)."""


def check_echo(value: Any, option: str = "echo") -> str | None:
    """``echo`` as a level: False/None → None (off), True → ``digest``, or one of :data:`ECHO_LEVELS`."""
    if value is None or value is False:
        return None
    if value is True:
        return "digest"
    if isinstance(value, str) and value in ECHO_LEVELS:
        return value
    raise OptionError(option, f"{brief(value)} is not one of True, False, {', '.join(map(repr, ECHO_LEVELS))}")


QUERY_VALUES = {"true": True, "false": False, "digest": "digest", "full": "full"}
"""What ``?echo=`` may say (a query string has no JSON ``true``): the API's values, spelled as text."""


def request_echo(value: Any, source: str, field: str = "echo") -> str | bool | None:
    """The echo one request asks for (an MCP tool's ``echo`` argument, or :data:`QUERY_VALUES`' value of the
    service's ``?echo=``), as the API's per-call ``echo=`` takes it: None leaves the server's, False is none (over a
    server that echoes by default), else a level. A refusal is an :class:`~scorer.core.errors.InputError` naming
    ``source`` and ``field``, as a bad row field is."""
    if value is None:
        return None
    try:
        level = check_echo(value, field)
    except OptionError:
        raise InputError(source, None, field, f"{brief(value)} is not an echo level",
                         "true (the digest), false (none), \"digest\" or \"full\" (the state itself too)") from None
    return False if level is None else level


def state_sha256(state: str | dict[str, Any] | list[Any]) -> str:
    """sha256 of a state: its UTF-8 text, or the compact JSON of a JSON state (key order kept)."""
    data = state.encode("utf-8") if isinstance(state, str) else orjson.dumps(state)
    return sha256_hex(data)


def echo_block(d: Decision, level: str) -> dict[str, Any]:
    """The ``echo`` block of decision ``d`` at ``level``."""
    out: dict[str, Any] = {"level": level, "question": d.question,
                           "options": [{"id": o.id, "description": o.description} for o in d.options],
                           "state_sha256": state_sha256(d.state)}
    if level == "full":
        out["state"] = d.state
    return out


def with_echo(records: Iterable[dict[str, Any]], decisions: Sequence[Decision],
              level: str | None) -> Iterator[dict[str, Any]]:
    """The records, each with the ``echo`` block of its decision (``run.index`` in ``decisions``); unchanged
    when ``level`` is None."""
    for rec in records:
        if level is not None:
            rec = {**rec, "echo": echo_block(decisions[int(rec["run"]["index"])], level)}
        yield rec
