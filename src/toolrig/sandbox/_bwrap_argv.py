"""The bubblewrap command line of one run: namespaces, identity, environment, mounts.

Everything the sandbox can see is listed here. The root is an empty tmpfs made read-only at
the end; on it: the system directories read-only, a few chosen ``/etc`` files (never the whole
``/etc``: no ``shadow``, no host ``passwd``, no credentials), synthetic ``passwd``/``group``/``hosts``,
a fresh ``/proc`` whose kernel knobs are covered read-only, a minimal ``/dev``, size-capped tmpfs
``/tmp``, ``/dev/shm`` and work dir, and the paths a run asks for, read-only.

``/proc/sys`` and the other kernel knobs are covered explicitly because bubblewrap started by
root maps the sandbox's uid 65534 to host uid 0: without capabilities that uid still passes the
owner check of every root-owned procfs file, and ``/proc/sys/kernel/core_pattern`` writable from a
sandbox would be a way out (bubblewrap only covers the files it finds writable at set-up).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolrig.sandbox._backend import WORKDIR, RunSpec
from toolrig.sandbox._bwrap_info import BwrapInfo

__all__ = ["SANDBOX_GID", "SANDBOX_UID", "BwrapFds", "bwrap_argv", "synthetic_etc"]

SANDBOX_UID = 65534
SANDBOX_GID = 65534

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_ALWAYS = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "services", "protocols")
_ETC_NETWORK = ("resolv.conf", "ssl", "ca-certificates", "ca-certificates.conf", "gai.conf")
_PROC_READ_ONLY = ("sys", "sysrq-trigger", "fs", "pressure", "irq", "bus", "acpi", "scsi", "driver")
_PROC_HIDDEN = ("kcore", "kmsg", "keys", "key-users", "timer_list", "sched_debug", "kallsyms", "kpagecount",
                "kpageflags", "kpagecgroup", "vmallocinfo", "slabinfo", "iomem", "ioports")


def synthetic_etc(network: bool) -> dict[str, bytes]:
    """The identity and name-service files every sandbox gets instead of the host's."""
    files = {
        "/etc/passwd": (f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
                        f"nobody:x:{SANDBOX_UID}:{SANDBOX_GID}:nobody:{WORKDIR}:/usr/sbin/nologin\n").encode(),
        "/etc/group": f"root:x:0:\nnogroup:x:{SANDBOX_GID}:\n".encode(),
        "/etc/hosts": b"127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n",
        "/etc/hostname": b"sandbox\n",
        "/etc/nsswitch.conf": b"passwd: files\ngroup: files\nshadow: files\nhosts: files"
                              + (b" dns" if network else b"") + b"\n",
    }
    return files


@dataclass(frozen=True, slots=True)
class BwrapFds:
    """Descriptors (numbers as the launcher and bubblewrap see them) that the command line names."""

    files: Mapping[str, int]
    seccomp: int | None
    status: int | None
    protected: Mapping[str, int] = field(default_factory=dict)
    """Path inside -> an ``O_PATH`` descriptor of the checked host object bound read-only there."""
    pinned: Mapping[str, int] = field(default_factory=dict)
    """Path inside -> a directory above a protected path, bound read-write onto itself (cannot be renamed)."""


def _system(info: BwrapInfo, network: bool) -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC_ALWAYS + (_ETC_NETWORK if network else ()):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def _kernel_views(info: BwrapInfo, disk: int) -> list[str]:
    args = ["--proc", "/proc"]
    for name in _PROC_READ_ONLY:
        args += ["--ro-bind-try", f"/proc/{name}", f"/proc/{name}"]
    for name in _PROC_HIDDEN:
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    args += ["--dev", "/dev", *_tmpfs(info, "/dev/shm", disk), "--remount-ro", "/dev"]
    return args


def _tmpfs(info: BwrapInfo, path: str, size: int) -> list[str]:
    sized = ["--size", str(size)] if info.has("--size") else []
    return [*sized, "--tmpfs", path]


def _data(info: BwrapInfo, files: Mapping[str, int]) -> list[str]:
    args: list[str] = []
    for path, fd in files.items():
        if info.has("--perms"):
            args += ["--perms", "0444"]
        args += ["--ro-bind-data", str(fd), path]
    return args


def bwrap_argv(info: BwrapInfo, spec: RunSpec, fds: BwrapFds, mounts: Sequence[str] = ()) -> list[str]:
    """The full ``bwrap ... -- argv`` command line for ``spec``; ``mounts`` are more mount options, placed last."""
    args = [info.path, "--unshare-all", "--unshare-user", *(["--share-net"] if spec.network else []),
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--hostname", "sandbox",
            "--cap-drop", "ALL", *(["--disable-userns"] if info.has("--disable-userns") else []),
            "--die-with-parent", "--new-session", "--clearenv"]
    for name, value in spec.env.items():
        args += ["--setenv", name, value]
    args += _system(info, spec.network)
    args += _kernel_views(info, spec.limits.disk)
    args += _tmpfs(info, "/tmp", spec.limits.disk)
    if spec.workdir is not None:
        args += ["--bind", str(spec.workdir), WORKDIR]
        for inside, fd in fds.pinned.items():
            args += ["--bind-fd", str(fd), inside]
        for inside, fd in fds.protected.items():
            args += ["--ro-bind-fd", str(fd), inside]
    else:
        args += _tmpfs(info, WORKDIR, spec.limits.disk)
    for path in spec.ro_paths:
        args += ["--ro-bind", path, path]
    for path in spec.rw_paths:
        args += ["--bind", path, path]
    args += mounts
    args += _data(info, fds.files)
    args += ["--remount-ro", "/", "--chdir", spec.cwd]
    if fds.seccomp is not None:
        args += ["--seccomp", str(fds.seccomp)]
    if fds.status is not None:
        args += ["--json-status-fd", str(fds.status)]
    args += ["--", *spec.argv]
    return args
