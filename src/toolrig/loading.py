"""Finding tools in code: modules, files, directories and installed plugins.

What counts as a tool in a module (:func:`tools_in_module`):

- module-level tool objects (``@tool`` functions, ``Tool`` instances, ``schema_tool(...)``),
  except ``@tool`` functions imported from another module and names starting with ``_``;
- ``Tool`` subclasses defined in that module (instantiated without arguments);
- everything in a module-level ``TOOLS`` list (functions, tools, ``Tool`` classes, toolsets).

Plain functions are *not* collected unless listed in ``TOOLS``. Files are executed under a
stable private module name per path (see :func:`module_name_for`), compiled from the current
source every time (no stale bytecode), so a file can be loaded again after an edit.

Entry points (group ``toolrig.tools`` by default) may point at a list of tools or functions, a
:class:`~toolrig.toolsets.Toolset`, one tool (a tool object or ``Tool`` subclass), or a
callable returning one of these (a bare function in an entry point is such a factory).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import linecache
import logging
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from toolrig._define import BaseTool
from toolrig._function_tool import FunctionTool
from toolrig._tool_class import Tool, as_tool
from toolrig.errors import DefinitionError, LoadError
from toolrig.toolsets import Toolset

__all__ = [
    "LoadError",
    "collect",
    "entry_point_tools",
    "forget_file",
    "import_file",
    "load_directory",
    "load_directory_files",
    "load_entry_points",
    "load_file",
    "load_module",
    "load_source",
    "module_name_for",
    "python_files",
    "source_for",
    "tools_in_file",
    "tools_in_module",
]

log = logging.getLogger("toolrig.loading")


# -- collecting -------------------------------------------------------------------------------
def collect(obj: Any, *, where: str, factory: bool = False) -> list[BaseTool]:
    """The tools ``obj`` stands for: a tool, a function, a ``Tool`` class, a toolset, a list.

    Args:
        obj: what to turn into tools.
        where: names the origin in error messages.
        factory: treat a bare callable as a factory and collect what it returns.

    Raises:
        LoadError: ``obj`` is none of the accepted forms, or a tool definition is wrong.
    """
    try:
        if isinstance(obj, BaseTool):
            return [obj]
        if isinstance(obj, Toolset):
            return obj.list()
        if isinstance(obj, type) and issubclass(obj, Tool):
            return [as_tool(obj)]
        if isinstance(obj, list | tuple | set | frozenset):
            return [t for item in obj for t in collect(item, where=where)]
        if factory and callable(obj):
            return collect(_call_factory(obj, where), where=where)
        return [as_tool(obj)]
    except LoadError:
        raise
    except DefinitionError as exc:
        raise LoadError(f"{where}: {exc}", source=where) from exc


def _call_factory(factory: Any, where: str) -> Any:
    try:
        return factory()
    except Exception as exc:
        raise LoadError(
            f"{where}: calling it as a factory failed ({type(exc).__name__}: {exc}); an entry point naming a "
            "plain function must be a factory taking no arguments - to offer the function itself as a tool, "
            "decorate it with @tool or put it in a list",
            source=where,
        ) from exc


def tools_in_module(module: ModuleType) -> list[BaseTool]:
    """The tools a module offers (see the module docstring for the rules)."""
    found: list[BaseTool] = []
    for attr, value in vars(module).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, BaseTool) and _defined_in(value, module):
            found.append(value)
        elif _is_local_tool_class(value, module):
            found.extend(collect(value, where=f"{module.__name__}.{attr}"))
    listed = getattr(module, "TOOLS", None)
    if listed is not None:
        found.extend(collect(listed, where=f"{module.__name__}.TOOLS"))
    return _dedupe(found, module.__name__)


def _defined_in(tool: BaseTool, module: ModuleType) -> bool:
    if isinstance(tool, FunctionTool):
        return getattr(tool.fn, "__module__", None) == module.__name__
    return True


def _is_local_tool_class(value: Any, module: ModuleType) -> bool:
    return (isinstance(value, type) and issubclass(value, Tool) and value.__module__ == module.__name__
            and "spec" in value.__dict__)


def _origin(tool: BaseTool) -> object:
    if isinstance(tool, FunctionTool):
        return tool.fn
    return type(tool) if isinstance(tool, Tool) else tool


def _dedupe(tools: list[BaseTool], where: str) -> list[BaseTool]:
    out: dict[str, BaseTool] = {}
    for t in tools:
        seen = out.get(t.spec.key)
        if seen is None:
            out[t.spec.key] = t
        elif _origin(seen) is not _origin(t):
            raise LoadError(f"{where}: two different tools are both named {t.spec.key}", source=where)
    return list(out.values())


# -- modules and files ------------------------------------------------------------------------
def load_module(module: str | ModuleType) -> list[BaseTool]:
    """Import a module by name (or take a module object) and return its tools.

    Raises:
        LoadError: the import fails or a tool in it is wrong.
    """
    return tools_in_module(_import(module) if isinstance(module, str) else module)


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"cannot import {name!r}: {type(exc).__name__}: {exc}", source=name) from exc


def source_for(path: str | Path) -> str:
    """The source label of a file: its absolute, resolved path."""
    return str(Path(path).resolve())


def module_name_for(path: str | Path) -> str:
    """The private module name a file is loaded under (stable for one path)."""
    resolved = Path(path).resolve()
    stem = re.sub(r"\W", "_", resolved.stem)
    digest = hashlib.sha1(str(resolved).encode(), usedforsecurity=False).hexdigest()[:10]
    return f"_toolrig_file_{stem}_{digest}"


def import_file(path: str | Path) -> ModuleType:
    """Execute a Python file as a fresh module; on failure the previous module stays in place.

    Raises:
        LoadError: the file is missing, does not compile, or raises while executing.
    """
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise LoadError(f"no such tool file: {resolved}", source=str(resolved))
    name = module_name_for(resolved)
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None:
        raise LoadError(f"cannot load {resolved} as a Python module", source=str(resolved))
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module
    try:
        source = resolved.read_bytes()
        linecache.checkcache(str(resolved))
        exec(compile(source, str(resolved), "exec"), module.__dict__)
    except Exception as exc:
        _restore(name, previous)
        raise LoadError(f"cannot load {resolved}: {type(exc).__name__}: {exc}", source=str(resolved)) from exc
    return module


def _restore(name: str, previous: ModuleType | None) -> None:
    if previous is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = previous


def forget_file(path: str | Path) -> None:
    """Drop the module a file was loaded as (after the file is deleted)."""
    sys.modules.pop(module_name_for(path), None)


def tools_in_file(path: str | Path) -> list[BaseTool]:
    """Execute a Python file and return its tools (raises :class:`LoadError`); nothing is registered.

    :meth:`toolrig.Registry.load_file` is the one that loads a file *into a registry*.
    """
    return tools_in_module(import_file(path))


load_file = tools_in_file
"""The older name of :func:`tools_in_file` (kept as an alias)."""


def python_files(path: str | Path, *, recursive: bool = False) -> list[Path]:
    """The tool files of a directory: ``*.py`` whose path (below it) has no part starting with ``_`` or ``.``."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise LoadError(f"no such directory: {root}", source=str(root))
    candidates = root.rglob("*.py") if recursive else root.glob("*.py")
    return sorted(p for p in candidates
                  if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts))


def load_directory_files(path: str | Path, *, recursive: bool = False,
                         on_error: Literal["raise", "skip"] = "raise") -> dict[Path, list[BaseTool]]:
    """Load every tool file of a directory; the tools per file.

    Args:
        path: the directory.
        recursive: descend into sub-directories too.
        on_error: ``"raise"``: try every file, then raise one :class:`LoadError` listing every
            failure (returning nothing); ``"skip"``: log failures and return the rest.
    """
    loaded: dict[Path, list[BaseTool]] = {}
    failures: list[str] = []
    for file in python_files(path, recursive=recursive):
        try:
            loaded[file] = tools_in_file(file)
        except LoadError as exc:
            failures.append(str(exc))
            if on_error == "skip":
                log.warning("skipping tool file: %s", exc)
    if failures and on_error == "raise":
        raise LoadError(f"{len(failures)} tool file(s) failed to load:\n" + "\n".join(failures),
                        source=str(Path(path).resolve()))
    return loaded


def load_directory(path: str | Path, *, recursive: bool = False,
                   on_error: Literal["raise", "skip"] = "raise") -> list[BaseTool]:
    """The tools of every ``.py`` file of a directory not starting with ``_`` (sorted by path)."""
    loaded = load_directory_files(path, recursive=recursive, on_error=on_error)
    return [t for tools in loaded.values() for t in tools]


# -- plugins and dispatch ---------------------------------------------------------------------
def entry_point_tools(group: str = "toolrig.tools") -> dict[str, list[BaseTool]]:
    """The tools of every entry point in ``group``, per entry-point name.

    Raises:
        LoadError: an entry point cannot be imported or does not yield tools.
    """
    out: dict[str, list[BaseTool]] = {}
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        where = f"entry point {ep.name!r} ({ep.value}) in group {group!r}"
        try:
            target = ep.load()
        except Exception as exc:
            raise LoadError(f"cannot load {where}: {type(exc).__name__}: {exc}", source=ep.value) from exc
        out[ep.name] = collect(target, where=where, factory=_is_factory(target))
    return out


def _is_factory(target: Any) -> bool:
    return callable(target) and not isinstance(target, BaseTool | type | Toolset)


def load_entry_points(group: str = "toolrig.tools") -> list[BaseTool]:
    """The tools of every installed plugin in the entry-point ``group``."""
    return [t for tools in entry_point_tools(group).values() for t in tools]


def load_source(source: str | Path) -> list[BaseTool]:
    """Tools from a file, a directory, a module name, or ``module:attribute``.

    Raises:
        LoadError: the source does not exist or cannot be loaded.
    """
    path = Path(source)
    if path.is_dir():
        return load_directory(path)
    if path.is_file():
        return tools_in_file(path)
    text = str(source)
    if text.endswith(".py") or "/" in text or "\\" in text:
        raise LoadError(f"no such file or directory: {text}", source=text)
    module_name, _, attr = text.partition(":")
    if not attr:
        return load_module(module_name)
    return collect(_attribute(_import(module_name), attr, text), where=text)


def _attribute(module: ModuleType, attr: str, text: str) -> Any:
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise LoadError(f"{text}: {module.__name__} has no attribute {attr!r}", source=text)
        value = getattr(value, part)
    return value

