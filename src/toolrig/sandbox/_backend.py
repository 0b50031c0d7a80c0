"""The one interface every sandbox backend implements, and what a run asks of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from toolrig.sandbox._limits import SandboxLimits
from toolrig.sandbox._result import SandboxResult

__all__ = ["REPLY_ENV", "WORKDIR", "Backend", "RawRun", "RunSpec", "minimal_env"]

WORKDIR = "/work"
"""Where the writable work dir is inside every sandbox (also the default cwd and HOME)."""

REPLY_ENV = "TOOLRIG_REPLY"
"""Inside the sandbox: where a runner writes its JSON reply (``fd:N`` or ``file:PATH``)."""


def minimal_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandboxed program: nothing of the host's, plus ``extra``."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": WORKDIR, "LANG": "C.UTF-8", "TMPDIR": "/tmp",
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(extra or {})
    return env


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One sandboxed run, as the :class:`~toolrig.sandbox.Sandbox` hands it to a backend.

    Attributes:
        argv: the program and its arguments (paths as seen inside the sandbox).
        limits: the resource limits.
        stdin: bytes fed to stdin (then closed); None gives ``/dev/null``.
        cwd: working directory inside the sandbox.
        env: the program's whole environment (see :func:`minimal_env`).
        network: keep the host's network (default: none at all, not even the host's loopback).
        workdir: a host directory bound read-write at :data:`WORKDIR` (default: a fresh size-capped tmpfs).
        ro_paths: host paths bound read-only at the same path (an interpreter's prefix, ...).
        rw_paths: host paths bound read-write at the same path (a tool package's declared writable paths).
        protect: paths inside ``workdir`` (relative) kept read-only where they exist, never reached
            through a symbolic link (see :mod:`toolrig.sandbox._protect`).
        files: read-only files made inside the sandbox: path -> content.
        want_reply: give the program a private reply channel (named by ``$TOOLRIG_REPLY``).
        launcher_env: extra variables of the launcher process (the self-test's marker), which must
            never reach the sandbox.
    """

    argv: tuple[str, ...]
    limits: SandboxLimits
    stdin: bytes | None = None
    cwd: str = WORKDIR
    env: Mapping[str, str] = field(default_factory=minimal_env)
    network: bool = False
    workdir: Path | None = None
    ro_paths: tuple[str, ...] = ()
    rw_paths: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    files: Mapping[str, bytes] = field(default_factory=dict)
    want_reply: bool = False
    launcher_env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RawRun:
    """A backend's answer: the run's result, and the reply channel's bytes (None if none was written)."""

    result: SandboxResult
    reply: bytes | None = None


@runtime_checkable
class Backend(Protocol):
    """Runs one :class:`RunSpec` in an OS sandbox; never runs anything unsandboxed."""

    name: str

    def unavailable_reason(self) -> str | None:
        """Why this backend cannot run here (a missing binary, no engine, ...), or None."""
        ...

    def python(self) -> tuple[str, tuple[str, ...]]:
        """The Python interpreter inside this backend's sandboxes and the host paths it needs bound."""
        ...

    def mechanisms(self) -> dict[str, str]:
        """How each limit is enforced by this backend on this machine (for reports)."""
        ...

    async def run(self, spec: RunSpec) -> RawRun:
        """Run ``spec`` to its end (or its limits) and clean up everything it started.

        Raises:
            SandboxError: the sandbox itself could not be set up (the program never started).
        """
        ...
