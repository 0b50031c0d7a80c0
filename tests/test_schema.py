"""JSON Schema (draft 2020-12) from type hints: every mapping, definition errors, validation."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import sys
import threading  # noqa: F401  (used by annotations written as source text)
import typing
import uuid  # noqa: F401  (used by annotations written as source text)
from typing import Annotated, Any, Literal, Optional, Union  # noqa: F401  (idem)

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import NotRequired, TypedDict  # noqa: UP035  (pydantic needs it on 3.11)

from toolrig import ArgumentsError, CallContext, DefinitionError, Injected, ToolResult, tool  # noqa: F401
from toolrig._function_tool import FunctionTool


class Color(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(TypedDict):
    street: str
    zip: NotRequired[int]


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Inner(BaseModel):
    v: int


class Outer(BaseModel):
    """An outer thing."""

    inner: Inner
    tags: list[str] = []


INNER = {"properties": {"v": {"type": "integer"}}, "required": ["v"], "title": "Inner", "type": "object"}


def make(annotation: str, default: str | None = None) -> FunctionTool[..., Any]:
    """A tool whose one parameter `x` has the given annotation (written as source text)."""
    ns = dict(globals())
    tail = f" = {default}" if default is not None else ""
    exec(f"def f(x: {annotation}{tail}) -> None:\n    '''Doc.'''\n", ns)
    return tool(ns["f"])


# -- every type mapping: the exact schema fragment ---------------------------------------------

MAPPINGS: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
    ("str", {"type": "string"}, None),
    ("int", {"type": "integer"}, None),
    ("float", {"type": "number"}, None),
    ("bool", {"type": "boolean"}, None),
    ("None", {"type": "null"}, None),
    ("Any", {}, None),
    ("Optional[int]", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),
    ("int | None", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),
    ("Union[int, str]", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, None),
    ("Union[int, str, None]", {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}, None),
    ('Literal["a", "b"]', {"enum": ["a", "b"], "type": "string"}, None),
    ('Literal["a"]', {"const": "a", "type": "string"}, None),
    ("Literal[1, 2]", {"enum": [1, 2], "type": "integer"}, None),
    ("Literal[True]", {"const": True, "type": "boolean"}, None),
    ('Literal[1, "a"]', {"enum": [1, "a"]}, None),
    ("Color", {"$ref": "#/$defs/Color"},
     {"Color": {"enum": ["red", "blue"], "title": "Color", "type": "string"}}),
    ("Level", {"$ref": "#/$defs/Level"}, {"Level": {"enum": [1, 2], "title": "Level", "type": "integer"}}),
    ("list[int]", {"items": {"type": "integer"}, "type": "array"}, None),
    ("list", {"items": {}, "type": "array"}, None),
    ("tuple[int, str]", {"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"}, {"type": "string"}],
                         "type": "array"}, None),
    ("tuple[int, ...]", {"items": {"type": "integer"}, "type": "array"}, None),
    ("set[str]", {"items": {"type": "string"}, "type": "array", "uniqueItems": True}, None),
    ("frozenset[int]", {"items": {"type": "integer"}, "type": "array", "uniqueItems": True}, None),
    ("dict[str, int]", {"additionalProperties": {"type": "integer"}, "type": "object"}, None),
    ("dict", {"additionalProperties": True, "type": "object"}, None),
    ("Address", {"$ref": "#/$defs/Address"}, {"Address": {
        "additionalProperties": False, "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
        "required": ["street"], "title": "Address", "type": "object"}}),
    ("Point", {"$ref": "#/$defs/Point"}, {"Point": {
        "additionalProperties": False, "properties": {"x": {"type": "number"}, "y": {"default": 0.0, "type": "number"}},
        "required": ["x"], "title": "Point", "type": "object"}}),
    ("Outer", {"$ref": "#/$defs/Outer"}, {"Inner": INNER, "Outer": {
        "description": "An outer thing.",
        "properties": {"inner": {"$ref": "#/$defs/Inner"},
                       "tags": {"default": [], "items": {"type": "string"}, "type": "array"}},
        "required": ["inner"], "title": "Outer", "type": "object"}}),
    ("Optional[list[Inner]]", {"anyOf": [{"items": {"$ref": "#/$defs/Inner"}, "type": "array"}, {"type": "null"}]},
     {"Inner": INNER}),
    ("dict[str, Inner]", {"additionalProperties": {"$ref": "#/$defs/Inner"}, "type": "object"}, {"Inner": INNER}),
    ("Annotated[int, Field(ge=1, le=10)]", {"maximum": 10, "minimum": 1, "type": "integer"}, None),
    ("Annotated[float, Field(gt=0, lt=1, multiple_of=0.25)]",
     {"exclusiveMaximum": 1, "exclusiveMinimum": 0, "multipleOf": 0.25, "type": "number"}, None),
    ('Annotated[str, Field(min_length=2, max_length=5, pattern="^a")]',
     {"maxLength": 5, "minLength": 2, "pattern": "^a", "type": "string"}, None),
    ("Annotated[list[int], Field(min_length=1, max_length=3)]",
     {"items": {"type": "integer"}, "maxItems": 3, "minItems": 1, "type": "array"}, None),
    ('Annotated[str, Field(description="The city.")]', {"description": "The city.", "type": "string"}, None),
    ("datetime.datetime", {"format": "date-time", "type": "string"}, None),
    ("datetime.date", {"format": "date", "type": "string"}, None),
    ("uuid.UUID", {"format": "uuid", "type": "string"}, None),
]


@pytest.mark.parametrize(("annotation", "fragment", "defs"), MAPPINGS, ids=[m[0] for m in MAPPINGS])
def test_type_mapping(annotation: str, fragment: dict[str, Any], defs: dict[str, Any] | None) -> None:
    schema = make(annotation).spec.input_schema
    expected: dict[str, Any] = {"additionalProperties": False, "properties": {"x": fragment},
                                "required": ["x"], "type": "object"}
    if defs is not None:
        expected["$defs"] = defs
    assert schema == expected
    assert jsonschema_rs.meta.is_valid(dict(schema))  # a valid draft 2020-12 schema
    assert json.loads(json.dumps(schema)) == schema


@pytest.mark.parametrize(("annotation", "default", "fragment"), [
    ("int", "3", {"default": 3, "type": "integer"}),
    ("str", "'x'", {"default": "x", "type": "string"}),
    ("int | None", "None", {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}),
    ("list[int]", "[1, 2]", {"default": [1, 2], "items": {"type": "integer"}, "type": "array"}),
    ("tuple[int, int]", "(1, 2)", {"default": [1, 2], "maxItems": 2, "minItems": 2,
                                   "prefixItems": [{"type": "integer"}, {"type": "integer"}], "type": "array"}),
    ("Color", "Color.BLUE", {"$ref": "#/$defs/Color", "default": "blue"}),
    ("Inner", "Inner(v=1)", {"$ref": "#/$defs/Inner", "default": {"v": 1}}),
    ("int", "Field(5, description='Five.')", {"default": 5, "description": "Five.", "type": "integer"}),
    ("datetime.date", "datetime.date(2024, 1, 2)", {"default": "2024-01-02", "format": "date", "type": "string"}),
])
def test_defaults(annotation: str, default: str, fragment: dict[str, Any]) -> None:
    schema = make(annotation, default).spec.input_schema
    assert schema["properties"]["x"] == fragment
    assert "required" not in schema


def test_a_pydantic_model_default_is_used_when_omitted() -> None:
    t = make("Inner", "Inner(v=7)")
    assert t.validate({}) == {"x": Inner(v=7)}
    assert t.validate({"x": {"v": "8"}}) == {"x": Inner(v=8)}


def test_parameter_order_required_and_kinds() -> None:
    @tool
    def f(a: int, /, b: str, *, c: bool = False, d: float) -> None:
        """Doc."""

    schema = f.spec.input_schema
    assert list(schema["properties"]) == ["a", "b", "c", "d"]
    assert schema["required"] == ["a", "b", "d"]


def test_no_parameters() -> None:
    @tool
    def now() -> str:
        """Current time."""
        return "noon"

    assert now.spec.input_schema == {"additionalProperties": False, "properties": {}, "type": "object"}
    assert now.validate({}) == {}


def test_field_alias_is_the_wire_name() -> None:
    @tool
    def f(from_: Annotated[str, Field(alias="from")], to: str) -> str:
        """Route."""
        return from_ + to

    assert list(f.spec.input_schema["properties"]) == ["from", "to"]
    assert f.spec.input_schema["required"] == ["from", "to"]
    assert f.validate({"from": "a", "to": "b"}) == {"from_": "a", "to": "b"}
    assert f.invoke_sync(f.validate({"from": "a", "to": "b"})) == "ab"
    assert [p.wire_name for p in f.function_schema.params] == ["from", "to"]


@pytest.mark.parametrize("name", ["json", "schema", "copy", "validate", "dict", "model_config", "model_dump",
                                  "_private", "Config", "construct", "self", "cls"])
def test_parameter_names_that_clash_with_pydantic(name: str) -> None:
    # Before the fix these names warned, raised, or silently became model configuration.
    ns: dict[str, Any] = {"Inner": Inner}
    exec(f"def f({name}: Inner, n: list[int] = []) -> int:\n    '''Doc.'''\n    return {name}.v\n", ns)
    t = tool(ns["f"])
    assert list(t.spec.input_schema["properties"]) == [name, "n"]
    assert t.spec.input_schema["required"] == [name]
    values = t.validate({name: {"v": "3"}})
    assert values == {name: Inner(v=3), "n": []}
    assert t.invoke_sync(values) == 3


def test_output_schemas() -> None:
    def out(annotation: str) -> Any:
        ns = dict(globals())
        exec(f"def f() -> {annotation}:\n    '''Doc.'''\n", ns)
        return tool(ns["f"]).spec.output_schema

    assert out("str") == {"type": "string"}
    assert out("list[int]") == {"items": {"type": "integer"}, "type": "array"}
    assert out("Inner") == {"properties": {"v": {"type": "integer"}}, "required": ["v"], "type": "object"}
    assert out("Outer")["$defs"] == {"Inner": INNER}
    assert out("Point") == {"properties": {"x": {"type": "number"}, "y": {"default": 0.0, "type": "number"}},
                            "required": ["x"], "type": "object"}
    for nothing in ("None", "Any", "ToolResult", "bytes"):
        assert out(nothing) is None

    def no_annotation():  # type: ignore[no-untyped-def]
        """Doc."""

    assert tool(no_annotation).spec.output_schema is None


def test_injected_parameters_are_not_in_the_schema() -> None:
    @tool
    def f(city: str, ctx: CallContext, user: Injected[str], db: Injected[dict[str, int]] = {}) -> str:
        """Doc."""
        return city

    schema = f.spec.input_schema
    assert list(schema["properties"]) == ["city"]
    assert schema["required"] == ["city"]
    assert [p.name for p in f.function_schema.injected] == ["ctx", "user", "db"]
    with pytest.raises(ArgumentsError, match="user: unknown field"):
        f.validate({"city": "x", "user": "mallory"})


# -- postponed annotations and forward references ------------------------------------------------

def test_types_local_to_the_defining_function() -> None:
    # With `from __future__ import annotations` the hints are strings; before the fix a type
    # defined in the enclosing function could not be resolved.
    class Local(BaseModel):
        a: int

    @tool
    def f(m: Local, many: list[Local]) -> Local:
        """Doc."""
        return m

    assert f.spec.input_schema["$defs"]["Local"]["properties"] == {"a": {"type": "integer"}}
    assert f.validate({"m": {"a": "1"}, "many": []}) == {"m": Local(a=1), "many": []}
    assert f.spec.output_schema == {"properties": {"a": {"type": "integer"}}, "required": ["a"], "type": "object"}


def test_forward_reference_defined_later_at_module_level() -> None:
    assert make('"LaterModel"').spec.input_schema["properties"]["x"] == {"$ref": "#/$defs/LaterModel"}


def test_unresolvable_forward_reference_says_what_to_do() -> None:
    with pytest.raises(DefinitionError) as info:
        make("NoSuchType")
    assert "cannot resolve type hints: name 'NoSuchType' is not defined" in str(info.value)
    assert "define or import that type before the tool" in str(info.value)


class LaterModel(BaseModel):
    q: int


class NotAModel:
    """A plain class: pydantic cannot validate it from JSON."""


# -- definition errors ---------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "words"), [
    ("def f(*args: int) -> None:\n    '''D.'''", "*args / **args cannot be described to a model"),
    ("def f(**kwargs: int) -> None:\n    '''D.'''", "*kwargs / **kwargs cannot be described to a model"),
    ("def f(x) -> None:\n    '''D.'''", "parameter 'x' needs a type hint (e.g. `x: str`)"),
    ("def f(x: object) -> None:\n    '''D.'''", "parameter 'x' has type <class 'object'>, which a model cannot send"),
    ("def f(x: typing.Callable[[], int]) -> None:\n    '''D.'''", "which a model cannot send"),
    ("def f(x: type[int]) -> None:\n    '''D.'''", "which a model cannot send"),
    ("def f(x: list[typing.Callable[[], int]]) -> None:\n    '''D.'''", "which a model cannot send"),
    ("def f(x: typing.Iterator[int]) -> None:\n    '''D.'''", "which a model cannot send"),
    ("def f(x: float = float('nan')) -> None:\n    '''D.'''", "has the default nan, which cannot be written as JSON"),
    ("def f(x: float = float('inf')) -> None:\n    '''D.'''", "has the default inf, which cannot be written as JSON"),
    ("def f(x: list[int] = (1, 2)) -> None:\n    '''D.'''",
     "has the default (1, 2), which does not survive a JSON round trip unchanged (the model sees [1, 2])"),
    ("def f(x: list[str] = {'a'}) -> None:\n    '''D.'''", "has the default {'a'}, which does not survive"),
    ("def f(x: typing.Any = (1, 2)) -> None:\n    '''D.'''", "has the default (1, 2), which does not survive"),
    ("def f(x: int = 1.5) -> None:\n    '''D.'''", "has the default 1.5, which does not survive"),
    ("def f(x: typing.Any = object()) -> None:\n    '''D.'''", "which cannot be written as JSON"),
    ("def f(a: Annotated[int, Field(alias='x')], b: Annotated[int, Field(alias='x')]) -> None:\n    '''D.'''",
     "parameters 'a' and 'b' both appear to the model as 'x'; rename one of them or give it another alias"),
    ("def f(a: Annotated[int, Field(alias='b')], b: int) -> None:\n    '''D.'''",
     "parameters 'a' and 'b' both appear to the model as 'b'"),
    ("def f(a: int = Field(1, alias='b'), b: int = 2) -> None:\n    '''D.'''",
     "parameters 'a' and 'b' both appear to the model as 'b'"),
    ("def f(x: int) -> None:\n    pass", "tool 'f' has no description: add a docstring or pass description=..."),
    ("def f(y: int, x: threading.Lock) -> None:\n    '''D.'''",
     "parameter 'x' has type <built-in function allocate_lock>, which cannot be described as JSON Schema"),
    ("def f(x: NotAModel) -> None:\n    '''D.'''", "parameter 'x' has type <class 'test_schema.NotAModel'>, "
     "which cannot be described as JSON Schema (Unable to generate pydantic-core schema for <class "
     "'test_schema.NotAModel'>); use JSON-like types: str, int, float, bool, None, list, dict, Literal, Enum, "
     "TypedDict, dataclasses or pydantic models"),
])
def test_definition_errors_say_what_to_change(source: str, words: str) -> None:
    ns = dict(globals())
    exec(source, ns)
    with pytest.raises(DefinitionError) as info:
        tool(ns["f"])
    assert words in str(info.value)
    assert str(info.value).startswith("f") or "'f'" in str(info.value)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="typing.TypedDict works with pydantic from 3.12")
def test_typing_typeddict_on_311_points_to_typing_extensions() -> None:
    class Old(typing.TypedDict):
        a: int

    with pytest.raises(DefinitionError, match=r"typing_extensions\.TypedDict"):
        @tool
        def f(x: Old) -> None:
            """Doc."""


def test_errors_are_definition_errors_and_type_errors() -> None:
    # DefinitionError is a TypeError too, so generic "bad definition" handlers catch it.
    assert issubclass(DefinitionError, TypeError)


# -- validation -----------------------------------------------------------------------------------

def test_lax_coercion_and_structured_errors() -> None:
    @tool
    def f(n: int, ratio: float, ok: bool, tags: list[str], when: datetime.date) -> None:
        """Doc."""

    assert f.validate({"n": "5", "ratio": "0.5", "ok": "yes", "tags": ["a"], "when": "2024-01-02"}) == {
        "n": 5, "ratio": 0.5, "ok": True, "tags": ["a"], "when": datetime.date(2024, 1, 2)}
    with pytest.raises(ArgumentsError) as info:
        f.validate({"n": "five", "ratio": float("nan"), "tags": "a", "extra": 1, "when": "soon"})
    errors = {tuple(e["loc"]): e["type"] for e in info.value.errors}
    assert errors == {("n",): "int_parsing", ("ratio",): "finite_number", ("ok",): "missing",
                      ("tags",): "list_type", ("when",): "date_from_datetime_parsing", ("extra",): "extra_forbidden"}
    assert "extra: unknown field; remove it" in str(info.value)


def test_nested_error_locations() -> None:
    t = make("list[Inner]")
    with pytest.raises(ArgumentsError) as info:
        t.validate({"x": [{"v": 1}, {"v": "bad"}]})
    assert info.value.errors == [{"loc": ["x", 1, "v"], "msg": "Input should be a valid integer, unable to parse "
                                  "string as an integer", "type": "int_parsing"}]
    assert str(info.value).startswith("x.1.v: ")


def test_constraints_are_enforced() -> None:
    t = make("Annotated[int, Field(ge=1, le=10)]")
    assert t.validate({"x": 10}) == {"x": 10}
    with pytest.raises(ArgumentsError, match="x: Input should be less than or equal to 10"):
        t.validate({"x": 11})


def test_enum_and_literal_validation() -> None:
    assert make("Color").validate({"x": "red"}) == {"x": Color.RED}
    with pytest.raises(ArgumentsError) as info:
        make('Literal["a", "b"]').validate({"x": "c"})
    assert info.value.errors[0]["type"] == "literal_error"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
VALIDATED = [make(a) for a, *_ in MAPPINGS]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(VALIDATED) - 1), x=json_values,
       arguments=json_values | st.dictionaries(st.sampled_from(["x", "y", "from"]), json_values))
def test_validation_only_ever_raises_arguments_error(index: int, x: Any, arguments: Any) -> None:
    t = VALIDATED[index]
    for candidate in ({"x": x}, arguments):
        try:
            values = t.validate(candidate)
        except ArgumentsError as exc:
            assert exc.errors and all({"loc", "msg", "type"} <= set(e) for e in exc.errors)
        else:
            assert set(values) == {"x"}


NON_OBJECT = [(a, f) for a, f, d in MAPPINGS if d is None and f and "format" not in f
              and "object" not in json.dumps(f) and "prefixItems" not in f]


@pytest.mark.parametrize(("annotation", "fragment"), NON_OBJECT, ids=[a for a, _ in NON_OBJECT])
def test_every_value_the_schema_allows_is_accepted(annotation: str, fragment: dict[str, Any]) -> None:
    # hypothesis-jsonschema 0.23 cannot draw objects with the installed hypothesis and ignores
    # prefixItems (a draft 2020-12 keyword), so only scalar and array schemas are drawn here.
    from hypothesis_jsonschema import from_schema

    t = make(annotation)

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(value=from_schema(fragment))
    def check(value: Any) -> None:
        assert set(t.validate({"x": value})) == {"x"}

    check()


def test_a_pattern_the_validator_cannot_compile_is_a_definition_error() -> None:


    from toolrig import DefinitionError, tool

    with pytest.raises(DefinitionError, match="look-around"):
        @tool
        def lookahead(a: Annotated[str, Field(pattern="(?=x)a")]) -> str:
            """Uses a pattern with look-ahead."""
            return a
