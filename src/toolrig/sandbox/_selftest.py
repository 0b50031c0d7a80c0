"""The start-up self-test: a sandbox counts as adequate only after every escape attempt failed in it.

One sandboxed run of :mod:`._probe` tries, from inside: remounting ``/usr``, writing ``/etc``, the
system dirs and a bound host directory, creating user and mount namespaces, reaching the host's
loopback listener, ptrace, reading the launcher's environment through ``/proc/*/environ`` (the
launcher carries a random marker variable), writing kernel knobs under ``/proc``, seeing host
processes or the host root through ``/proc/1/root``, and forking past the process limit. The host
adds what only it can see: no connection reached its listener, the bound directory is unchanged,
the marker appears nowhere in the output, and no process of the run is left.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from toolrig.errors import SandboxError
from toolrig.sandbox._backend import Backend, RunSpec, minimal_env
from toolrig.sandbox._limits import SandboxLimits

__all__ = ["SelfTestCheck", "SelfTestReport", "run_self_test"]

_PROBE = Path(__file__).with_name("_probe.py")
_PROBE_PATH = "/run/toolrig/probe.py"
_PROBE_CHECKS = ("identity", "remount", "write_etc", "write_bound_dir", "nested_userns", "network", "ptrace",
                 "environ", "proc_writable", "process_view", "pids_limit")
MARKER_NAME = "TOOLRIG_SELFTEST_MARKER"


@dataclass(frozen=True, slots=True)
class SelfTestCheck:
    """One check: its name, whether it passed, and what was seen."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True, kw_only=True)
class SelfTestReport:
    """The result of one self-test of one backend.

    Attributes:
        backend: the backend tested.
        checks: every check, in order.
        mechanisms: how each limit is enforced on this machine.
    """

    backend: str
    checks: tuple[SelfTestCheck, ...]
    mechanisms: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every check passed (only then does the sandbox run anything)."""
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[SelfTestCheck]:
        """The checks that failed."""
        return [c for c in self.checks if not c.passed]

    def reason(self) -> str:
        """Why this sandbox is not adequate, in one sentence ("" when it is)."""
        failed = self.failures()
        if not failed:
            return ""
        return f"{self.backend} self-test failed: " + "; ".join(f"{c.name} ({c.detail[:300]})" for c in failed)

    def __str__(self) -> str:
        lines = [f"sandbox self-test ({self.backend}): {'PASSED' if self.passed else 'FAILED'}"]
        lines += [f"  [{'ok' if c.passed else 'FAIL'}] {c.name}: {c.detail}" for c in self.checks]
        lines += [f"  limit {name}: {how}" for name, how in self.mechanisms.items()]
        return "\n".join(lines)


def _unavailable(backend: Backend, reason: str) -> SelfTestReport:
    return SelfTestReport(backend=backend.name, checks=(SelfTestCheck("available", False, reason),))


async def run_self_test(backend: Backend, *, mechanisms: dict[str, str] | None = None) -> SelfTestReport:
    """Test ``backend`` on this machine (about one sandboxed Python start-up)."""
    reason = backend.unavailable_reason()
    if reason:
        return _unavailable(backend, reason)
    bound = Path(tempfile.mkdtemp(prefix="toolrig-selftest-"))
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    try:
        return await _run(backend, bound, listener, mechanisms or {})
    finally:
        listener.close()
        shutil.rmtree(bound, ignore_errors=True)


async def _run(backend: Backend, bound: Path, listener: socket.socket, mechanisms: dict[str, str]) -> SelfTestReport:
    marker = secrets.token_hex(16)
    canary = bound / "canary.txt"
    canary.write_text(f"canary {marker}\n")
    canary.chmod(0o644)
    bound.chmod(0o755)
    python, paths = backend.python()
    limits = SandboxLimits(timeout=60, pids=16)
    config = {"port": listener.getsockname()[1], "bound_dir": str(bound), "marker": marker, "pids": limits.pids}
    spec = RunSpec(argv=(python, "-I", "-S", _PROBE_PATH, json.dumps(config)), limits=limits, env=minimal_env(),
                   ro_paths=(*paths, str(bound)), files={_PROBE_PATH: _PROBE.read_bytes()}, want_reply=True,
                   launcher_env={MARKER_NAME: marker})
    try:
        raw = await backend.run(spec)
    except SandboxError as exc:
        return _unavailable(backend, str(exc))
    result = raw.result
    checks = _probe_checks(raw.reply, result.error_text)
    connected = True
    with contextlib.suppress(BlockingIOError):
        listener.accept()[0].close()
        connected = False
    checks.append(SelfTestCheck("host_listener", connected, "no connection reached the host's loopback listener"
                                if connected else "a connection reached the host's loopback listener"))
    entries = sorted(p.name for p in bound.iterdir())
    intact = entries == ["canary.txt"] and canary.read_text() == f"canary {marker}\n"
    checks.append(SelfTestCheck("host_dir_intact", intact, f"bound host directory holds {entries}"))
    leaked = marker.encode() in result.stdout + result.stderr
    checks.append(SelfTestCheck("marker_not_leaked", not leaked, "the launcher's marker variable "
                                + ("appeared in the output" if leaked else "stayed outside")))
    clean = result.leftover_processes == 0 and not result.timed_out
    checks.append(SelfTestCheck("no_leftover_process", clean, f"{result.leftover_processes} left, "
                                f"timed out: {result.timed_out}, {result.describe()}"))
    return SelfTestReport(backend=backend.name, checks=tuple(checks), mechanisms=mechanisms)


def _probe_checks(reply: bytes | None, stderr: str) -> list[SelfTestCheck]:
    try:
        reported = json.loads(reply or b"")["checks"]
        if not isinstance(reported, dict):
            raise TypeError("checks is not an object")
    except (ValueError, TypeError, KeyError) as exc:
        detail = f"the probe gave no report ({type(exc).__name__}); its stderr: {stderr.strip()[-500:]}"
        return [SelfTestCheck(name, False, detail) for name in _PROBE_CHECKS]
    checks = []
    for name in _PROBE_CHECKS:
        entry = reported.get(name)
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], bool):
            checks.append(SelfTestCheck(name, entry[0], str(entry[1])[:2000]))
        else:
            checks.append(SelfTestCheck(name, False, "not reported by the probe"))
    return checks
