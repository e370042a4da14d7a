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


@dataclass(frozen=True)
class ObjectGrammar:
    """Exactly one JSON object with one field per question, in order: field ``names[k]`` whose value is one of
    ``values[k]`` (JSON strings). The grammar a generating engine is held to when it answers several typed questions
    at once (``benchmarks/decision_latency.py``'s llama-server lane).

    Compact except for an optional single space after each colon and comma, so the admitted language is finite and
    :meth:`longest_chars` bounds every admitted output.
    """

    names: tuple[str, ...]
    """The fields, in order (the questions' names)."""
    values: tuple[tuple[str, ...], ...]
    """Per field, in order: the values admitted (the question's option names)."""

    def __post_init__(self) -> None:
        if not self.names or len(self.names) != len(self.values) or any(not v for v in self.values):
            raise ValueError("an object grammar needs at least one field, and one or more values for every field")
        if len(set(self.names)) != len(self.names):
            raise ValueError("an object grammar's field names must be unique")

    def gbnf(self) -> str:
        """The grammar in GBNF (llama.cpp's format). One rule per distinct value set."""
        rules: dict[tuple[str, ...], str] = {}
        for v in self.values:
            rules.setdefault(v, f"v{len(rules)}")
        fields = " sep ".join(f"{_gbnf_literal(json.dumps(n))} colon {rules[v]}"
                              for n, v in zip(self.names, self.values, strict=True))
        lines = [f'root ::= "{{" {fields} "}}"', 'colon ::= ":" " "?', 'sep ::= "," " "?']
        lines += [f"{name} ::= " + " | ".join(_gbnf_literal(json.dumps(o)) for o in opts)
                  for opts, name in rules.items()]
        return "\n".join(lines) + "\n"

    def sha256(self) -> str:
        return sha256_text(self.gbnf())

    def longest_chars(self) -> int:
        """Characters of the longest admitted output."""
        n = len(self.names)
        return (2 + sum(len(json.dumps(k)) + 2 + max(len(json.dumps(o)) for o in v)
                        for k, v in zip(self.names, self.values, strict=True)) + 2 * (n - 1))

    def max_new_tokens(self) -> int:
        """A generation limit that never cuts an admitted output (every token holds at least one character), plus
        the stop token."""
        return self.longest_chars() + 1

    def problems(self, text: str) -> list[str]:
        """What keeps ``text`` from being an answer this grammar admits, semantically: JSON, an object, exactly the
        fields in order, every value admitted (empty: a complete, valid answer). Whitespace is not judged."""
        try:
            doc = json.loads(text)
        except ValueError as exc:
            return [f"not JSON ({exc})"]
        if not isinstance(doc, dict):
            return [f"a JSON {type(doc).__name__}, not an object"]
        out = []
        if list(doc) != list(self.names):
            missing = [n for n in self.names if n not in doc]
            extra = [n for n in doc if n not in self.names]
            out.append(f"fields {list(doc)[:8]}… are not the questions in order (missing {missing[:8]}, "
                       f"extra {extra[:8]})")
        for n, v in zip(self.names, self.values, strict=True):
            if n in doc and doc[n] not in v:
                out.append(f"{n}: {doc[n]!r} is not one of {list(v)}")
        return out
