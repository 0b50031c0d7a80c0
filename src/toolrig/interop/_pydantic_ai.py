"""PydanticAI both ways: :func:`from_pydantic_ai` (``Tool`` s, functions, a ``FunctionToolset``) and
:func:`to_pydantic_ai` (a ``FunctionToolset`` whose every call goes through a toolrig Runtime).

An imported tool shows the model its ``ToolDefinition.parameters_json_schema`` (the ``RunContext`` parameter is
not in it); toolrig validates against that schema, then pydantic-ai's own validator turns the values into the
function's types, and the function gets a ``RunContext`` built from the :class:`~toolrig.CallContext` (``deps``,
``tool_call_id``, ``tool_name``). pydantic-ai's ``ModelRetry`` becomes toolrig's (kind ``retry_requested``).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._schematool import SchemaTool
from toolrig._spec import thaw
from toolrig.errors import ModelRetry, ToolFailure
from toolrig.interop._bridge import Exported, exported, foreign_tool, require, retry_worthy, toolset_of
from toolrig.runtime import Runtime
from toolrig.toolsets import Toolset

__all__ = ["PydanticAIToolset", "from_pydantic_ai", "to_pydantic_ai"]


def from_pydantic_ai(tools: Any, **options: Any) -> Toolset:
    """PydanticAI tools as a toolrig toolset.

    Args:
        tools: a ``pydantic_ai.Tool``, a tool function, a ``pydantic_ai.FunctionToolset`` (its ``tools``), an
            iterable of tools and functions, or any other pydantic-ai toolset (an MCP server, a wrapped or dynamic
            toolset): that one lists its tools only once opened, so it comes back as a
            :class:`PydanticAIToolset` to use with ``async with``.
        **options: spec options for every imported tool (``permission=``, ``timeout=`` ...); a tool's own
            ``requires_approval`` and ``timeout`` are kept unless given here.
    """
    pa = require("pydantic_ai")
    if isinstance(tools, pa.FunctionToolset):
        items: Iterable[Any] = tools.tools.values()
    elif isinstance(tools, pa.AbstractToolset):
        return PydanticAIToolset(tools, **options)
    elif isinstance(tools, pa.Tool) or callable(tools):
        items = [tools]
    else:
        items = list(tools)
    made = []
    for item in items:
        tool = item if isinstance(item, pa.Tool) else pa.Tool(item)
        made.append(_import_one(pa.FunctionToolset([tool]), tool.tool_def, pa, options))
    return toolset_of(made, "pydantic-ai")


class PydanticAIToolset(Toolset):
    """A pydantic-ai toolset whose tools are known only once it is open (an MCP server, a wrapped or dynamic
    toolset), as a toolrig toolset: ``async with`` opens it and lists its tools (as pydantic-ai lists them for a
    run, with no deps); closing it forgets them. Each call asks the toolset for the tool again, with the call's own
    ``RunContext``, as pydantic-ai does at each step of a run.
    """

    def __init__(self, toolset: Any, **options: Any) -> None:
        self.toolset = toolset
        self.options = options
        self._tools: dict[str, BaseTool] = {}

    @property
    def label(self) -> str:
        return f"PydanticAIToolset({type(self.toolset).__name__})"

    def list(self) -> builtins.list[BaseTool]:
        return builtins.list(self._tools.values())

    def get(self, name: str) -> BaseTool | None:
        return self._tools.get(name) or (super().get(name) if "@" in name else None)

    async def refresh(self) -> None:
        """List the tools again (a toolset whose tools change: call it after a change)."""
        pa = require("pydantic_ai")
        found = await self.toolset.get_tools(_run_context(pa, None, None, None))
        self._tools = {name: _import_one(self.toolset, tool.tool_def, pa, self.options)
                       for name, tool in found.items()}

    async def __aenter__(self) -> PydanticAIToolset:
        await self.toolset.__aenter__()
        try:
            await self.refresh()
        except BaseException:
            await self.toolset.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self._tools = {}
        result: bool | None = await self.toolset.__aexit__(*exc_info)
        return result


def _run_context(pa: Any, deps: Any, call_id: str | None, name: str | None) -> Any:
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    # RunContext must hold a model; an imported tool's body has none to talk to (TestModel never calls out)
    return pa.RunContext(deps=deps, model=TestModel(), usage=RunUsage(), tool_call_id=call_id, tool_name=name)


def _import_one(holder: Any, definition: Any, pa: Any, options: Mapping[str, Any]) -> SchemaTool:
    name = definition.name

    async def handler(values: dict[str, Any], ctx: CallContext) -> Any:
        run = _run_context(pa, ctx.deps, ctx.call_id, name)
        found = (await holder.get_tools(run)).get(name)
        if found is None:
            raise ToolFailure(f"the pydantic-ai toolset no longer offers {name!r}")
        args = found.args_validator.validate_python(values)
        try:
            return await holder.call_tool(name, args, run, found)
        except pa.ModelRetry as exc:
            raise ModelRetry(str(exc.message)) from exc

    own: dict[str, Any] = {}
    if definition.kind == "unapproved":
        own["requires_approval"] = True
    if definition.timeout is not None:
        own["timeout"] = definition.timeout
    return foreign_tool(name=name, description=definition.description or "",
                        schema=definition.parameters_json_schema, handler=handler, origin="pydantic-ai",
                        options={**own, **options})


def to_pydantic_ai(tools: Any = None, runtime: Runtime | None = None, *,
                   context: CallContext | None = None) -> Any:
    """toolrig tools as a ``pydantic_ai.FunctionToolset`` whose every call goes through a toolrig :class:`Runtime`.

    Each tool's schema is its toolrig input schema (pydantic-ai passes the arguments on; the runtime validates).
    A call gets ``deps``, ``tool_call_id`` from the run's ``RunContext``; it returns the outcome's content (what
    the model should read). Bad arguments, or a tool asking for another try, raise pydantic-ai's ``ModelRetry``
    so the agent's retry budget applies.

    Args:
        tools: the tools to export; None: every tool ``runtime`` offers.
        runtime: the runtime calls go through (default: ``Runtime(tools)``).
        context: the base context of every call (default: :func:`toolrig.current_context` at call time).
    """
    pa = require("pydantic_ai")
    chosen, via = exported(tools, runtime, context, "pydantic-ai")
    return pa.FunctionToolset([_export_one(tool, via, pa) for tool in chosen])


def _export_one(tool: BaseTool, via: Exported, pa: Any) -> Any:
    name = tool.name

    async def call(run: Any, **kwargs: Any) -> str:
        outcome = await via.call(name, kwargs, call_id=run.tool_call_id, deps=run.deps)
        if retry_worthy(outcome):
            raise pa.ModelRetry(outcome.content)
        return outcome.content

    return pa.Tool.from_schema(call, name=name, description=tool.spec.description or name,
                               json_schema=thaw(tool.spec.input_schema), takes_ctx=True)
