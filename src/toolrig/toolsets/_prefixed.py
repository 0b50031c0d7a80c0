"""A view that puts a prefix before every tool name (``read`` → ``gh_read``)."""

from __future__ import annotations

import builtins

from toolrig._define import BaseTool
from toolrig._spec import check_name
from toolrig._versions import split_key
from toolrig.toolsets._aliases import AliasCache
from toolrig.toolsets._base import Toolset
from toolrig.toolsets._wrapper import WrapperToolset

__all__ = ["PrefixedToolset"]


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
