"""Resolving a path below a root directory fd, without ever leaving it.

Fast path (kernel has ``openat2``): one ``openat2(root, parent, O_PATH | O_DIRECTORY, RESOLVE_BENEATH
| RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)``: the kernel refuses any escape.
When a symlink is on the way (ELOOP) and symlinks may be followed, or ``openat2`` is missing, the
walk opens one component at a time with ``O_NOFOLLOW`` relative to the previous directory fd,
expands symlinks itself (relative targets only, never above the root, at most 40) and checks that
no component sits on another file system. Either way the result is a directory fd plus a leaf name
and the exact resolved components (so protected names are judged on where the path really leads).
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolrig.errors import PathDenied, PathError
from toolrig.guards._openat2 import (
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    RESOLVE_NO_XDEV,
    Openat2,
)
from toolrig.guards._pathnames import split_path

__all__ = ["MAX_SYMLINKS", "Target", "Walker", "os_error"]

MAX_SYMLINKS = 40
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
BeforeCreate = Callable[[Sequence[str]], None]


def os_error(exc: OSError, path: str) -> PathError:
    """An OSError from a confined operation as a structured error."""
    code = exc.errno
    if code == errno.ENOENT:
        return PathError("not_found", path, f"{path!r} does not exist")
    if code == errno.EEXIST:
        return PathError("exists", path, f"{path!r} already exists")
    if code == errno.ENOTDIR:
        return PathError("not_a_directory", path, f"a component of {path!r} is not a directory")
    if code == errno.EISDIR:
        return PathError("is_a_directory", path, f"{path!r} is a directory")
    if code == errno.ENOTEMPTY:
        return PathError("not_empty", path, f"directory {path!r} is not empty")
    if code == errno.ELOOP:
        return PathDenied("symlink", path, f"{path!r} is or goes through a symbolic link, which is not followed here")
    if code == errno.EXDEV:
        return PathDenied("mount", path, f"{path!r} crosses into another file system")
    if code == errno.ENAMETOOLONG:
        return PathDenied("too_long", path[:80], "the path is too long")
    if code in (errno.ENXIO, errno.ENODEV):
        return PathDenied("special_file", path, f"{path!r} is a device, FIFO or socket")
    if code in (errno.EACCES, errno.EPERM):
        return PathError("permission", path, f"permission denied for {path!r}")
    return PathError("io", path, f"{path!r}: {os.strerror(code) if code else exc}")


@dataclass
class Target:
    """Where an operation acts: ``dir_fd`` (owned, O_PATH) and ``leaf`` in it (None: the directory itself).

    ``components`` is the resolved path below the root, leaf included.
    """

    dir_fd: int
    leaf: str | None
    components: tuple[str, ...]

    @property
    def relative(self) -> str:
        """The resolved path as text (``"."`` for the root)."""
        return "/".join(self.components) or "."

    def close(self) -> None:
        os.close(self.dir_fd)

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Walker:
    """Resolves paths below ``root_fd`` (see the module docstring)."""

    def __init__(self, root_fd: int, *, openat2: Openat2 | None, follow_symlinks: bool, cross_mounts: bool) -> None:
        self.root_fd = root_fd
        self.root_dev = os.fstat(root_fd).st_dev
        self.openat2 = openat2
        self.follow_symlinks = follow_symlinks
        self.cross_mounts = cross_mounts
        self._resolve_flags = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
        if not cross_mounts:
            self._resolve_flags |= RESOLVE_NO_XDEV

    def resolve(self, path: str, *, follow_leaf: bool, create_parents: bool = False,
                before_create: BeforeCreate | None = None) -> Target:
        """The directory fd and leaf ``path`` names, following symlinks only inside the root."""
        components = split_path(path)
        if not components:
            return Target(os.open(".", _DIR_FLAGS, dir_fd=self.root_fd), None, ())
        if self.openat2 is not None:
            fast = self._fast(path, components, follow_leaf=follow_leaf, create_parents=create_parents)
            if fast is not None:
                return fast
        return self._walk(path, components, follow_leaf=follow_leaf, create_parents=create_parents,
                          before_create=before_create)

    def _fast(self, path: str, components: tuple[str, ...], *, follow_leaf: bool,
              create_parents: bool) -> Target | None:
        assert self.openat2 is not None
        parent = "/".join(components[:-1]) or "."
        try:
            fd = self.openat2(self.root_fd, parent, os.O_PATH | os.O_DIRECTORY, self._resolve_flags)
        except OSError as exc:
            if (exc.errno == errno.ELOOP and self.follow_symlinks) or (exc.errno == errno.ENOENT and create_parents):
                return None
            raise os_error(exc, path) from exc
        if follow_leaf and self.follow_symlinks and _is_symlink(fd, components[-1]):
            os.close(fd)
            return None
        return Target(fd, components[-1], components)

    def _walk(self, path: str, components: tuple[str, ...], *, follow_leaf: bool, create_parents: bool,
              before_create: BeforeCreate | None) -> Target:
        stack: list[tuple[int, str]] = []  # (fd, name) below the root
        pending = deque(components)
        links = 0
        try:
            while pending:
                name = pending.popleft()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not stack:
                        raise PathDenied("symlink_outside", path, f"a symbolic link in {path!r} leads above the root")
                    os.close(stack.pop()[0])
                    continue
                current = stack[-1][0] if stack else self.root_fd
                if not pending:
                    if follow_leaf and _is_symlink(current, name):
                        links = self._expand(path, current, name, pending, links)
                        continue
                    return self._target(stack, name)
                try:
                    fd = self._open_dir(current, name, path)
                except _SymlinkFound:
                    links = self._expand(path, current, name, pending, links)
                    continue
                except PathError as exc:
                    if exc.reason != "not_found" or not create_parents:
                        raise
                    if before_create is not None:
                        before_create(self._prospective(stack, name, pending))
                    fd = self._make_dir(current, name, path)
                stack.append((fd, name))
            return self._target(stack, None)
        except BaseException:
            for fd, _ in stack:
                os.close(fd)
            raise

    def _target(self, stack: list[tuple[int, str]], leaf: str | None) -> Target:
        names = tuple(n for _, n in stack)
        if stack:
            fd = stack.pop()[0]
        else:
            fd = os.open(".", _DIR_FLAGS, dir_fd=self.root_fd)
        for other, _ in stack:
            os.close(other)
        stack.clear()
        return Target(fd, leaf, (*names, leaf) if leaf is not None else names)

    @staticmethod
    def _prospective(stack: list[tuple[int, str]], name: str, pending: deque[str]) -> tuple[str, ...]:
        names = [n for _, n in stack] + [name]
        for part in pending:
            if part == ".." and names:
                names.pop()
            elif part not in ("", ".", ".."):
                names.append(part)
        return tuple(names)

    def _open_dir(self, current: int, name: str, path: str) -> int:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=current)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_symlink(current, name):
                raise _SymlinkFound from None
            raise os_error(exc, path) from exc
        if not self.cross_mounts and os.fstat(fd).st_dev != self.root_dev:
            os.close(fd)
            raise PathDenied("mount", path, f"{path!r} crosses into another file system")
        return fd

    def _make_dir(self, current: int, name: str, path: str) -> int:
        try:
            os.mkdir(name, 0o777, dir_fd=current)
        except FileExistsError:
            pass
        except OSError as exc:
            raise os_error(exc, path) from exc
        return self._open_dir(current, name, path)

    def _expand(self, path: str, current: int, name: str, pending: deque[str], links: int) -> int:
        if not self.follow_symlinks:
            raise PathDenied("symlink", path, f"{path!r} goes through a symbolic link, which is not followed here")
        links += 1
        if links > MAX_SYMLINKS:
            raise PathDenied("symlink_loop", path, f"{path!r} goes through more than {MAX_SYMLINKS} symbolic links")
        try:
            target = os.readlink(name, dir_fd=current)
        except OSError as exc:
            raise os_error(exc, path) from exc
        if target.startswith("/"):
            raise PathDenied("symlink_outside", path, f"{path!r} goes through a symbolic link to an absolute path")
        pending.extendleft(reversed(target.split("/")))
        return links


class _SymlinkFound(Exception):
    """Internal: the component just opened is a symbolic link."""


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
