"""The generating lanes' grammars (plain data): what they admit and how long an admitted answer can be."""

from __future__ import annotations

import json

import pytest

from scorer.prompting.grammar import ObjectGrammar


def test_an_object_grammar_names_each_field_once_and_shares_a_rule_per_value_set() -> None:
    g = ObjectGrammar(("a", "b", "c"), (("yes", "no"), ("x",), ("yes", "no")))
    assert g.gbnf() == ('root ::= "{" "\\"a\\"" colon v0 sep "\\"b\\"" colon v1 sep "\\"c\\"" colon v0 "}"\n'
                        'colon ::= ":" " "?\nsep ::= "," " "?\nv0 ::= "\\"yes\\"" | "\\"no\\""\nv1 ::= "\\"x\\""\n')
    assert g.longest_chars() == len(json.dumps({"a": "yes", "b": "x", "c": "yes"})) and len(g.sha256()) == 64
    assert g.problems('{"a":"no","b":"x","c":"yes"}') == []
    assert g.problems('{"b": "x", "a": "no", "c": "yes"}')[0].startswith("fields ['b', 'a', 'c']… are not")


def test_quotes_and_backslashes_in_values_are_escaped_twice() -> None:
    g = ObjectGrammar(("q",), (('say "hi"', "a\\b"),))
    assert 'v0 ::= "\\"say \\\\\\"hi\\\\\\"\\"" | "\\"a\\\\\\\\b\\""' in g.gbnf()
    assert g.problems(json.dumps({"q": 'say "hi"'})) == []


@pytest.mark.parametrize("names,values", [((), ()), (("a",), ()), (("a",), ((),)), (("a", "a"), (("x",), ("y",)))])
def test_an_object_grammar_needs_unique_fields_each_with_values(names: tuple[str, ...],
                                                                values: tuple[tuple[str, ...], ...]) -> None:
    with pytest.raises(ValueError):
        ObjectGrammar(names, values)
