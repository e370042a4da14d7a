"""Errors that the command line turns into a clear message and an exit status (never a traceback).

Exit status: 2 for a :class:`SemifError` (bad input, refused model, refused output), 1 for an
environment fault (an ``OSError``: disk full, read-only folder, a directory where a file should be; an
:class:`EngineError`: a remote engine down or serving another model),
130 for SIGINT and 143 for SIGTERM (:class:`Terminated`).
"""

from __future__ import annotations


class SemifError(Exception):
    """A user-facing error: bad input, a refused model file, a configuration that cannot be honoured."""

    exit_code = 2


MAX_SHOWN = 80
"""Characters of an offending value echoed in a message; the rest is summarised by its size."""


def brief(value: object) -> str:
    """``repr(value)``, cut to :data:`MAX_SHOWN` characters plus ``…(N bytes)`` when longer, so a
    megabyte of bad input never floods the terminal. N is the UTF-8 size of a string value, else of
    its repr."""
    text = repr(value)
    if len(text) <= MAX_SHOWN:
        return text
    size = len((value if isinstance(value, str) else text).encode("utf-8", "replace"))
    return f"{text[:MAX_SHOWN]}…({size} bytes)"


def _field_text(field: str) -> str:
    """A field name as shown in a message: one line (control and separator characters escaped), cut
    like :func:`brief` when long. Field names can come from the input (extra keys, unknown keys)."""
    text = field if field.isprintable() else repr(field)[1:-1]
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}…({len(field.encode('utf-8', 'replace'))} bytes)"


class InputError(SemifError):
    """An input file is wrong at a known place.

    The message names the file, the line (1-based, when known), the field, what was wrong and what
    would be right, e.g. ``rows.jsonl:3: field 'options[1].id': duplicate id 'a' (expected unique ids)``.
    """

    def __init__(self, path: str, line: int | None, field: str | None, problem: str, expected: str = ""):
        if len(problem) > 4 * MAX_SHOWN:  # a safety net for callers that echo a value without brief()
            problem = f"{problem[:4 * MAX_SHOWN]}…({len(problem.encode('utf-8', 'replace'))} bytes)"
        self.path, self.line, self.field, self.problem, self.expected = path, line, field, problem, expected
        where = path if line is None else f"{path}:{line}"
        what = f"field '{_field_text(field)}': {problem}" if field else problem
        tail = f" (expected {expected})" if expected else ""
        super().__init__(f"{where}: {what}{tail}")


class ModelError(SemifError):
    """A model cannot be fetched, verified or loaded as asked (e.g. sha256 mismatch: fail closed)."""


class EngineError(SemifError):
    """A remote engine cannot be used: it does not answer (after the retries), answers garbage, or serves
    another model or tokenizer than the one named. An environment fault: exit 1."""

    exit_code = 1


class ValidationError(SemifError):
    """A tokenizer/model/prompt check failed, so no score from it would be trustworthy."""


class OutputError(SemifError):
    """An output path cannot be used as asked (a directory, not an output of this command)."""


class OutputExistsError(OutputError):
    """The output file exists; SemIf never overwrites results silently."""


class OutputLockedError(OutputError):
    """Another run holds the output's lock: one writer per output, and no ``--resume`` of a live run."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like SIGINT (partial output kept and reported) but exiting with 143."""

    exit_code = 143
