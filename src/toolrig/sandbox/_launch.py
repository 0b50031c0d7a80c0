"""The launcher: joins the run's cgroups, sets its rlimits, then becomes bubblewrap.

Run by the host as ``python -I -S _launch.py CONFIG`` (standard library only, never imports toolrig),
or as ``python -I -S _launch.py`` with CONFIG in the variable ``TOOLRIG_LAUNCH`` (a wrapped command,
started by a caller that cannot pass descriptors: the values of the sandbox's environment then never
appear on a command line). A separate small process rather than ``subprocess``'s ``preexec_fn``:
``preexec_fn`` runs Python code between ``fork`` and ``exec`` in a child of a possibly multi-threaded
host, where a lock held by another thread (the allocator's, the import lock, logging's) deadlocks the
child. This process is single-threaded and does its few system calls before ``execve``, so the limits
hold for bubblewrap and everything it starts. CONFIG is JSON::

    {"cgroups": [".../cgroup.procs", ...], "rlimits": {"AS": n, ...}, "argv": [...], "env": {...},
     "memfds": ["<base64>", ...], "args_end": n}

``memfds`` (optional): every descriptor above 2 is closed first, then one memory file per entry is
made, numbered 3, 4, ... in order (``argv`` names them by those numbers). ``args_end`` (optional):
``argv[1:args_end]`` (bubblewrap's options) is handed to bubblewrap through one more memory file
(``--args FD``) instead of its command line, which every user of the host can read.

On failure it prints one ``toolrig-launcher: ...`` line on stderr and exits with code 125.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import sys

FAILED = 125
CONFIG_ENV = "TOOLRIG_LAUNCH"
_FIRST_FD = 3


def _apply(config: dict[str, object]) -> None:
    for procs in config.get("cgroups", []):  # type: ignore[attr-defined]
        with open(str(procs), "w") as handle:
            handle.write(str(os.getpid()))
    limits: dict[str, int] = config.get("rlimits", {})  # type: ignore[assignment]
    for name, value in limits.items():
        which = getattr(resource, f"RLIMIT_{name}", None)
        if which is None:
            continue
        _soft, hard = resource.getrlimit(which)
        target = value if hard == resource.RLIM_INFINITY else min(int(value), hard)
        resource.setrlimit(which, (target, target))


def _memfd(data: bytes, expected: int | None = None) -> int:
    fd = os.memfd_create("toolrig", 0)
    if expected is not None and fd != expected:
        raise OSError(f"memory file got descriptor {fd}, expected {expected}")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _command(config: dict[str, object]) -> list[str]:
    argv = [str(a) for a in config["argv"]]  # type: ignore[attr-defined]
    memfds = config.get("memfds")
    if isinstance(memfds, list):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        os.closerange(_FIRST_FD, max(soft, hard if hard != resource.RLIM_INFINITY else soft))
        for index, data in enumerate(memfds):
            _memfd(base64.b64decode(str(data)), _FIRST_FD + index)
    end = config.get("args_end")
    if isinstance(end, int) and 1 <= end <= len(argv):
        fd = _memfd(b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv[1:end]))
        argv = [argv[0], "--args", str(fd), *argv[end:]]
    return argv


def main() -> None:
    """Apply the configuration (the first argument, else ``$TOOLRIG_LAUNCH``), then exec its ``argv``."""
    try:
        config = json.loads(sys.argv[1] if len(sys.argv) > 1 else os.environ[CONFIG_ENV])
        argv = _command(config)  # before the rlimits: every inherited descriptor is closed, whatever its number
        _apply(config)
        env = {str(k): str(v) for k, v in config["env"].items()}
        os.execve(argv[0], argv, env)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        sys.stderr.write(f"toolrig-launcher: {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        os._exit(FAILED)


if __name__ == "__main__":
    main()
