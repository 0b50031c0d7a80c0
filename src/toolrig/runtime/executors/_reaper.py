"""Stopping everything a worker process started, including children that left its process group.

A tool may start processes that escape a plain ``killpg``: a child that calls ``setsid()`` gets a
group of its own, and a double fork leaves an orphan. Workers therefore make themselves a *child
subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): orphans of their descendants are re-parented
to the worker instead of to init, so while the worker lives, every process the tool started is a
descendant of it. :func:`kill_tree` finds them through ``/proc``, stops them all (``SIGSTOP``, so none
can fork away while the tree is walked), then kills them.

What remains possible (documented in docs/runtime.md): a process the tool asked someone else to
start (a system service, ``at``, a container engine), or one started after the worker itself died
by another cause. A sandboxed tool (``isolation="sandbox"``) is contained by its sandbox instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
from pathlib import Path

__all__ = ["become_subreaper", "descendants", "kill_tree", "reap_zombies"]

_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 50


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where unsupported."""
    if os.uname().sysname != "Linux":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """``pid -> parent pid`` of every process this user can see (empty without ``/proc``)."""
    out: dict[int, int] = {}
    proc = Path("/proc")
    with contextlib.suppress(OSError):
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            if len(fields) > 1 and fields[1].lstrip("-").isdigit():
                out[int(entry.name)] = int(fields[1])
    return out


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` in the process tree (not ``pid`` itself)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_tree(pid: int, *, include_root: bool = True) -> set[int]:
    """SIGSTOP every descendant of ``pid`` until no new one appears, then SIGKILL them (and ``pid``).

    Also kills ``pid``'s process group. Blocking (reads ``/proc``); returns the PIDs signalled.
    """
    if include_root:
        _signal(pid, signal.SIGSTOP)  # the root can start no new process while its tree is walked
    stopped: set[int] = set()
    for _ in range(_ROUNDS):
        fresh = descendants(pid) - stopped
        if not fresh:
            break
        for child in fresh:
            _signal(child, signal.SIGSTOP)
        stopped |= fresh
    for child in stopped:
        _signal(child, signal.SIGKILL)
    if include_root:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _signal(pid, signal.SIGKILL)
    return stopped


def reap_zombies() -> int:
    """Collect exited children of this process without blocking; return how many."""
    reaped = 0
    while True:
        try:
            child, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if child == 0:
            return reaped
        reaped += 1
