"""The typed record (scorer/formats/record_types.py) is the record schema: the same fields, the same required ones,
and every record the scorer writes has the types it says (checked on the fake backend's records)."""

from __future__ import annotations

import typing

from fakes import FakeBackend

from scorer import Scorer
from scorer.formats.json_schemas import load_schema
from scorer.formats.record_types import Record, optional_fields, required_fields


def test_the_typed_record_has_the_schemas_fields_and_required_ones():
    schema = load_schema("record-v2")
    assert required_fields() == set(schema["required"])
    assert required_fields() | optional_fields() == set(schema["properties"])


def test_every_field_has_a_docstring():
    import inspect

    from scorer.formats import record_types

    src = inspect.getsource(record_types)
    for name in typing.get_type_hints(Record):
        after = src.split(f"\n    {name}: ", 1)[1].split("\n", 2)[1].strip()
        assert after.startswith('"""'), f"{name} has no docstring"


def test_the_api_record_is_a_record():
    with Scorer(backend=FakeBackend(), mode="shared", echo=True) as s:
        rec = s.decide("a state", "q?", {"a": "x", "b": "y"}).record
    assert set(rec) >= required_fields() and set(rec) <= required_fields() | optional_fields()
    assert isinstance(rec["probabilities"], list) and isinstance(rec["margin"], float)
