"""Resolving ``toolset:NAME``: the policy's own toolsets first, then the registry's named toolsets."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from toolrig.errors import ToolrigError
from toolrig.policy._rules import TOOLSET_PREFIXES, ToolsetResolver
from toolrig.toolsets import Toolset

__all__ = ["NamedToolsets", "make_toolset_resolver", "tool_names"]


@runtime_checkable
class NamedToolsets(Protocol):
    """A toolset that knows named toolsets of its own (a :class:`toolrig.Registry` does)."""

    def resolve_toolset(self, name: str, *, strict: bool = True) -> Sequence[str]:
        """The tool names of the toolset called ``name``."""
        ...


def tool_names(toolset: Toolset | None) -> list[str]:
    """Names of every tool in a Registry / Toolset (empty for None)."""
    if toolset is None:
        return []
    return [t.spec.name for t in toolset.list()]


def make_toolset_resolver(named: Mapping[str, Sequence[str]], toolset: Toolset | None) -> ToolsetResolver:
    """A resolver over ``named`` (names or globs; expanded against ``toolset`` when given) and the
    toolset's ``resolve_toolset`` (a Registry's named toolsets). Unknown toolsets resolve to None."""
    cache: dict[str, frozenset[str] | None] = {}
    names: list[str] | None = None

    def resolve(name: str) -> frozenset[str] | None:
        nonlocal names
        if name in cache:
            return cache[name]
        result: frozenset[str] | None = None
        if name in named:
            if names is None:
                names = tool_names(toolset)
            members: set[str] = set()
            for entry in named[name]:
                if entry.startswith(TOOLSET_PREFIXES):
                    continue  # nested toolsets are not expanded, to keep resolution obviously finite
                members.update(n for n in names if fnmatch.fnmatchcase(n, entry))
                if not any(c in entry for c in "*?["):
                    members.add(entry)
            result = frozenset(members)
        elif isinstance(toolset, NamedToolsets):
            try:
                result = frozenset(toolset.resolve_toolset(name, strict=False))
            except (ToolrigError, KeyError):
                result = None
        cache[name] = result
        return result

    return resolve
