"""The tool registry: a thread-safe, versioned, observable home for tools.

A :class:`Registry` is a :class:`~toolrig.toolsets.Toolset`: ``list()`` and ``get(name)`` show the
tools a model may use now. Rules, in one place:

- **Versions side by side.** Tools are keyed by ``name@version``; several versions of a name live
  together and a lower version never replaces a higher one. Registering an existing
  ``name@version`` raises :class:`~toolrig.VersionConflictError` unless ``replace=True``.
- **Lookup.** ``get("name")`` gives the preferred *active and available* version; ``get("name@1")``,
  ``"name@1.2"``, ``"name@1.2.3"``, ``"name@>=1.2,<2"`` select among versions
  (:mod:`toolrig._versions`). Preference: not deprecated, then not a pre-release, then highest.
  Deprecation (``spec.deprecated``) shows in :meth:`Registry.stats` and makes a version lose to others;
  ask for it exactly and you get it (a Runtime warns on its first call of it: ``meta["deprecated"]``).
- **Status.** Disabled (or errored) tools and tools whose ``check_fn`` fails are hidden from
  ``list()`` / ``get()``; ``list(status="disabled")`` shows them. A plain name in
  :meth:`Registry.disable` / :meth:`Registry.enable` / :meth:`Registry.unregister` means every
  version; ``name@selector`` means the matching versions.
- **Hooks.** ``before_register`` / ``before_unregister`` hooks may veto by raising (the
  exception reaches the caller, nothing changes); ``after_*`` hooks see the done deed. Hooks run
  outside the registry lock, so they may use the registry. ``replace=True`` fires only the
  register hooks.
- **Toolsets.** Named groups of tools (:mod:`toolrig.registry._named`), resolved lazily.
"""

from __future__ import annotations

import builtins
import difflib
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, get_args, overload

from packaging.version import Version

from toolrig._define import BaseTool
from toolrig._spec import Permission, ToolStatus
from toolrig._tool_class import as_tool
from toolrig._versions import SelectorError, best, parse_selector, rank, split_key
from toolrig.errors import RegistryError, ToolNotFoundError, VersionConflictError
from toolrig.registry import _loading
from toolrig.registry._named import NamedToolsets, ToolsetDefinition
from toolrig.toolsets import Toolset

if TYPE_CHECKING:
    from pathlib import Path

    from toolrig.registry._reload import ReloadResult, Watcher
    from toolrig.registry._view import RegistryToolset

__all__ = ["HOOK_EVENTS", "HookEvent", "Registry"]

HookEvent = Literal["before_register", "after_register", "before_unregister", "after_unregister"]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
Hook = Callable[[BaseTool], object]


class Registry(Toolset):
    """A thread-safe registry of tools; see the module docstring for its rules.

    Args:
        tools: tools to register at once (any form :func:`toolrig.as_tool` accepts).
        name: a label for messages.

    Example:
        >>> registry = Registry()
        >>> @registry.register
        ... def ping() -> str:
        ...     '''Answer pong.'''
        ...     return "pong"
        >>> registry.get("ping") is ping
        True
    """

    def __init__(self, tools: Iterable[Any] = (), *, name: str = "registry") -> None:
        self.name = name
        self._lock = threading.RLock()
        self._tools: dict[str, dict[Version, BaseTool]] = {}
        self._sources: dict[tuple[str, Version], str] = {}
        self._hooks: dict[str, builtins.list[Hook]] = {event: [] for event in HOOK_EVENTS}
        self.named_toolsets = NamedToolsets()
        for item in tools:
            self.register(item)

    @property
    def label(self) -> str:
        return f"Registry({self.name!r})"

    # -- registering -----------------------------------------------------------------------
    @overload
    def register(self, tool: Any, /, *, replace: bool = ..., source: str | None = ...) -> Any: ...
    @overload
    def register(self, /, *, replace: bool = ..., source: str | None = ...) -> Callable[[Any], Any]: ...
    def register(self, tool: Any = None, /, *, replace: bool = False, source: str | None = None) -> Any:
        """Register a tool (any accepted form) and return the tool object; usable as a decorator.

        Args:
            tool: a function, ``@tool`` object, ``Tool`` subclass or instance.
            replace: replace an already registered tool with the same name *and* version.
            source: where the tool came from (a file path, module or entry point); see
                :meth:`from_source`.

        Raises:
            VersionConflictError: ``name@version`` is registered already and ``replace`` is false.
        """
        if tool is None:
            return lambda obj: self.register(obj, replace=replace, source=source)
        made = as_tool(tool)
        self._emit("before_register", made)
        version = made.spec.parsed_version
        with self._lock:
            versions = self._tools.setdefault(made.name, {})
            if version in versions and not replace:
                raise VersionConflictError(
                    f"tool {made.spec.key} is already registered; pass replace=True to replace it or "
                    f"bump its version (registered: {', '.join(self._version_strings(made.name))})"
                )
            versions[version] = made
            if source is None:
                self._sources.pop((made.name, version), None)
            else:
                self._sources[(made.name, version)] = source
        self._emit("after_register", made)
        return made

    def register_many(self, tools: Iterable[Any], *, replace: bool = False,
                      source: str | None = None) -> builtins.list[BaseTool]:
        """Register several tools (or every tool of a Toolset); return them."""
        items = tools.list() if isinstance(tools, Toolset) else tools
        return [self.register(t, replace=replace, source=source) for t in items]

    def unregister(self, name_or_key: str | BaseTool) -> builtins.list[BaseTool]:
        """Remove tools: every version for a plain name, the matching ones for ``name@selector``,
        or exactly the given tool object.

        Returns:
            The removed tools.

        Raises:
            ToolNotFoundError: nothing matches.
        """
        if isinstance(name_or_key, BaseTool):
            victims = [name_or_key] if self._registered(name_or_key) else []
            if not victims:
                raise ToolNotFoundError(f"{name_or_key!r} is not registered in {self.label}")
        else:
            victims = self._matching(name_or_key)
        for t in victims:
            self._emit("before_unregister", t)
        with self._lock:
            for t in victims:
                version = t.spec.parsed_version
                versions = self._tools.get(t.name, {})
                if versions.get(version) is t:
                    del versions[version]
                    self._sources.pop((t.name, version), None)
                if not versions:
                    self._tools.pop(t.name, None)
        for t in victims:
            self._emit("after_unregister", t)
        return victims

    def _registered(self, tool: BaseTool) -> bool:
        with self._lock:
            return self._tools.get(tool.name, {}).get(tool.spec.parsed_version) is tool

    # -- looking up ------------------------------------------------------------------------
    def get(self, name: str) -> BaseTool | None:
        """The preferred active, available tool for ``name`` or ``name@selector``, or None."""
        bare, text = split_key(name)
        try:
            selector = parse_selector(text)
        except SelectorError:
            return None
        with self._lock:
            candidates = builtins.list(self._tools.get(bare, {}).values())
        return best((t for t in candidates if _visible(t) and selector.matches(t.spec.parsed_version)), selector)

    def require(self, name: str) -> BaseTool:
        """Like :meth:`get`, but raise :class:`~toolrig.ToolNotFoundError` explaining why not."""
        found = self.get(name)
        if found is not None:
            return found
        bare, text = split_key(name)
        try:
            parse_selector(text)
        except SelectorError as exc:
            raise ToolNotFoundError(f"no tool {name!r}: {exc}") from exc
        with self._lock:
            versions = builtins.list(self._tools.get(bare, {}).values())
            names = builtins.list(self._tools)
        if versions:
            listing = ", ".join(f"{t.spec.version} ({_why_hidden(t)})" for t in sorted(versions, key=_version_of))
            raise ToolNotFoundError(f"no usable version of {bare!r} matches {name!r}; registered: {listing}")
        close = difflib.get_close_matches(bare, names, n=5, cutoff=0.5)
        hint = f"; did you mean: {', '.join(close)}?" if close else ""
        raise ToolNotFoundError(f"no tool named {bare!r} in {self.label}{hint}")

    def has(self, name: str) -> bool:
        """True when :meth:`get` would find a tool."""
        return self.get(name) is not None

    def list(self, *, tag: str | None = None, permission: Permission | str | None = None,
             status: ToolStatus | str | None = None, all_versions: bool = False) -> builtins.list[BaseTool]:
        """Registered tools, sorted by name (then version).

        Args:
            tag: only tools with this tag.
            permission: only tools with this permission level.
            status: only tools with this status (``"all"`` for any); by default only active
                tools whose ``check_fn`` passes.
            all_versions: every matching version instead of the preferred one per name.
        """
        wanted = None if permission is None else Permission(permission)
        keep = _status_test(status)
        chosen: dict[str, builtins.list[BaseTool]] = {}
        for t in self._snapshot():
            if (tag is None or tag in t.spec.tags) and (wanted is None or t.spec.permission is wanted) and keep(t):
                chosen.setdefault(t.name, []).append(t)
        if all_versions:
            return [t for name in sorted(chosen) for t in sorted(chosen[name], key=_version_of)]
        return [max(chosen[name], key=rank) for name in sorted(chosen)]

    def versions(self, name: str) -> builtins.list[str]:
        """Every registered version of ``name`` (any status), lowest first."""
        with self._lock:
            return self._version_strings(name)

    def from_source(self, source: str) -> builtins.list[BaseTool]:
        """The tools (any status) registered with ``source=source``, by name and version."""
        with self._lock:
            found = [self._tools[n][v] for (n, v), s in self._sources.items() if s == source]
        return sorted(found, key=lambda t: (t.name, t.spec.parsed_version))

    def source_of(self, tool: BaseTool) -> str | None:
        """Where a registered tool was loaded from, if known."""
        with self._lock:
            return self._sources.get((tool.name, tool.spec.parsed_version))

    # -- status and stats ------------------------------------------------------------------
    def set_status(self, name_or_key: str, status: ToolStatus | str, *,
                   error: str | None = None) -> builtins.list[BaseTool]:
        """Set the status of every version ``name_or_key`` means; return those tools."""
        status = ToolStatus(status)
        tools = self._matching(name_or_key)
        for t in tools:
            t.vitals.set_status(status, error)
        return tools

    def disable(self, name_or_key: str) -> builtins.list[BaseTool]:
        """Hide a tool (every version for a plain name) from ``list()`` / ``get()``."""
        return self.set_status(name_or_key, ToolStatus.DISABLED)

    def enable(self, name_or_key: str) -> builtins.list[BaseTool]:
        """Make a tool active again (clearing any recorded error)."""
        return self.set_status(name_or_key, ToolStatus.ACTIVE)

    def stats(self, *, all_versions: bool = False) -> dict[str, dict[str, Any]]:
        """Status and call statistics per tool name (or per ``name@version``).

        Per name, the entry describes the version :meth:`get` would choose (or, when none is
        usable, the preferred registered one) and lists all ``versions``.
        """
        out: dict[str, dict[str, Any]] = {}
        by_name: dict[str, builtins.list[BaseTool]] = {}
        for t in self._snapshot():
            by_name.setdefault(t.name, []).append(t)
        for name in sorted(by_name):
            group = sorted(by_name[name], key=_version_of)
            if all_versions:
                out.update({t.spec.key: self._stat(t) for t in group})
                continue
            shown = best(t for t in group if _visible(t)) or best(group)
            if shown is not None:
                out[name] = {**self._stat(shown), "versions": [t.spec.version for t in group]}
        return out

    def _stat(self, tool: BaseTool) -> dict[str, Any]:
        vitals = tool.vitals
        return {"name": tool.name, "version": tool.spec.version, "status": vitals.status.value,
                "error": vitals.error, "deprecated": tool.spec.deprecated, "available": tool.available(),
                "source": self.source_of(tool), **vitals.stats.to_dict()}

    # -- named toolsets --------------------------------------------------------------------
    def define_toolset(self, name: str, tools: Iterable[str] = (), *, includes: Iterable[str] = (),
                       description: str = "", replace: bool = False) -> RegistryToolset:
        """Define a named toolset of tool names / globs and included toolsets; return its view.

        See :mod:`toolrig.registry._named` for resolution rules (an include cycle is a DefinitionError).
        """
        self.named_toolsets.define(ToolsetDefinition(name=name, tools=tuple(tools), includes=tuple(includes),
                                             description=description), replace=replace)
        return self.toolset(name)

    def resolve_toolset(self, name: str, *, strict: bool = True) -> builtins.list[str]:
        """The sorted tool names of a named toolset (``"all"`` / ``"*"``: every registered tool)."""
        with self._lock:
            registered = builtins.list(self._tools)
        return self.named_toolsets.resolve(name, registered, strict=strict)

    def toolset(self, name: str) -> RegistryToolset:
        """A live :class:`~toolrig.toolsets.Toolset` view of the named toolset's visible tools."""
        from toolrig.registry._view import RegistryToolset

        if not self.named_toolsets.exists(name):
            self.named_toolsets.resolve(name, ())  # raises the "unknown toolset" error with hints
        return RegistryToolset(self, name)

    # -- loading (functions of toolrig.registry._loading and _reload, offered as methods) -------
    def load_module(self, module: str, *, replace: bool = False) -> builtins.list[BaseTool]:
        """Import ``module`` and register its tools (see :func:`toolrig.loading.load_module`)."""
        return _loading.load_module(self, module, replace=replace)

    def load_file(self, path: str | Path, *, replace: bool = False) -> builtins.list[BaseTool]:
        """Load a Python file and register its tools (source: the resolved path)."""
        return _loading.register_file(self, path, replace=replace)

    def load_directory(self, path: str | Path, *, recursive: bool = False, replace: bool = False,
                       on_error: Literal["raise", "skip"] = "raise") -> builtins.list[BaseTool]:
        """Load every tool file of a directory and register the tools (none, if a file fails)."""
        return _loading.load_directory(self, path, recursive=recursive, replace=replace, on_error=on_error)

    def load_entry_points(self, group: str = "toolrig.tools", *, replace: bool = False) -> builtins.list[BaseTool]:
        """Register the tools of every installed plugin in the entry-point ``group``."""
        return _loading.load_entry_points(self, group, replace=replace)

    def load_source(self, source: str | Path, *, replace: bool = False) -> builtins.list[BaseTool]:
        """Register tools from a file, a directory, a module name or ``module:attr`` (as the CLI does)."""
        return _loading.load_source(self, source, replace=replace)

    def load_package(self, name: str, **options: Any) -> builtins.list[BaseTool]:
        """Register the tools of installed tool package ``name`` — only if its scan passed and its files have not
        changed since (hashes pinned with the MCP pins); they run sandboxed, reaching only the hosts its manifest
        declares. ``options``: see :func:`toolrig.packages.load_verified`.

        Raises:
            LoadError: the package was never scanned and pinned, changed, or a tool package it requires fails.
        """
        return _loading.load_package(self, name, **options)

    def load_bundle(self, path: str | Path, **options: Any) -> builtins.list[BaseTool]:
        """Register the YAML command tools of a bundle (see :func:`toolrig.builtins.load_bundle`)."""
        return _loading.load_bundle(self, path, **options)

    def reload_file(self, path: str | Path) -> ReloadResult:
        """Re-import a tool file and update its tools (see :func:`toolrig.registry.reload_file`)."""
        from toolrig.registry._reload import reload_file

        return reload_file(self, path)

    def watch(self, path: str | Path, **options: Any) -> Watcher:
        """Start hot reload of a file or directory (see :func:`toolrig.registry.watch`)."""
        from toolrig.registry._reload import watch

        return watch(self, path, **options)

    # -- hooks -----------------------------------------------------------------------------
    def on(self, event: HookEvent, fn: Hook | None = None) -> Any:
        """Call ``fn(tool)`` on ``event``; returns ``fn`` (or a decorator when ``fn`` is omitted)."""
        if event not in self._hooks:
            raise RegistryError(f"unknown registry event {event!r}; known: {', '.join(HOOK_EVENTS)}")
        if fn is None:
            return lambda f: self.on(event, f)
        with self._lock:
            self._hooks[event].append(fn)
        return fn

    def off(self, event: HookEvent, fn: Hook) -> None:
        """Stop calling ``fn`` on ``event`` (ValueError if it was not registered)."""
        with self._lock:
            self._hooks[event].remove(fn)

    def _emit(self, event: str, tool: BaseTool) -> None:
        with self._lock:
            hooks = builtins.list(self._hooks[event])
        for hook in hooks:
            hook(tool)

    # -- internals -------------------------------------------------------------------------
    def _snapshot(self) -> builtins.list[BaseTool]:
        with self._lock:
            return [t for versions in self._tools.values() for t in versions.values()]

    def _version_strings(self, name: str) -> builtins.list[str]:
        return [t.spec.version for t in sorted(self._tools.get(name, {}).values(), key=_version_of)]

    def _matching(self, name_or_key: str) -> builtins.list[BaseTool]:
        bare, text = split_key(name_or_key)
        try:
            selector = parse_selector(text)
        except SelectorError as exc:
            raise ToolNotFoundError(f"no tool {name_or_key!r}: {exc}") from exc
        with self._lock:
            found = [t for t in self._tools.get(bare, {}).values() if selector.matches(t.spec.parsed_version)]
        if not found:
            self.require(name_or_key)  # raises with the best explanation
        return sorted(found, key=_version_of)


def _version_of(tool: BaseTool) -> Version:
    return tool.spec.parsed_version


def _visible(tool: BaseTool) -> bool:
    return tool.vitals.status is ToolStatus.ACTIVE and tool.available()


def _why_hidden(tool: BaseTool) -> str:
    if tool.vitals.status is not ToolStatus.ACTIVE:
        return tool.vitals.status.value
    return "active" if tool.available() else "unavailable: check_fn failed"


def _status_test(status: ToolStatus | str | None) -> Callable[[BaseTool], bool]:
    if status is None:
        return _visible
    if status in ("all", "*"):
        return lambda _t: True
    wanted = ToolStatus(status)
    return lambda t: t.vitals.status is wanted
