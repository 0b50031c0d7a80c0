"""Loading tools into a registry: functions over any object with ``register_many``.

Each function loads with :mod:`toolrig.loading` and registers the result with a ``source`` label
(``module:NAME``, the resolved file path, or ``entry-point:GROUP:NAME``), which is what
hot reload uses to know which tools came from which file. :class:`~toolrig.Registry` offers them
as methods (``registry.load_file(path)``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, Protocol

from toolrig._define import BaseTool

__all__ = ["BUNDLE_LOADERS", "PACKAGE_LOADERS", "Registers", "load_bundle", "load_directory", "load_entry_points",
           "load_module", "load_package", "load_source", "register_file"]

BUNDLE_LOADERS = "toolrig.bundles"
"""Entry-point group of bundle loaders (``yaml``: :func:`toolrig.builtins.load_bundle`): the registry sits below
the built-ins, so it finds their loader by name instead of importing it."""

PACKAGE_LOADERS = "toolrig.package_loaders"
"""Entry-point group of the tool-package loader (``verified``: :func:`toolrig.packages.load_verified`), found by
name for the same reason; only toolrig's own entry point is accepted."""


class Registers(Protocol):
    """What loading needs of a registry."""

    def register_many(self, tools: Iterable[Any], *, replace: bool = ...,
                      source: str | None = ...) -> list[BaseTool]: ...


def load_module(registry: Registers, module: str, *, replace: bool = False) -> list[BaseTool]:
    """Import ``module`` and register its tools (see :func:`toolrig.loading.load_module`)."""
    from toolrig.loading import load_module as load

    return registry.register_many(load(module), replace=replace, source=f"module:{module}")


def register_file(registry: Registers, path: str | Path, *, replace: bool = False) -> list[BaseTool]:
    """Load a Python file and register its tools (source: the resolved path); ``Registry.load_file``."""
    from toolrig.loading import source_for, tools_in_file

    return registry.register_many(tools_in_file(path), replace=replace, source=source_for(path))


def load_directory(registry: Registers, path: str | Path, *, recursive: bool = False, replace: bool = False,
                   on_error: Literal["raise", "skip"] = "raise") -> list[BaseTool]:
    """Load every tool file of a directory and register the tools (none, if a file fails)."""
    from toolrig.loading import load_directory_files, source_for

    loaded = load_directory_files(path, recursive=recursive, on_error=on_error)
    return [t for file, tools in loaded.items()
            for t in registry.register_many(tools, replace=replace, source=source_for(file))]


def load_entry_points(registry: Registers, group: str = "toolrig.tools", *,
                      replace: bool = False) -> list[BaseTool]:
    """Register the tools of every installed plugin in the entry-point ``group``."""
    from toolrig.loading import entry_point_tools

    return [t for ep, tools in entry_point_tools(group).items()
            for t in registry.register_many(tools, replace=replace, source=f"entry-point:{group}:{ep}")]


def load_source(registry: Registers, source: str | Path, *, replace: bool = False) -> list[BaseTool]:
    """Register tools from a file, a directory, a module name or ``module:attr`` (as the CLI does)."""
    from toolrig.loading import load_source as load
    from toolrig.loading import source_for

    if Path(source).is_dir():
        return load_directory(registry, source, replace=replace)
    label = source_for(source) if Path(source).is_file() else f"module:{source}"
    return registry.register_many(load(source), replace=replace, source=label)


def load_bundle(registry: Registers, path: str | Path, *, kind: str = "yaml", **options: Any) -> list[BaseTool]:
    """Register a bundle's tools with the loader registered as ``kind`` in :data:`BUNDLE_LOADERS`.

    Raises:
        LoadError: no such loader is installed.
    """
    from importlib.metadata import entry_points

    from toolrig.errors import LoadError

    for ep in entry_points(group=BUNDLE_LOADERS, name=kind):
        loaded: list[BaseTool] = ep.load()(registry, path, **options)
        return loaded
    raise LoadError(f"no {kind!r} bundle loader is installed (entry point group {BUNDLE_LOADERS!r})",
                    source=str(path))


def load_package(registry: Registers, name: str, **options: Any) -> list[BaseTool]:
    """Register the tools of installed tool package ``name`` if it still matches its scan and pin (see
    :func:`toolrig.packages.load_verified`); ``Registry.load_package``.

    Raises:
        LoadError: the package is refused, or toolrig's package loader is not installed (nothing is loaded
            unverified).
    """
    from importlib.metadata import entry_points

    from toolrig.errors import LoadError

    for ep in entry_points(group=PACKAGE_LOADERS, name="verified"):
        if ep.value.replace(" ", "") == "toolrig.packages:load_verified" and ep.dist is not None \
                and ep.dist.name == "toolrig":
            loaded: list[BaseTool] = ep.load()(registry, name, **options)
            return loaded
    raise LoadError(f"toolrig's package loader is not installed (entry point group {PACKAGE_LOADERS!r}): "
                    f"{name!r} cannot be verified, so it is not loaded", source=name)
