"""Defining tools: @tool, the Tool base class, methods, as_tool, schema_tool."""

from __future__ import annotations

import functools
import inspect
import pickle
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import (
    ArgumentsError,
    BaseTool,
    CallContext,
    DefinitionError,
    FunctionTool,
    Permission,
    SchemaTool,
    Tool,
    ToolFailure,
    as_tool,
    schema_tool,
    tool,
)


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


class Counter:
    """A class with a method tool, at module level so that it pickles."""

    def __init__(self, start: int) -> None:
        self.start = start

    @tool
    def bump(self, by: int) -> int:
        """Bump the counter."""
        return self.start + by


# -- @tool ----------------------------------------------------------------------------------------

def test_bare_decorator_keeps_the_function() -> None:
    assert isinstance(add, FunctionTool) and isinstance(add, BaseTool)
    assert add(2, 3) == 5
    assert add(2) == 3
    assert add.__name__ == "add" and add.__doc__ == "Add two numbers."
    assert inspect.signature(add) == inspect.signature(add.fn)
    assert add.spec.name == "add" and add.spec.description == "Add two numbers."
    assert add.is_async is False
    assert repr(add) == "<FunctionTool add@1.0.0>"


def test_decorator_with_options() -> None:
    @tool(name="sum_two", description="Sum.", permission="readonly", tags=["math"], version="2.0.0", timeout=1.5,
          requires_approval=True)
    def f(a: int) -> int:
        return a

    assert f(4) == 4
    spec = f.spec
    assert (spec.name, spec.description, spec.permission, spec.tags, spec.version, spec.timeout) == (
        "sum_two", "Sum.", Permission.READONLY, frozenset({"math"}), "2.0.0", 1.5)
    assert spec.requires_approval is True


def test_empty_parentheses() -> None:
    @tool()
    def f() -> str:
        """Doc."""
        return "x"

    assert f.name == "f" and f() == "x"


@pytest.mark.anyio
async def test_async_function_tool() -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetch."""
        await anyio.lowlevel.checkpoint()
        return url.upper()

    assert fetch.is_async is True
    assert await fetch("a") == "A"
    assert await fetch.invoke(fetch.validate({"url": "b"})) == "B"
    result = await fetch.__call_tool__({"url": "c"})
    assert result.text == "C"


def test_sync_and_async_invoke_sync() -> None:
    @tool
    async def slow(x: int) -> int:
        """Slow."""
        await anyio.lowlevel.checkpoint()
        return x * 2

    assert slow.invoke_sync({"x": 2}) == 4
    assert add.invoke_sync(add.validate({"a": "2"})) == 3


@pytest.mark.anyio
async def test_sync_tool_invoked_from_async() -> None:
    assert await add.invoke({"a": 1, "b": 2}) == 3
    assert (await add.__call_tool__({"a": "1"})).structured == 2


def test_positional_only_parameters_are_bound_positionally() -> None:
    @tool
    def f(a: int, /, b: int) -> int:
        """Doc."""
        return a - b

    assert f.invoke_sync(f.validate({"a": 5, "b": 1})) == 4


@pytest.mark.parametrize(("target", "words"), [
    ("get_weather", "@tool('get_weather') is not supported: write @tool(name='get_weather')"),
    (42, "@tool needs a function or method, got int"),
])
def test_decorator_misuse(target: Any, words: str) -> None:
    with pytest.raises(DefinitionError) as info:
        tool(target)
    assert words in str(info.value)


def test_stacked_decorators_apply_the_outer_options() -> None:
    # Before the fix the outer options were silently dropped (the inner tool's attributes won).
    @tool(tags=["math"], formatter=str)
    @tool(permission="readonly")
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    assert mul.spec.permission is Permission.READONLY and mul.spec.tags == {"math"}
    assert mul(2, 3) == 6 and mul.to_result(6).text == "6"
    renamed = tool(add, name="plus")
    assert renamed.name == "plus" and add.name == "add"


def test_function_attributes_do_not_replace_the_tools() -> None:
    def f(x: int) -> int:
        """Doc."""
        return x

    f.spec = "not a spec"  # type: ignore[attr-defined]
    f.fn = None  # type: ignore[attr-defined]
    t = tool(f)
    assert t.spec.name == "f" and t(2) == 2


@pytest.mark.parametrize("target", [
    functools.partial(lambda a, b: a, b=1),
    type("Callable", (), {"__call__": lambda self, x: x})(),
    len,
])
def test_only_functions_and_methods(target: Any) -> None:
    with pytest.raises(DefinitionError, match=r"@tool needs a function or method, got .*: wrap it in a `def`"):
        tool(target, name="x", description="X.")


def test_lambda_needs_a_name() -> None:
    with pytest.raises(DefinitionError, match="illegal tool name '<lambda>'"):
        tool(lambda x: x)
    named = tool(lambda: 1, name="one", description="One.")
    assert named.spec.name == "one" and named() == 1


def test_generators_are_refused() -> None:
    def gen(n: int) -> Any:
        """Doc."""
        yield n

    async def agen(n: int) -> Any:
        """Doc."""
        yield n

    for fn in (gen, agen):
        with pytest.raises(DefinitionError, match="a generator cannot be a tool"):
            tool(fn)


def test_formatter_and_check_fn() -> None:
    calls: list[int] = []

    def check() -> bool:
        calls.append(1)
        return len(calls) < 2

    @tool(formatter=str.upper, check_fn=check)
    def shout(text: str) -> str:
        """Shout."""
        return text

    assert shout.to_result(shout("hi")).text == "HI"
    assert shout.available() is True
    assert shout.available() is True  # cached for check_ttl seconds
    assert len(calls) == 1
    shout.check_ttl = 0
    assert shout.available() is False
    assert add.available() is True


def test_failing_check_fn_means_unavailable() -> None:
    def boom() -> bool:
        raise RuntimeError("backend down")

    @tool(check_fn=boom)
    def f() -> None:
        """Doc."""

    assert f.available() is False


def test_with_spec_copies() -> None:
    renamed = add.with_spec(name="plus", permission="readonly")
    assert isinstance(renamed, FunctionTool)
    assert renamed.name == "plus" and add.name == "add"
    assert renamed.spec.permission is Permission.READONLY and add.spec.permission is Permission.WRITE
    assert renamed(1, 1) == 2
    assert renamed.validate({"a": "3"}) == {"a": 3, "b": 1}
    with pytest.raises(DefinitionError, match="illegal tool name"):
        add.with_spec(name="bad name")


def test_module_level_tool_pickles_by_reference() -> None:
    # Before the fix pickling failed: the reduce tuple held the module object itself.
    assert pickle.loads(pickle.dumps(add)) is add
    renamed = pickle.loads(pickle.dumps(add.with_spec(name="plus")))
    assert renamed.name == "plus" and renamed(1, 2) == 3 and add.name == "add"


# -- methods --------------------------------------------------------------------------------------

def test_method_tool_schema_has_no_self() -> None:
    # Before the fix `self` was treated as a model-visible parameter and @tool failed.
    assert Counter.bump.spec.input_schema == {
        "additionalProperties": False, "properties": {"by": {"type": "integer"}}, "required": ["by"],
        "type": "object"}


def test_method_tool_through_an_instance() -> None:
    counter = Counter(10)
    bound = counter.bump
    assert isinstance(bound, FunctionTool)
    assert bound(5) == 15
    assert bound.invoke_sync(bound.validate({"by": "2"})) == 12
    assert counter.bump is bound  # cached on the instance: one tool, one set of stats
    assert Counter(1).bump(1) == 2  # other instances bind their own
    assert Counter.bump(counter, 1) == 11  # the unbound tool is still the plain function
    assert as_tool(counter.bump) is bound


def test_unbound_method_tool_cannot_run() -> None:
    with pytest.raises(DefinitionError, match=r"tool 'bump' is a method: use it from an instance \(e\.g\. `obj\.bump`"):
        Counter.bump.invoke_sync({"by": 1})
    with pytest.raises(DefinitionError, match="is a method"):
        as_tool(Counter.bump)


@pytest.mark.anyio
async def test_async_method_tool() -> None:
    class Service:
        def __init__(self) -> None:
            self.prefix = ">"

        @tool
        async def echo(self, text: str) -> str:
            """Echo."""
            await anyio.lowlevel.checkpoint()
            return self.prefix + text

    svc = Service()
    assert svc.echo.is_async
    assert await svc.echo.invoke({"text": "x"}) == ">x"


def test_method_tool_on_a_slots_class() -> None:
    class Slotted:
        __slots__ = ("k",)

        def __init__(self) -> None:
            self.k = 3

        @tool
        def times(self, n: int) -> int:
            """Times."""
            return self.k * n

    s = Slotted()
    assert s.times(2) == 6
    assert s.times.invoke_sync({"n": 3}) == 9


def test_cls_method_tool_binds_to_the_class() -> None:
    class Units:
        factor = 1000

        @tool
        def to_grams(cls, kilos: float) -> float:
            """Kilograms to grams."""
            return kilos * cls.factor

    assert list(Units.to_grams.spec.input_schema["properties"]) == ["kilos"]
    assert Units.to_grams(2) == 2000
    assert Units().to_grams.invoke_sync({"kilos": 0.5}) == 500


def test_staticmethod_over_a_tool() -> None:
    class Holder:
        @staticmethod
        @tool
        def ping(host: str) -> str:
            """Ping."""
            return host

    assert Holder.ping("a") == "a"
    assert Holder().ping.spec.name == "ping"


def test_plain_tool_stored_on_a_class_is_not_bound() -> None:
    class Holder:
        tool_attr = add

    assert Holder().tool_attr is add
    assert Holder.tool_attr is add


def test_bound_method_tool_pickles_through_its_instance() -> None:
    counter = Counter(7)
    again = pickle.loads(pickle.dumps(counter.bump))
    assert again(1) == 8


def test_self_parameter_in_a_plain_function() -> None:
    @tool
    def f(self: int) -> int:
        """A function whose parameter happens to be called self."""
        return self

    assert list(f.spec.input_schema["properties"]) == ["self"]
    assert f.invoke_sync(f.validate({"self": 4})) == 4


def test_bound_method_given_to_as_tool() -> None:
    class Greeter:
        def greet(self, who: str) -> str:
            """Greet someone."""
            return f"hi {who}"

    t = as_tool(Greeter().greet)
    assert list(t.spec.input_schema["properties"]) == ["who"]
    assert t.invoke_sync({"who": "bo"}) == "hi bo"


# -- Tool base class ------------------------------------------------------------------------------

class GetWeather(Tool):
    """Current weather for a city."""

    permission = "readonly"
    tags = ["weather"]
    timeout = 5

    def run(self, city: str, days: int = 1) -> str:
        return f"{city}:{days}"


def test_tool_subclass() -> None:
    spec = GetWeather.spec
    assert spec.name == "get_weather"
    assert spec.description == "Current weather for a city."
    assert spec.permission is Permission.READONLY and spec.tags == {"weather"} and spec.timeout == 5
    assert list(spec.input_schema["properties"]) == ["city", "days"]
    t = GetWeather()
    assert t.name == "get_weather" and t.spec is spec
    assert t.invoke_sync(t.validate({"city": "Oslo"})) == "Oslo:1"
    assert t.is_async is False


@pytest.mark.parametrize(("cls_name", "expected"), [
    ("GetWeather", "get_weather"), ("HTTPFetch", "http_fetch"), ("Search", "search"), ("ReadPDFFile", "read_pdf_file"),
])
def test_default_names_are_snake_case(cls_name: str, expected: str) -> None:
    def run(self: Any, x: int) -> int:
        return x

    assert type(cls_name, (Tool,), {"__doc__": "Doc.", "run": run}).spec.name == expected


@pytest.mark.anyio
async def test_async_tool_subclass_with_name_and_description() -> None:
    class Lookup(Tool):
        name = "lookup_user"
        description = "Find a user."

        async def run(self, user_id: int) -> dict[str, int]:
            await anyio.lowlevel.checkpoint()
            return {"id": user_id}

    t = Lookup()
    assert t.is_async and t.spec.name == "lookup_user" and t.spec.description == "Find a user."
    assert t.spec.output_schema == {"additionalProperties": {"type": "integer"}, "type": "object"}
    assert (await t.__call_tool__({"user_id": "7"})).structured == {"id": 7}


def test_tool_subclass_with_constructor_arguments() -> None:
    class Greeter(Tool):
        """Greet someone."""

        def __init__(self, greeting: str) -> None:
            self.greeting = greeting

        def run(self, who: str) -> str:
            return f"{self.greeting}, {who}"

    t = Greeter("Hello")
    assert t.invoke_sync({"who": "Ada"}) == "Hello, Ada"
    assert as_tool(t) is t
    with pytest.raises(DefinitionError, match=r"Greeter\(\) needs arguments \(greeting\): pass an instance"):
        as_tool(Greeter)


def test_tool_subclass_inherits_run() -> None:
    class Base(Tool):
        """Base tool."""

        def run(self, x: int) -> int:
            return x

    class Child(Base):
        """Child tool."""

        permission = "destructive"

    assert Base.spec.name == "base" and Child.spec.name == "child"
    assert Child.spec.description == "Child tool." and Child.spec.permission is Permission.DESTRUCTIVE
    assert Base.spec.permission is Permission.WRITE
    assert Child().invoke_sync({"x": 3}) == 3


def test_abstract_tool_subclass() -> None:
    class Abstract(Tool):
        """No run yet."""

    assert "spec" not in Abstract.__dict__
    with pytest.raises(DefinitionError, match="Abstract is abstract: it does not implement run"):
        as_tool(Abstract)


@pytest.mark.parametrize(("body", "words"), [
    ({"run": lambda self, x: x}, "has no description: add a docstring or `description = ...`"),
    ({"__doc__": "D.", "name": "bad name", "run": lambda self: None}, "illegal tool name 'bad name'"),
    ({"__doc__": "D.", "name": 5, "run": lambda self: None}, "Bad.name must be a string"),
    ({"__doc__": "D.", "description": 5, "run": lambda self: None}, "Bad.description must be a string"),
    ({"__doc__": "D.", "permission": "root", "run": lambda self: None}, "'root' is not a valid Permission"),
])
def test_tool_subclass_definition_errors(body: dict[str, Any], words: str) -> None:
    if "run" in body:
        body["run"].__annotations__ = {"x": int} if body["run"].__code__.co_argcount == 2 else {}
    with pytest.raises(DefinitionError) as info:
        type("Bad", (Tool,), body)
    assert words in str(info.value)


def test_tool_subclass_with_generator_run_is_refused() -> None:
    with pytest.raises(DefinitionError, match="a generator cannot be a tool"):
        class Stream(Tool):
            """Stream."""

            def run(self, n: int) -> Any:
                yield n


def test_tool_instance_with_spec() -> None:
    # Before the fix `.name` of the copy still said get_weather (the class attribute won).
    t = GetWeather()
    renamed = t.with_spec(name="weather_now", description="Now.")
    assert renamed.name == "weather_now" and renamed.spec.name == "weather_now"
    assert renamed.description == "Now."  # type: ignore[attr-defined]
    assert t.name == "get_weather" and GetWeather.spec.name == "get_weather"
    assert renamed.invoke_sync({"city": "Rome"}) == "Rome:1"


# -- as_tool --------------------------------------------------------------------------------------

def test_as_tool_accepts_every_form() -> None:
    def plain(x: int) -> int:
        """Plain function."""
        return x

    made = as_tool(plain)
    assert isinstance(made, FunctionTool) and made.name == "plain" and made(1) == 1
    assert as_tool(add) is add
    assert isinstance(as_tool(GetWeather), GetWeather)
    instance = GetWeather()
    assert as_tool(instance) is instance


@pytest.mark.parametrize("thing", [42, "add", object(), len.__call__])
def test_as_tool_refuses_other_things(thing: Any) -> None:
    with pytest.raises(DefinitionError, match="cannot make a tool from"):
        as_tool(thing)


# -- schema_tool ----------------------------------------------------------------------------------

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1},
                   "exact": {"type": "boolean"}},
    "required": ["query"],
    "additionalProperties": False,
}


def test_schema_tool_coerces_then_validates() -> None:
    t = schema_tool(name="search", description="Search.", input_schema=SEARCH_SCHEMA,
                    handler=sorted, permission="readonly", tags=["web"])
    assert isinstance(t, SchemaTool)
    assert t.validate({"query": "x", "limit": "5", "exact": "true"}) == {"query": "x", "limit": 5, "exact": True}
    assert t.invoke_sync({"query": "x"}) == ["query"]
    assert t.spec.permission is Permission.READONLY and t.spec.tags == {"web"}
    assert t.spec.input_schema == SEARCH_SCHEMA
    assert t.is_async is False


def test_schema_tool_errors_are_structured() -> None:
    t = schema_tool(name="search", description="Search.", input_schema=SEARCH_SCHEMA)
    with pytest.raises(ArgumentsError) as info:
        t.validate({"limit": "0", "other": 1})
    kinds = sorted((tuple(e["loc"]), e["type"]) for e in info.value.errors)
    assert kinds == [((), "AdditionalProperties"), ((), "Required"), (("limit",), "Minimum")]
    assert "(arguments): " in str(info.value) and "limit: 0 is less than the minimum of 1" in str(info.value)


@pytest.mark.parametrize("arguments", [[1, 2], "query", None, 5])
def test_schema_tool_refuses_non_objects(arguments: Any) -> None:
    t = schema_tool(name="search", description="Search.", input_schema=SEARCH_SCHEMA)
    with pytest.raises(ArgumentsError, match="arguments must be a JSON object") as info:
        t.validate(arguments)
    assert info.value.errors[0]["type"] == "object_type"


def test_schema_tool_refuses_values_that_are_not_json() -> None:
    # Before the fix jsonschema-rs raised a bare ValueError for these.
    t = schema_tool(name="search", description="Search.", input_schema=SEARCH_SCHEMA)
    with pytest.raises(ArgumentsError, match="arguments are not JSON data"):
        t.validate({"query": {1, 2}})


def test_schema_tool_without_coercion() -> None:
    t = schema_tool(name="search", description="Search.", input_schema=SEARCH_SCHEMA, coerce=False)
    with pytest.raises(ArgumentsError, match='limit: "5" is not of type "integer"'):
        t.validate({"query": "x", "limit": "5"})


@pytest.mark.anyio
async def test_schema_tool_handlers() -> None:
    seen: list[Any] = []

    async def with_ctx(args: dict[str, Any], ctx: CallContext) -> str:
        seen.append(ctx.user)
        return args["query"]

    t = schema_tool(name="s", description="S.", input_schema=SEARCH_SCHEMA, handler=with_ctx)
    assert t.is_async
    assert await t.invoke({"query": "q"}, CallContext(user="ann")) == "q"
    assert seen == ["ann"]
    remote = schema_tool(name="remote", description="Runs elsewhere.", input_schema=SEARCH_SCHEMA)
    with pytest.raises(ToolFailure, match="has no handler here"):
        await remote.invoke({"query": "q"})


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"input_schema": {"type": "array"}}, "input_schema must describe an object"),
    ({"input_schema": {"type": "object", "properties": {"a": {"type": "wrong"}}}}, "not a valid JSON Schema"),
    ({"input_schema": {"type": "object", "properties": {"a": {"default": (1, 2)}}}}, "JSON round trip"),
    ({"input_schema": {"type": "object", "properties": {"a": {"default": float("nan")}}}}, "JSON round trip"),
    ({"name": "bad name"}, "illegal tool name"),
    ({"permision": "readonly"}, "unknown option(s) ['permision']"),
])
def test_schema_tool_definition_errors(kwargs: dict[str, Any], words: str) -> None:
    base: dict[str, Any] = {"name": "s", "description": "S.", "input_schema": {"type": "object"}}
    with pytest.raises(DefinitionError) as info:
        schema_tool(**{**base, **kwargs})
    assert words in str(info.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
COERCING = schema_tool(name="s", description="S.", input_schema=SEARCH_SCHEMA)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=json_values | st.dictionaries(st.sampled_from(["query", "limit", "exact", "x"]), json_values))
def test_schema_tool_validation_only_ever_raises_arguments_error(arguments: Any) -> None:
    try:
        values = COERCING.validate(arguments)
    except ArgumentsError as exc:
        assert exc.errors and all({"loc", "msg", "type"} <= set(e) for e in exc.errors)
    else:
        assert isinstance(values["query"], str)
        assert set(values) <= {"query", "limit", "exact"}


def test_tool_subclass_with_types_local_to_a_function() -> None:
    from pydantic import BaseModel

    class Query(BaseModel):
        text: str

    class Find(Tool):
        """Find things."""

        def run(self, query: Query, limit: int = 3) -> list[Query]:
            return [query] * limit

    assert Find.spec.input_schema["properties"]["query"] == {"$ref": "#/$defs/Query"}
    assert Find().invoke_sync(Find().validate({"query": {"text": "a"}, "limit": 1})) == [Query(text="a")]


def test_schema_tool_invoke_sync_calls_a_sync_handler_directly() -> None:
    import threading

    from toolrig import CallContext, current_context, schema_tool

    seen: dict[str, object] = {}

    def handler(args: dict[str, object]) -> object:
        seen["thread"] = threading.current_thread()
        seen["user"] = current_context().user
        return args["n"]

    t2 = schema_tool(name="n_tool2", description="Echo n.", input_schema={
        "type": "object", "properties": {"n": {"type": "integer"}}}, handler=handler)
    assert t2.invoke_sync({"n": 3}, CallContext(user="ann")) == 3
    assert seen == {"thread": threading.current_thread(), "user": "ann"}
