"""Schema-guided coercion: lossless conversions, odd schemas, and properties checked by hypothesis."""

from __future__ import annotations

import math
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig._schemas.coerce import coerce_to_schema

NEVER_VALID = staticmethod(lambda _value: False)


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# -- conversions --------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "schema", "expected"), [
    ("5", {"type": "integer"}, 5),
    (" -12 ", {"type": "integer"}, -12),
    ("5.0", {"type": "integer"}, 5),
    ("1e3", {"type": "integer"}, 1000),
    ("1e30", {"type": "integer"}, 10**30),  # exact, not int(float("1e30"))
    ("2.5", {"type": "number"}, 2.5),
    ("7", {"type": "number"}, 7.0),
    ("true", {"type": "boolean"}, True),
    ("Yes", {"type": "boolean"}, True),
    ("off", {"type": "boolean"}, False),
    ("0", {"type": "boolean"}, False),
    ("null", {"type": "null"}, None),
    ("None", {"type": ["integer", "null"]}, None),
    ('{"a": 1}', {"type": "object"}, {"a": 1}),
    ("[1, 2]", {"type": "array"}, [1, 2]),
    ("[1, 2]", {"type": "array", "items": {"type": "string"}}, [1, 2]),  # inner values left to the validator
    ('["1", "2"]', {"type": "array", "items": {"type": "integer"}}, [1, 2]),
    ("2", {"enum": [1, 2, 3]}, 2),  # types taken from enum values
    ("true", {"const": True}, True),
])
def test_lossless_conversions(value: Any, schema: dict[str, Any], expected: Any) -> None:
    result = coerce_to_schema(value, schema)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(("value", "schema"), [
    ("5.5", {"type": "integer"}),
    ("abc", {"type": "integer"}),
    ("", {"type": "integer"}),
    ("nan", {"type": "number"}),
    ("inf", {"type": "number"}),
    ("Infinity", {"type": "integer"}),
    ("1e999999", {"type": "integer"}),  # would be a huge int: refused, not computed
    ("maybe", {"type": "boolean"}),
    ("[1]", {"type": "object"}),
    ("{bad json", {"type": "object"}),
    ("nothing", {"type": "null"}),
    (True, {"type": "integer"}),
    (5, {"type": "string"}),
    ([1], {"type": "string"}),
])
def test_lossy_or_impossible_conversions_leave_the_value(value: Any, schema: dict[str, Any]) -> None:
    assert coerce_to_schema(value, schema) == value


def test_nested_objects_arrays_and_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "boolean"}},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}],
                     "items": {"type": "boolean"}},
        },
        "additionalProperties": {"type": "number"},
    }
    value = {"n": "3", "tags": ["yes", "no"], "pair": ["1", "2.5", "true"], "extra": "1.5", "keep": "x"}
    assert coerce_to_schema(value, schema) == {
        "n": 3, "tags": [True, False], "pair": [1, 2.5, True], "extra": 1.5, "keep": "x"}
    assert value["n"] == "3"  # the input is not mutated


def test_refs_anyof_and_pydantic_style_schemas() -> None:
    schema = {
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}},
                  "a/b": {"type": "number"}},
        "type": "object",
        "properties": {
            "p": {"$ref": "#/$defs/Point", "default": {"x": 0}},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "escaped": {"$ref": "#/$defs/a~1b"},
            "first": {"type": "array", "prefixItems": [{"$ref": "#/properties/maybe"}]},
        },
    }
    value = {"p": {"x": "4"}, "maybe": "7", "escaped": "0.5", "first": ["null"]}
    assert coerce_to_schema(value, schema) == {"p": {"x": 4}, "maybe": 7, "escaped": 0.5, "first": [None]}


def test_anyof_siblings_of_the_parent_still_guide() -> None:
    # The parent's properties apply to every branch (common in MCP server schemas).
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert coerce_to_schema({"a": "5"}, schema) == {"a": 5}


def test_allof_is_merged() -> None:
    schema = {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                        {"properties": {"b": {"type": "boolean"}}}]}
    assert coerce_to_schema({"a": "1", "b": "true"}, schema) == {"a": 1, "b": True}


def test_string_first_when_the_value_already_fits() -> None:
    schema = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert coerce_to_schema("5", schema) == "5"


def test_a_valid_value_is_never_touched() -> None:
    # Both branches accept the object; before the fix the first branch's coercion rewrote it.
    schema = {"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"type": "object"}]}
    value = {"a": "5"}
    assert coerce_to_schema(value, schema) is value


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"a": {"$ref": "#/$defs/A"}}},
    {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
    {"anyOf": 5},
    {"properties": [1, 2]},
    {"items": "nope", "type": "array"},
    {"$ref": "#/nowhere/at/all"},
    {"$ref": "#/properties/0"},
    {"$ref": "http://example.com/schema"},
    {"type": 7},
    {"allOf": [1, {"type": "integer"}]},
])
def test_odd_schemas_do_not_raise(schema: dict[str, Any]) -> None:
    coerce_to_schema({"a": "1"}, schema)
    coerce_to_schema(["1"], schema, is_valid=NEVER_VALID)


def test_non_mapping_schema_returns_value() -> None:
    assert coerce_to_schema("1", True) == "1"
    assert coerce_to_schema("1", None) == "1"


def test_deep_json_text_does_not_raise() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert coerce_to_schema(deep, {"type": "array"}) == deep
    assert coerce_to_schema("[" * 100_000, {"type": "array"}) == "[" * 100_000


def test_deep_values_stop_at_a_depth_limit() -> None:
    value: Any = "1"
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(200):
        value, schema = [value], {"type": "array", "items": schema}
    coerce_to_schema(value, schema)


def test_values_that_are_not_json_are_returned() -> None:
    odd = {"a": {1, 2}}
    assert coerce_to_schema(odd, obj(a={"type": "array"})) is odd


# -- properties ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
type_names = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array", "bogus"])
ref_targets = st.sampled_from(["#", "#/$defs/A", "#/$defs/B", "#/properties/a", "#/items", "#/x~1y", "#/", "x"])


def schema_nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "type": type_names | st.lists(type_names, max_size=3) | st.integers(),
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3) | json_values,
        "additionalProperties": st.booleans() | children,
        "items": children | st.lists(children, max_size=2) | st.booleans(),
        "prefixItems": st.lists(children, max_size=2),
        "anyOf": st.lists(children, max_size=3) | st.integers(),
        "oneOf": st.lists(children, max_size=3),
        "allOf": st.lists(children, max_size=2),
        "$ref": ref_targets,
        "$defs": st.fixed_dictionaries({"A": children, "B": children}),
        "enum": st.lists(json_values, max_size=3),
        "const": json_values,
    })


any_schemas = st.recursive(st.booleans() | schema_nodes(st.just({})), schema_nodes, max_leaves=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, schema=any_schemas)
def test_never_raises_on_arbitrary_schemas_and_values(value: Any, schema: Any) -> None:
    coerce_to_schema(value, schema)
    coerce_to_schema(value, schema, is_valid=NEVER_VALID)  # the walk itself, too


def typed_schemas() -> st.SearchStrategy[dict[str, Any]]:
    scalars = st.sampled_from([{"type": t} for t in ("string", "integer", "number", "boolean", "null")])
    return st.recursive(scalars, lambda inner: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda props: {"type": "object", "properties": props},
                  st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    ), max_leaves=6)


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for a schema made by typed_schemas() (hypothesis-jsonschema 0.23 cannot draw
    objects with the installed hypothesis)."""
    kind = schema["type"]
    if kind == "array":
        return st.lists(values_for(schema["items"]), max_size=3)
    if kind == "object":
        return st.fixed_dictionaries({k: values_for(v) for k, v in schema["properties"].items()})
    return {"string": st.text(), "integer": st.integers(), "boolean": st.booleans(), "null": st.none(),
            "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers()}[kind]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), schema=typed_schemas())
def test_valid_values_are_unchanged(data: st.DataObject, schema: dict[str, Any]) -> None:
    value = data.draw(values_for(schema))
    assert jsonschema_rs.validator_for(schema).is_valid(value)
    assert coerce_to_schema(value, schema) == value
    assert coerce_to_schema(value, schema, is_valid=NEVER_VALID) == value  # even without the shortcut


@settings(max_examples=100, deadline=None)
@given(n=st.integers(), x=st.floats(allow_nan=False, allow_infinity=False), b=st.booleans())
def test_stringified_scalars_come_back_exactly(n: int, x: float, b: bool) -> None:
    schema = obj(n={"type": "integer"}, x={"type": "number"}, b={"type": "boolean"})
    got = coerce_to_schema({"n": str(n), "x": repr(x), "b": str(b).lower()}, schema)
    assert got == {"n": n, "x": x, "b": b}
    assert type(got["n"]) is int and isinstance(got["x"], float) and not math.isnan(got["x"])
