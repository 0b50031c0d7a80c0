"""What every framework adapter shares: foreign tools as toolrig tools, toolrig tools as calls through a Runtime.

Importing: a foreign tool becomes a :class:`~toolrig.SchemaTool` whose input schema is what the framework shows
the model, so toolrig validates (and coerces) the arguments before the foreign code runs; its handler calls the
foreign tool's async entry point. Exporting: each exported tool holds the name and a :class:`Exported` (a runtime
and a base context); its body only builds a :class:`~toolrig.ToolCall` and awaits :meth:`Runtime.call`, so policy,
approval, limits, fencing and audit apply to every call a framework makes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext, current_context
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolOutcome
from toolrig._schematool import Handler, SchemaTool
from toolrig.errors import DefinitionError
from toolrig.runtime import Runtime
from toolrig.toolsets import FunctionToolset, Toolset

__all__ = ["ORIGIN_KEY", "Exported", "clean_schema", "exported", "foreign_tool", "require", "retry_worthy",
           "toolset_of"]

ORIGIN_KEY = "interop"
"""The metadata key naming the framework an imported tool came from (``spec.metadata["interop"]``)."""

_EXTRAS = {"langchain_core": "langchain", "pydantic_ai": "pydantic-ai", "agents": "openai-agents",
           "smolagents": "smolagents", "crewai": "crewai"}


def require(module: str) -> ModuleType:
    """Import a framework (lazily, on first use); a clear ImportError naming the extra when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = _EXTRAS.get(module.split(".", maxsplit=1)[0], module)
        raise ImportError(f"{module} is not installed: pip install 'toolrig[{extra}]'") from exc


def clean_schema(schema: Mapping[str, Any], description: str = "") -> dict[str, Any]:
    """An object schema as a tool's input schema: the root ``title`` dropped, the root ``description`` too when it
    only repeats the tool's description (frameworks copy it there)."""
    out = {k: v for k, v in schema.items() if k != "title"}
    if out.get("description") in (description, None, ""):
        out.pop("description", None)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def foreign_tool(*, name: str, description: str, schema: Mapping[str, Any], handler: Handler, origin: str,
                 options: Mapping[str, Any]) -> SchemaTool:
    """A toolrig tool around a foreign one; ``options`` are spec options (``permission=``, ``timeout=`` ...)."""
    metadata = {**dict(options.get("metadata") or {}), ORIGIN_KEY: origin}
    rest = {k: v for k, v in options.items() if k != "metadata"}
    try:
        return SchemaTool(name=name, description=description or name, input_schema=clean_schema(schema, description),
                          handler=handler, metadata=metadata, **rest)
    except DefinitionError as exc:
        raise DefinitionError(f"{origin} tool {name!r} cannot be imported: {exc}") from exc


def toolset_of(tools: Iterable[BaseTool], origin: str) -> FunctionToolset:
    """The imported tools as one toolset (one per name)."""
    return FunctionToolset(list(tools), name=origin)


@dataclass(frozen=True)
class Exported:
    """The runtime exported tools call through, and the context each call starts from.

    Attributes:
        runtime: runs every call (policy, approval, limits, fencing, audit).
        context: the base context; None takes :func:`toolrig.current_context` at call time.
        framework: recorded in each call's ``metadata["framework"]``.
    """

    runtime: Runtime
    context: CallContext | None
    framework: str

    def context_for(self, **changes: Any) -> CallContext:
        """The context of one call: the base one, ``changes`` applied (None values skipped), the framework noted."""
        base = self.context if self.context is not None else current_context()
        given = {k: v for k, v in changes.items() if v is not None}
        return base.derive(metadata={**base.metadata, "framework": self.framework}, **given)

    async def call(self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None = None,
                   **changes: Any) -> ToolOutcome:
        """Run one call of ``name`` through the runtime."""
        call = ToolCall(name=name, arguments=arguments) if not call_id else ToolCall(
            name=name, arguments=arguments, id=call_id)
        return await self.runtime.call(call, self.context_for(**changes))

    def call_sync(self, name: str, arguments: Mapping[str, Any] | str, **changes: Any) -> ToolOutcome:
        """:meth:`call` from synchronous code (on the runtime's own loop thread); the caller's context is kept."""
        call = ToolCall(name=name, arguments=arguments)
        return self.runtime.call_sync(call, self.context_for(**changes))


def exported(tools: Any, runtime: Runtime | None, context: CallContext | None,
             framework: str) -> tuple[list[BaseTool], Exported]:
    """The tools to export (as the runtime offers them) and the :class:`Exported` their calls go through.

    ``tools`` None exports every tool ``runtime`` offers. Without ``runtime`` one is built on ``tools`` (default
    stages, default audit log). With both, every tool must be one the runtime offers, or its calls would fail.

    Raises:
        ValueError: neither given, or a tool the runtime does not offer.
    """
    if runtime is None:
        if tools is None:
            raise ValueError("give the tools to export, a runtime, or both")
        runtime = Runtime(tools)
    offered = {t.name: t for t in runtime.tools()}
    if tools is None:
        chosen = list(offered.values())
    else:
        toolset = tools if isinstance(tools, Toolset) else FunctionToolset(_as_list(tools))
        names = [t.name for t in toolset.list()]
        missing = [n for n in names if n not in offered]
        if missing:
            raise ValueError(f"the runtime does not offer {missing}: export tools of its toolset "
                             "(or pass tools=None to export all it offers)")
        chosen = [offered[n] for n in names]
    return chosen, Exported(runtime, context, framework)


def _as_list(tools: Any) -> list[Any]:
    if isinstance(tools, list | tuple):
        return list(tools)
    if isinstance(tools, BaseTool) or callable(tools):
        return [tools]
    return list(tools)


def retry_worthy(outcome: ToolOutcome) -> bool:
    """Whether the model should call again differently (bad arguments, or the tool asked for it)."""
    return outcome.error is not None and outcome.error.kind in (ErrorKind.INVALID_ARGUMENTS,
                                                                 ErrorKind.RETRY_REQUESTED)

