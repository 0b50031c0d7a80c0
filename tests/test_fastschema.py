"""The fast schema path gives exactly what the general (pydantic model) path gives."""

from __future__ import annotations

import json
import textwrap
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from toolrig import CallContext, Injected, tool
from toolrig._schemas.fastschema import FastFunctionSchema, fast_function_schema
from toolrig._schemas.schema import FunctionSchema, function_schema, general_function_schema
from toolrig.errors import ArgumentsError

NAMESPACE: dict[str, Any] = {
    "Annotated": Annotated, "Any": Any, "Literal": Literal, "Optional": Optional, "Union": Union, "Field": Field,
    "Injected": Injected, "CallContext": CallContext, "BaseModel": BaseModel,
}

PROBES: list[Any] = [
    {}, {"zz": 1}, [], "text", None,
    {"a": "x"}, {"a": 5}, {"a": "5"}, {"a": 1.5}, {"a": "1.5"}, {"a": True}, {"a": "yes"}, {"a": None},
    {"a": ["x", "y"]}, {"a": [1, "2"]}, {"a": {"k": 1}}, {"a": {"k": "v"}}, {"a": float("nan")}, {"a": ""},
    {"a": "asc"}, {"a": "low"}, {"a": 0}, {"a": 101}, {"a": -1.0}, {"a": "a" * 70},
]


def make(source: str, *, future: bool = True) -> Any:
    """Define a function from source, with or without postponed (string) annotations."""
    namespace = dict(NAMESPACE)
    header = "from __future__ import annotations\n" if future else ""
    exec(compile(header + textwrap.dedent(source), "<generated>", "exec", dont_inherit=True), namespace)
    return next(v for k, v in namespace.items() if k.startswith("f_") and callable(v))


def outcome(schema: FunctionSchema, arguments: Any) -> Any:
    try:
        values = schema.validate(arguments)
    except ArgumentsError as exc:
        return ("error", str(exc), exc.errors)
    return ("ok", list(values.items()))


def param_view(schema: FunctionSchema) -> list[tuple[Any, ...]]:
    return [(p.name, p.wire_name, repr(p.annotation), p.default, p.kind, p.injected) for p in schema.params]


def assert_same(fn: Any, probes: list[Any] = PROBES, **kwargs: Any) -> FastFunctionSchema:
    fast = fast_function_schema(fn, general=general_function_schema, tool_name="t", **kwargs)
    assert fast is not None, "expected the fast path to apply"
    general = general_function_schema(fn, tool_name="t", **kwargs)
    assert json.dumps(fast.input_schema) == json.dumps(general.input_schema)  # key order included
    assert json.dumps(fast.output_schema) == json.dumps(general.output_schema)
    assert fast.description == general.description
    assert fast.doc == general.doc
    assert param_view(fast) == param_view(general)
    names = [p.name for p in fast.params]
    for probe in probes:
        assert outcome(fast, probe) == outcome(general, probe), probe
        if isinstance(probe, dict) and len(probe) == 1 and "a" in probe:
            for name in names:  # the same value under every parameter name
                moved = {name: probe["a"]}
                assert outcome(fast, moved) == outcome(general, moved), moved
    return fast


SUPPORTED = [
    "def f_1(a: str, b: int, c: float, d: bool) -> str:\n    '''Doc.'''",
    "def f_2(a: list[str], b: dict[str, int], c: Optional[str] = None, d: int | None = 3) -> list[int]:\n"
    "    '''Summary.\n\n    Args:\n        a: The a.\n        c: The c.\n    '''",
    "def f_3(a: Literal['asc', 'desc'] = 'asc', b: Literal[1, 2] = 2, c: Literal[True] = True,"
    " d: Literal['x'] = 'x') -> Literal['ok']:\n    '''Literals.'''",
    "def f_4(a: Annotated[int, Field(ge=1, le=100)] = 20, b: Annotated[str, Field(min_length=1, max_length=64)] = 'x',"
    " c: Annotated[float, Field(gt=0, lt=10, multiple_of=0.5)] = 1.5) -> None:\n    '''Constraints.\n\n"
    "    Args:\n        a: Page size.\n        b: Identifier.\n    '''",
    "def f_5(a: Annotated[str, Field(description='From Field', max_length=9)],"
    " b: Annotated[list[str], Field(min_length=1, max_length=3)], c: float = 0) -> dict[str, float]:\n"
    "    '''Field descriptions win.\n\n    Args:\n        a: From the docstring.\n        b: Items.\n    '''",
    "def f_6(a: list[Annotated[int, Field(ge=0)]], b: Optional[Literal['low', 'high']] = None,"
    " c: dict[str, list[Optional[bool]]] | None = None) -> Optional[str]:\n    '''Nested.'''",
    "def f_7(a: str, /, b: int = 1, *, c: bool = False, ctx: CallContext = None) -> int:\n    '''Kinds.'''",
    "def f_8(a: str, secret: Injected[str] = 'x', ctx: CallContext = None) -> str:\n    '''Injected.'''",
    "def f_9() -> str:\n    '''No parameters.'''",
    "def f_10(a: int, b: Optional[float] = 2.5, c: Optional[int] = 0, d: str = '') -> bool:\n"
    "    '''Defaults of every kind.\n\n    Long description\n    over lines.\n\n    Returns:\n        Yes.\n    '''",
    "def f_11(a: Annotated[Optional[str], Field(description='maybe')] = None) -> float:\n    '''Described.'''",
    "def f_12(a: str):\n    '''No return annotation; Sphinx params.\n\n    :param a: the a\n    '''",
    "def f_13(json: str, schema: int = 1, model_config: bool = False, _private: str = 'x') -> str:\n"
    "    '''Names that clash with BaseModel.'''",
]


@pytest.mark.parametrize("field", ["pattern='^[a-z]+$'", "alias='b'", "examples=['x']", "title='A'",
                                   "json_schema_extra={'x': 1}", "strict=True"])
def test_a_field_with_more_than_constraints_takes_the_general_path(field: str) -> None:
    """The fast path reads only public FieldInfo attributes and declines anything it does not know."""
    fn = make(f"def f_x(a: Annotated[str, Field({field})]) -> str:\n    \'\'\'Doc.\'\'\'")
    assert fast_function_schema(fn, general=general_function_schema, tool_name="t") is None
    assert function_schema(fn, tool_name="t").input_schema == general_function_schema(fn, tool_name="t").input_schema


@pytest.mark.parametrize("future", [True, False])
@pytest.mark.parametrize("source", SUPPORTED)
def test_fast_path_equals_general_path(source: str, future: bool) -> None:
    assert_same(make(source, future=future))


def test_fast_path_for_unbound_run_method() -> None:
    class Holder:
        def run(self, a: int, b: str = "x") -> str:
            """Run it."""
            return b * a

    fast = assert_same(Holder.run, skip_first=True)
    assert [p.name for p in fast.params] == ["a", "b"]


def test_fast_path_for_bound_methods() -> None:
    class Holder:
        def lookup(self, key: str, limit: int = 3) -> list[str]:
            """Look a key up.

            Args:
                key: The key.
            """
            return [key] * limit

    fast = assert_same(Holder().lookup)
    assert [p.name for p in fast.params] == ["key", "limit"]
    assert tool(Holder().lookup).validate({"key": "k"}) == {"key": "k", "limit": 3}


def test_param_docs_fill_missing_descriptions() -> None:
    fn = make("def f_x(a: int, b: str) -> int:\n    '''Doc.\n\n    Args:\n        a: From the docstring.\n    '''")
    fast = assert_same(fn, param_docs={"a": "ignored", "b": "From param_docs"})
    assert fast.input_schema["properties"]["b"]["description"] == "From param_docs"
    assert fast.input_schema["properties"]["a"]["description"] == "From the docstring."


def test_description_override() -> None:
    fn = make("def f_x(a: int) -> int:\n    '''Doc.'''")
    fast = assert_same(fn, description="Other")
    assert fast.description == "Other"


UNSUPPORTED = [
    "def f_1(a: Any) -> str:\n    '''Any.'''",
    "def f_2(a: list[str] = ['x']) -> str:\n    '''Mutable default.'''",
    "def f_3(a: str = None) -> str:\n    '''None default for a str.'''",
    "def f_4(a: int | str) -> str:\n    '''A union.'''",
    "def f_5(a: Annotated[int, Field(alias='b')]) -> str:\n    '''An alias.'''",
    "def f_6(a: Annotated[int, Field(title='T')]) -> str:\n    '''A title.'''",
    "def f_7(a: int = Field(5, ge=1)) -> str:\n    '''A Field default.'''",
    "def f_8(a: Literal['a', 1]) -> str:\n    '''A mixed literal.'''",
    "def f_9(a: float = float('inf')) -> str:\n    '''A default that is not JSON.'''",
    "def f_10(a: int = True) -> str:\n    '''A bool default for an int.'''",
    "def f_11(a: Annotated[int, Field(min_length=1)]) -> str:\n    '''A constraint of another type.'''",
    "def f_12(*args: int) -> str:\n    '''Var args.'''",
    "def f_13(a) -> str:\n    '''No hint.'''",
    "def f_14(a: Optional[int] = None, b: 'Undefined' = 1) -> str:\n    '''Unresolvable hint.'''",
    "def f_15(a: Annotated[int, 'doc']) -> str:\n    '''Foreign metadata.'''",
    "def f_16(a: Annotated[int, Field(ge=1), Field(le=3)]) -> str:\n    '''Two fields.'''",
    "def f_17(a: Annotated[int, Field(strict=True)]) -> str:\n    '''Strict.'''",
    "def f_18(ctx: CallContext | None = None) -> str:\n    '''Not an injected context.'''",
    "def f_19(a: Annotated[str, Field(pattern='(')]) -> str:\n    '''A pattern that does not compile.'''",
    "def f_20(a: Annotated[str, Field(pattern='(?=a)b')]) -> str:\n    '''A look-ahead pattern.'''",
]


@pytest.mark.parametrize("source", UNSUPPORTED)
def test_other_signatures_take_the_general_path(source: str) -> None:
    fn = make(source)
    assert fast_function_schema(fn, general=general_function_schema, tool_name="t") is None
    try:
        general: Any = general_function_schema(fn, tool_name="t")
    except Exception as exc:  # the general path reports bad signatures; function_schema must too
        with pytest.raises(type(exc)):
            function_schema(fn, tool_name="t")
        return
    chosen = function_schema(fn, tool_name="t")
    assert not isinstance(chosen, FastFunctionSchema)
    assert chosen.input_schema == general.input_schema


def test_tools_use_the_fast_path_and_validate() -> None:
    @tool
    def search(query: str, limit: Annotated[int, Field(ge=1, le=50)] = 10, exact: bool = False) -> list[str]:
        """Search.

        Args:
            query: What to look for.
            limit: How many results.
        """
        return [query] * limit

    assert isinstance(search.function_schema, FastFunctionSchema)
    assert search.validate({"query": "x", "limit": "3"}) == {"query": "x", "limit": 3, "exact": False}
    with pytest.raises(ArgumentsError) as info:
        search.validate({"limit": 0, "other": 1})
    assert [e["type"] for e in info.value.errors] == ["missing", "greater_than_equal", "extra_forbidden"]
    assert search.invoke_sync(search.validate({"query": "q", "limit": 2})) == ["q", "q"]


def test_non_dict_input_reads_as_on_the_general_path() -> None:
    fn = make("def f_x(a: int) -> int:\n    '''Doc.'''")
    fast = fast_function_schema(fn, general=general_function_schema, tool_name="t")
    assert fast is not None
    with pytest.raises(ArgumentsError) as info:
        fast.validate([("a", 1)])  # type: ignore[arg-type]
    assert info.value.errors[0]["type"] == "model_type"
    assert fast.general() is fast.general()


def test_equal_annotations_in_another_order_are_not_confused() -> None:
    # typing says Literal['a', 'b'] == Literal['b', 'a'] and Union[None, int] == Optional[int]
    first = make("def f_x(a: Literal['a', 'b'] = 'a', b: Optional[int] = None) -> str:\n    '''One.'''", future=False)
    second = make("def f_y(a: Literal['b', 'a'] = 'a', b: Union[None, int] = None) -> str:\n    '''Two.'''",
                  future=False)
    assert_same(first)
    assert fast_function_schema(second, general=general_function_schema, tool_name="t") is None or assert_same(second)
    assert function_schema(second, tool_name="t").input_schema == general_function_schema(
        second, tool_name="t").input_schema
    assert json.dumps(function_schema(second, tool_name="t").input_schema) == json.dumps(
        general_function_schema(second, tool_name="t").input_schema)


def test_zero_defaults_keep_their_sign() -> None:
    plus = make("def f_x(a: float = 0.0) -> str:\n    '''Plus.'''")
    minus = make("def f_y(a: float = -0.0) -> str:\n    '''Minus.'''")
    assert_same(plus)
    fast = assert_same(minus)
    assert str(fast.validate({})["a"]) == "-0.0"


# -- generated signatures --------------------------------------------------------------------------
SCALARS = ["str", "int", "float", "bool"]
CONSTRAINED = [
    "Annotated[int, Field(ge=0, le=10)]", "Annotated[float, Field(gt=-1.5)]", "Annotated[int, Field(multiple_of=3)]",
    "Annotated[str, Field(max_length=3)]", "Annotated[str, Field(pattern='^[ab]+$')]",
    "Annotated[list[int], Field(min_length=1)]",
]
DESCRIBED = "Annotated[str, Field(description='described', min_length=1)]"  # descriptions only at the top
LITERALS = ["Literal['a', 'b']", "Literal[1, 2, 3]", "Literal['only']", "Literal[False]"]


def annotations() -> st.SearchStrategy[str]:
    base = st.sampled_from(SCALARS + LITERALS + CONSTRAINED)
    return st.recursive(base, lambda inner: st.one_of(
        inner.map(lambda t: f"list[{t}]"), inner.map(lambda t: f"dict[str, {t}]"),
        inner.filter(lambda t: not t.startswith("Optional")).map(lambda t: f"Optional[{t}]"),
        inner.filter(lambda t: "|" not in t and not t.startswith("Optional")).map(lambda t: f"{t} | None"),
    ), max_leaves=3)


DEFAULTS = ["None", "0", "1", "2.5", "'a'", "''", "True", "False", "3"]
FITTING = {
    "str": ["'a'", "''"], "int": ["0", "3"], "float": ["2.5", "0"], "bool": ["True", "False"],
    "Literal['a', 'b']": ["'b'"], "Literal[1, 2, 3]": ["2"], "Literal['only']": ["'only'"], "Literal[False]": ["False"],
    CONSTRAINED[0]: ["3"], CONSTRAINED[1]: ["0.5"], CONSTRAINED[2]: ["6"], CONSTRAINED[3]: ["'ab'"],
    CONSTRAINED[4]: ["'ab'"], DESCRIBED: ["'d'"],
}


def fitting(ann: str) -> list[str]:
    """Defaults of the annotated type (the fast path declines the others)."""
    if ann.startswith("Optional[") or ann.endswith("| None"):
        return ["None"]
    return FITTING.get(ann, [])


@st.composite
def signatures(draw: st.DrawFn) -> str:
    count = draw(st.integers(0, 6))
    params, docs, defaults_started = [], [], False
    for i in range(count):
        ann = draw(annotations() | st.just(DESCRIBED))
        choices = fitting(ann)
        odd = draw(st.integers(0, 19)) == 0  # now and then a default of another type
        if odd:
            default: str | None = draw(st.sampled_from(DEFAULTS))
        else:
            default = draw(st.none() | st.sampled_from(choices)) if choices else None
        if defaults_started and default is None:
            continue
        defaults_started = defaults_started or default is not None
        params.append(f"p{i}: {ann}" + (f" = {default}" if default is not None else ""))
        if draw(st.booleans()):
            docs.append(f"        p{i}: Parameter number {i}.")
    returns = draw(st.sampled_from(["str", "int", "None", "list[str]", "Optional[float]", "dict[str, int]"]))
    doc = "Generated.\n\n    Args:\n" + "\n".join(docs) if docs else "Generated."
    return f"def f_gen({', '.join(params)}) -> {returns}:\n    '''{doc}\n    '''"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 15) | st.floats(allow_nan=False, width=32)
    | st.sampled_from(["a", "b", "ab", "1", "2.5", "true", "no", "", "only", "abcd"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["k", "p0", "x"]), c, max_size=2),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=signatures(), future=st.booleans(), data=st.data())
def test_generated_signatures_agree(source: str, future: bool, data: st.DataObject) -> None:
    fn = make(source, future=future)
    fast = fast_function_schema(fn, general=general_function_schema, tool_name="t")
    if fast is None:  # a default that does not fit its type: the general path owns that case
        return
    keys = [p.name for p in fast.params] + ["extra"]
    probes = data.draw(st.lists(st.dictionaries(st.sampled_from(keys), json_values, max_size=len(keys)),
                                min_size=3, max_size=6))
    assert_same(fn, probes=[*probes, {}])


def test_generated_signatures_mostly_take_the_fast_path() -> None:
    # The fast path must not silently decline the simple signatures it is built for.
    source = ("def f_gen(p0: str, p1: Optional[list[int]], p2: Literal['a', 'b'] = 'a',"
              " p3: Annotated[int, Field(ge=0, le=10)] = 3, p4: dict[str, bool] | None = None) -> str:\n"
              "    '''Generated.'''")
    assert fast_function_schema(make(source), general=general_function_schema, tool_name="t") is not None


# -- parts shared between tools: equal parameters share their (frozen) property and record -------------------------
def _twins() -> tuple[Any, Any]:
    first = make('''
        def f_first(city: str, limit: int = 10, units: Literal["metric", "imperial"] = "metric") -> str:
            """First.

            Args:
                city: The city name.
                limit: How many results.
                units: Which units.
            """''')
    second = make('''
        def f_second(city: str, limit: int = 10, units: Literal["metric", "imperial"] = "metric") -> str:
            """Second.

            Args:
                city: The city name.
                limit: How many results.
                units: Which units.
            """''')
    return tool(first), tool(second)


def test_equal_parameters_share_one_frozen_property() -> None:
    a, b = _twins()
    props_a, props_b = a.spec.input_schema["properties"], b.spec.input_schema["properties"]
    assert props_a is not props_b
    for name in ("city", "limit", "units"):
        assert props_a[name] is props_b[name]
        with pytest.raises(TypeError):
            props_a[name]["description"] = "changed"
    with pytest.raises(TypeError):
        props_a["units"]["enum"].append("kelvin")
    assert a.function_schema.params[1] is b.function_schema.params[1]


def test_changing_one_tools_export_leaves_the_other_alone() -> None:
    from toolrig.providers import to_anthropic, to_mcp, to_openai

    a, b = _twins()
    before = json.dumps([b.spec.to_dict(), to_openai([b]), to_openai([b], strict=True), to_anthropic([b]), to_mcp([b])])
    for exported in (a.spec.to_dict()["input_schema"], to_openai([a])[0]["function"]["parameters"],
                     to_openai([a], strict=True)[0]["function"]["parameters"], to_anthropic([a])[0]["input_schema"],
                     to_mcp([a])[0]["inputSchema"]):
        exported["properties"]["city"]["description"] = "changed"
        exported["properties"]["limit"]["default"] = 99
        exported["properties"]["units"]["enum"].append("kelvin")
    assert json.dumps([b.spec.to_dict(), to_openai([b]), to_openai([b], strict=True), to_anthropic([b]),
                       to_mcp([b])]) == before
    assert a.spec.input_schema == b.spec.input_schema


def test_defaults_that_compare_equal_are_not_shared() -> None:
    shown = []
    for default in ("1", "1.0", "True", "0.0", "-0.0"):
        annotation = "bool" if default == "True" else "float" if "." in default else "int"
        fn = make(f"def f_d(a: {annotation} = {default}) -> str:\n    '''D.\n\n    Args:\n        a: The a.\n    '''")
        fast = assert_same(fn)
        shown.append(json.dumps(fast.input_schema["properties"]["a"]))
        assert fast.params[0].default is fn.__defaults__[0] or repr(fast.params[0].default) == default
    assert len(set(shown)) == 5, shown


def test_a_fast_schema_reads_its_docstring_again_on_ask() -> None:
    fn = make('''
        def f_doc(a: int) -> str:
            """Doc.

            Args:
                a: The a.

            Returns:
                Text.
            """''')
    fast = assert_same(fn, param_docs={"b": "From elsewhere."})
    assert fast.doc.params == {"b": "From elsewhere.", "a": "The a."} and fast.doc.returns == "Text."
    fn.__doc__ = "Changed later."
    assert fast.doc.description == "Doc."  # the docstring as it was when the tool was defined
