"""Loading tools into a registry: the ``load_*``, ``reload_file`` and ``watch`` methods.

Each method loads with :mod:`toolrig.loading` and registers the result with a ``source`` label
(``module:NAME``, the resolved file path, or ``entry-point:GROUP:NAME``), which is what
:mod:`toolrig.reload` uses to know which tools came from which file.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from toolrig.define import BaseTool

if TYPE_CHECKING:
    from toolrig.registry import Registry
    from toolrig.reload import ReloadResult, Watcher

__all__ = ["RegistryLoading"]


class _Registers(Protocol):
    def register_many(self, tools: Iterable[Any], *, replace: bool = ...,
                      source: str | None = ...) -> builtins.list[BaseTool]: ...


class RegistryLoading:
    """Mixin of :class:`toolrig.Registry`: register what the loaders find."""

    def load_module(self: _Registers, module: str, *, replace: bool = False) -> builtins.list[BaseTool]:
        """Import ``module`` and register its tools (see :func:`toolrig.loading.load_module`)."""
        from toolrig.loading import load_module

        return self.register_many(load_module(module), replace=replace, source=f"module:{module}")

    def load_file(self: _Registers, path: str | Path, *, replace: bool = False) -> builtins.list[BaseTool]:
        """Load a Python file and register its tools (source: the resolved path)."""
        from toolrig.loading import load_file, source_for

        return self.register_many(load_file(path), replace=replace, source=source_for(path))

    def load_directory(self: _Registers, path: str | Path, *, recursive: bool = False, replace: bool = False,
                       on_error: Literal["raise", "skip"] = "raise") -> builtins.list[BaseTool]:
        """Load every tool file of a directory and register the tools (none, if a file fails)."""
        from toolrig.loading import load_directory_files, source_for

        loaded = load_directory_files(path, recursive=recursive, on_error=on_error)
        return [t for file, tools in loaded.items()
                for t in self.register_many(tools, replace=replace, source=source_for(file))]

    def load_entry_points(self: _Registers, group: str = "toolrig.tools", *,
                          replace: bool = False) -> builtins.list[BaseTool]:
        """Register the tools of every installed plugin in the entry-point ``group``."""
        from toolrig.loading import entry_point_tools

        return [t for ep, tools in entry_point_tools(group).items()
                for t in self.register_many(tools, replace=replace, source=f"entry-point:{group}:{ep}")]

    def load_source(self: _Registers, source: str | Path, *, replace: bool = False) -> builtins.list[BaseTool]:
        """Register tools from a file, a directory, a module name or ``module:attr`` (as the CLI does)."""
        from toolrig.loading import load_directory_files, load_source, source_for

        if Path(source).is_dir():
            return [t for file, tools in load_directory_files(source).items()
                    for t in self.register_many(tools, replace=replace, source=source_for(file))]
        label = source_for(source) if Path(source).is_file() else f"module:{source}"
        return self.register_many(load_source(source), replace=replace, source=label)

    def reload_file(self, path: str | Path) -> ReloadResult:
        """Re-import a tool file and update its tools (see :func:`toolrig.reload.reload_file`)."""
        from toolrig.reload import reload_file

        return reload_file(cast("Registry", self), path)

    def watch(self, path: str | Path, **options: Any) -> Watcher:
        """Start hot reload of a file or directory (see :func:`toolrig.reload.watch`)."""
        from toolrig.reload import watch

        return watch(cast("Registry", self), path, **options)
