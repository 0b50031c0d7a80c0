"""Several toolsets offered as one, with an explicit rule for name conflicts."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from contextlib import AsyncExitStack
from typing import Any, Literal, Self, get_args

from toolrig._calls import ToolCall
from toolrig._define import BaseTool
from toolrig.errors import DefinitionError, ToolsetConflictError
from toolrig.toolsets._function import FunctionToolset
from toolrig.toolsets._routing import RoutedCall
from toolrig.toolsets._toolset import Toolset

__all__ = ["CombinedToolset", "OnConflict"]

OnConflict = Literal["error", "first", "last"]
"""What to do when two toolsets offer the same name: raise, keep the first, or keep the last."""


class CombinedToolset(Toolset):
    """The union of several toolsets.

    Args:
        toolsets: toolsets, or plain lists of tools (made into a :class:`FunctionToolset`).
        on_conflict: ``"error"`` (default) raises :class:`~toolrig.ToolsetConflictError` naming
            both sources; ``"first"`` / ``"last"`` keep the tool of the first / last toolset.
        name: optional label for error messages.
    """

    def __init__(self, toolsets: Iterable[Toolset | Iterable[Any]], *, on_conflict: OnConflict = "error",
                 name: str | None = None) -> None:
        if on_conflict not in get_args(OnConflict):
            raise DefinitionError(f"on_conflict must be one of {get_args(OnConflict)}, got {on_conflict!r}")
        self.toolsets: tuple[Toolset, ...] = tuple(
            ts if isinstance(ts, Toolset) else FunctionToolset(ts) for ts in toolsets
        )
        self.on_conflict = on_conflict
        self.name = name
        self._stack: AsyncExitStack | None = None

    @property
    def label(self) -> str:
        if self.name:
            return f"CombinedToolset({self.name!r})"
        return f"CombinedToolset({', '.join(ts.label for ts in self.toolsets)})"

    def list(self) -> builtins.list[BaseTool]:
        chosen: dict[str, tuple[BaseTool, Toolset]] = {}
        for ts in self.toolsets:
            for t in ts.list():
                if t.name in chosen:
                    if self.on_conflict == "error":
                        raise _conflict(t.name, chosen[t.name][1], ts)
                    if self.on_conflict == "first":
                        continue
                chosen[t.name] = (t, ts)
        return [t for t, _ in chosen.values()]

    def get(self, name: str) -> BaseTool | None:
        found: tuple[BaseTool, Toolset] | None = None
        for ts in self.toolsets:
            t = ts.get(name)
            if t is None:
                continue
            if found is not None and self.on_conflict == "error":
                raise _conflict(t.name, found[1], ts)
            if found is None or self.on_conflict == "last":
                found = (t, ts)
        return None if found is None else found[0]

    def route(self, call: ToolCall) -> RoutedCall | None:
        """The routing of the member that offers the called name.

        A routed tool whose name another member offers here is refused (the name means that member's tool),
        and so is a call whose name is in conflict (``on_conflict="error"``).
        """
        answers = [(ts, routed) for ts in self.toolsets if (routed := ts.route(call)) is not None]
        if not answers:  # the common case costs no lookup
            return None
        owners = self._owners(call.name)
        if not owners or (len(owners) > 1 and self.on_conflict == "error"):
            return None
        owner = owners[-1] if self.on_conflict == "last" else owners[0]
        routed = next((r for ts, r in answers if ts is owner), None)
        if routed is None or routed.tool is None:
            return routed
        return routed if all(ts is owner for ts in self._owners(routed.call.name)) else routed.refused()

    def _owners(self, name: str) -> builtins.list[Toolset]:
        """The members that offer a tool called ``name``, in order."""
        return [ts for ts in self.toolsets if ts.get(name) is not None]

    def walk(self) -> Iterator[Toolset]:
        yield self
        for ts in self.toolsets:
            yield from ts.walk()

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            for ts in self.toolsets:
                await stack.enter_async_context(ts)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        return None


def _conflict(name: str, first: Toolset, second: Toolset) -> ToolsetConflictError:
    return ToolsetConflictError(
        f"tool name {name!r} is offered by both {first.label} and {second.label}; "
        f"give one of them a prefix with .prefixed('...') (or .renamed({{{name!r}: '...'}})), "
        "or pass on_conflict='first' or 'last'"
    )
