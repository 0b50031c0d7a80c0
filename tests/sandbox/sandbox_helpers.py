"""Helpers of the sandbox tests (a module of its own: test modules import it by this unique name)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Canaries", "accepted", "sandbox_processes"]


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


def sandbox_processes(token: bytes = b"/run/toolrig/") -> list[int]:
    """Live host processes whose command line names the sandbox's runner paths."""
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
        if token in cmdline and state != b"Z":
            found.append(int(entry))
    return found
