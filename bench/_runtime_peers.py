"""Subjects of the runtime benchmark: the same trivial tool, validated and invoked by each framework.

Every subject starts from the tool's arguments as the JSON string a model sends
(``{"a": 17, "b": 2}``) and ends with the tool's answer in the form that framework hands back
to its agent loop. The per-call inputs (a ``ToolCallPart``, a ``ToolCall``, a ``ToolContext``,
...) are built before the timed loop, as a provider adapter would build them; the timed loop
does only what the framework does for one call.

Two variants of the tool: ``async`` (``async def add``) and ``def`` (a plain function, which
every peer except smolagents moves to a worker thread so the event loop stays free; smolagents
is synchronous and runs it inline).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

VARIANTS = ("async", "def")


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


def tool_fn(variant: str) -> Callable[..., Any]:
    """The tool function of a variant."""
    return add if variant == "async" else add_sync


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
def bare(variant: str) -> Subject:
    """The tool function itself, called with ready keyword arguments: the zero of every overhead."""
    fn = tool_fn(variant)
    return Subject("bare", "bare function call", lambda args: [json.loads(s) for s in args],
                   lambda kw: fn(**kw), int, awaits=variant == "async")


def pydantic_ai_floor(variant: str) -> Subject:
    """pydantic-ai's bare argument validator on the JSON string, then its ``FunctionSchema.call``.

    The floor of validate-and-invoke: no lookup, no retries, no hooks, no result conversion.
    """
    from pydantic_ai import RunContext, Tool
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    schema = Tool(tool_fn(variant), takes_ctx=False).function_schema
    validate, call = schema.validator.validate_json, schema.call
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    return Subject("pydantic_ai.floor", "pydantic-ai validator + FunctionSchema.call (floor)", list,
                   lambda s: call(validate(s), ctx), int,
                   note="" if variant == "async" else "the def body runs in run_in_executor")


# -- peers ------------------------------------------------------------------------------------------
async def pydantic_ai(variant: str) -> Subject:
    """``ToolManager.handle_call`` of a run step, as an agent run calls it."""
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    manager = await ToolManager(FunctionToolset([tool_fn(variant)])).for_run_step(ctx)

    def prepare(args: list[str]) -> list[Any]:
        return [ToolCallPart(tool_name="add", args=s, tool_call_id=f"call_{i}") for i, s in enumerate(args)]

    return Subject("pydantic_ai.handle_call", "pydantic-ai ToolManager.handle_call", prepare,
                   manager.handle_call, int)


async def openai_agents(variant: str) -> Subject:
    """``FunctionTool.on_invoke_tool``, with the ``ToolContext`` the runner builds for each call (timed)."""
    from agents import function_tool
    from agents.tool_context import ToolContext

    tool = function_tool(tool_fn(variant))
    invoke = tool.on_invoke_tool

    def prepare(args: list[str]) -> list[Any]:
        return [(f"call_{i}", s) for i, s in enumerate(args)]

    def call(item: tuple[str, str]) -> Any:
        ctx = ToolContext(context=None, tool_name="add", tool_call_id=item[0], tool_arguments=item[1])
        return invoke(ctx, item[1])

    return Subject("openai_agents.on_invoke_tool", "openai-agents on_invoke_tool", prepare, call, int)


async def mcp_sdk(variant: str) -> Subject:
    """The official MCP SDK server's in-process ``call_tool`` (arguments arrive as parsed JSON)."""
    try:  # mcp 2.x renamed FastMCP to MCPServer
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # pragma: no cover - mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server

    server = Server("bench")
    server.tool()(tool_fn(variant))
    call_tool = server.call_tool

    def value(result: Any) -> int:
        return int(result.structured_content["result"])

    return Subject("mcp.call_tool", "MCP SDK server call_tool", list,
                   lambda s: call_tool("add", json.loads(s)), value)


async def langchain(variant: str) -> Subject:
    """``StructuredTool.ainvoke`` on a tool call dict (what an AIMessage's ``tool_calls`` hold)."""
    from langchain_core.tools import StructuredTool

    fn = tool_fn(variant)
    tool = (StructuredTool.from_function(coroutine=fn) if variant == "async"
            else StructuredTool.from_function(func=fn))
    ainvoke = tool.ainvoke

    def prepare(args: list[str]) -> list[Any]:
        return [{"type": "tool_call", "name": "add", "args": s, "id": f"call_{i}"} for i, s in enumerate(args)]

    def call(item: dict[str, Any]) -> Any:
        return ainvoke({**item, "args": json.loads(item["args"])})

    return Subject("langchain.ainvoke", "langchain-core StructuredTool.ainvoke", prepare, call,
                   lambda message: int(message.content))


async def smolagents(variant: str) -> Subject:
    """``ToolCallingAgent.execute_tool_call`` (smolagents is synchronous: the body runs inline)."""
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import Model, parse_json_if_needed

    class _NoModel(Model):
        def generate(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the benchmark never asks the model")

    agent = ToolCallingAgent(tools=[tool(add_sync)], model=_NoModel(model_id="none"))
    execute = agent.execute_tool_call
    name = next(iter(agent.tools))
    note = "sync only: the async tool is the same function as a def" if variant == "async" else "runs inline, no thread"
    return Subject("smolagents.execute_tool_call", "smolagents execute_tool_call", list,
                   lambda s: execute(name, parse_json_if_needed(s)), int, awaits=False, note=note)


# -- toolrig ----------------------------------------------------------------------------------------
def toolrig_value(outcome: Any) -> int:
    if not outcome.ok:
        raise AssertionError(f"toolrig call failed: {outcome.content}")
    return int(outcome.content)


def toolrig_prepare(args: list[str]) -> list[Any]:
    from toolrig._calls import ToolCall

    return [ToolCall(name="add", arguments=s, id=f"call_{i}") for i, s in enumerate(args)]


async def toolrig_default(variant: str) -> Subject:
    """The full default pipeline, audit ON (a batched SQLite log in a temporary directory)."""
    from toolrig import tool
    from toolrig.runtime import AuditStage, Runtime

    folder = tempfile.mkdtemp(prefix="toolrig-bench-")
    runtime = Runtime([tool(tool_fn(variant))], audit=os.path.join(folder, "audit.sqlite"))
    audit = next(s for s in runtime.stages if isinstance(s, AuditStage))
    assert audit.writer is not None, "the audit stage must be writing"

    def drain() -> None:
        assert audit.flush(60.0), "the audit writer did not catch up"

    return Subject("toolrig.default", "toolrig Runtime.call, default pipeline (audit on)", toolrig_prepare,
                   runtime.call, toolrig_value, drain=drain, close=runtime.aclose,
                   note="sync body hops to a worker thread" if variant == "def" else "",
                   extra={"runtime": runtime, "audit_path": os.path.join(folder, "audit.sqlite")})


async def toolrig_minimal(variant: str) -> Subject:
    """``minimal_stages()``: resolve, validate, invoke."""
    from toolrig import tool
    from toolrig.runtime import Runtime, minimal_stages

    runtime = Runtime([tool(tool_fn(variant))], stages=minimal_stages(), audit=False)
    return Subject("toolrig.minimal", "toolrig Runtime.call, minimal pipeline", toolrig_prepare,
                   runtime.call, toolrig_value, close=runtime.aclose,
                   note="runs inline, no thread" if variant == "def" else "",
                   extra={"runtime": runtime})


PEERS: list[Callable[[str], Awaitable[Subject]]] = [pydantic_ai, openai_agents, mcp_sdk, smolagents, langchain]
TOOLRIG: list[Callable[[str], Awaitable[Subject]]] = [toolrig_default, toolrig_minimal]
