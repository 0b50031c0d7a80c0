"""PydanticAI both ways: :func:`from_pydantic_ai` (``Tool`` s, functions, a ``FunctionToolset``) and
:func:`to_pydantic_ai` (a ``FunctionToolset`` whose every call goes through a toolrig Runtime).

An imported tool shows the model its ``ToolDefinition.parameters_json_schema`` (the ``RunContext`` parameter is
not in it); toolrig validates against that schema, then pydantic-ai's own validator turns the values into the
function's types, and the function gets a ``RunContext`` built from the :class:`~toolrig.CallContext` (``deps``,
``tool_call_id``, ``tool_name``). pydantic-ai's ``ModelRetry`` becomes toolrig's (kind ``retry_requested``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._schematool import SchemaTool
from toolrig._spec import thaw
from toolrig.errors import ModelRetry
from toolrig.interop._bridge import Exported, exported, foreign_tool, require, retry_worthy, toolset_of
from toolrig.runtime import Runtime
from toolrig.toolsets import FunctionToolset

__all__ = ["from_pydantic_ai", "to_pydantic_ai"]


def from_pydantic_ai(tools: Any, **options: Any) -> FunctionToolset:
    """PydanticAI tools as a toolrig toolset.

    Args:
        tools: a ``pydantic_ai.Tool``, a tool function, a ``pydantic_ai.FunctionToolset`` (its ``tools``), or an
            iterable of tools and functions.
        **options: spec options for every imported tool (``permission=``, ``timeout=`` ...); a tool's own
            ``requires_approval`` and ``timeout`` are kept unless given here.

    Raises:
        TypeError: a toolset other than a ``FunctionToolset`` (its tools are only known inside a run).
    """
    pa = require("pydantic_ai")
    if isinstance(tools, pa.FunctionToolset):
        items: Iterable[Any] = tools.tools.values()
    elif isinstance(tools, pa.Tool) or callable(tools):
        items = [tools]
    elif isinstance(tools, pa.AbstractToolset):
        raise TypeError("from_pydantic_ai takes tools or a FunctionToolset; another toolset lists its tools only "
                        "inside a run")
    else:
        items = list(tools)
    return toolset_of([_import_one(t if isinstance(t, pa.Tool) else pa.Tool(t), pa, options) for t in items],
                      "pydantic-ai")


def _import_one(tool: Any, pa: Any, options: Mapping[str, Any]) -> SchemaTool:
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    definition = tool.tool_def
    name = definition.name
    holder = pa.FunctionToolset([tool])
    model = TestModel()  # what RunContext.model must hold; an imported tool's body has no model to talk to

    async def handler(values: dict[str, Any], ctx: CallContext) -> Any:
        run = pa.RunContext(deps=ctx.deps, model=model, usage=RunUsage(), tool_call_id=ctx.call_id,
                            tool_name=name)
        found = (await holder.get_tools(run))[name]
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
