"""The trace JSON Schemas the page's checker (``scorer/site/assets/validate.js``) runs, refused when they use a keyword
that checker does not implement, so the check a reader's browser runs is the same check the build runs."""

from __future__ import annotations

from typing import Any

from scorer.formats.json_schemas import SCHEMAS
from scorer.site.files import load_json
from scorer.site.inputs import BuildError

TRACE_FORMATS = ("semif-trace-v1", "semif-trace-v2")


# JSON Schema keywords that the in-page validator (scorer/site/assets/validate.js) implements; the build refuses a
# schema that needs any other, so the check a reader's browser runs is the same check the build runs.
JS_SCHEMA_KEYWORDS = frozenset({
    "type", "enum", "const", "required", "properties", "additionalProperties", "patternProperties", "items",
    "prefixItems", "minItems", "maxItems", "uniqueItems", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "anyOf", "oneOf", "allOf", "not",
    "$ref", "$defs", "definitions", "minProperties", "maxProperties", "if", "then", "else", "contains",
    "propertyNames", "dependentRequired",
})


ANNOTATION_KEYWORDS = frozenset({
    "$schema", "$id", "$comment", "$anchor", "title", "description", "examples", "default", "format",
    "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
})


_SUBSCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions")


_SUBSCHEMA_LIST_KEYWORDS = ("prefixItems", "anyOf", "oneOf", "allOf")


_SUBSCHEMA_KEYWORDS = ("additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames")


def load_trace_schemas() -> dict[str, dict[str, Any]]:
    """The trace JSON Schemas by format (owned by the trace module), each checked to use only keywords the
    page's checker implements."""
    out = {}
    for fmt in TRACE_FORMATS:
        path = SCHEMAS / f"{fmt.removeprefix('semif-')}.json"
        rel = f"scorer/formats/schemas/{path.name}"
        if not path.is_file():
            raise BuildError(f"{rel}: trace schema not found")
        schema = load_json(path.read_bytes(), rel)
        unsupported = sorted(schema_keywords(schema) - JS_SCHEMA_KEYWORDS - ANNOTATION_KEYWORDS)
        if unsupported:
            raise BuildError(f"{rel}: uses JSON Schema keywords {unsupported} that the in-page validator "
                             "(scorer/site/assets/validate.js) does not implement")
        out[fmt] = schema
    return out


def schema_keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in a schema (property names under ``properties`` are not keywords)."""
    found: set[str] = set()
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        found.add(key)
        if key in _SUBSCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            for sub in value.values():
                found |= schema_keywords(sub)
        elif key in _SUBSCHEMA_LIST_KEYWORDS and isinstance(value, list):
            for sub in value:
                found |= schema_keywords(sub)
        elif key in _SUBSCHEMA_KEYWORDS:
            found |= schema_keywords(value)
        elif key == "dependentSchemas" and isinstance(value, dict):
            for sub in value.values():
                found |= schema_keywords(sub)
    return found
