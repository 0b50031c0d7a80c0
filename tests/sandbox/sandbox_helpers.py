"""Helpers of the sandbox tests (a module of its own: test modules import it by this unique name)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Canaries", "accepted", "adopt_orphans", "sandbox_processes"]


@dataclass(frozen=True)
class Canaries:
    """Secret files outside the sandbox: one in a temp dir, one in the home directory."""

    secret: str
    files: tuple[Path, ...]

    def snapshot(self) -> dict[Path, tuple[str, int]]:
        return {p: (p.read_text(), p.stat().st_mtime_ns) for p in self.files}



def accepted(server: socket.socket) -> bool:
    """Whether anything connected to ``server``."""
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a process any test starts stays
    a descendant of the test run even when its parent dies, so :func:`sandbox_processes` sees escapes and
    ignores other test runs on the same machine. False where prctl is unavailable."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name, use_errno=True)
    return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # 36: PR_SET_CHILD_SUBREAPER


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        parent = _parent_of(pid)
        if parent is None or parent <= 1:
            return False
        if parent == ancestor:
            return True
        pid = parent
    return False


def sandbox_processes(token: bytes = b"/run/toolrig/") -> list[int]:
    """Live processes started by this test run whose command line names the sandbox's runner paths."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[-1].split()[0]
        except OSError:
            continue
        if token in cmdline and state != b"Z" and _descends_from(int(entry), me):
            found.append(int(entry))
    return found
