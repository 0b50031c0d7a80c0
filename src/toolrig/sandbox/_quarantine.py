"""Protected names a run *created* in a host work dir are moved aside when it ends.

Only protected paths that exist are bound read-only (a mount needs something to mount on, and making
empty placeholders would change the host's tree). So a run could create ``.envrc``, ``.mcp.json``,
``.vscode/tasks.json`` or ``.git/commondir`` (which makes git read config and hooks from elsewhere),
and the host would run them later. :func:`snapshot` records, before a run, what each component of each
protected path is (without following links); after the run (every process of it is gone)
:func:`quarantine_new` moves each protected object that appeared or was replaced into a fresh
``.toolrig-quarantine-<time>-<random>`` directory at the top of the work dir, keeping it for a human to
review. A symbolic link made on the way (``.github -> /home/me``) is moved itself, never followed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

__all__ = ["QUARANTINE_PREFIX", "Snapshot", "quarantine_new", "snapshot"]

QUARANTINE_PREFIX = ".toolrig-quarantine-"

State = tuple[int, int, int] | None  # (st_dev, st_ino, file type) of one component, None when missing
Snapshot = Mapping[str, tuple[State, ...]]
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _states(root_fd: int, parts: tuple[str, ...]) -> tuple[State, ...]:
    """The state of each component, stopping after the first missing one, link or non-directory."""
    out: list[State] = []
    fd = os.dup(root_fd)
    try:
        for index, part in enumerate(parts):
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError:
                out.append(None)
                break
            out.append((st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode)))
            if index == len(parts) - 1 or not stat.S_ISDIR(st.st_mode):
                break
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    return tuple(out)


def snapshot(root: Path, paths: Iterable[str]) -> dict[str, tuple[State, ...]]:
    """What each component of each protected path is now (see the module docstring)."""
    fd = os.open(root, _DIR)
    try:
        return {p: _states(fd, PurePosixPath(p).parts) for p in paths}
    finally:
        os.close(fd)


def _appeared(parts: tuple[str, ...], before: tuple[State, ...], after: tuple[State, ...]) -> int | None:
    """The index of the component to move: the protected object itself, or a link/file made on its way."""
    changed = next((i for i, s in enumerate(after) if s is not None and (i >= len(before) or before[i] != s)), None)
    if changed is None:
        return None
    for index in range(changed, len(after)):
        state = after[index]
        if state is None:
            return None  # the protected path itself does not exist: nothing to move
        if index == len(parts) - 1 or state[2] != stat.S_IFDIR:
            return index
    return None


def quarantine_new(root: Path, before: Snapshot) -> list[str]:
    """Move what appeared at protected paths since ``before`` into a new quarantine directory.

    Returns ``"path -> quarantine/path"`` lines (``"path (could not be moved: why)"`` on failure).
    """
    root_fd = os.open(root, _DIR)
    moved: list[str] = []
    box: str | None = None
    try:
        for relative, old in before.items():
            parts = PurePosixPath(relative).parts
            index = _appeared(parts, old, _states(root_fd, parts))
            if index is None:
                continue
            name = "/".join(parts[: index + 1])
            try:
                box = box or _make_box(root_fd)
                _move(root_fd, parts[: index + 1], box)
                moved.append(f"{name} -> {box}/{name}")
            except OSError as exc:
                moved.append(f"{name} (could not be moved: {exc.strerror or exc})")
    finally:
        os.close(root_fd)
    return moved


def _make_box(root_fd: int) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = f"{QUARANTINE_PREFIX}{stamp}-{secrets.token_hex(3)}"
    os.mkdir(name, 0o700, dir_fd=root_fd)
    return name


def _open_dirs(root_fd: int, parts: Iterable[str], *, create: bool) -> int:
    fd = os.dup(root_fd)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _move(root_fd: int, parts: tuple[str, ...], box: str) -> None:
    """Rename ``parts`` (the last one not followed) to ``box/parts``, through descriptors only."""
    source = _open_dirs(root_fd, parts[:-1], create=False)
    try:
        target = _open_dirs(root_fd, (box, *parts[:-1]), create=True)
        try:
            os.rename(parts[-1], parts[-1], src_dir_fd=source, dst_dir_fd=target)
        finally:
            os.close(target)
    finally:
        os.close(source)
