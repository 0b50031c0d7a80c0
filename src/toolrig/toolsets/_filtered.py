"""A view offering only the tools that pass a predicate."""

from __future__ import annotations

import builtins

from toolrig._define import BaseTool
from toolrig.toolsets._base import ToolPredicate, Toolset
from toolrig.toolsets._wrapper import WrapperToolset

__all__ = ["FilteredToolset"]


class FilteredToolset(WrapperToolset):
    """Only the tools of ``wrapped`` for which ``predicate(tool)`` is true.

    Example:
        >>> readonly = registry.filtered(lambda t: t.spec.read_only)   # doctest: +SKIP
    """

    def __init__(self, wrapped: Toolset, predicate: ToolPredicate) -> None:
        super().__init__(wrapped)
        if not callable(predicate):
            raise TypeError("filtered(...) needs a callable taking a tool and returning a bool")
        self.predicate = predicate

    def list(self) -> builtins.list[BaseTool]:
        return [t for t in self.wrapped.list() if self.predicate(t)]

    def get(self, name: str) -> BaseTool | None:
        found = self.wrapped.get(name)
        return found if found is not None and self.predicate(found) else None
