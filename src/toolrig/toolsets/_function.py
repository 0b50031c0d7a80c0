"""A toolset of tools given in code: functions, ``@tool`` objects, ``Tool`` classes."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar, overload

from toolrig._define import BaseTool
from toolrig._function_tool import FunctionTool
from toolrig._function_tool import tool as make_tool
from toolrig._tool_class import as_tool
from toolrig.errors import DefinitionError
from toolrig.toolsets._toolset import Toolset

__all__ = ["FunctionToolset"]

P = ParamSpec("P")
R = TypeVar("R")


class FunctionToolset(Toolset):
    """Tools held in memory, one per name.

    Tools whose ``check_fn`` fails are left out of :meth:`list` and :meth:`get`.

    Args:
        tools: anything :func:`toolrig.as_tool` accepts.
        name: optional label for error messages (e.g. ``"github"``).

    Example:
        >>> toolset = FunctionToolset()
        >>> @toolset.tool
        ... def ping() -> str:
        ...     '''Answer pong.'''
        ...     return "pong"
        >>> toolset.names()
        ['ping']
    """

    def __init__(self, tools: Iterable[Any] = (), *, name: str | None = None) -> None:
        self.name = name
        self._tools: dict[str, BaseTool] = {}
        self._lock = threading.Lock()
        for item in tools:
            self.add(item)

    @property
    def label(self) -> str:
        return f"FunctionToolset({self.name!r})" if self.name else f"FunctionToolset({', '.join(self._tools)})"

    def add(self, tool: Any, *, replace: bool = False) -> BaseTool:
        """Add a tool (any accepted form) and return the tool object.

        Raises:
            DefinitionError: a tool with this name is already here and ``replace`` is false.
        """
        made = as_tool(tool)
        with self._lock:
            if made.name in self._tools and not replace:
                raise DefinitionError(
                    f"{self.label} already has a tool named {made.name!r}; pass replace=True to replace it"
                )
            self._tools[made.name] = made
        return made

    def remove(self, name: str) -> BaseTool:
        """Remove and return the tool called ``name`` (KeyError if absent)."""
        with self._lock:
            return self._tools.pop(name)

    @overload
    def tool(self, fn: Callable[P, R], /) -> FunctionTool[P, R]: ...
    @overload
    def tool(self, /, **options: Any) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...
    def tool(self, fn: Callable[P, R] | None = None, /, **options: Any) -> Any:
        """Decorator: make a tool of the function (as :func:`toolrig.tool`) and add it here."""
        if fn is not None:
            return self.add(make_tool(fn, **options))

        def decorate(f: Callable[P, R]) -> FunctionTool[P, R]:
            made: FunctionTool[P, R] = make_tool(**options)(f)
            self.add(made)
            return made

        return decorate

    def list(self) -> builtins.list[BaseTool]:
        with self._lock:
            tools = builtins.list(self._tools.values())
        return [t for t in tools if t.available()]

    def get(self, name: str) -> BaseTool | None:
        found = self._tools.get(name)
        if found is not None:
            return found if found.available() else None
        return super().get(name) if "@" in name else None
