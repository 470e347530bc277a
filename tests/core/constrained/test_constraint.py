"""Constraint: building, checking (messages that say which keyword and where) and response_format."""

import json
import re

import pytest

from specdraft.constrained import Constraint, ConstraintError, ConstraintLimits, from_response_format

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def test_a_valid_schema_checks():
    Constraint.json_schema(PERSON).check()
    Constraint.json_object().check()
    Constraint.regex(r"[a-z]+@[a-z]+\.com").check()
    Constraint.lark('start: "yes" | "no"').check()


def test_the_schema_keeps_its_key_order():
    schema = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "string"}}}
    assert list(Constraint.json_schema(schema).schema["properties"]) == ["zeta", "alpha"]


def test_a_schema_given_as_text_equals_the_dict():
    assert Constraint.json_schema(json.dumps(PERSON)) == Constraint.json_schema(PERSON)


@pytest.mark.parametrize(
    "schema, message",
    [
        ({"type": "object", "properties": {"age": {"type": "integr"}}}, "invalid schema at /properties/age/type"),
        (
            {"type": "object", "properties": {"tags": {"type": "array", "minItems": -1}}},
            "invalid schema at /properties/tags/minItems",
        ),
        ({"type": "string", "format": "no-such-format"}, "no-such-format"),
    ],
)
def test_an_invalid_schema_says_where(schema, message):
    with pytest.raises(ConstraintError) as error:
        Constraint.json_schema(schema).check()
    assert message in str(error.value)


def test_an_unsupported_keyword_is_located():
    schema = {"type": "object", "properties": {"a": {"type": "string", "contentSchema": {"type": "integer"}}}}
    try:
        Constraint.json_schema(schema).check()
    except ConstraintError as error:  # llguidance may refuse it; then the message names where
        assert "/properties/a" in str(error) or "contentSchema" in str(error)


@pytest.mark.parametrize(
    "schema, where",
    [
        (
            {"type": "object", "properties": {"host": {"type": "string", "format": "hostnamex"}}},
            "/properties/host/format",
        ),
        ({"type": "object", "properties": {"a": {"$ref": "#/nope"}}}, "/properties/a/$ref"),
        ({"type": "object", "properties": {"a": {"type": "string", "if": {"type": "string"}}}}, "/properties/a/if"),
    ],
)
def test_what_llguidance_refuses_is_located(schema, where):
    with pytest.raises(ConstraintError, match=f"unsupported schema at {re.escape(where)}: "):
        Constraint.json_schema(schema).check()


def test_text_that_is_not_json_is_refused():
    with pytest.raises(ConstraintError, match="not valid JSON"):
        Constraint.json_schema("{'type': 'object'}")


def test_limits_on_size_and_depth():
    deep: dict = {"type": "string"}
    for _ in range(30):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(ConstraintError, match=r"nests \d+ levels deep; at most 24"):
        Constraint.json_schema(deep).check()
    big = {"type": "object", "properties": {f"field_{i}": {"type": "string"} for i in range(40)}}
    with pytest.raises(ConstraintError, match="at most 100 are allowed"):
        Constraint.json_schema(big).check(ConstraintLimits(max_source_bytes=100))


def test_a_bad_regex_and_grammar_are_refused():
    with pytest.raises(ConstraintError, match="invalid regex"):
        Constraint.regex("(unclosed").check()
    with pytest.raises(ConstraintError, match="invalid grammar"):
        Constraint.lark("start: missing_rule").check()


def test_response_format_maps_onto_constraints():
    assert from_response_format(None) is None
    assert from_response_format({"type": "text"}) is None
    assert from_response_format({"type": "json_object"}) == Constraint.json_object()
    spec = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    assert from_response_format(spec) == Constraint.json_schema(PERSON)
    loose = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": False}}
    assert from_response_format(loose) == Constraint.json_schema(PERSON)  # constrained whatever strict says
    with pytest.raises(ConstraintError, match="text, json_object or json_schema"):
        from_response_format({"type": "xml"})


def test_kind_is_checked():
    with pytest.raises(ValueError, match="kind must be one of"):
        Constraint("yaml", "")
