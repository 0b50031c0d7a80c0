"""The same tool under another name: renamed copies that share live state with the original.

A prefixed or renamed tool is still the same tool: disabling it in the registry, or counting
its calls, must affect one shared :class:`~toolrig._status.ToolVitals`. Copies are cached per
original tool so that repeated ``list()`` calls hand out the same objects.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

from toolrig._define import BaseTool

__all__ = ["AliasCache", "alias", "share_state"]

_VITALS_KEY = "_toolrig_vitals"  # where BaseTool.vitals keeps its ToolVitals (see toolrig._define)


def share_state(source: BaseTool, target: BaseTool) -> None:
    """Make ``target`` use ``source``'s status and stats (same tool, another face)."""
    target.__dict__[_VITALS_KEY] = source.vitals


def alias(tool: BaseTool, name: str) -> BaseTool:
    """A copy of ``tool`` named ``name`` that shares its state.

    Raises:
        DefinitionError: ``name`` is not a legal tool name.
    """
    if name == tool.name:
        return tool
    copy = tool.with_spec(name=name)
    if not isinstance(getattr(type(copy), "name", None), property):
        # ``Tool`` subclasses keep their name as a plain class attribute, which would shadow
        # ``spec.name`` on the copy; an instance attribute makes ``copy.name`` follow the spec.
        copy.__dict__["name"] = name
    share_state(tool, copy)
    return copy


class AliasCache:
    """Remembers the alias made for each original tool (weakly, so tools can go away)."""

    def __init__(self) -> None:
        self._copies: weakref.WeakKeyDictionary[BaseTool, BaseTool] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, tool: BaseTool, name: str) -> BaseTool:
        """The alias of ``tool`` named ``name``, made once and reused."""
        with self._lock, contextlib.suppress(TypeError):
            cached = self._copies.get(tool)
            if cached is not None and cached.name == name:
                return cached
        copy = alias(tool, name)
        with self._lock, contextlib.suppress(TypeError):  # unhashable or not weak-referenceable: no cache
            self._copies[tool] = copy
        return copy
