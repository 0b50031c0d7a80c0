"""The tool registry: :class:`Registry`, named groups of tools, loading and hot reload.

- :class:`Registry`: a thread-safe, versioned home for tools (also a :class:`~toolrig.toolsets.Toolset`).
- :class:`RegistryToolset`: a live view of one named group.
- :func:`reload_file`, :func:`watch`, :func:`awatch`: hot reload of tool files (``watchfiles``; imported on use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolrig.registry._named import ALL, NamedToolsets, ToolsetDefinition
from toolrig.registry._registry import HOOK_EVENTS, HookEvent, Registry
from toolrig.registry._view import RegistryToolset

if TYPE_CHECKING:
    from toolrig.registry._reload import ReloadResult, Watcher, awatch, reload_file, watch

__all__ = [
    "ALL",
    "HOOK_EVENTS",
    "HookEvent",
    "NamedToolsets",
    "Registry",
    "RegistryToolset",
    "ReloadResult",
    "ToolsetDefinition",
    "Watcher",
    "awatch",
    "reload_file",
    "watch",
]

_RELOAD = frozenset({"ReloadResult", "Watcher", "awatch", "reload_file", "watch"})


def __getattr__(name: str) -> Any:
    if name in _RELOAD:  # hot reload pulls in watchfiles: only when asked for
        from toolrig.registry import _reload

        return getattr(_reload, name)
    raise AttributeError(f"module 'toolrig.registry' has no attribute {name!r}")
