"""A live :class:`~toolrig.toolsets.Toolset` view of one named toolset of a registry."""

from __future__ import annotations

import builtins
from typing import Protocol

from toolrig._define import BaseTool
from toolrig._versions import split_key
from toolrig.toolsets import Toolset


class _Registry(Protocol):
    @property
    def label(self) -> str: ...
    def resolve_toolset(self, name: str, *, strict: bool = True) -> builtins.list[str]: ...
    def list(self) -> builtins.list[BaseTool]: ...
    def get(self, name: str) -> BaseTool | None: ...

__all__ = ["RegistryToolset"]


class RegistryToolset(Toolset):
    """The visible tools of ``registry`` that belong to the toolset ``name``.

    Membership is resolved on every call (non-strictly: names not registered are skipped), so
    the view follows registrations, status changes and redefinitions.
    """

    def __init__(self, registry: _Registry, name: str) -> None:
        self.registry = registry
        self.name = name

    @property
    def label(self) -> str:
        return f"{self.registry.label}.toolset({self.name!r})"

    def members(self) -> set[str]:
        """The tool names the toolset resolves to now."""
        return set(self.registry.resolve_toolset(self.name, strict=False))

    def list(self) -> builtins.list[BaseTool]:
        members = self.members()
        return [t for t in self.registry.list() if t.name in members]

    def get(self, name: str) -> BaseTool | None:
        return self.registry.get(name) if split_key(name)[0] in self.members() else None
