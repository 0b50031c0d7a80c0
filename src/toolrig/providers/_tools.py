"""Normalising what the exporters accept: tools in any form, a toolset, a registry, or specs."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from toolrig._define import BaseTool
from toolrig._spec import ToolSpec
from toolrig._tool_class import as_tool
from toolrig.errors import DefinitionError

__all__ = ["ToolsLike", "collect_specs", "spec_of"]

ToolsLike: TypeAlias = Any
"""An iterable of tools (functions, ``@tool`` objects, ``Tool`` classes or instances, ToolSpecs),
a single tool, or any toolset / registry: an object whose ``list()`` returns tools."""


def spec_of(obj: Any) -> ToolSpec:
    """The spec of one tool in any accepted form (a :class:`ToolSpec` is returned as is)."""
    if isinstance(obj, ToolSpec):
        return obj
    return as_tool(obj).spec


def _is_single(obj: Any) -> bool:
    if isinstance(obj, BaseTool | ToolSpec):
        return True
    if isinstance(obj, type):
        return True
    return inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj)


def _items(tools: ToolsLike) -> Iterable[Any]:
    if _is_single(tools):
        return [tools]
    lister = getattr(tools, "list", None)
    if callable(lister) and not isinstance(tools, list | tuple | set | frozenset | Mapping):
        listed = lister()
        if inspect.isawaitable(listed):
            close = getattr(listed, "close", None)
            if callable(close):
                close()
            raise TypeError(f"{type(tools).__name__}.list() is asynchronous: pass `await toolset.list()` instead")
        return list(listed)
    if isinstance(tools, Mapping):
        return list(tools.values())
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise TypeError(f"expected tools (a list, a toolset or a registry), got {type(tools).__name__}")
    return tools


def collect_specs(tools: ToolsLike, *, unique: bool = True) -> list[ToolSpec]:
    """The specs of ``tools``, in order.

    Args:
        tools: see :data:`ToolsLike`.
        unique: refuse two tools with the same name (what every export needs).

    Raises:
        DefinitionError: an item is not a tool, or two tools share a name (every provider
            rejects duplicate tool names in one request).
        TypeError: ``tools`` is not a collection of tools, or its ``list()`` is asynchronous.
    """
    specs: list[ToolSpec] = []
    seen: dict[str, ToolSpec] = {}
    for item in _items(tools):
        spec = spec_of(item)
        if unique and spec.name in seen:
            raise DefinitionError(
                f"two tools are named {spec.name!r} ({seen[spec.name].key} and {spec.key}); providers need "
                "unique names: rename one (tool.with_spec(name=...)) or use a prefixed toolset"
            )
        seen[spec.name] = spec
        specs.append(spec)
    return specs
