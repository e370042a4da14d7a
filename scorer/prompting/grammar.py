"""The constrained lane's grammar: exactly one JSON array with one option id per criterion.

Plain data (no backend, no numpy), so a trace's grammar can be re-derived and checked anywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from scorer.core.hashing import sha256_text


def _gbnf_literal(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class ArrayGrammar:
    """Exactly one JSON array with one value per criterion, value k one of ``values[k]`` (a JSON string).

    Compact except for an optional single space after each comma (the two spellings models write), so
    the admitted language is finite and :meth:`longest_chars` bounds every admitted output.
    """

    values: tuple[tuple[str, ...], ...]
    """Per criterion, in order: the option ids admitted at its position."""

    def __post_init__(self) -> None:
        if not self.values or any(not v for v in self.values):
            raise ValueError("an array grammar needs at least one criterion and one option per criterion")

    def gbnf(self) -> str:
        """The grammar in GBNF (llama.cpp's format; llguidance reads it too). One rule per distinct option set."""
        rules: dict[tuple[str, ...], str] = {}
        for v in self.values:
            rules.setdefault(v, f"v{len(rules)}")
        body = ' sep '.join(rules[v] for v in self.values)
        lines = [f'root ::= "[" {body} "]"', 'sep ::= "," " "?']
        lines += [f"{name} ::= " + " | ".join(_gbnf_literal(json.dumps(o)) for o in opts)
                  for opts, name in rules.items()]
        return "\n".join(lines) + "\n"

    def sha256(self) -> str:
        return sha256_text(self.gbnf())

    def longest_chars(self) -> int:
        """Characters of the longest admitted output."""
        n = len(self.values)
        return 2 + sum(max(len(json.dumps(o)) for o in v) for v in self.values) + 2 * (n - 1)

    def max_new_tokens(self) -> int:
        """The constrained lane's limit: every token holds at least one character, plus the stop token,
        so a constrained run can never be cut off by it."""
        return self.longest_chars() + 1

    def rule(self) -> str:
        """The grammar in words."""
        opts = sorted({"/".join(v) for v in self.values})
        return (f"exactly one JSON array of {len(self.values)} strings, value k one of criterion k's option ids "
                f"({', '.join(opts)}), compact with an optional space after each comma, then end of turn")
