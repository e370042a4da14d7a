"""Errors that the command line turns into a clear message and exit status 2 (never a traceback)."""

from __future__ import annotations


class SemifError(Exception):
    """A user-facing error: bad input, a refused model file, a configuration that cannot be honoured."""

    exit_code = 2


class InputError(SemifError):
    """An input file is wrong at a known place.

    The message names the file, the line (1-based, when known), the field, what was wrong and what
    would be right, e.g. ``rows.jsonl:3: field 'options[1].id': duplicate id 'a' (expected unique ids)``.
    """

    def __init__(self, path: str, line: int | None, field: str | None, problem: str, expected: str = ""):
        self.path, self.line, self.field, self.problem, self.expected = path, line, field, problem, expected
        where = path if line is None else f"{path}:{line}"
        what = f"field '{field}': {problem}" if field else problem
        tail = f" (expected {expected})" if expected else ""
        super().__init__(f"{where}: {what}{tail}")


class ModelError(SemifError):
    """A model cannot be fetched, verified or loaded as asked (e.g. sha256 mismatch: fail closed)."""


class ValidationError(SemifError):
    """A tokenizer/model/prompt check failed, so no score from it would be trustworthy."""


class OutputExistsError(SemifError):
    """The output file exists; SemIf never overwrites results silently."""
