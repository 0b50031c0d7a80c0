"""``Sandbox.wrap``: a long-lived sandboxed program whose stdin, stdout and stderr the caller owns (an MCP server).

:func:`wrap_command` builds what to start — the launcher, which joins the program's cgroup, sets its
rlimits and execs bubblewrap, which runs the program — without starting it: the caller starts
:attr:`WrappedCommand.argv` with :attr:`WrappedCommand.env` however it likes (the MCP SDK's
``stdio_client`` does), owns its pipes, stops it, then calls :meth:`WrappedCommand.close`.

The program gets the sandbox of every run (namespaces, uid 65534 without capabilities, seccomp,
read-only system, synthetic ``/etc``, no network unless asked, a minimal environment, rlimits and a
cgroup) with two differences: no CPU-time limit and no wall-clock timeout (a server lives as long as
its session), and no output cap (its stdout is the caller's). It sees, read-only, what it needs to
start (:mod:`._needs`), the configured working directory and ``ro_paths``; read-write only
``rw_paths`` and the work dir. Without a configured working directory it starts in an empty,
read-only directory at the host's current path (so relative arguments it was given resolve).

Nothing of the configuration travels on a command line the host's other users can read: the
launcher reads it from its environment and hands bubblewrap its options through a memory file.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread

from toolrig.errors import ConfigError, SandboxUnavailable
from toolrig.sandbox._backend import RunSpec, minimal_env
from toolrig.sandbox._bwrap import BubblewrapBackend
from toolrig.sandbox._bwrap_argv import BwrapFds, bwrap_argv, synthetic_etc
from toolrig.sandbox._cgroup import CallCgroup
from toolrig.sandbox._launch import CONFIG_ENV
from toolrig.sandbox._limits import SandboxLimits
from toolrig.sandbox._needs import command_needs, outermost_paths
from toolrig.sandbox._seccomp import seccomp_program, seccomp_supported

__all__ = ["WrappedCommand", "wrap_command"]

_LAUNCHER = str(Path(__file__).with_name("_launch.py"))
_FIRST_FD = 3
_REFUSED = ("/", "/proc", "/sys", "/dev", "/run")
_HOST_PATH = "/usr/local/bin:/usr/bin:/bin"
_EXIT_GRACE = 1.0


@dataclass(frozen=True, kw_only=True)
class WrappedCommand:
    """A program ready to start in a bubblewrap sandbox: start :attr:`argv` with :attr:`env`, then :meth:`close`.

    Attributes:
        argv: what to start (the launcher, run by this Python); its stdin, stdout and stderr are the program's.
        env: the whole environment to start it with; the program gets none of it but its own minimal environment.
        command: the program as it runs inside, its executable resolved on the host.
        cwd: the working directory inside.
        ro_paths: host paths the program sees read-only (at the same path), besides the system directories.
        rw_paths: host paths it may write (at the same path), besides its work dir ``/work``.
        network: whether it shares the host's network (else it has none at all).
        limits: its limits (``timeout``, ``cpu_seconds`` and ``output`` do not apply to a wrapped program).
        backend: the sandbox backend (``bubblewrap``).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    command: tuple[str, ...]
    cwd: str
    ro_paths: tuple[str, ...]
    rw_paths: tuple[str, ...]
    network: bool
    limits: SandboxLimits
    backend: str = "bubblewrap"
    _cgroup: CallCgroup = field(repr=False, compare=False, default_factory=CallCgroup)

    def close(self) -> int:
        """Kill what is left in the program's cgroup and remove it (blocking, bounded); the count found.

        Call it after the program was stopped (what is still exiting gets up to a second to go by itself);
        with no cgroup on this machine there is nothing to do (the program's processes die with
        bubblewrap, ``--die-with-parent``).
        """
        grace = time.monotonic() + _EXIT_GRACE
        while self._cgroup.members() and time.monotonic() < grace:
            time.sleep(0.005)
        return self._cgroup.remove()

    async def aclose(self) -> int:
        """:meth:`close` from async code (in a worker thread)."""
        return await anyio.to_thread.run_sync(self.close)


def _host_paths(paths: Sequence[str | Path], what: str) -> list[str]:
    """Absolute host paths (bound at the path given, a symlink's target seen there), checked."""
    out = []
    for given in paths:
        path = os.path.abspath(os.path.expanduser(str(given)))
        for form in (path, os.path.realpath(path)):
            if form in _REFUSED or any(form.startswith(r + "/") for r in _REFUSED[1:]):
                raise ConfigError(f"{what}: {given} cannot be bound into a sandbox")
        if not os.path.exists(path):
            raise ConfigError(f"{what}: {given} does not exist on the host")
        out.append(path)
    return out


def _mounts(ro: Sequence[str], rw: Sequence[str], cwd_dir: str | None) -> tuple[list[str], tuple[str, ...],
                                                                                tuple[str, ...]]:
    """Bind options, parents before children; a path inside a writable one is not bound again."""
    writable = outermost_paths(list(rw))
    readable = tuple(p for p in outermost_paths(list(ro))
                     if not any(p == w or p.startswith(w.rstrip("/") + "/") for w in writable))
    args = ["--dir", cwd_dir] if cwd_dir is not None else []
    for path in sorted([*readable, *writable], key=lambda p: (p.count("/"), p)):
        args += ["--bind" if path in writable else "--ro-bind", path, path]
    return args, readable, writable


def _inside_env(base: Mapping[str, str], extra: Mapping[str, str], path_dirs: Sequence[str]) -> dict[str, str]:
    env = minimal_env({**base, **extra})
    if path_dirs:
        env["PATH"] = ":".join([*path_dirs, env["PATH"]])
    return env


def wrap_command(backend: BubblewrapBackend, argv: Sequence[str], *, limits: SandboxLimits,
                 base_env: Mapping[str, str], env: Mapping[str, str] | None, cwd: str | Path | None,
                 ro_paths: Sequence[str | Path], rw_paths: Sequence[str | Path], network: bool,
                 workdir: Path | None) -> WrappedCommand:
    """Build the :class:`WrappedCommand` for ``argv`` (see the module docstring); makes its cgroup.

    Raises:
        SandboxUnavailable: bubblewrap is not usable here.
        SandboxError: the program is not on the host.
        ConfigError: a working directory or bound path that does not exist or cannot be bound.
    """
    info = backend.info
    if isinstance(info, str):
        raise SandboxUnavailable(info)
    if isinstance(argv, str | bytes) or not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        raise ConfigError("argv must be a non-empty sequence of strings (no shell: pass a list)")
    extra = dict(env or {})
    configured = _host_paths([cwd], "the working directory")[0] if cwd is not None else None
    if configured is not None and not os.path.isdir(configured):
        raise ConfigError(f"the working directory {cwd} is not a directory")
    host_cwd = configured or os.getcwd()
    needs = command_needs(tuple(argv), search_path=extra.get("PATH") or os.environ.get("PATH") or _HOST_PATH,
                          cwd=host_cwd)
    ro = [*needs.ro_paths, *_host_paths(ro_paths, "ro_paths"), *([configured] if configured else [])]
    mounts, readable, writable = _mounts(ro, _host_paths(rw_paths, "rw_paths"),
                                         None if configured else host_cwd)
    inside_env = _inside_env(base_env, extra, needs.path_dirs)
    etc = synthetic_etc(network)
    memfds = [*etc.values(), *([seccomp_program()] if seccomp_supported() else [])]
    fds = BwrapFds(files={path: _FIRST_FD + i for i, path in enumerate(etc)},
                   seccomp=_FIRST_FD + len(etc) if seccomp_supported() else None, status=None)
    spec = RunSpec(argv=needs.argv, limits=limits, cwd=host_cwd, env=inside_env, network=network, workdir=workdir)
    args = bwrap_argv(info, spec, fds, mounts)
    cgroup = CallCgroup.create(backend.cgroups, pids=limits.pids, memory=limits.memory)
    config = {"cgroups": cgroup.procs_files, "argv": args, "env": inside_env,
              "rlimits": {k: v for k, v in limits.rlimits().items() if k != "CPU"},
              "memfds": [base64.b64encode(data).decode("ascii") for data in memfds],
              "args_end": len(args) - len(needs.argv) - 1 if info.has("--args") else None}
    return WrappedCommand(argv=(sys.executable, "-I", "-S", _LAUNCHER),
                          env={"PATH": "/usr/bin:/bin", CONFIG_ENV: json.dumps(config)}, command=needs.argv,
                          cwd=host_cwd, ro_paths=readable, rw_paths=writable, network=network, limits=limits,
                          _cgroup=cgroup)


def check_wrappable(backend: object) -> BubblewrapBackend:
    """``backend`` if it can wrap a long-lived program (only bubblewrap can).

    Raises:
        SandboxUnavailable: it cannot.
    """
    if not isinstance(backend, BubblewrapBackend):
        name = getattr(backend, "name", type(backend).__name__)
        raise SandboxUnavailable(f"the {name} sandbox backend cannot run a long-lived program whose pipes the "
                                 "caller owns; only bubblewrap can (backend='bubblewrap')")
    return backend

