"""Subjects of the runtime benchmark: the same tool, validated and invoked by each framework.

Every subject starts from the tool's arguments as the JSON string a model sends and ends with
the tool's answer in the form that framework hands back to its agent loop. The per-call inputs
(a ``ToolCallPart``, a ``ToolCall``, a ``ToolContext``, ...) are built before the timed loop, as a
provider adapter would build them; the timed loop does only what the framework does for one call.

Two workloads:

``trivial``
    ``add(a: int, b: int) -> int`` from ``{"a": 17, "b": 2}``.
``realistic``
    ``search_flights`` with six parameters (strings, an int, a Literal, an optional int), one value
    that needs coercion (``"passengers": "2"``), a dict result holding a list of three flights,
    and (for toolrig) a fresh session per call.

Two variants of each tool: ``async`` and ``def`` (a plain function, which every peer except
smolagents moves to a worker thread so the event loop stays free; smolagents is synchronous and
runs it inline).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

VARIANTS = ("async", "def")
WORKLOADS = ("trivial", "realistic")


async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def add_sync(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


add_sync.__name__ = "add"  # the same tool name in every framework


Cabin = Literal["economy", "premium", "business", "first"]


def _flights(origin: str, destination: str, date: str, passengers: int, cabin: str,
             max_stops: int | None) -> dict[str, Any]:
    stops = 1 if max_stops is None else max_stops
    return {"origin": origin, "destination": destination, "date": date, "passengers": passengers, "cabin": cabin,
            "flights": [{"flight": f"TR{100 + i}", "departs": f"0{7 + i}:15", "stops": min(i, stops),
                         "price": round(129.0 + 41.5 * i, 2)} for i in range(3)]}


async def search_flights(origin: str, destination: str, date: str, passengers: int = 1, cabin: Cabin = "economy",
                         max_stops: int | None = None) -> dict[str, Any]:
    """Search flights between two airports on a date.

    Args:
        origin: IATA code of the departure airport, e.g. "CDG".
        destination: IATA code of the arrival airport.
        date: departure date, YYYY-MM-DD.
        passengers: number of travellers.
        cabin: cabin class.
        max_stops: most stops allowed (None: any).
    """
    return _flights(origin, destination, date, passengers, cabin, max_stops)


def search_flights_sync(origin: str, destination: str, date: str, passengers: int = 1, cabin: Cabin = "economy",
                        max_stops: int | None = None) -> dict[str, Any]:
    """Search flights between two airports on a date.

    Args:
        origin: IATA code of the departure airport, e.g. "CDG".
        destination: IATA code of the arrival airport.
        date: departure date, YYYY-MM-DD.
        passengers: number of travellers.
        cabin: cabin class.
        max_stops: most stops allowed (None: any).
    """
    return _flights(origin, destination, date, passengers, cabin, max_stops)


search_flights_sync.__name__ = "search_flights"

_FNS = {("trivial", "async"): add, ("trivial", "def"): add_sync, ("realistic", "async"): search_flights,
        ("realistic", "def"): search_flights_sync}
TOOL_NAMES = {"trivial": "add", "realistic": "search_flights"}


def tool_fn(variant: str, workload: str = "trivial") -> Callable[..., Any]:
    """The tool function of a variant."""
    return _FNS[(workload, variant)]


def arguments(workload: str, start: int, n: int) -> list[str]:
    """``n`` JSON argument strings the model sends, numbered from ``start`` (never repeated)."""
    if workload == "trivial":
        return [json.dumps({"a": start + i, "b": 2}) for i in range(n)]
    return [json.dumps({"origin": "CDG", "destination": f"J{(start + i) % 100:02d}", "date": "2026-12-24",
                        "passengers": str(1 + (start + i) % 7), "cabin": "business", "max_stops": 1})
            for i in range(n)]


def expected(workload: str, text: str) -> int:
    """The number every subject must read back from the last call of a batch."""
    data = json.loads(text)
    return data["a"] + data["b"] if workload == "trivial" else int(data["passengers"]) * 10 + 3


def number(result: Any) -> int:
    """The checked number of a tool's answer: the sum, or passengers * 10 + the count of flights."""
    if isinstance(result, str):
        result = json.loads(result)
    if isinstance(result, dict):
        return int(result["passengers"]) * 10 + len(result["flights"])
    return int(result)


@dataclass
class Subject:
    """One way of running the tool: its per-call inputs, its call, and how to read its answer.

    Attributes:
        key: stable id used in the JSON results.
        label: what the table shows.
        prepare: JSON argument strings -> the per-call inputs (not timed).
        call: one call on one input; returns an awaitable when ``awaits`` is true.
        value: the tool's sum read back from what ``call`` returned (checks every batch really ran).
        awaits: whether ``call`` returns an awaitable.
        drain: blocks until background work of the calls so far is done (audit rows written).
        close: releases what the subject holds.
        note: a footnote for the table.
    """

    key: str
    label: str
    prepare: Callable[[list[str]], list[Any]]
    call: Callable[[Any], Any]
    value: Callable[[Any], int]
    awaits: bool = True
    drain: Callable[[], None] | None = None
    close: Callable[[], Awaitable[None]] | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# -- references -----------------------------------------------------------------------------------
def bare(variant: str, workload: str = "trivial") -> Subject:
    """The tool function itself, called with ready keyword arguments: the zero of every overhead."""
    fn = tool_fn(variant, workload)
    return Subject("bare", "bare function call", lambda args: [json.loads(s) for s in args],
                   lambda kw: fn(**kw), number, awaits=variant == "async")


def pydantic_ai_floor(variant: str, workload: str = "trivial") -> Subject:
    """pydantic-ai's bare argument validator on the JSON string, then its ``FunctionSchema.call``.

    The floor of validate-and-invoke: no lookup, no retries, no hooks, no result conversion.
    """
    from pydantic_ai import RunContext, Tool
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    schema = Tool(tool_fn(variant, workload), takes_ctx=False).function_schema
    validate, call = schema.validator.validate_json, schema.call
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    return Subject("pydantic_ai.floor", "pydantic-ai validator + FunctionSchema.call (floor)", list,
                   lambda s: call(validate(s), ctx), number,
                   note="" if variant == "async" else "the def body runs in run_in_executor")


# -- peers ------------------------------------------------------------------------------------------
async def pydantic_ai(variant: str, workload: str = "trivial") -> Subject:
    """``ToolManager.handle_call`` of a run step, as an agent run calls it."""
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    manager = await ToolManager(FunctionToolset([tool_fn(variant, workload)])).for_run_step(ctx)

    def prepare(args: list[str]) -> list[Any]:
        return [ToolCallPart(tool_name=name, args=s, tool_call_id=f"call_{i}") for i, s in enumerate(args)]

    name = TOOL_NAMES[workload]
    return Subject("pydantic_ai.handle_call", "pydantic-ai ToolManager.handle_call", prepare,
                   manager.handle_call, number)


async def openai_agents(variant: str, workload: str = "trivial") -> Subject:
    """``FunctionTool.on_invoke_tool``, with the ``ToolContext`` the runner builds for each call (timed)."""
    from agents import function_tool
    from agents.tool_context import ToolContext

    tool = function_tool(tool_fn(variant, workload))
    invoke = tool.on_invoke_tool

    def prepare(args: list[str]) -> list[Any]:
        return [(f"call_{i}", s) for i, s in enumerate(args)]

    def call(item: tuple[str, str]) -> Any:
        ctx = ToolContext(context=None, tool_name=name, tool_call_id=item[0], tool_arguments=item[1])
        return invoke(ctx, item[1])

    name = TOOL_NAMES[workload]
    return Subject("openai_agents.on_invoke_tool", "openai-agents on_invoke_tool", prepare, call, number)


async def mcp_sdk(variant: str, workload: str = "trivial") -> Subject:
    """The official MCP SDK server's in-process ``call_tool`` (arguments arrive as parsed JSON)."""
    try:  # mcp 2.x renamed FastMCP to MCPServer
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # pragma: no cover - mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server

    server = Server("bench")
    server.tool()(tool_fn(variant, workload))
    call_tool = server.call_tool

    def value(result: Any) -> int:
        content = result.structured_content
        return number(content.get("result", content))

    name = TOOL_NAMES[workload]
    return Subject("mcp.call_tool", "MCP SDK server call_tool", list,
                   lambda s: call_tool(name, json.loads(s)), value)


async def langchain(variant: str, workload: str = "trivial") -> Subject:
    """``StructuredTool.ainvoke`` on a tool call dict (what an AIMessage's ``tool_calls`` hold)."""
    from langchain_core.tools import StructuredTool

    fn = tool_fn(variant, workload)
    tool = (StructuredTool.from_function(coroutine=fn) if variant == "async"
            else StructuredTool.from_function(func=fn))
    ainvoke = tool.ainvoke

    def prepare(args: list[str]) -> list[Any]:
        return [{"type": "tool_call", "name": TOOL_NAMES[workload], "args": s, "id": f"call_{i}"}
                for i, s in enumerate(args)]

    def call(item: dict[str, Any]) -> Any:
        return ainvoke({**item, "args": json.loads(item["args"])})

    return Subject("langchain.ainvoke", "langchain-core StructuredTool.ainvoke", prepare, call,
                   lambda message: number(message.content if workload == "trivial" else json.loads(
                       message.content.replace("'", '"').replace("None", "null"))))


async def smolagents(variant: str, workload: str = "trivial") -> Subject:
    """``ToolCallingAgent.execute_tool_call`` (smolagents is synchronous: the body runs inline)."""
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import Model, parse_json_if_needed

    class _NoModel(Model):
        def generate(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the benchmark never asks the model")

    agent = ToolCallingAgent(tools=[tool(tool_fn("def", workload))], model=_NoModel(model_id="none"))
    execute = agent.execute_tool_call
    name = next(iter(agent.tools))
    note = "sync only: the async tool is the same function as a def" if variant == "async" else "runs inline, no thread"

    def prepare(args: list[str]) -> list[str]:
        if workload == "trivial":
            return args
        out = []  # smolagents checks types but does not coerce: it is handed "passengers" as an int already
        for text in args:
            data = json.loads(text)
            data["passengers"] = int(data["passengers"])
            out.append(json.dumps(data))
        return out

    if workload == "realistic":
        note += "; given passengers as an int (it does not coerce)"
    return Subject("smolagents.execute_tool_call", "smolagents execute_tool_call", prepare,
                   lambda s: execute(name, parse_json_if_needed(s)), number, awaits=False, note=note)


# -- toolrig ----------------------------------------------------------------------------------------
def toolrig_value(outcome: Any) -> int:
    if not outcome.ok:
        raise AssertionError(f"toolrig call failed: {outcome.content}")
    return number(outcome.structured)


def toolrig_prepare(workload: str) -> Callable[[list[str]], list[Any]]:
    """``(ToolCall, CallContext)`` pairs: every call in a fresh session, as a served call would be."""
    from toolrig import CallContext, ToolCall

    name = TOOL_NAMES[workload]

    def prepare(args: list[str]) -> list[Any]:
        return [(ToolCall(name=name, arguments=s, id=f"call_{i}"), CallContext(user="u1", session=f"s{i}-{s[-12:]}"))
                for i, s in enumerate(args)]

    return prepare


def _call(runtime: Any) -> Callable[[Any], Any]:
    call = runtime.call
    return lambda item: call(item[0], item[1])


async def toolrig_default(variant: str, workload: str = "trivial") -> Subject:
    """The full default pipeline, audit ON (a batched SQLite log in a temporary directory)."""
    from toolrig import tool
    from toolrig.runtime import AuditStage, Runtime

    folder = tempfile.mkdtemp(prefix="toolrig-bench-")
    runtime = Runtime([tool(tool_fn(variant, workload))], audit=os.path.join(folder, "audit.sqlite"))
    audit = next(s for s in runtime.stages if isinstance(s, AuditStage))
    assert audit.writer is not None, "the audit stage must be writing"

    def drain() -> None:
        assert audit.flush(60.0), "the audit writer did not catch up"

    return Subject("toolrig.default", "toolrig Runtime.call, default pipeline (audit on)", toolrig_prepare(workload),
                   _call(runtime), toolrig_value, drain=drain, close=runtime.aclose,
                   note="sync body hops to a worker thread" if variant == "def" else "",
                   extra={"runtime": runtime, "audit_path": os.path.join(folder, "audit.sqlite")})


async def toolrig_default_no_audit(variant: str, workload: str = "trivial") -> Subject:
    """The full default pipeline with the audit off (``audit=False``)."""
    from toolrig import tool
    from toolrig.runtime import Runtime

    runtime = Runtime([tool(tool_fn(variant, workload))], audit=False)
    return Subject("toolrig.default_no_audit", "toolrig Runtime.call, default pipeline, audit off",
                   toolrig_prepare(workload), _call(runtime), toolrig_value, close=runtime.aclose,
                   extra={"runtime": runtime})


async def toolrig_minimal(variant: str, workload: str = "trivial") -> Subject:
    """``minimal_stages()``: resolve, validate, invoke."""
    from toolrig import tool
    from toolrig.runtime import Runtime, minimal_stages

    runtime = Runtime([tool(tool_fn(variant, workload))], stages=minimal_stages(), audit=False)
    return Subject("toolrig.minimal", "toolrig Runtime.call, minimal pipeline", toolrig_prepare(workload),
                   _call(runtime), toolrig_value, close=runtime.aclose,
                   note="sync body hops to a worker thread" if variant == "def" else "",
                   extra={"runtime": runtime})


PEERS: list[Callable[[str, str], Awaitable[Subject]]] = [pydantic_ai, openai_agents, mcp_sdk, smolagents, langchain]
TOOLRIG: list[Callable[[str, str], Awaitable[Subject]]] = [toolrig_default, toolrig_minimal]
