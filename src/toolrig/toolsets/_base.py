"""The :class:`Toolset` contract: a source of tools, composable by small wrappers.

A toolset answers two questions, *which tools do you offer* (:meth:`Toolset.list`) and *which
tool is called this* (:meth:`Toolset.get`). Everything else (prefixing, renaming, filtering,
combining) is a tiny wrapper class built with a fluent method, so a pipeline never needs flags.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Self

from toolrig._define import BaseTool
from toolrig._versions import SelectorError, best, parse_selector, split_key

if TYPE_CHECKING:
    from toolrig.toolsets._filtered import FilteredToolset
    from toolrig.toolsets._prefixed import PrefixedToolset
    from toolrig.toolsets._renamed import RenamedToolset

__all__ = ["ToolPredicate", "Toolset"]

ToolPredicate = Callable[[BaseTool], bool]
"""A test on one tool, as taken by :meth:`Toolset.filtered`."""


class Toolset(ABC):
    """A source of tools.

    Subclasses implement :meth:`list`; :meth:`get` has a default built on it. A toolset may hold
    resources (an MCP connection); ``async with toolset:`` opens and closes them, and wrappers
    forward that lifecycle to what they wrap.

    Example:
        >>> tools = FunctionToolset([read, write]).prefixed("fs")   # doctest: +SKIP
        >>> [t.name for t in tools.list()]                            # doctest: +SKIP
        ['fs_read', 'fs_write']
    """

    @property
    def label(self) -> str:
        """A short human description, used in error messages."""
        return type(self).__name__

    @abstractmethod
    def list(self) -> builtins.list[BaseTool]:
        """The tools offered now, one per name."""

    def get(self, name: str) -> BaseTool | None:
        """The tool called ``name``, or None.

        ``name`` may carry a version selector (``"search@1.2"``, ``"search@>=1,<2"``); see
        :mod:`toolrig._versions`.
        """
        bare, text = split_key(name)
        try:
            selector = parse_selector(text)
        except SelectorError:
            return None
        return best([t for t in self.list() if t.name == bare], selector)

    def names(self) -> builtins.list[str]:
        """The sorted names of the offered tools."""
        return sorted(t.name for t in self.list())

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self.list())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return None

    # -- fluent composition ----------------------------------------------------------------
    def filtered(self, predicate: ToolPredicate) -> FilteredToolset:
        """A view offering only the tools for which ``predicate(tool)`` is true."""
        from toolrig.toolsets._filtered import FilteredToolset

        return FilteredToolset(self, predicate)

    def prefixed(self, prefix: str, *, sep: str = "_") -> PrefixedToolset:
        """A view whose tool names start with ``prefix`` + ``sep`` (``read`` → ``gh_read``)."""
        from toolrig.toolsets._prefixed import PrefixedToolset

        return PrefixedToolset(self, prefix, sep=sep)

    def renamed(self, mapping: Mapping[str, str]) -> RenamedToolset:
        """A view with some tools renamed (``{"old": "new"}``); other names pass through."""
        from toolrig.toolsets._renamed import RenamedToolset

        return RenamedToolset(self, mapping)

    def __repr__(self) -> str:
        return f"<{self.label}>"
