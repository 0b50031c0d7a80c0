"""A root directory shared by the file tools: one :class:`~toolrig.guards.PathGuard`, opened lazily.

The guard holds a directory fd, so it is opened on first use in each process (a tool sent to a worker
process carries only the root and the options) and judged the same way on both sides of an approval:
:meth:`Confined.judge` says what a call would need approval for, :meth:`Confined.guarded` runs the
operation and, when it hits a protected name, repeats it only under a grant covering exactly that.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from toolrig import CallContext
from toolrig.builtins._checks import Judgement, needs_approval
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

    Raises:
        ConfigError: ``root`` is not a directory.
    """

    def __init__(self, root: str | Path, *, protected: Iterable[ProtectedRule] = DEFAULT_PROTECTED,
                 max_file_bytes: int = 10 * 1024 * 1024) -> None:
        path = Path(root).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(f"the root of the file tools must be an existing directory, not {str(root)!r}")
        if not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ConfigError("max_file_bytes must be a positive number of bytes")
        self.root = str(path)
        self.protected = tuple(protected)
        self.max_file_bytes = max_file_bytes
        self._guard: PathGuard | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # a worker process opens its own guard
        return {"root": self.root, "protected": self.protected, "max_file_bytes": self.max_file_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _guard=None, _lock=threading.Lock())

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

    def _resolved(self, path: str) -> str:
        try:
            return self.guard.resolve(path)
        except GuardError:
            return ""

    def subject(self, action: str, path: str) -> tuple[str, str, str]:
        """What an approval of ``action`` on ``path`` covers: the path as given and as it resolves now."""
        return (action, path, self._resolved(path))

    def judge(self, action: str, path: str, *, write: bool, tool: str) -> Judgement | None:
        """An ask when ``path`` is protected for this operation (reads or writes); None otherwise.

        Paths the guard refuses get no opinion here: the tool body refuses them with the guard's reason.
        """
        try:
            rule = self.guard.protection(path, write=write)
            if rule is None and write:
                rule = self.guard.protection(path, write=False)
        except GuardError:
            return None
        if rule is None:
            return None
        verb = "writing" if write else "reading"
        return Judgement.ask(f"{verb} {path!r} needs approval: {rule.why}", self.subject(action, path),
                             source=f"guard:{tool}")

    def guarded(self, action: str, path: str, context: CallContext, operation: Callable[[bool], T]) -> T:
        """``operation(allow_protected)``: first without protected names, then with them under a grant.

        Raises:
            ToolFailure: the path is protected and no grant covers this exact operation.
        """
        try:
            return operation(False)
        except PathProtected as exc:
            needs_approval(self.subject(action, path), exc.message, context)
        return operation(True)
