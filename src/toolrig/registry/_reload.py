"""Hot reload: re-import edited tool files and update the registry (built on ``watchfiles``).

:func:`reload_file` is the synchronous step (usable directly): it executes the file again and
registers what it now defines with ``replace=True`` (status and stats carry over to the new
version of a tool), and unregisters the tools that disappeared from it. A file that fails to
load (syntax error, import error) leaves the old tools in place and working; the error is
returned, kept by the watcher (``last_error``, ``errors``), and recorded on each old tool's
``state.error`` so that :meth:`Registry.stats` shows it. A deleted file takes its tools along.

:class:`Watcher` runs that step in a background thread on every change; :func:`awatch` does the
same inside an anyio task group (``await tg.start(awatch, registry, path)``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self

import anyio
import watchfiles
from anyio.abc import TaskStatus

from toolrig._define import BaseTool
from toolrig.loading import LoadError, forget_file, python_files, source_for, tools_in_file
from toolrig.toolsets import share_state


class Registry(Protocol):
    """What hot reload needs of a registry (a :class:`toolrig.Registry` has it)."""

    def from_source(self, source: str) -> list[BaseTool]: ...
    def register(self, tool: Any, /, *, replace: bool = ..., source: str | None = ...) -> Any: ...
    def unregister(self, name_or_key: str | BaseTool) -> list[BaseTool]: ...

__all__ = ["ReloadResult", "Watcher", "awatch", "reload_file", "watch"]

log = logging.getLogger("toolrig.reload")

OnReload = Callable[["ReloadResult"], object]
_TICK_MS = 100  # how often the watch thread wakes to check for stop (and signals readiness)


@dataclass(frozen=True, kw_only=True)
class ReloadResult:
    """What one reload of one file did (keys are ``name@version``)."""

    path: Path
    added: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the file loaded (or was deleted) without error."""
        return self.error is None


def _ident(tool: BaseTool) -> tuple[str, Any]:
    return tool.name, tool.spec.parsed_version


def reload_file(registry: Registry, path: str | Path) -> ReloadResult:
    """Bring the registry in line with the current content of one tool file.

    Raises:
        ToolrigError: only for registry refusals (e.g. a hook vetoing a registration); load
            failures are returned in :attr:`ReloadResult.error`.
    """
    resolved = Path(source_for(path))
    source = str(resolved)
    old = {_ident(t): t for t in registry.from_source(source)}
    if not resolved.exists():
        for t in old.values():
            registry.unregister(t)
        forget_file(resolved)
        return ReloadResult(path=resolved, removed=tuple(sorted(t.spec.key for t in old.values())))
    try:
        tools = tools_in_file(resolved)
    except LoadError as exc:
        for t in old.values():
            t.vitals.set_status(t.vitals.status, error=str(exc))
        return ReloadResult(path=resolved, error=str(exc))
    added: list[str] = []
    replaced: list[str] = []
    for t in tools:
        previous = old.pop(_ident(t), None)
        if previous is not None and previous is not t:
            share_state(previous, t)
            t.vitals.set_status(t.vitals.status, error=None)
        (added if previous is None else replaced).append(t.spec.key)
        registry.register(t, replace=True, source=source)
    for t in old.values():
        registry.unregister(t)
    return ReloadResult(path=resolved, added=tuple(added), replaced=tuple(replaced),
                        removed=tuple(sorted(t.spec.key for t in old.values())))


class _ChangeHandler:
    """Decides which changed paths matter and reloads them, one at a time."""

    def __init__(self, registry: Registry, target: str | Path, *, recursive: bool,
                 on_reload: OnReload | None) -> None:
        self.registry = registry
        self.target = Path(target).resolve()
        if not self.target.exists():
            raise LoadError(f"cannot watch {self.target}: no such file or directory", source=str(self.target))
        self.is_dir = self.target.is_dir()
        self.root = self.target if self.is_dir else self.target.parent
        self.recursive = recursive and self.is_dir
        self.on_reload = on_reload
        self.errors: dict[Path, str] = {}
        self.last_error: str | None = None
        self._lock = threading.Lock()

    def wanted(self, path: Path) -> bool:
        if not self.is_dir:
            return path == self.target
        if path.suffix != ".py" or not path.is_relative_to(self.root):
            return False
        parts = path.relative_to(self.root).parts
        return (self.recursive or len(parts) == 1) and not any(p.startswith(("_", ".")) for p in parts)

    def initial(self) -> list[ReloadResult]:
        files = python_files(self.root, recursive=self.recursive) if self.is_dir else [self.target]
        return [self.reload(p) for p in files]

    def handle(self, changes: Iterable[tuple[Any, str]]) -> list[ReloadResult]:
        paths = sorted({Path(p).resolve() for _, p in changes})
        return [self.reload(p) for p in paths if self.wanted(p)]

    def reload(self, path: Path) -> ReloadResult:
        with self._lock:
            try:
                result = reload_file(self.registry, path)
            except Exception as exc:  # a hook veto or a registry refusal: keep watching
                result = ReloadResult(path=path, error=f"{type(exc).__name__}: {exc}")
            if result.error is None:
                self.errors.pop(result.path, None)
            else:
                self.errors[result.path] = self.last_error = result.error
                log.warning("reload of %s failed: %s", result.path, result.error)
        if self.on_reload is not None:
            try:
                self.on_reload(result)
            except Exception:
                log.exception("on_reload callback failed for %s", result.path)
        return result


class Watcher:
    """Reloads a tool file, or every tool file of a directory, whenever it changes.

    Args:
        registry: where the tools go.
        path: a ``.py`` file or a directory.
        recursive: for a directory, watch sub-directories too.
        on_reload: called (in the watch thread) with each :class:`ReloadResult`.
        load: load the current files when started.
    """

    def __init__(self, registry: Registry, path: str | Path, *, recursive: bool = True,
                 on_reload: OnReload | None = None, load: bool = True) -> None:
        self._handler = _ChangeHandler(registry, path, recursive=recursive, on_reload=on_reload)
        self.path = self._handler.target
        self.load = load
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._crash: BaseException | None = None

    @property
    def errors(self) -> dict[Path, str]:
        """The current load error per file (files that loaded since are absent)."""
        return dict(self._handler.errors)

    @property
    def last_error(self) -> str | None:
        """The most recent reload error, if any."""
        return self._handler.last_error

    @property
    def running(self) -> bool:
        """True while the watch thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> Self:
        """Start watching (the watcher is armed when this returns), then load current files."""
        if self._thread is not None:
            raise RuntimeError("this Watcher was already started")
        self._thread = threading.Thread(target=self._run, name=f"toolrig-watch:{self.path.name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self._crash is not None:
            self.stop()
            raise RuntimeError(f"could not start watching {self.path}: {self._crash or 'timed out'}")
        if self.load:
            self._handler.initial()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching and wait for the thread to end."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            for changes in watchfiles.watch(self._handler.root, watch_filter=None, stop_event=self._stop,
                                            rust_timeout=_TICK_MS, yield_on_timeout=True,
                                            recursive=self._handler.recursive, debounce=400, step=50):
                self._ready.set()
                if changes:
                    self._handler.handle(changes)
        except Exception as exc:
            self._crash = exc
            self._handler.last_error = f"watcher stopped: {type(exc).__name__}: {exc}"
            log.exception("watcher for %s stopped", self.path)
        finally:
            self._ready.set()

    def __enter__(self) -> Self:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Watcher {self.path} {'running' if self.running else 'stopped'}>"


def watch(registry: Registry, path: str | Path, *, recursive: bool = True, on_reload: OnReload | None = None,
          load: bool = True) -> Watcher:
    """Start a :class:`Watcher` (armed when this returns); call ``.stop()`` to end it."""
    return Watcher(registry, path, recursive=recursive, on_reload=on_reload, load=load).start()


async def awatch(registry: Registry, path: str | Path, *, recursive: bool = True,
                 on_reload: OnReload | None = None, load: bool = True,
                 task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Watch and reload until cancelled; for an anyio task group.

    ``await task_group.start(awatch, registry, path)`` returns once the watcher is armed and the
    current files are loaded; cancel the task group's scope to stop. Reloads run in a worker
    thread, and ``on_reload`` is called there.
    """
    handler = _ChangeHandler(registry, path, recursive=recursive, on_reload=on_reload)
    started = False
    async for changes in watchfiles.awatch(handler.root, watch_filter=None, rust_timeout=_TICK_MS,
                                           yield_on_timeout=True, recursive=handler.recursive,
                                           debounce=400, step=50):
        if not started:
            if load:
                await anyio.to_thread.run_sync(handler.initial)
            task_status.started()
            started = True
        if changes:
            await anyio.to_thread.run_sync(handler.handle, changes)
