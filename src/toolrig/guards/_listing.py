"""File information and directory walks through directory fds, never following symbolic links."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["FileInfo", "info_from_stat", "kind_of", "walk_fd"]

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
    reported, never followed; other file systems are not entered unless ``cross_mounts``. At most
    ``len(depth)`` descriptors are open at once.
    """
    with os.scandir(dir_fd) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        child = (*components, entry.name)
        yield info_from_stat(child, st)
        if not stat.S_ISDIR(st.st_mode) or (max_depth is not None and len(child) > max_depth):
            continue
        if (not cross_mounts and st.st_dev != root_dev) or (descend is not None and not descend(child)):
            continue
        try:
            fd = os.open(entry.name, _READ_DIR, dir_fd=dir_fd)
        except OSError:
            continue
        if os.fstat(fd).st_ino != st.st_ino:  # replaced between listing and opening
            os.close(fd)
            continue
        try:
            yield from walk_fd(fd, child, root_dev=root_dev, cross_mounts=cross_mounts, max_depth=max_depth,
                               descend=descend)
        finally:
            os.close(fd)
