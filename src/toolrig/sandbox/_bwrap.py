"""The bubblewrap backend: one fresh sandbox per run, started through the launcher, watched to its end.

How a run is killed, whatever it does (``setsid``, double forks, ignoring SIGTERM): everything it
starts lives in the sandbox's own PID namespace, whose init is bubblewrap's. Killing that init
(through a pidfd, so a reused PID is never hit) makes the kernel kill every process of the
namespace; the launcher's process group and the run's cgroup (``cgroup.kill``) are killed as well.
After every run the host looks for processes still in that namespace or group and kills them;
their count is ``SandboxResult.leftover_processes``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from toolrig.errors import SandboxError, SandboxUnavailable
from toolrig.sandbox._backend import REPLY_ENV, WORKDIR, RawRun, RunSpec
from toolrig.sandbox._bwrap_argv import BwrapFds, bwrap_argv, synthetic_etc
from toolrig.sandbox._bwrap_info import BwrapInfo, probe_bwrap
from toolrig.sandbox._cgroup import CallCgroup, CgroupPlan, detect_cgroups
from toolrig.sandbox._protect import open_protected, protected_ancestors
from toolrig.sandbox._result import SandboxResult
from toolrig.sandbox._seccomp import seccomp_program, seccomp_supported
from toolrig.sandbox._supervise import Capped, Supervised, read_fd, supervise

__all__ = ["BubblewrapBackend", "leftover_processes"]

_LAUNCHER = str(Path(__file__).with_name("_launch.py"))
_MAX_REPLY = 64 << 20
_SYSTEM_PREFIXES = ("/usr/", "/bin/", "/lib/", "/lib64/")


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _protected_fds(info: BwrapInfo, spec: RunSpec) -> tuple[dict[str, int], dict[str, int]]:
    """Descriptors of the protected paths that exist in the work dir, by their path inside: (the
    directories above them, bound onto themselves so they cannot be renamed; the paths, bound read-only).

    Raises:
        SandboxUnavailable: paths are to be protected but this bubblewrap cannot bind a descriptor.
    """
    if spec.workdir is None or not spec.protect:
        return {}, {}
    if not (info.has("--ro-bind-fd") and info.has("--bind-fd")):
        raise SandboxUnavailable("this bubblewrap lacks --ro-bind-fd or --bind-fd, so protected paths in the work "
                                 "dir could not be kept read-only (bubblewrap >= 0.8 has them; or protect nothing)")
    pinned: dict[str, int] = {}
    out_files: dict[str, int] = {}
    for relative in protected_ancestors(spec.protect):
        fd = open_protected(spec.workdir, relative)
        if fd is None:
            continue
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            pinned[f"{WORKDIR}/{relative}"] = fd
        else:  # a file where a protected directory would be (a worktree's or submodule's `.git: gitdir: ...`)
            out_files[f"{WORKDIR}/{relative}"] = fd
    out: dict[str, int] = dict(out_files)
    for relative in spec.protect:
        fd = open_protected(spec.workdir, relative)
        if fd is not None:
            out[f"{WORKDIR}/{relative}"] = fd
    return pinned, out


def _alive(pid: str) -> bool:
    """Whether ``/proc/PID`` is a process that has not exited (zombies have, and hold nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def leftover_processes(pidns: int | None, pgid: int) -> list[int]:
    """Live PIDs in PID namespace ``pidns`` (an inode number) or in process group ``pgid``."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                member = (pidns is not None and os.stat(f"/proc/{entry.name}/ns/pid").st_ino == pidns) or (
                    os.getpgid(int(entry.name)) == pgid)
            except OSError:
                continue
            if member and _alive(entry.name):
                found.append(int(entry.name))
    return found


def _reap(pidns: int | None, pgid: int) -> int:
    """Make sure nothing of a finished run lives on (blocking); return how many had to be killed.

    The sandbox's init may still be exiting when bubblewrap's monitor has already returned: it
    gets a moment (up to 1 s) to go by itself; whatever is still there then counts as a leftover
    and is killed.
    """
    grace = time.monotonic() + 1.0
    pending = leftover_processes(pidns, pgid)
    while pending and time.monotonic() < grace:
        time.sleep(0.005)
        pending = leftover_processes(pidns, pgid)
    leftovers = len(pending)
    deadline = time.monotonic() + 5.0
    while pending and time.monotonic() < deadline:
        for pid in pending:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
        pending = leftover_processes(pidns, pgid)
    return leftovers


@dataclass
class _Status:
    """What bubblewrap reported on its ``--json-status-fd``."""

    child_pid: int | None = None
    pidns: int | None = None
    pidfd: int | None = None
    exit_code: int | None = None
    buffer: str = ""
    objects: list[dict[str, Any]] = field(default_factory=list)

    def feed(self, text: str) -> None:
        self.buffer += text
        decoder = json.JSONDecoder()
        while self.buffer.strip():
            stripped = self.buffer.lstrip()
            try:
                obj, end = decoder.raw_decode(stripped)
            except ValueError:
                return
            self.buffer = stripped[end:]
            if isinstance(obj, dict):
                self._take(obj)

    def _take(self, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("child-pid"), int) and self.child_pid is None:
            self.child_pid = obj["child-pid"]
            self.pidns = obj.get("pid-namespace") if isinstance(obj.get("pid-namespace"), int) else None
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(obj["child-pid"])
        if isinstance(obj.get("exit-code"), int):
            self.exit_code = obj["exit-code"]


class BubblewrapBackend:
    """Sandboxes with bubblewrap (Linux): see :mod:`toolrig.sandbox` for what each run gets.

    Args:
        bwrap: path of the ``bwrap`` binary (default: found on ``PATH``).
    """

    name = "bubblewrap"

    def __init__(self, bwrap: str | None = None) -> None:
        self._bwrap = bwrap
        self._info: BwrapInfo | str | None = None
        self._cgroups: CgroupPlan | None = None

    @property
    def info(self) -> BwrapInfo | str:
        """The bubblewrap in use, or why there is none."""
        if self._info is None:
            self._info = probe_bwrap(self._bwrap) if sys.platform == "linux" else "bubblewrap needs Linux"
        return self._info

    @property
    def cgroups(self) -> CgroupPlan:
        """Where per-run cgroups are made (found on first use)."""
        if self._cgroups is None:
            self._cgroups = detect_cgroups()
        return self._cgroups

    def unavailable_reason(self) -> str | None:
        info = self.info
        return info if isinstance(info, str) else None

    def python(self) -> tuple[str, tuple[str, ...]]:
        executable = os.path.realpath(sys.executable)
        prefix = os.path.realpath(sys.base_prefix)
        paths = () if (prefix + "/").startswith(_SYSTEM_PREFIXES) else (prefix,)
        return executable, paths

    def mechanisms(self) -> dict[str, str]:
        """How each limit is enforced on this machine (for reports)."""
        info = self.info
        sized = isinstance(info, BwrapInfo) and info.has("--size")
        return {
            "pids": self.cgroups.pids or "RLIMIT_NPROC (not enforced for host root)",
            "memory": self.cgroups.memory or "RLIMIT_AS per process",
            "disk": "tmpfs size=" if sized else "RLIMIT_FSIZE per file only (bubblewrap lacks --size)",
            "seccomp": "on" if seccomp_supported() else f"off (no filter for {platform.machine()})",
            "nested userns": "--disable-userns" if isinstance(info, BwrapInfo) and info.has(
                "--disable-userns") else "seccomp only",
        }

    async def run(self, spec: RunSpec) -> RawRun:
        info = self.info
        if isinstance(info, str):
            raise SandboxUnavailable(info)
        cgroup = CallCgroup.create(self.cgroups, pids=spec.limits.pids, memory=spec.limits.memory)
        host_fds: list[int] = []
        child_fds: list[int] = []
        try:
            return await self._run(info, spec, cgroup, host_fds, child_fds)
        finally:
            for fd in child_fds + host_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            await anyio.to_thread.run_sync(cgroup.remove)

    async def _run(self, info: BwrapInfo, spec: RunSpec, cgroup: CallCgroup, host_fds: list[int],
                   child_fds: list[int]) -> RawRun:
        files = {path: _memfd("file", data) for path, data in {**synthetic_etc(spec.network), **spec.files}.items()}
        child_fds += files.values()
        pinned, protected = _protected_fds(info, spec)
        child_fds += [*pinned.values(), *protected.values()]
        seccomp = _memfd("seccomp", seccomp_program()) if seccomp_supported() else None
        if seccomp is not None:
            child_fds.append(seccomp)
        status_r, status_w = os.pipe()
        host_fds.append(status_r)
        child_fds.append(status_w)
        env = dict(spec.env)
        reply_r = None
        if spec.want_reply:
            reply_r, reply_w = os.pipe()
            host_fds.append(reply_r)
            child_fds.append(reply_w)
            env[REPLY_ENV] = f"fd:{reply_w}"
        inner = RunSpec(**{**spec.__dict__, "env": env})
        argv = self._command(info, inner, BwrapFds(files, seccomp, status_w, protected, pinned))
        config = {"cgroups": cgroup.procs_files, "rlimits": spec.limits.rlimits(), "argv": argv,
                  "env": self._bwrap_env(inner)}
        proc = await anyio.open_process(
            [sys.executable, "-I", "-S", _LAUNCHER, json.dumps(config)],
            stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", **spec.launcher_env},
            pass_fds=child_fds, start_new_session=True)
        for fd in child_fds:
            os.close(fd)
        child_fds.clear()
        return await self._watch(proc, spec, cgroup, host_fds, (status_r, reply_r))

    def _command(self, info: BwrapInfo, spec: RunSpec, fds: BwrapFds) -> list[str]:
        """The bubblewrap command line (a seam for the tests that weaken it on purpose)."""
        return bwrap_argv(info, spec, fds)

    def _bwrap_env(self, spec: RunSpec) -> dict[str, str]:
        """bubblewrap's own environment: the sandbox's, so ``/proc/1/environ`` shows nothing of the host."""
        return dict(spec.env)

    async def _watch(self, proc: Any, spec: RunSpec, cgroup: CallCgroup, host_fds: list[int],
                     pipes: tuple[int, int | None]) -> RawRun:
        status_r, reply_r = pipes
        status = _Status()
        status_sink, reply_sink = Capped(1 << 16), Capped(_MAX_REPLY)

        async def read_status() -> None:
            host_fds.remove(status_r)
            os.set_blocking(status_r, False)
            try:
                while True:
                    try:
                        chunk = os.read(status_r, 4096)
                    except BlockingIOError:
                        await anyio.wait_readable(status_r)
                        continue
                    if not chunk:
                        return
                    status_sink.feed(chunk)
                    status.feed(chunk.decode("utf-8", "replace"))
            finally:
                os.close(status_r)

        async def read_reply() -> None:
            if reply_r is not None:
                host_fds.remove(reply_r)
                await read_fd(reply_r, reply_sink)

        def kill() -> None:
            if status.pidfd is not None:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(status.pidfd, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            cgroup.kill()

        try:
            seen = await supervise(proc, limits=spec.limits, kill=kill, stdin=spec.stdin,
                                   readers=(read_status, read_reply))
        finally:
            if status.pidfd is not None:
                os.close(status.pidfd)
        leftover = await anyio.to_thread.run_sync(_reap, status.pidns, proc.pid)
        if status.child_pid is None and not seen.kill_reason:
            text = bytes(seen.stderr.data).decode("utf-8", "replace").strip()
            raise SandboxError(f"bubblewrap could not start the sandbox: {text[-2000:] or seen.returncode}")
        result = self._result(spec, seen, None if seen.kill_reason else status.exit_code, leftover, cgroup)
        reply = None if reply_sink.truncated or not reply_sink.total else bytes(reply_sink.data)
        return RawRun(result, reply)

    def _result(self, spec: RunSpec, seen: Supervised, exit_code: int | None, leftover: int,
                cgroup: CallCgroup) -> SandboxResult:
        return SandboxResult(
            exit_code=exit_code, stdout=bytes(seen.stdout.data), stderr=bytes(seen.stderr.data),
            stdout_truncated=seen.stdout.truncated, stderr_truncated=seen.stderr.truncated,
            timed_out=seen.timed_out, killed=bool(seen.kill_reason), kill_reason=seen.kill_reason,
            duration=seen.duration, backend=self.name, leftover_processes=leftover,
            limits={**spec.limits.__dict__, **self.mechanisms(),
                    **{f"enforced {k}": v for k, v in cgroup.enforced.items()}})
