"""The launcher: joins the run's cgroups, sets its rlimits, then becomes bubblewrap.

Run by the host as ``python -I -S _launch.py CONFIG`` (standard library only, never imports toolrig).
A separate small process rather than ``subprocess``'s ``preexec_fn``: ``preexec_fn`` runs Python
code between ``fork`` and ``exec`` in a child of a possibly multi-threaded host, where a lock held
by another thread (the allocator's, the import lock, logging's) deadlocks the child. This process
is single-threaded and does its few system calls before ``execve``, so the limits hold for
bubblewrap and everything it starts. CONFIG is JSON::

    {"cgroups": [".../cgroup.procs", ...], "rlimits": {"AS": n, ...}, "argv": [...], "env": {...}}

On failure it prints one ``toolrig-launcher: ...`` line on stderr and exits with code 125.
"""

from __future__ import annotations

import json
import os
import resource
import sys

FAILED = 125


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


def main() -> None:
    """Apply the configuration given as the first argument, then exec its ``argv``."""
    try:
        config = json.loads(sys.argv[1])
        _apply(config)
        argv = [str(a) for a in config["argv"]]
        env = {str(k): str(v) for k, v in config["env"].items()}
        os.execve(argv[0], argv, env)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        sys.stderr.write(f"toolrig-launcher: {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        os._exit(FAILED)


if __name__ == "__main__":
    main()
