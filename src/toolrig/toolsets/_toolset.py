"""The :class:`Toolset` contract and the views that wrap one: filtered, prefixed, renamed.

A toolset answers three questions, *which tools do you offer* (:meth:`Toolset.list`), *which
tool is called this* (:meth:`Toolset.get`) and *does this call stand for another*
(:meth:`Toolset.route`, see :mod:`toolrig.toolsets._routing`). Everything else (prefixing, renaming,
filtering, combining) is a tiny wrapper class built with a fluent method that forwards all three,
so a pipeline never needs flags.
The contract and its views share this module because the fluent methods build the views: apart,
the two would import each other.
"""

from __future__ import annotations

import builtins
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any, ClassVar, Self

from toolrig._calls import ToolCall
from toolrig._define import BaseTool
from toolrig._spec import check_name
from toolrig._versions import SelectorError, best, parse_selector, split_key
from toolrig.errors import DefinitionError, ToolsetConflictError
from toolrig.toolsets._aliases import AliasCache
from toolrig.toolsets._routing import RoutedCall

__all__ = ["FilteredToolset", "PrefixedToolset", "RenamedToolset", "ToolPredicate", "Toolset", "WrapperToolset"]

ToolPredicate = Callable[[BaseTool], bool]
"""A test on one tool, as taken by :meth:`Toolset.filtered`."""


class Toolset(ABC):
    """A source of tools.

    Subclasses implement :meth:`list`; :meth:`get` has a default built on it, :meth:`route` routes
    nothing. A toolset may hold resources (an MCP connection); ``async with toolset:`` opens and closes
    them, and wrappers forward that lifecycle (and routing) to what they wrap.

    Example:
        >>> tools = FunctionToolset([read, write]).prefixed("fs")   # doctest: +SKIP
        >>> [t.name for t in tools.list()]                            # doctest: +SKIP
        ['fs_read', 'fs_write']
    """

    reads_routing_view: ClassVar[bool] = False
    """True for a toolset whose tools read :func:`~toolrig.toolsets.routing_view` while they run (a
    :class:`toolrig.Runtime` whose toolset holds one, as :meth:`walk` finds it, sets the view for each call)."""

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

    def route(self, call: ToolCall) -> RoutedCall | None:
        """The call to run instead of ``call``, or None to run ``call`` as it is (the default).

        :meth:`toolrig.Runtime.call` asks before the pipeline runs. An answer's tool must be named as this
        toolset names it, and must be one this toolset may offer (see :class:`RoutedCall`).
        """
        return None

    def routed_names(self, view: Toolset) -> builtins.list[str]:
        """Names, as ``view`` (a toolset built on this one) names them, of the tools that only routing reaches
        here (none by default); checks such as ``ALLOWED_TOOLS``'s unknown names count them as known."""
        return []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "route_call" in cls.__dict__ and "route" not in cls.__dict__:  # written for the older CallRouter
            warnings.warn(f"{cls.__qualname__}.route_call is deprecated: name the method route (Toolset.route)",
                          DeprecationWarning, stacklevel=2)
            cls.route = cls.__dict__["route_call"]  # type: ignore[method-assign]

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

    def walk(self) -> Iterator[Toolset]:
        """This toolset, then every toolset it is built from, depth first (wrappers and combinations forward)."""
        yield self

    # -- fluent composition ----------------------------------------------------------------
    def filtered(self, predicate: ToolPredicate) -> FilteredToolset:
        """A view offering only the tools for which ``predicate(tool)`` is true."""
        return FilteredToolset(self, predicate)

    def prefixed(self, prefix: str, *, sep: str = "_") -> PrefixedToolset:
        """A view whose tool names start with ``prefix`` + ``sep`` (``read`` → ``gh_read``)."""
        return PrefixedToolset(self, prefix, sep=sep)

    def renamed(self, mapping: Mapping[str, str]) -> RenamedToolset:
        """A view with some tools renamed (``{"old": "new"}``); other names pass through."""
        return RenamedToolset(self, mapping)

    def __repr__(self) -> str:
        return f"<{self.label}>"


class WrapperToolset(Toolset):
    """Forwards :meth:`list`, :meth:`get`, :meth:`route` and the ``async with`` lifecycle to ``wrapped``.

    Subclass it to change what passes through (see :class:`~toolrig.toolsets.FilteredToolset`).

    Args:
        wrapped: the toolset to forward to.
    """

    def __init__(self, wrapped: Toolset) -> None:
        if not isinstance(wrapped, Toolset):
            raise TypeError(f"{type(self).__name__} wraps a Toolset, got {type(wrapped).__name__}")
        self.wrapped = wrapped

    @property
    def label(self) -> str:
        return f"{type(self).__name__}({self.wrapped.label})"

    def list(self) -> builtins.list[BaseTool]:
        return self.wrapped.list()

    def get(self, name: str) -> BaseTool | None:
        return self.wrapped.get(name)

    def route(self, call: ToolCall) -> RoutedCall | None:
        return self.wrapped.route(call)

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return await self.wrapped.__aexit__(*exc_info)

    def walk(self) -> Iterator[Toolset]:
        yield self
        yield from self.wrapped.walk()


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

    def route(self, call: ToolCall) -> RoutedCall | None:
        """Only calls of a tool this view offers are routed, and never to a tool it hides (refused)."""
        routed = self.wrapped.route(call)
        if routed is None:
            return None
        source = self.wrapped.get(call.name)
        if source is None or not self.predicate(source):
            return None
        return routed if routed.tool is None or self.predicate(routed.tool) else routed.refused()


class PrefixedToolset(WrapperToolset):
    """The tools of ``wrapped`` named ``f"{prefix}{sep}{name}"``.

    The renamed tools share status and stats with the originals. A name that becomes illegal
    (longer than 64 characters) raises :class:`~toolrig.DefinitionError` when listed.

    Args:
        wrapped: the toolset to prefix.
        prefix: letters, digits, ``_`` or ``-``.
        sep: put between prefix and name (default ``_``).
    """

    def __init__(self, wrapped: Toolset, prefix: str, *, sep: str = "_") -> None:
        super().__init__(wrapped)
        check_name(f"{prefix}{sep}", what="tool name prefix")
        self.prefix = prefix
        self.sep = sep
        self._head = f"{prefix}{sep}"
        self._aliases = AliasCache()

    @property
    def label(self) -> str:
        return f"PrefixedToolset({self.prefix!r}, {self.wrapped.label})"

    def list(self) -> builtins.list[BaseTool]:
        return [self._aliases.get(t, self._head + t.name) for t in self.wrapped.list()]

    def get(self, name: str) -> BaseTool | None:
        bare, selector = split_key(name)
        if not bare.startswith(self._head):
            return None
        inner = bare.removeprefix(self._head)
        found = self.wrapped.get(inner if selector is None else f"{inner}@{selector}")
        return None if found is None else self._aliases.get(found, bare)

    def route(self, call: ToolCall) -> RoutedCall | None:
        """The wrapped toolset's routing of the unprefixed call, prefixed again (``x_call_tool`` → ``x_weather``)."""
        if not call.name.startswith(self._head):
            return None
        routed = self.wrapped.route(replace(call, name=call.name.removeprefix(self._head)))
        if routed is None:
            return None
        name = self._head + routed.call.name
        return routed.named(name, None if routed.tool is None else self._aliases.get(routed.tool, name))


class RenamedToolset(WrapperToolset):
    """The tools of ``wrapped``, those named in ``mapping`` under their new names.

    Renamed tools share status and stats with the originals; an old name no longer resolves.

    Raises:
        DefinitionError: a new name is illegal, or two tools are renamed to the same name.
        ToolsetConflictError: (when listing) a new name collides with a tool that kept its name.
    """

    def __init__(self, wrapped: Toolset, mapping: Mapping[str, str]) -> None:
        super().__init__(wrapped)
        self.mapping = dict(mapping)
        for new in self.mapping.values():
            check_name(new)
        self._reverse = {new: old for old, new in self.mapping.items()}
        if len(self._reverse) != len(self.mapping):
            raise DefinitionError(f"renamed(...): two tools would get the same new name in {self.mapping}")
        self._aliases = AliasCache()

    @property
    def label(self) -> str:
        return f"RenamedToolset({self.mapping!r}, {self.wrapped.label})"

    def list(self) -> builtins.list[BaseTool]:
        out: dict[str, BaseTool] = {}
        for t in self.wrapped.list():
            new = self.mapping.get(t.name, t.name)
            if new in out:
                raise ToolsetConflictError(
                    f"{self.label}: renaming makes two tools named {new!r}; choose another new name"
                )
            out[new] = self._aliases.get(t, new)
        return list(out.values())

    def get(self, name: str) -> BaseTool | None:
        bare, selector = split_key(name)
        if bare in self.mapping and bare not in self._reverse:
            return None  # renamed away
        inner = self._reverse.get(bare, bare)
        found = self.wrapped.get(inner if selector is None else f"{inner}@{selector}")
        return None if found is None else self._aliases.get(found, bare)

    def route(self, call: ToolCall) -> RoutedCall | None:
        """The wrapped toolset's routing of the call under its old name, the routed tool under its new one.

        A routed tool that kept its name, where that name is another tool's new name, is refused: here the
        name means the renamed tool.
        """
        if call.name in self.mapping and call.name not in self._reverse:
            return None  # renamed away
        routed = self.wrapped.route(replace(call, name=self._reverse.get(call.name, call.name)))
        if routed is None:
            return None
        inner = routed.call.name
        name = self.mapping.get(inner, inner)
        if routed.tool is None or (inner not in self.mapping and inner in self._reverse):
            return routed.named(name, None)
        return routed.named(name, self._aliases.get(routed.tool, name))
