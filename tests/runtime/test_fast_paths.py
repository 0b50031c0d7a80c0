"""The per-call fast paths give exactly what the general paths give (they only skip work)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolrig import tool
from toolrig._calls import ToolCall
from toolrig._context import CallContext, current_context, use_context
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._results import ToolResult
from toolrig.errors import ArgumentsError
from toolrig.runtime._arguments import ArgumentLimits, check_value, loads_strict, parse_arguments
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._repair import RepairStage, repair_arguments


class Filters(BaseModel):
    tags: list[str]
    limit: int = 10


@tool
def search(query: str, filters: Filters | None = None, ids: list[int] | None = None, note: str | dict[str, Any] = "",
           max_results: int = 5) -> str:
    """Search.

    Args:
        query: what to look for.
        filters: optional filters.
        ids: optional ids.
        note: text or an object.
        max_results: how many.
    """
    return query


SCHEMA = search.spec.input_schema
_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=8))
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)
_keys = st.sampled_from(["query", "filters", "ids", "note", "max_results", "Query", "query=", "max_result", "other"])
_json_strings = st.sampled_from(['{"tags": ["a"]}', "[1, 2]", " [3] ", '{"x": 1}', "not json", "{"])
_arguments = st.dictionaries(_keys, _json | _json_strings, max_size=5)


def _outcome_of(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except ArgumentsError as exc:
        return ("error", str(exc), exc.errors)


@settings(max_examples=300, deadline=None)
@given(_arguments, st.booleans())
def test_repair_fast_path_equals_repair_arguments(arguments: dict[str, Any], as_text: bool) -> None:
    raw: Any = json.dumps(arguments) if as_text else arguments
    stage = RepairStage()
    assert _outcome_of(stage._repair, raw, SCHEMA, "search") == _outcome_of(repair_arguments, raw, SCHEMA)


@pytest.mark.parametrize("raw", [
    '{"query": "x", "ids": null}', '{"query": "x", "filters": {"tags": [null]}}', '```json\n{"query": "x"}\n```',
    "{'query': 'x'}", '"{\\"query\\": \\"x\\"}"', '"cats"', '{"query": "x", "filters": "{\\"tags\\": []}"}',
    '  {"query": "x"}  ', "", "[1]", '{"QUERY": "x"}', '\ufeff{"query": "x"}',
])
def test_repair_fast_path_on_the_usual_mangled_inputs(raw: str) -> None:
    assert _outcome_of(RepairStage()._repair, raw, SCHEMA, "search") == _outcome_of(repair_arguments, raw, SCHEMA)


def test_repair_plan_follows_a_changed_schema() -> None:
    stage = RepairStage()
    assert stage._repair('{"ids": "[1]"}', SCHEMA, "search") == repair_arguments('{"ids": "[1]"}', SCHEMA)
    loose = {"type": "object", "properties": {"ids": {"type": "string"}}}
    assert stage._repair('{"ids": "[1]"}', loose, "search") == ({"ids": "[1]"}, [])


def _general_parse(raw: str, limits: ArgumentLimits) -> dict[str, Any]:
    """parse_arguments as it was: every check run on every call."""
    value = {} if not raw.strip() else json.loads(raw) if raw.startswith("\ufeff") else loads_strict(raw, limits)
    if not isinstance(value, dict):
        raise ArgumentsError("not an object", [])
    check_value(value, limits)
    return value


@pytest.mark.parametrize("raw", [
    "[" * 40 + "]" * 40, '{"a":' * 40 + "1" + "}" * 40, '{"s": "' + "[" * 40 + '"}',
    json.dumps({str(i): i for i in range(1001)}),
    json.dumps({"k": ":" * 2000}), '{"a": 1e999}', '{"a": NaN}', '{"a": "' + "é" * 30 + '"}', "   ", "",
])
def test_parse_arguments_bounds_checks_match_the_full_checks(raw: str) -> None:
    limits = ArgumentLimits(max_bytes=50_000)
    small = ArgumentLimits(max_bytes=40)
    for lim in (limits, small):
        fast, general = _outcome_of(parse_arguments, raw, lim), _outcome_of(_general_parse, raw, lim)
        assert fast[0] == general[0]
        if fast[0] == "ok":
            assert fast == general
        else:
            assert fast[2][0]["type"] in {"too_deep", "too_many_keys", "too_large", "number_out_of_range",
                                         "non_finite_number"}


def test_invocation_derive_is_dataclasses_replace() -> None:
    services = Services(toolset=None)  # type: ignore[arg-type]
    inv = Invocation.start(ToolCall(name="t", arguments="{}", id="c"), CallContext(user="u"), services)
    assert inv == Invocation(call=inv.call, context=inv.context, services=services, started=inv.started)
    for changes in ({"attempt": 3}, {"values": {"a": 1}, "repairs": ("r",)}, {}):
        assert inv.derive(**changes) == dataclasses.replace(inv, **changes)
        assert inv.derive(**changes) is not inv
    with pytest.raises(TypeError):
        inv.derive(nope=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inv.derive(attempt=2).attempt = 5  # type: ignore[misc]


def test_outcome_fast_constructors_equal_the_dataclass_ones() -> None:
    result = ToolResult.text_result("hi")
    made = ToolOutcome.success("c", "t", result, attempts=2, meta={"k": 1})
    assert made == ToolOutcome(call_id="c", name="t", ok=True, content="hi", result=result, attempts=2, meta={"k": 1})
    assert ToolOutcome.success("c", "t", result).meta is not ToolOutcome.success("c", "t", result).meta
    error = ToolError.of(ErrorKind.DENIED, "no")
    assert ToolOutcome.failure("c", "t", error) == ToolOutcome(call_id="c", name="t", ok=False, error=error,
                                                               content="Error (denied): no")
    assert made.derive(duration_ms=2.5, content="x") == dataclasses.replace(made, duration_ms=2.5, content="x")
    with pytest.raises(TypeError):
        ToolOutcome.success("c", "t", result, bogus=1)
    with pytest.raises(TypeError):
        ToolOutcome.failure("c", "t", error, name="again")
    with pytest.raises(TypeError):
        made.derive(bogus=1)


def test_context_derive_keeps_private_copies() -> None:
    state = {"a": 1}
    ctx = CallContext(user="u", state=state, roles={"r"})
    fast = ctx.derive(call_id="c", tool_name="t")
    assert fast == dataclasses.replace(ctx, call_id="c", tool_name="t")
    state["a"] = 2
    assert fast.state == {"a": 1}
    slow = ctx.derive(state=state, roles=["x"])
    assert slow.state == {"a": 2} and slow.roles == frozenset({"x"})


def test_use_context_sets_and_restores() -> None:
    outer, inner = CallContext(user="outer"), CallContext(user="inner")
    with use_context(outer):
        manager = use_context(inner)
        with manager as got:
            assert got is inner and current_context() is inner
            with pytest.raises(RuntimeError):
                manager.__enter__()
        assert current_context() is outer


@pytest.mark.anyio
async def test_call_many_keeps_order_and_limit_with_workers() -> None:
    from toolrig.runtime import Runtime

    running, peak = 0, 0

    @tool
    async def slow(i: int) -> int:
        """Yield a few times, counting how many calls run at once."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(3):
            await anyio.sleep(0)
        running -= 1
        return i

    rt = Runtime([slow], audit=False)
    calls = [ToolCall(name="slow", arguments={"i": i}) for i in range(50)]
    for limit, expected_peak in ((3, 3), (None, 50), (100, 50)):
        peak = 0
        outcomes = await rt.call_many(calls, max_concurrency=limit)
        assert [o.structured for o in outcomes] == list(range(50))
        assert peak == expected_peak
    assert await rt.call_many([]) == [] and await rt.call_many([], max_concurrency=None) == []
    with pytest.raises(ValueError):
        await rt.call_many(calls, max_concurrency=-1)
    await rt.aclose()


@pytest.mark.anyio
async def test_invoke_binds_plain_keyword_values_as_the_general_bind_does() -> None:
    from toolrig import Injected

    seen: list[Any] = []

    @tool
    async def plain(a: int, b: str = "x", *, c: bool = False) -> str:
        """Plain keyword parameters."""
        seen.append((a, b, c))
        return "ok"

    @tool
    async def positional(a: int, /, b: int = 2) -> int:
        """A positional-only parameter."""
        return a * 10 + b

    @tool
    async def injected(a: int, who: Injected[str] = "nobody") -> str:
        """An injected parameter."""
        return f"{a}:{who}"

    ctx = CallContext(state={"who": "ann"})
    assert await plain.invoke({"a": 1, "c": True}, ctx) == "ok"
    assert await plain.invoke({"a": 2, "stray": 9}, ctx) == "ok"  # a key no parameter has is dropped, as bind does
    values = {"a": 3, "b": "y"}
    assert await plain.invoke(values, ctx) == "ok" and values == {"a": 3, "b": "y"}
    assert seen == [(1, "x", True), (2, "x", False), (3, "y", False)]
    assert await positional.invoke({"a": 4, "b": 5}, ctx) == 45
    assert await injected.invoke({"a": 5}, ctx) == "5:ann"
    assert await injected.invoke({"a": 6, "who": "model"}, CallContext()) == "6:nobody"  # never from the model
