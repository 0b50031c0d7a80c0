"""Writes inside a resolved directory fd: atomic replace, append, each leaf opened ``O_NOFOLLOW``.

An atomic write creates ``.<name>.<random>.tmp`` with ``O_CREAT | O_EXCL | O_NOFOLLOW`` in the same
directory fd, writes and fsyncs it, then renames it over the leaf (``renameat`` on the same fd), so
a reader sees the old or the new content, never a mix, and a symlink or hard link at the leaf is
replaced rather than written through.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator

from toolrig.errors import PathDenied, PathError
from toolrig.guards._resolve import Target, os_error

__all__ = ["AtomicWriter", "atomic_write", "existing_leaf", "open_append"]

_LEAF_WRITE = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def existing_leaf(target: Target, *, allow_hardlinks: bool) -> os.stat_result | None:
    """The leaf's lstat when it exists; refuses symlinks, directories, special and hard-linked files."""
    assert target.leaf is not None
    path = target.relative
    try:
        st = os.stat(target.leaf, dir_fd=target.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, path) from exc
    if stat.S_ISLNK(st.st_mode):
        raise PathDenied("symlink", path, f"{path!r} is a symbolic link; it is not written through")
    if stat.S_ISDIR(st.st_mode):
        raise PathError("is_a_directory", path, f"{path!r} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise PathDenied("special_file", path, f"{path!r} is a device, FIFO or socket")
    if st.st_nlink > 1 and not allow_hardlinks:
        raise PathDenied("hardlink", path, f"{path!r} has {st.st_nlink} hard links; one may be outside the root")
    return st


class AtomicWriter:
    """The file object :meth:`PathGuard.open_write` yields: ``write(bytes)``, capped at ``limit`` bytes."""

    def __init__(self, fd: int, limit: int, path: str) -> None:
        self._file = os.fdopen(fd, "wb")
        self._limit = limit
        self._path = path
        self.written = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data``; raises PathError ``too_large`` past the guard's ``max_file_bytes``."""
        size = len(data)
        if self.written + size > self._limit:
            raise PathError("too_large", self._path, f"writing {self._path!r} would exceed {self._limit} bytes")
        self._file.write(data)
        self.written += size
        return size

    def _commit(self, mode: int, durable: bool) -> None:
        self._file.flush()
        os.fchmod(self._file.fileno(), mode)
        if durable:
            os.fsync(self._file.fileno())
        self._file.close()

    def _discard(self) -> None:
        self._file.close()


@contextlib.contextmanager
def atomic_write(target: Target, *, limit: int, overwrite: bool, allow_hardlinks: bool,
                 durable: bool = True) -> Iterator[AtomicWriter]:
    """Yield a writer; on a clean exit its content replaces the leaf atomically, else nothing changes."""
    assert target.leaf is not None
    path, leaf, dir_fd = target.relative, target.leaf, target.dir_fd
    existing = existing_leaf(target, allow_hardlinks=allow_hardlinks)
    if existing is not None and not overwrite:
        raise PathError("exists", path, f"{path!r} already exists")
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o644
    temp = f".{leaf[:180]}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        raise os_error(exc, path) from exc
    writer = AtomicWriter(fd, limit, path)
    try:
        yield writer
        writer._commit(mode, durable)
        if overwrite:
            os.rename(temp, leaf, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:  # link() never replaces an existing name: no check/use race
            os.link(temp, leaf, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            os.unlink(temp, dir_fd=dir_fd)
    except BaseException as exc:
        writer._discard()
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        if isinstance(exc, OSError):
            raise os_error(exc, path) from exc
        raise


def open_append(target: Target, *, limit: int, size: int, allow_hardlinks: bool) -> int:
    """An fd for appending ``size`` bytes to the leaf (created when missing), refusing what
    :func:`existing_leaf` refuses and growth past ``limit``."""
    assert target.leaf is not None
    path = target.relative
    existing = existing_leaf(target, allow_hardlinks=allow_hardlinks)
    flags = _LEAF_WRITE | os.O_APPEND | (0 if existing is not None else os.O_CREAT | os.O_EXCL)
    try:
        fd = os.open(target.leaf, flags, 0o644, dir_fd=target.dir_fd)
    except OSError as exc:
        raise os_error(exc, path) from exc
    st = os.fstat(fd)
    same = existing is None or (st.st_dev, st.st_ino) == (existing.st_dev, existing.st_ino)
    if not stat.S_ISREG(st.st_mode) or not same or (st.st_nlink > 1 and not allow_hardlinks):
        os.close(fd)
        raise PathDenied("changed", path, f"{path!r} changed while it was being opened")
    if st.st_size + size > limit:
        os.close(fd)
        raise PathError("too_large", path, f"appending to {path!r} would exceed {limit} bytes")
    return fd
