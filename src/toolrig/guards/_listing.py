"""File information and directory walks through directory fds, never following symbolic links."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from toolrig.errors import PathError
from toolrig.guards._pathnames import MAX_COMPONENTS

__all__ = ["MAX_DIR_ENTRIES", "MAX_WALK_DEPTH", "FileInfo", "info_from_stat", "kind_of", "remove_tree", "walk_fd"]

MAX_WALK_DEPTH = MAX_COMPONENTS
"""Walks stop descending at this many components (a path may not have more: ``MAX_COMPONENTS``)."""
MAX_DIR_ENTRIES = 200_000
"""A directory with more entries is refused by walks and listings (its names would all be held at once)."""

_KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "char_device"), (stat.S_ISBLK, "block_device"))
_READ_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def kind_of(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket``, ``char_device``, ``block_device`` or ``other``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "other"


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    """What :meth:`PathGuard.stat`, :meth:`~PathGuard.list_dir` and :meth:`~PathGuard.walk` report.

    Attributes:
        path: the resolved path below the root (``"."`` for the root).
        name: the last component.
        kind: see :func:`kind_of`; a symbolic link is reported as ``symlink``, never followed.
        size: bytes (for a symlink: the length of its target).
        mode: permission bits (``0o644``).
        mtime: modification time, seconds since the epoch.
        nlink: hard-link count (a regular file with more than one cannot be attributed to one place).
    """

    path: str
    name: str
    kind: str
    size: int
    mode: int
    mtime: float
    nlink: int


def info_from_stat(components: Sequence[str], st: os.stat_result) -> FileInfo:
    """A :class:`FileInfo` for the resolved ``components``."""
    return FileInfo(path="/".join(components) or ".", name=components[-1] if components else ".",
                    kind=kind_of(st.st_mode), size=st.st_size, mode=stat.S_IMODE(st.st_mode),
                    mtime=st.st_mtime, nlink=st.st_nlink)


def walk_fd(dir_fd: int, components: tuple[str, ...], *, root_dev: int, cross_mounts: bool,
            max_depth: int | None, descend: Callable[[tuple[str, ...]], bool] | None = None,
            ) -> Iterator[FileInfo]:
    """Pre-order walk of the directory open as ``dir_fd`` (not closed here), names sorted.

    Directories are entered through ``O_NOFOLLOW`` fds relative to their parent; symbolic links are
    reported, never followed; other file systems are not entered unless ``cross_mounts``. The walk is
    iterative (a tree thousands of levels deep, as a sandboxed command can make, is no recursion
    error) and never goes below :data:`MAX_WALK_DEPTH` components, so at most that many descriptors
    are open at once; deeper entries cannot be named by a path anyway.
    """
    limit = MAX_WALK_DEPTH if max_depth is None else min(max_depth, MAX_WALK_DEPTH)
    stack: list[tuple[int, tuple[str, ...], Iterator[os.DirEntry[str]]]] = [
        (dir_fd, components, iter(_sorted_entries(dir_fd, components)))]
    try:
        while stack:
            fd, base, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                if fd != dir_fd:
                    os.close(fd)
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            child = (*base, entry.name)
            yield info_from_stat(child, st)
            if not stat.S_ISDIR(st.st_mode) or len(child) > limit:
                continue
            if (not cross_mounts and st.st_dev != root_dev) or (descend is not None and not descend(child)):
                continue
            sub = _open_child(fd, entry.name, st.st_ino)
            if sub is not None:
                try:
                    listed = _sorted_entries(sub, child)
                except BaseException:
                    os.close(sub)
                    raise
                stack.append((sub, child, iter(listed)))
    finally:
        for fd, _, _ in stack:
            if fd != dir_fd:
                os.close(fd)


def _sorted_entries(dir_fd: int, components: tuple[str, ...]) -> list[os.DirEntry[str]]:
    """The entries of one directory, sorted; a directory of more than :data:`MAX_DIR_ENTRIES` is refused
    (``PathError('too_many')``) instead of being read whole into memory."""
    entries: list[os.DirEntry[str]] = []
    try:
        with os.scandir(dir_fd) as scan:
            for entry in scan:
                entries.append(entry)
                if len(entries) > MAX_DIR_ENTRIES:
                    path = "/".join(components) or "."
                    raise PathError("too_many", path, f"directory {path!r} has more than {MAX_DIR_ENTRIES:,} "
                                    "entries; name a file in it or a smaller directory")
    except OSError:
        return []
    return sorted(entries, key=lambda e: e.name)


def _open_child(dir_fd: int, name: str, inode: int) -> int | None:
    """The directory ``name`` below ``dir_fd`` (None: gone, a link now, or replaced since it was listed)."""
    try:
        fd = os.open(name, _READ_DIR, dir_fd=dir_fd)
    except OSError:
        return None
    if os.fstat(fd).st_ino != inode:  # replaced between listing and opening
        os.close(fd)
        return None
    return fd


def remove_tree(parent_fd: int, name: str, *, root_dev: int, cross_mounts: bool) -> None:
    """Delete the directory ``name`` below ``parent_fd`` and everything in it, through fds, iteratively.

    Links inside are removed, never followed; a directory on another file system is not entered
    (``OSError(EXDEV)``) unless ``cross_mounts``. Raises the first ``OSError`` met.
    """
    top = _open_child(parent_fd, name, os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_ino)
    if top is None:
        raise OSError(errno.ENOENT, "the directory changed while it was being removed", name)
    stack: list[tuple[int, str]] = [(top, name)]
    try:
        while stack:
            fd, current = stack[-1]
            child = _clear_files(fd, root_dev=root_dev, cross_mounts=cross_mounts)
            if child is not None:
                sub = _open_child(fd, *child)
                if sub is None:
                    raise OSError(errno.ENOENT, "a directory changed while it was being removed", child[0])
                stack.append((sub, child[0]))
                continue
            stack.pop()
            os.close(fd)
            os.rmdir(current, dir_fd=stack[-1][0] if stack else parent_fd)
    finally:
        for fd, _ in stack:
            os.close(fd)


def _clear_files(dir_fd: int, *, root_dev: int, cross_mounts: bool) -> tuple[str, int] | None:
    """Unlink every non-directory in ``dir_fd``; the first subdirectory left (name, inode), or None."""
    first: tuple[str, int] | None = None
    with os.scandir(dir_fd) as scan:
        entries = list(scan)
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(entry.name, dir_fd=dir_fd)
        elif not cross_mounts and st.st_dev != root_dev:
            raise OSError(errno.EXDEV, "another file system is mounted inside", entry.name)
        elif first is None:
            first = (entry.name, st.st_ino)
    return first
