"""OS sandboxes for commands and Python code: :class:`Sandbox`, its backends and its self-test.

What a sandboxed run gets with bubblewrap (the default on Linux): every namespace of its own
(user, mount, PID, network, IPC, UTS, cgroup) and no way to make more; uid/gid 65534 with no
capabilities, ``no_new_privs`` and a seccomp filter; an empty root with the system directories,
the interpreter and the paths it asks for read-only; synthetic ``/etc/passwd``, ``group`` and
``hosts`` (never the host's ``/etc``); a fresh ``/proc`` whose kernel knobs are read-only; a
minimal ``/dev``; size-capped tmpfs ``/tmp`` and work dir; no network unless allowed; an
environment of its own (nothing of the host's, not even through ``/proc/1/environ``); rlimits
(address space, CPU, file size, open files, core, processes) always, and a cgroup for processes
and memory where one can be made; a wall-clock timeout and an output cap that kill everything
the run started. :meth:`Sandbox.wrap` prepares a long-lived sandboxed program whose pipes the
caller owns (a launched MCP server), as a :class:`WrappedCommand` to start. A sandbox tests all of
that before its first run and refuses to run or wrap anything when a check fails
(:class:`SandboxUnavailable`). See ``docs/security.md`` ("Sandbox").
"""

from __future__ import annotations

from toolrig.errors import SandboxError, SandboxUnavailable
from toolrig.sandbox._backend import WORKDIR, Backend, RawRun, RunSpec
from toolrig.sandbox._bwrap import BubblewrapBackend
from toolrig.sandbox._docker import DockerBackend
from toolrig.sandbox._egress import EGRESS_KEY, ENV_KEY, PATHS_KEY, EgressProxy, host_allowed
from toolrig.sandbox._executor import SandboxExecutor
from toolrig.sandbox._limits import SandboxLimits
from toolrig.sandbox._protect import PROTECTED_IN_WORKDIR
from toolrig.sandbox._result import PythonError, PythonResult, SandboxResult
from toolrig.sandbox._sandbox import Sandbox
from toolrig.sandbox._selftest import SelfTestCheck, SelfTestReport
from toolrig.sandbox._wrap import WrappedCommand

__all__ = [
    "EGRESS_KEY",
    "ENV_KEY",
    "PATHS_KEY",
    "PROTECTED_IN_WORKDIR",
    "WORKDIR",
    "Backend",
    "BubblewrapBackend",
    "DockerBackend",
    "EgressProxy",
    "PythonError",
    "PythonResult",
    "RawRun",
    "RunSpec",
    "Sandbox",
    "SandboxError",
    "SandboxExecutor",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "SelfTestCheck",
    "SelfTestReport",
    "WrappedCommand",
    "host_allowed",
]
