""":class:`PathGuard`: every file operation confined to one root directory, through file descriptors."""

from __future__ import annotations

import contextlib
import os
import stat
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

from toolrig.errors import PathDenied, PathError, PathProtected
from toolrig.guards._globbing import glob_paths
from toolrig.guards._listing import MAX_WALK_DEPTH, FileInfo, info_from_stat, remove_tree, walk_fd
from toolrig.guards._openat2 import Openat2
from toolrig.guards._patterns import PathPattern
from toolrig.guards._protected import DEFAULT_PROTECTED, ProtectedRule, find_protection
from toolrig.guards._resolve import Target, Walker, os_error
from toolrig.guards._writing import AtomicWriter, atomic_write, open_append

__all__ = ["PathGuard"]

_READ_LEAF = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_READ_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PathGuard:
    """File operations confined to ``root``: nothing outside it is read, written, listed or stat-ed.

    Paths are relative POSIX strings taken literally (see ``docs/security.md``); each operation
    resolves them through directory fds (``openat2(RESOLVE_BENEATH)`` where available, else an
    ``O_NOFOLLOW`` walk) and acts on the leaf relative to its parent fd, so a path swapped between
    check and use cannot redirect it. Refusals raise :class:`PathDenied` (or :class:`PathProtected`
    for protected names), ordinary failures :class:`PathError`; both carry a ``reason`` code.

    Args:
        root: the directory to confine to (must exist; symlinks in the root path itself are trusted).
        protected: :class:`ProtectedRule` s; matching operations raise :class:`PathProtected` unless
            called with ``allow_protected=True`` (after an approval). Default :data:`DEFAULT_PROTECTED`.
        max_file_bytes: largest file read or written.
        follow_symlinks: follow symlinks whose target stays inside the root (False: refuse every symlink).
        allow_hardlinks: read or write regular files with more than one hard link (default: refuse).
        cross_mounts: allow paths into other file systems mounted below the root.
        use_openat2: force (True) or forbid (False) the ``openat2`` fast path; None detects it.
        durable: fsync each atomically written file before it replaces the old one.
    """

    def __init__(self, root: str | os.PathLike[str], *, protected: Iterable[ProtectedRule] = DEFAULT_PROTECTED,
                 max_file_bytes: int = 10 * 1024 * 1024, follow_symlinks: bool = True,
                 allow_hardlinks: bool = False, cross_mounts: bool = False, use_openat2: bool | None = None,
                 durable: bool = True) -> None:
        self.root = Path(root).absolute()
        self.protected = tuple(protected)
        self.max_file_bytes = max_file_bytes
        self.allow_hardlinks = allow_hardlinks
        self.cross_mounts = cross_mounts
        self.durable = durable
        fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self._root_fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)
        openat2 = Openat2() if use_openat2 is not False else None
        if openat2 is not None and not openat2.probe(fd):
            if use_openat2:
                self.close()
                raise OSError("openat2 with RESOLVE_BENEATH is not available on this system")
            openat2 = None
        self.backend = "openat2" if openat2 is not None else "walk"
        self._walker = Walker(fd, openat2=openat2, follow_symlinks=follow_symlinks, cross_mounts=cross_mounts)

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the root directory fd (idempotent)."""
        self._finalizer()

    def __enter__(self) -> PathGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PathGuard({str(self.root)!r}, backend={self.backend!r})"

    # -- resolution -------------------------------------------------------------------------------
    def _target(self, path: str, *, follow_leaf: bool, create_parents: bool = False,
                write: bool = False, allow_protected: bool = False) -> Target:
        before = None
        if write and not allow_protected:
            def before(components: Iterable[str]) -> None:
                self._check_protection(path, tuple(components), write=True)
        target = self._walker.resolve(path, follow_leaf=follow_leaf, create_parents=create_parents,
                                      before_create=before)
        if not allow_protected:
            try:
                self._check_protection(path, target.components, write=write)
            except BaseException:
                target.close()
                raise
        return target

    def _check_protection(self, path: str, components: tuple[str, ...], *, write: bool) -> None:
        rule = find_protection(self.protected, components, write=write)
        if rule is not None:
            action = "writing" if write else "reading"
            raise PathProtected(path, f"{action} {'/'.join(components)!r} needs approval: {rule.why}", rule)

    def resolve(self, path: str, *, follow_symlinks: bool = True) -> str:
        """The resolved path below the root that ``path`` names (the leaf need not exist)."""
        with self._walker.resolve(path, follow_leaf=follow_symlinks) as target:
            return target.relative

    def protection(self, path: str, *, write: bool = True) -> ProtectedRule | None:
        """The protected rule an operation on ``path`` would hit (None: no approval needed).

        Judged on the resolved path, so a symlink to ``.git/hooks`` is protected like the real name.
        """
        def stop(components: Iterable[str]) -> None:
            raise _Prospective(tuple(components))

        try:
            target = self._walker.resolve(path, follow_leaf=True, create_parents=True, before_create=stop)
        except _Prospective as missing:  # parents do not exist yet: judge the path they would make
            return find_protection(self.protected, missing.components, write=write)
        with target:
            return find_protection(self.protected, target.components, write=write)

    # -- reading ----------------------------------------------------------------------------------
    def _open_leaf(self, target: Target) -> tuple[int, os.stat_result]:
        path = target.relative
        if target.leaf is None:
            raise PathError("is_a_directory", path, f"{path!r} is a directory")
        try:
            before = os.stat(target.leaf, dir_fd=target.dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise os_error(exc, path) from exc
        if stat.S_ISDIR(before.st_mode):
            raise PathError("is_a_directory", path, f"{path!r} is a directory")
        if stat.S_ISLNK(before.st_mode):
            raise PathDenied("symlink", path, f"{path!r} is a symbolic link")
        if not stat.S_ISREG(before.st_mode):
            raise PathDenied("special_file", path, f"{path!r} is a device, FIFO or socket; only regular files are read")
        if before.st_nlink > 1 and not self.allow_hardlinks:
            raise PathDenied("hardlink", path, f"{path!r} has {before.st_nlink} hard links; one may be outside "
                             "the root")
        try:
            fd = os.open(target.leaf, _READ_LEAF, dir_fd=target.dir_fd)
        except OSError as exc:
            raise os_error(exc, path) from exc
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            os.close(fd)
            raise PathDenied("changed", path, f"{path!r} changed while it was being opened")
        if st.st_nlink > 1 and not self.allow_hardlinks:
            os.close(fd)
            raise PathDenied("hardlink", path, f"{path!r} has {st.st_nlink} hard links; one may be outside the root")
        return fd, st

    def _read_fd(self, path: str, allow_protected: bool) -> tuple[int, os.stat_result]:
        with self._target(path, follow_leaf=True, allow_protected=allow_protected) as target:
            fd, st = self._open_leaf(target)
        if st.st_size > self.max_file_bytes:
            os.close(fd)
            raise PathError("too_large", path, f"{path!r} has {st.st_size} bytes, over {self.max_file_bytes}")
        os.set_blocking(fd, True)
        return fd, st

    def open_read(self, path: str, *, allow_protected: bool = False) -> BinaryIO:
        """A binary file object for reading a regular file (the caller closes it)."""
        fd, _ = self._read_fd(path, allow_protected)
        return cast(BinaryIO, os.fdopen(fd, "rb"))

    def read_bytes(self, path: str, *, allow_protected: bool = False) -> bytes:
        """The content of a regular file, at most ``max_file_bytes``."""
        fd, st = self._read_fd(path, allow_protected)
        try:
            chunks, size = [], 0
            while True:
                chunk = os.read(fd, min(max(st.st_size - size, 0) + 1, 1 << 20, self.max_file_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_file_bytes:
                    raise PathError("too_large", path, f"{path!r} is larger than {self.max_file_bytes} bytes")
        finally:
            os.close(fd)
        return b"".join(chunks)

    def read_text(self, path: str, *, encoding: str = "utf-8", errors: str = "strict",
                  allow_protected: bool = False) -> str:
        """The content of a regular text file (``PathError('encoding')`` when it does not decode)."""
        data = self.read_bytes(path, allow_protected=allow_protected)
        try:
            return data.decode(encoding, errors)
        except UnicodeDecodeError as exc:
            raise PathError("encoding", path, f"{path!r} is not valid {encoding}: {exc.reason}") from exc

    # -- writing ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def open_write(self, path: str, *, create_parents: bool = False, overwrite: bool = True,
                   allow_protected: bool = False) -> Iterator[AtomicWriter]:
        """Write a file atomically: yields an :class:`AtomicWriter`; the new content replaces the old
        only when the block ends without an exception."""
        with self._target(path, follow_leaf=False, create_parents=create_parents, write=True,
                          allow_protected=allow_protected) as target:
            self._need_leaf(target)
            with atomic_write(target, limit=self.max_file_bytes, overwrite=overwrite,
                              allow_hardlinks=self.allow_hardlinks, durable=self.durable) as writer:
                yield writer

    def write_bytes(self, path: str, data: bytes, *, create_parents: bool = False, overwrite: bool = True,
                    allow_protected: bool = False) -> FileInfo:
        """Replace (or create) a file atomically with ``data``; returns its new :class:`FileInfo`."""
        with self.open_write(path, create_parents=create_parents, overwrite=overwrite,
                             allow_protected=allow_protected) as writer:
            writer.write(data)
        return self.stat(path, follow_symlinks=False)

    def write_text(self, path: str, text: str, *, encoding: str = "utf-8", create_parents: bool = False,
                   overwrite: bool = True, allow_protected: bool = False) -> FileInfo:
        """:meth:`write_bytes` for text."""
        return self.write_bytes(path, text.encode(encoding), create_parents=create_parents, overwrite=overwrite,
                                allow_protected=allow_protected)

    def append_bytes(self, path: str, data: bytes, *, allow_protected: bool = False) -> FileInfo:
        """Append to a regular file (created when missing); hard-linked files are refused."""
        with self._target(path, follow_leaf=False, write=True, allow_protected=allow_protected) as target:
            self._need_leaf(target)
            fd = open_append(target, limit=self.max_file_bytes, size=len(data), allow_hardlinks=self.allow_hardlinks)
            with os.fdopen(fd, "ab") as f:
                f.write(data)
            return info_from_stat(target.components, os.stat(target.leaf or ".", dir_fd=target.dir_fd,
                                                             follow_symlinks=False))

    def append_text(self, path: str, text: str, *, encoding: str = "utf-8", allow_protected: bool = False) -> FileInfo:
        """:meth:`append_bytes` for text."""
        return self.append_bytes(path, text.encode(encoding), allow_protected=allow_protected)

    def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False,
              allow_protected: bool = False) -> FileInfo:
        """Create a directory (and its parents with ``parents=True``)."""
        with self._target(path, follow_leaf=False, create_parents=parents, write=True,
                          allow_protected=allow_protected) as target:
            self._need_leaf(target)
            assert target.leaf is not None
            try:
                os.mkdir(target.leaf, 0o777, dir_fd=target.dir_fd)
            except FileExistsError as exc:
                st = os.stat(target.leaf, dir_fd=target.dir_fd, follow_symlinks=False)
                if not (exist_ok and stat.S_ISDIR(st.st_mode)):
                    raise os_error(exc, target.relative) from exc
            except OSError as exc:
                raise os_error(exc, target.relative) from exc
            return info_from_stat(target.components, os.stat(target.leaf, dir_fd=target.dir_fd,
                                                             follow_symlinks=False))

    def remove(self, path: str, *, recursive: bool = False, allow_protected: bool = False) -> None:
        """Delete a file, a symlink (not its target) or an empty directory; ``recursive`` deletes a tree
        (through fds; links inside are removed, never followed)."""
        with self._target(path, follow_leaf=False, write=True, allow_protected=allow_protected) as target:
            self._need_leaf(target)
            assert target.leaf is not None
            try:
                st = os.stat(target.leaf, dir_fd=target.dir_fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(target.leaf, dir_fd=target.dir_fd)
                elif recursive:
                    if not self._tree_unprotected(target, allow_protected):
                        raise PathProtected(path, f"{target.relative!r} contains protected names", None)
                    remove_tree(target.dir_fd, target.leaf, root_dev=self._walker.root_dev,
                                cross_mounts=self.cross_mounts)
                else:
                    os.rmdir(target.leaf, dir_fd=target.dir_fd)
            except OSError as exc:
                raise os_error(exc, target.relative) from exc

    def _tree_unprotected(self, target: Target, allow_protected: bool) -> bool:
        """True when nothing under ``target`` is protected for writes (or the caller was approved)."""
        if allow_protected or not self.protected:
            return True
        assert target.leaf is not None
        fd = os.open(target.leaf, _READ_DIR, dir_fd=target.dir_fd)
        try:
            for info in walk_fd(fd, target.components, root_dev=self._walker.root_dev,
                                cross_mounts=self.cross_mounts, max_depth=None):
                components = info.path.split("/")
                if find_protection(self.protected, components, write=True) is not None:
                    return False
                if info.kind == "dir" and len(components) > MAX_WALK_DEPTH:
                    return False  # the walk does not see below: something protected may be there
        finally:
            os.close(fd)
        return True

    def rename(self, source: str, destination: str, *, overwrite: bool = False, allow_protected: bool = False) -> None:
        """Move ``source`` to ``destination``, both inside the root (symlinks are moved, not followed)."""
        with self._target(source, follow_leaf=False, write=True, allow_protected=allow_protected) as src, \
                self._target(destination, follow_leaf=False, write=True, allow_protected=allow_protected) as dst:
            self._need_leaf(src)
            self._need_leaf(dst)
            assert src.leaf is not None and dst.leaf is not None
            try:
                os.stat(src.leaf, dir_fd=src.dir_fd, follow_symlinks=False)
                if not overwrite and _exists(dst):
                    raise PathError("exists", destination, f"{destination!r} already exists")
                os.rename(src.leaf, dst.leaf, src_dir_fd=src.dir_fd, dst_dir_fd=dst.dir_fd)
            except OSError as exc:
                raise os_error(exc, source) from exc

    def copy_file(self, source: str, destination: str, *, overwrite: bool = False,
                  allow_protected: bool = False) -> FileInfo:
        """Copy a regular file inside the root (read and write with every check of both)."""
        data = self.read_bytes(source, allow_protected=allow_protected)
        return self.write_bytes(destination, data, overwrite=overwrite, allow_protected=allow_protected)

    # -- inspecting -------------------------------------------------------------------------------
    def stat(self, path: str, *, follow_symlinks: bool = True) -> FileInfo:
        """Information about ``path`` (a final symlink is followed inside the root unless told not to)."""
        with self._walker.resolve(path, follow_leaf=follow_symlinks) as target:
            try:
                st = (os.stat(target.leaf, dir_fd=target.dir_fd, follow_symlinks=False) if target.leaf is not None
                      else os.fstat(target.dir_fd))
            except OSError as exc:
                raise os_error(exc, path) from exc
            return info_from_stat(target.components, st)

    def exists(self, path: str) -> bool:
        """True when ``path`` names something inside the root (refused paths raise, they do not "not exist")."""
        try:
            self.stat(path, follow_symlinks=False)
        except PathError as exc:
            if exc.reason == "not_found":
                return False
            raise
        return True

    def list_dir(self, path: str = ".", *, limit: int | None = None) -> list[FileInfo]:
        """The entries of a directory, sorted by name (symlinks reported, not followed)."""
        entries: list[FileInfo] = []
        for info in self.walk(path, max_depth=1):
            entries.append(info)
            if limit is not None and len(entries) >= limit:
                break
        return entries

    def walk(self, path: str = ".", *, max_depth: int | None = None, limit: int | None = None) -> list[FileInfo]:
        """Everything below a directory, pre-order, names sorted; never follows a symlink or leaves the
        root's file system; ``max_depth=1`` is a listing."""
        return list(self._iter_walk(path, max_depth=max_depth, limit=limit))

    def _iter_walk(self, path: str, *, max_depth: int | None, limit: int | None,
                   pattern: PathPattern | None = None) -> Iterator[FileInfo]:
        with self._walker.resolve(path, follow_leaf=True) as target:
            try:
                fd = (os.open(target.leaf, _READ_DIR, dir_fd=target.dir_fd) if target.leaf is not None
                      else os.open(".", _READ_DIR, dir_fd=target.dir_fd))
            except OSError as exc:
                raise os_error(exc, path) from exc
        base = target.components
        depth = None if max_depth is None else len(base) + max_depth - 1
        descend = pattern.could_match_below if pattern is not None else None
        count = 0
        try:
            for info in walk_fd(fd, base, root_dev=self._walker.root_dev, cross_mounts=self.cross_mounts,
                                max_depth=depth, descend=descend):
                yield info
                count += 1
                if limit is not None and count >= limit:
                    return
        finally:
            os.close(fd)

    def glob(self, pattern: str, *, dotfiles: bool = False, limit: int | None = None,
             max_entries: int | None = None) -> list[str]:
        """Resolved paths matching ``pattern`` (``*``, ``?``, ``[...]``, ``**``), sorted; links not followed.

        ``max_entries`` bounds the entries the walk may visit (``PathError('too_many')`` beyond it).
        """
        return glob_paths(pattern, dotfiles=dotfiles, limit=limit, max_entries=max_entries, exists=self.exists,
                          walk=lambda base, compiled, cap: self._iter_walk(base, max_depth=None, limit=cap,
                                                                           pattern=compiled))

    @staticmethod
    def _need_leaf(target: Target) -> None:
        if target.leaf is None:
            raise PathError("is_a_directory", target.relative, "the operation needs a file name, not the root")


class _Prospective(Exception):
    """Internal: resolution stopped where a directory would have to be created."""

    def __init__(self, components: tuple[str, ...]) -> None:
        super().__init__()
        self.components = components


def _exists(target: Target) -> bool:
    assert target.leaf is not None
    try:
        os.stat(target.leaf, dir_fd=target.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True

