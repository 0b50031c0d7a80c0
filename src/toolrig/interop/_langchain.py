"""LangChain both ways: :func:`from_langchain` (tools, toolkits) and :func:`to_langchain` (``StructuredTool`` s).

Imported tools show the model LangChain's ``tool_call_schema`` (injected arguments left out) and toolrig validates
the arguments against it before LangChain sees them, also for a ``StructuredTool`` whose ``args_schema`` is a plain
dict (LangChain validates nothing then). ``InjectedToolArg`` parameters are filled from the
:class:`~toolrig.CallContext` (``state`` by name, then by type, then ``deps``; see :data:`toolrig.Injected`),
``InjectedToolCallId`` with the call's id. Every call goes through the tool's async entry point (``ainvoke``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._outcome import ToolOutcome
from toolrig._schematool import SchemaTool
from toolrig._spec import thaw
from toolrig.interop._bridge import Exported, exported, foreign_tool, require, toolset_of
from toolrig.runtime import Runtime
from toolrig.toolsets import FunctionToolset

__all__ = ["from_langchain", "to_langchain"]


def from_langchain(tools: Any, **options: Any) -> FunctionToolset:
    """LangChain tools as a toolrig toolset.

    Args:
        tools: a LangChain ``BaseTool``, a ``BaseToolkit`` (its ``get_tools()``), or an iterable of tools.
        **options: spec options for every imported tool (``permission=``, ``timeout=``, ``trust=`` ...).

    Raises:
        TypeError: something that is not a LangChain tool.
        DefinitionError: a tool's name or schema is not one toolrig accepts.
    """
    lc = require("langchain_core.tools")
    if isinstance(tools, lc.BaseToolkit):
        items: Iterable[Any] = tools.get_tools()
    elif isinstance(tools, lc.BaseTool):
        items = [tools]
    else:
        items = list(tools)
    made = []
    for item in items:
        if not isinstance(item, lc.BaseTool):
            raise TypeError(f"from_langchain takes LangChain tools, got {type(item).__name__}")
        made.append(_import_one(item, lc, options))
    return toolset_of(made, "langchain")


def _schema_of(schema: Any) -> dict[str, Any]:
    if isinstance(schema, Mapping):
        return dict(schema)
    return dict(schema.model_json_schema())


def _injected(tool: Any, lc: Any) -> dict[str, tuple[Any, Any, bool]]:
    """``{name: (annotation, default, is_call_id)}`` of the arguments LangChain hides from the model."""
    if isinstance(tool.args_schema, Mapping) or tool.args_schema is None:
        return {}
    shown = set(_schema_of(tool.tool_call_schema).get("properties", {}))
    out = {}
    for name, field in tool.get_input_schema().model_fields.items():
        if name in shown:
            continue
        is_id = any(m is lc.InjectedToolCallId or isinstance(m, lc.InjectedToolCallId) for m in field.metadata)
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        out[name] = (field.annotation, default, is_id)
    return out


def _import_one(tool: Any, lc: Any, options: Mapping[str, Any]) -> SchemaTool:
    injected = _injected(tool, lc)
    takes_call = any(is_id for _, _, is_id in injected.values())

    async def handler(values: dict[str, Any], ctx: CallContext) -> Any:
        args = dict(values)
        for name, (annotation, default, is_id) in injected.items():
            args[name] = ctx.call_id if is_id else ctx.resolve(name, annotation, default)
        if not takes_call:
            return await tool.ainvoke(args)
        message = await tool.ainvoke({"type": "tool_call", "name": tool.name, "args": args,
                                      "id": ctx.call_id or "call"})
        artifact = getattr(message, "artifact", None)
        return artifact if artifact is not None else getattr(message, "content", message)

    return foreign_tool(name=tool.name, description=tool.description or "",
                        schema=_schema_of(tool.tool_call_schema), handler=handler, origin="langchain",
                        options=options)


def to_langchain(tools: Any = None, runtime: Runtime | None = None, *,
                 context: CallContext | None = None) -> list[Any]:
    """toolrig tools as LangChain ``StructuredTool`` s whose every call goes through a toolrig :class:`Runtime`.

    Each tool's ``args_schema`` is its toolrig input schema (LangChain passes the arguments on unchecked; the
    runtime validates them). A call returns what the model should read (the outcome's content: fenced, redacted,
    an error line for a failed call) and, as the artifact, the structured result (``response_format=
    "content_and_artifact"``).

    Args:
        tools: the tools to export (any form a toolset accepts); None: every tool ``runtime`` offers.
        runtime: the runtime calls go through (default: ``Runtime(tools)``).
        context: the base context of every call (default: :func:`toolrig.current_context` at call time).
    """
    lc = require("langchain_core.tools")
    chosen, via = exported(tools, runtime, context, "langchain")
    return [_export_one(tool, via, lc) for tool in chosen]


def _answer(outcome: ToolOutcome) -> tuple[str, Any]:
    return outcome.content, outcome.structured if outcome.ok else outcome.to_dict()


def _export_one(tool: BaseTool, via: Exported, lc: Any) -> Any:
    name = tool.name

    async def acall(**kwargs: Any) -> tuple[str, Any]:
        return _answer(await via.call(name, kwargs))

    def call(**kwargs: Any) -> tuple[str, Any]:
        return _answer(via.call_sync(name, kwargs))

    return lc.StructuredTool.from_function(func=call, coroutine=acall, name=name,
                                           description=tool.spec.description or name,
                                           args_schema=thaw(tool.spec.input_schema),
                                           response_format="content_and_artifact", infer_schema=False)
