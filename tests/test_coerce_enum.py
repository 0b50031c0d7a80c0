"""Numbers and booleans for string enums: ``2`` → ``"2"``, ``true`` → ``"True"`` only where the enum holds it."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from typing import Any, Literal

import anyio
import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import ToolCall, schema_tool, tool
from toolrig._schemas.coerce import coerce_enum_strings
from toolrig.runtime import Runtime, minimal_stages


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# -- the two shapes BFCL's ground truth sends (both were refused as invalid_arguments) ------------------

BFCL_SCHEMA = obj(
    month={"type": "string", "enum": ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"],
           "description": "The month."},
    include_weekends={"type": "string", "enum": ["True", "False"], "description": "Whether to count weekends."},
)


def bfcl_handler(arguments: dict[str, Any]) -> dict[str, Any]:
    return arguments


def run(tools: list[Any], call: ToolCall, **kw: Any) -> Any:
    async def go() -> Any:
        async with Runtime(tools, audit=False, **kw) as rt:
            return await rt.call(call), rt.stats()

    return anyio.run(go)


def test_bfcl_integer_for_a_string_enum_is_the_enum_string() -> None:
    st_tool = schema_tool(name="days_in_month", description="Count the days of a month.", input_schema=BFCL_SCHEMA,
                          handler=bfcl_handler)
    out, stats = run([st_tool], ToolCall(name="days_in_month", arguments={"month": 2}))
    assert out.ok, out.content
    assert out.structured == {"month": "2"}
    assert out.repairs == ("argument 'month': 2 -> '2' (the string its enum holds)",)
    assert stats["repairs"] == {"days_in_month": {"enum_string": 1}}


def test_bfcl_boolean_for_a_python_spelled_enum_is_the_enum_string() -> None:
    st_tool = schema_tool(name="days_in_month", description="Count the days of a month.", input_schema=BFCL_SCHEMA,
                          handler=bfcl_handler)
    out, _ = run([st_tool], ToolCall(name="days_in_month", arguments={"month": "3", "include_weekends": True}))
    assert out.ok, out.content
    assert out.structured == {"month": "3", "include_weekends": "True"}
    assert out.repairs == ("argument 'include_weekends': true -> 'True' (the string its enum holds)",)


class Unit(StrEnum):
    ONE = "1"
    TWO = "2"


@tool
def choose(level: Literal["1", "2", "3"], strict: Literal["true", "false"] = "false", unit: Unit = Unit.ONE) -> str:
    """Choose a level."""
    return f"{level}/{strict}/{unit.value}"


def test_python_tools_take_the_enum_string_too_even_in_the_minimal_pipeline() -> None:
    out, _ = run([choose], ToolCall(name="choose", arguments={"level": 3, "strict": True, "unit": 2}),
                 stages=minimal_stages())
    assert out.ok, out.content
    assert out.content == "3/true/2"
    assert len(out.repairs) == 3


def test_never_coerced_where_the_enum_does_not_hold_the_value() -> None:
    out, stats = run([choose], ToolCall(name="choose", arguments={"level": 4}))
    assert out.error is not None and out.error.kind == "invalid_arguments" and out.repairs == ()
    assert stats["repairs"] == {}
    out, _ = run([choose], ToolCall(name="choose", arguments={"level": "1", "strict": 1}))  # 1 is not true
    assert out.error is not None and out.error.kind == "invalid_arguments"


@pytest.mark.parametrize(("value", "schema"), [
    (2, {"type": "string"}),                                      # a plain string takes no number
    (2, {"type": "string", "enum": ["two", "02", "2 "]}),          # no exact spelling
    (True, {"type": "string", "enum": ["true", "True"]}),          # two spellings: ambiguous
    (True, {"type": "string", "enum": ["1", "yes"]}),              # a boolean is not 1
    (1, {"type": "string", "enum": ["True", "true"]}),             # nor is 1 a boolean
    (2.5, {"type": "string", "enum": ["2"]}),                      # not integral
    (2, {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["2"]}]}),  # already valid as it is
    (2, {"enum": [2, "2"]}),                                       # the enum holds the number itself
    ("2", {"type": "string", "enum": ["2"]}),                      # already a string
    (None, {"type": "string", "enum": ["None", "null"]}),          # null is not a number or boolean
])
def test_left_alone(value: Any, schema: dict[str, Any]) -> None:
    args = {"x": value}
    assert coerce_enum_strings(args, obj(x=schema)) == (args, [])


@pytest.mark.parametrize(("value", "schema", "expected"), [
    (2, {"type": "string", "enum": ["1", "2"]}, "2"),
    (-7, {"enum": ["-7", "7"]}, "-7"),
    (2.0, {"type": "string", "enum": ["2"]}, "2"),
    (2.0, {"type": "string", "enum": ["2.0", "3.0"]}, "2.0"),
    (0.5, {"type": "string", "enum": ["0.5"]}, "0.5"),
    (False, {"type": "string", "enum": ["False", "True"]}, "False"),
    (False, {"type": "string", "enum": ["false"]}, "false"),
    (True, {"const": "True"}, "True"),
    (3, {"anyOf": [{"type": "string", "enum": ["3"]}, {"type": "null"}]}, "3"),
    (3, {"$ref": "#/$defs/Level"}, "3"),
])
def test_converted(value: Any, schema: dict[str, Any], expected: str) -> None:
    root = obj(x=schema) | {"$defs": {"Level": {"type": "string", "enum": ["1", "3"]}}}
    out, repairs = coerce_enum_strings({"x": value}, root)
    assert out == {"x": expected} and len(repairs) == 1


def test_nested_objects_and_arrays_are_followed_and_named() -> None:
    schema = obj(plan={"type": "object", "properties": {"steps": {"type": "array", "items": {
        "type": "string", "enum": ["1", "2"]}}}})
    out, repairs = coerce_enum_strings({"plan": {"steps": [1, 2, "1"]}}, schema)
    assert out == {"plan": {"steps": ["1", "2", "1"]}}
    assert repairs == ["argument 'plan.steps[0]': 1 -> '1' (the string its enum holds)",
                       "argument 'plan.steps[1]': 2 -> '2' (the string its enum holds)"]


def test_odd_input_never_raises() -> None:
    deep: Any = 1
    for _ in range(3000):
        deep = [deep]
    assert coerce_enum_strings({"x": deep}, obj(x={"type": "array"}))[1] == []
    assert coerce_enum_strings({"x": 10**5000}, obj(x={"enum": ["1"]})) == ({"x": 10**5000}, [])
    assert coerce_enum_strings([1], obj()) == ([1], [])
    assert coerce_enum_strings({"x": 1}, "not a schema") == ({"x": 1}, [])
    assert coerce_enum_strings({"x": math.inf}, obj(x={"enum": ["inf"]})) == ({"x": math.inf}, [])


_SCALARS = st.one_of(st.booleans(), st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False,
                                                                       width=32))
_SPELLINGS = st.one_of(_SCALARS.map(json.dumps), _SCALARS.map(str), st.text(max_size=4))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=400)
@given(value=_SCALARS, enum=st.lists(_SPELLINGS, min_size=1, max_size=6, unique=True))
def test_generated_enums_convert_only_to_a_string_they_hold(value: Any, enum: list[str]) -> None:
    schema = obj(x={"type": "string", "enum": enum})
    out, repairs = coerce_enum_strings({"x": value}, schema)
    spellings = {json.dumps(value), str(value)}
    if isinstance(value, float) and value.is_integer():
        spellings.add(str(int(value)))
    held = spellings & set(enum)
    if len(held) == 1:
        assert out == {"x": held.pop()} and len(repairs) == 1
        assert jsonschema_rs.validator_for(schema).is_valid(out)
    else:
        assert out == {"x": value} and repairs == []
