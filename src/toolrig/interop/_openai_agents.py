"""OpenAI Agents SDK both ways: :func:`from_openai_agents` (``FunctionTool`` s) and :func:`to_openai_agents`.

An imported ``FunctionTool`` shows the model its ``params_json_schema``; toolrig validates against it, then calls
``on_invoke_tool`` with a ``ToolContext`` built from the :class:`~toolrig.CallContext` (``deps`` as the run
context, the call's id and name). Exported tools use OpenAI strict schemas (the SDK's default,
``strict_json_schema=True``) written by :func:`toolrig.providers.to_strict_schema`; the nulls strict mode makes the
model send for left-out optional fields are dropped (:func:`toolrig.providers.drop_strict_nulls`) before the
runtime validates against the tool's own schema. A tool whose schema strict mode cannot express is exported
non-strict, with its own schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._schematool import SchemaTool
from toolrig._spec import thaw
from toolrig.interop._bridge import Exported, exported, foreign_tool, require, toolset_of
from toolrig.providers import drop_strict_nulls, to_strict_schema
from toolrig.runtime import Runtime
from toolrig.toolsets import FunctionToolset

__all__ = ["from_openai_agents", "to_openai_agents"]


def from_openai_agents(tools: Any, **options: Any) -> FunctionToolset:
    """OpenAI Agents ``FunctionTool`` s (e.g. made with ``@function_tool``) as a toolrig toolset.

    Args:
        tools: a ``FunctionTool`` or an iterable of them.
        **options: spec options for every imported tool (``permission=``, ``timeout=`` ...).

    Raises:
        TypeError: something that is not a ``FunctionTool`` (hosted tools run at OpenAI, not here).
    """
    agents = require("agents")
    items: Iterable[Any] = [tools] if isinstance(tools, agents.FunctionTool) else list(tools)
    made = []
    for item in items:
        if not isinstance(item, agents.FunctionTool):
            raise TypeError(f"from_openai_agents takes FunctionTools, got {type(item).__name__}")
        made.append(_import_one(item, agents, options))
    return toolset_of(made, "openai-agents")


def _import_one(tool: Any, agents: Any, options: Mapping[str, Any]) -> SchemaTool:
    name = tool.name
    tool_context = require("agents.tool_context").ToolContext

    async def handler(values: dict[str, Any], ctx: CallContext) -> Any:
        text = json.dumps(values)
        context = tool_context(ctx.deps, tool_name=name, tool_call_id=ctx.call_id or "call",
                                     tool_arguments=text)
        return await tool.on_invoke_tool(context, text)

    own = {"requires_approval": True} if tool.needs_approval is True else {}
    return foreign_tool(name=name, description=tool.description or "", schema=tool.params_json_schema,
                        handler=handler, origin="openai-agents", options={**own, **options})


def to_openai_agents(tools: Any = None, runtime: Runtime | None = None, *, context: CallContext | None = None,
                     strict: bool = True) -> list[Any]:
    """toolrig tools as OpenAI Agents ``FunctionTool`` s whose every call goes through a toolrig :class:`Runtime`.

    Args:
        tools: the tools to export; None: every tool ``runtime`` offers.
        runtime: the runtime calls go through (default: ``Runtime(tools)``).
        context: the base context of every call (default: :func:`toolrig.current_context` at call time); the
            run's context object becomes its ``deps``.
        strict: strict schemas where strict mode can express the tool's schema.

    Returns:
        ``FunctionTool`` s; a call returns the outcome's content (what the model should read, an error line for a
        failed call).
    """
    agents = require("agents")
    chosen, via = exported(tools, runtime, context, "openai-agents")
    return [_export_one(tool, via, agents, strict) for tool in chosen]


def _export_one(tool: BaseTool, via: Exported, agents: Any, strict: bool) -> Any:
    name, original = tool.name, tool.spec.input_schema
    shaped = to_strict_schema(original) if strict else None
    use_strict = shaped is not None and not shaped.unsupported

    async def invoke(run: Any, text: str) -> str:
        arguments: Mapping[str, Any] | str = text
        if use_strict:
            try:
                arguments = drop_strict_nulls(text, original)
            except (ValueError, TypeError):  # not JSON: the runtime reports it to the model
                arguments = text
        outcome = await via.call(name, arguments, call_id=getattr(run, "tool_call_id", None),
                                 deps=getattr(run, "context", None))
        return outcome.content

    schema = shaped.schema if use_strict and shaped is not None else thaw(original)
    return agents.FunctionTool(name=name, description=tool.spec.description or name, params_json_schema=schema,
                               on_invoke_tool=invoke, strict_json_schema=use_strict)
