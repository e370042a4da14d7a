"""The rules for the options every entry shares: one check per option, one message, below every face.

The command line (``scorer.cli.arguments``: argparse ``type=`` functions), the Python API (``Scorer(...)``),
the configs the runs take (:class:`scorer.backends.BackendConfig`) and the service all check an option
with the function here, so ``Scorer(threads=0)`` is refused with the words ``semif score --threads 0``
is refused with. A refusal is an :class:`OptionError` (a :class:`~scorer.core.errors.SemifError`: exit 2).

Messages say what the value is and what it should be, without the option's name; the caller puts the
name in front in its own terms (argparse: ``argument --threads/--llama-threads: 0 is not an integer >= 1``;
the API: ``threads: 0 is not an integer >= 1``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from scorer.core.errors import SemifError, brief

MODES = ("direct", "serial", "shared")
"""Scoring modes (``scorer.scoring.modes``)."""
DEVICES = ("cpu", "cuda", "mps")
"""torch devices."""
DTYPES = ("float32", "bfloat16", "float16")
"""torch dtypes (default: fp32 on cpu, bf16 on cuda, fp16 on mps)."""
DEFAULT_MAX_BATCH_TOKENS = 4096
"""Shared mode: suffix tokens per packed pass."""
SLOTS = ("letters", "ids", "sequence", "codes", "json", "auto")
"""Answer slots a decision is read out through (:mod:`scorer.prompting.prompt`): the letters A–P, the option ids (one
token each), the option ids scored as token sequences (``sequence``: :func:`scorer.decision.readout.read_sequences`),
the options' numbers scored as token sequences (``codes``: what a question with more than 16 options is read
through when the run reads letters), ``json`` (the options listed under their ids, the question in a user turn
after the state's, the answer asked for as a JSON object and each option scored as the continuation `` "id"`` of the
prefilled ``{"answer":``: the single-request JSON study, ``docs/results.md``), or ``auto``: per question, a yes/no
question (options ``yes`` and ``no``) read as ``json`` reads it and every other question by letters — or, for weights
measured to answer choice questions better that way, a choice question as ``json`` too (:data:`AUTO_CHOICE_JSON`)
(:func:`scorer.prompting.prompt.slots_for`; measured by the single-request studies, ``docs/results.md``)."""
AUTO_SLOTS = "auto"
"""The per-question readout (:data:`SLOTS`)."""
AUTO_CHOICE_JSON = "auto:choice=json"
"""What ``auto`` comes to for weights whose single-request study found choice questions right more often read as
JSON answers (their options as bullets) than by letters
(:attr:`scorer.calibration.label_free_defaults.Measured.choice`): a yes/no or choice question read as ``json`` reads
it, a score question by letters. A run's configuration and its records name it; it can be asked for by name too (not
a ``--slots`` choice)."""
AUTO_FORMS = (AUTO_SLOTS, AUTO_CHOICE_JSON)
"""The per-question readouts: ``auto`` as asked, and what it resolves to per weights."""
SEQUENCE_SLOTS = ("sequence", "codes", "json")
"""The slots read as continuations of the prompt (every position of a pass), not one token at the answer position."""
SEQUENCE_NORMS = ("sum", "mean")
"""How ``--slots sequence`` turns an option's token log-probabilities into its score: their ``sum`` (the log-probability
of the whole continuation; the default) or their ``mean`` (per token, so a longer id is not penalised for its
length)."""
DEFAULT_SEQUENCE_NORM = "sum"
JSON_SEQUENCE_NORM = "mean"
"""``--slots json``'s normalisation when none is given: per token, as the JSON-answer study measured it (a quoted id's
closing quote and its id's own length would otherwise count against longer ids)."""
NORMED_SLOTS = ("sequence", "json", *AUTO_FORMS)
"""The slots that take a ``--sequence-norm`` (``codes`` always sums)."""


class OptionError(SemifError):
    """An option's value is refused. ``option`` names it (None: the caller adds the name itself), ``problem``
    says what is wrong and what would be right."""

    def __init__(self, option: str | None, problem: str) -> None:
        self.option, self.problem = option, problem
        super().__init__(f"{option}: {problem}" if option else problem)


def positive_int(value: Any, option: str | None = None) -> int:
    """An integer >= 1 (a bool, a float or a string is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(option, f"{brief(value)} is not an integer >= 1")
    return value


def optional_positive_int(value: Any, option: str | None = None) -> int | None:
    """None (the library's default) or an integer >= 1."""
    return None if value is None else positive_int(value, option)


THREADS_AUTO = "auto"
"""``threads="auto"``: the cores free when the backend loads (:func:`scorer.core.threads.choose_threads`)."""


def threads(value: Any, option: str | None = None) -> int | str | None:
    """CPU threads: None (the library's choice), an integer >= 1, or ``auto`` (the cores free now)."""
    if value is None or value == THREADS_AUTO:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(option, f"{brief(value)} is not an integer >= 1 or 'auto'")
    return value


def non_negative_int(value: Any, option: str | None = None) -> int:
    """An integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OptionError(option, f"{brief(value)} is not an integer >= 0")
    return value


def positive_float(value: Any, option: str | None = None) -> float:
    """A finite number > 0 (an int is one; a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (value > 0 and math.isfinite(value)):
        raise OptionError(option, f"{brief(value)} is not a finite number > 0")
    return float(value)


def non_negative_float(value: Any, option: str | None = None) -> float:
    """A finite number >= 0 (an int is one; a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (value >= 0 and math.isfinite(value)):
        raise OptionError(option, f"{brief(value)} is not a finite number >= 0")
    return float(value)


def one_of(value: Any, choices: Sequence[str], option: str | None = None) -> str:
    """One of ``choices`` (exactly: no case folding, no stripping)."""
    if not isinstance(value, str) or value not in choices:
        raise OptionError(option, f"{brief(value)} is not one of {', '.join(choices)}")
    return value


def optional_one_of(value: Any, choices: Sequence[str], option: str | None = None) -> str | None:
    """None (the default) or one of ``choices``."""
    return None if value is None else one_of(value, choices, option)


def text(value: Any, option: str | None = None, what: str = "a non-empty string") -> str:
    """A non-empty string (a path given as ``os.PathLike`` becomes its string); ``what`` says what it names."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise OptionError(option, f"{brief(value)} is not {what}")
    return value


def optional_text(value: Any, option: str | None = None, what: str = "a non-empty string") -> str | None:
    """None or :func:`text`."""
    return None if value is None else text(value, option, what)


def gpu_layers(value: Any, option: str | None = None) -> str:
    """llama.cpp layers to offload: an integer >= 0 or ``auto``, returned as its text (``"0"``, ``"auto"``)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and (value == "auto" or (value.isascii() and value.isdigit())):
        return str(int(value)) if value != "auto" else value
    raise OptionError(option, f"{brief(value)} is not a number of layers >= 0 or 'auto'")


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30,
               "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}
BYTES_FORM = "a number of bytes >= 1, or one with a binary unit: 512M, 1.5G, 64KiB"


def byte_size(value: Any, option: str | None = None) -> int:
    """A memory size in bytes: an integer >= 1, or text of a number and a binary unit (``512M`` = 512 MiB, ``2G``,
    ``64KiB``; K, M, G, T are powers of 1024), which must come to at least one byte."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
    elif isinstance(value, str):
        word = value.strip().lower()
        digits = word.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = word[len(digits):].strip()
        try:
            number = float(digits) if digits.strip() else math.nan
        except ValueError:
            number = math.nan
        if unit in _BYTE_UNITS and math.isfinite(number) and number * _BYTE_UNITS[unit] >= 1:
            return int(number * _BYTE_UNITS[unit])
    raise OptionError(option, f"{brief(value)} is not {BYTES_FORM}")


def check_run_options(mode: Any, max_batch_tokens: Any) -> tuple[str, int]:
    """The scoring options a :class:`~scorer.api.Scorer` (and ``semif score``/``serve``) take, checked; the
    messages name them as the API does."""
    return one_of(mode, MODES, "mode"), positive_int(max_batch_tokens, "max_batch_tokens")


def check_slots(slots: Any) -> str:
    """The answer slots of a run (``--slots``; ``Scorer(slots=…)``), checked; the message names them as the API
    does (:data:`AUTO_CHOICE_JSON`, what ``auto`` resolves to for some weights, is taken too)."""
    return AUTO_CHOICE_JSON if slots == AUTO_CHOICE_JSON else one_of(slots, SLOTS, "slots")


def check_sequence_norm(norm: Any, slots: str) -> str | None:
    """The length normalisation of a run read out through ``slots`` (``--sequence-norm``; ``Scorer(sequence_norm=…)``):
    :data:`DEFAULT_SEQUENCE_NORM` when ``slots`` is ``sequence`` and none was given, None for the other slots (which
    score one token per option: a normalisation given with them is refused, naming the slots)."""
    if slots not in NORMED_SLOTS:
        if norm is not None:
            raise OptionError("sequence_norm", f"{brief(norm)} applies to slots sequence, json and auto only (got "
                              f"slots {slots})")
        return None
    if norm is None:
        return JSON_SEQUENCE_NORM if slots == "json" else DEFAULT_SEQUENCE_NORM
    return one_of(norm, SEQUENCE_NORMS, "sequence_norm")


def scores_continuations(backend: str) -> bool:
    """Whether the backend named ``backend`` reads every position of a pass, as the continuation readouts need: not
    the ``openai`` backend, a remote engine returning one position's log-probabilities (a built backend says so in
    :attr:`scorer.backends.base.Backend.scores_continuations`)."""
    return backend != "openai"


def check_slots_backend(slots: str, backend: str) -> None:
    """``--slots sequence`` reads every position of a pass, which the ``openai`` backend (a remote engine returning
    one position's log-probabilities) cannot give: refused before anything loads, naming the slots."""
    if (slots in SEQUENCE_SLOTS or slots in AUTO_FORMS) and not scores_continuations(backend):
        raise OptionError("slots", f"{slots} scores each option's tokens at every position of a pass, which the openai "
                          "backend does not return (it reads one position's log-probabilities); use the torch or "
                          "llamacpp backend, or --slots ids")


def cli_int(text: str) -> Any:
    """A command-line word as the value its rule judges: an ASCII integer becomes an ``int`` (so the message
    reads ``0 is not an integer >= 1`` at the command line as in the API); anything else stays text."""
    body = text[1:] if text.startswith("-") else text
    return int(text) if body and body.isascii() and body.isdigit() else text


def cli_float(text: str) -> Any:
    """A command-line word as a number for its rule (an integer stays one, as the API would pass it; ``inf``
    and ``nan`` become floats, which the rule refuses); anything else stays text."""
    as_int = cli_int(text)
    if isinstance(as_int, int):
        return as_int
    try:
        return float(text)
    except ValueError:
        return text
