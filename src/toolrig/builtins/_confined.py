"""A root directory shared by the file tools: one :class:`~toolrig.guards.PathGuard`, opened lazily.

The guard holds a directory fd, so it is opened on first use in each process (a tool sent to a worker
process carries only the root and the options). Protected names are judged twice: :meth:`Confined.judge`
gives the tool's review an ask (so the approval stage asks a human, with the guard's reason), and
:meth:`Confined.guarded` runs the operation and repeats it on a protected name only when a human
approved this very call (``current_context().approved``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from toolrig import Decision, current_context
from toolrig.errors import ConfigError
from toolrig.guards import DEFAULT_PROTECTED, GuardError, PathGuard, PathProtected, ProtectedRule

__all__ = ["Confined"]

T = TypeVar("T")


class Confined:
    """The root of a family of file tools and the guard confining them to it.

    Args:
        root: an existing directory.
        protected: protected names (default :data:`toolrig.guards.DEFAULT_PROTECTED`): operations on them ask.
        max_file_bytes: the largest file any of these tools reads or writes.
        ask_writes: every write asks a human first (a root that is not a project folder, see
            :mod:`toolrig.builtins._roots`).

    Raises:
        ConfigError: ``root`` is not a directory.
    """

    def __init__(self, root: str | Path, *, protected: Iterable[ProtectedRule] = DEFAULT_PROTECTED,
                 max_file_bytes: int = 10 * 1024 * 1024, ask_writes: bool = False) -> None:
        path = Path(root).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(f"the root of the file tools must be an existing directory, not {str(root)!r}")
        if not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ConfigError("max_file_bytes must be a positive number of bytes")
        self.root = str(path)
        self.protected = tuple(protected)
        self.max_file_bytes = max_file_bytes
        self.ask_writes = bool(ask_writes)
        self._guard: PathGuard | None = None
        self._lock = threading.Lock()
        self.writing = threading.Lock()
        """Held by every write and edit of this root in this process: an edit's read and write are one step."""

    def __getstate__(self) -> dict[str, Any]:  # a worker process opens its own guard
        return {"root": self.root, "protected": self.protected, "max_file_bytes": self.max_file_bytes,
                "ask_writes": self.ask_writes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _guard=None, _lock=threading.Lock(), writing=threading.Lock())

    def __repr__(self) -> str:
        return f"Confined({self.root!r})"

    @property
    def guard(self) -> PathGuard:
        """The guard of this root (opened on first use)."""
        guard = self._guard
        if guard is None:
            with self._lock:
                if self._guard is None:
                    self._guard = PathGuard(self.root, protected=self.protected, max_file_bytes=self.max_file_bytes,
                                            durable=True)
                guard = self._guard
        return guard

    def judge(self, path: str, *, write: bool, tool: str) -> Decision | None:
        """An ask when ``path`` is protected for this operation (reads or writes), or for every write when
        ``ask_writes``; None otherwise.

        Paths the guard refuses get no opinion here: the tool body refuses them with the guard's reason.
        """
        try:
            rule = self.guard.protection(path, write=write)
            if rule is None and write:
                rule = self.guard.protection(path, write=False)
        except GuardError:
            return None
        if rule is None and write and self.ask_writes:
            return Decision.ask(f"writing {path!r} needs approval: the root {self.root} is not a project folder "
                                "(no .git, pyproject.toml, package.json ... in it), so every write asks",
                                source=f"root:{tool}")
        if rule is None:
            return None
        verb = "writing" if write else "reading"
        return Decision.ask(f"{verb} {path!r} needs approval: {rule.why}", source=f"guard:{tool}")

    @staticmethod
    def guarded(operation: Callable[[bool], T]) -> T:
        """``operation(allow_protected)``: without protected names, or with them when a human approved this call.

        Raises:
            PathProtected: the path is protected and this call was not approved.
        """
        try:
            return operation(False)
        except PathProtected:
            if not current_context().approved:
                raise
        return operation(True)
