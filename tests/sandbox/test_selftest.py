"""The start-up self-test: it passes here, and it fails (so nothing runs) when a defence is missing.

The weakened backends below remove one defence each, on purpose, to show the check that catches
it — among them the two risks seen on machines where the sandbox is started by root: without
``--cap-drop ALL`` the sandbox keeps capabilities and could remount the host's directories
writable, and a launcher environment passed on to bubblewrap shows in ``/proc/1/environ``.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest

from toolrig import ToolrigError
from toolrig.sandbox import BubblewrapBackend, Sandbox, SandboxLimits, SandboxUnavailable, SelfTestReport
from toolrig.sandbox._backend import RunSpec
from toolrig.sandbox._bwrap_argv import BwrapFds
from toolrig.sandbox._bwrap_info import BwrapInfo

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="this risk exists only when the sandbox is started by root")


class _Weakened(BubblewrapBackend):
    """bubblewrap with some arguments removed (``None`` matches any one argument), or the launcher env passed on."""

    def __init__(self, drop: tuple[tuple[str | None, ...], ...] = (), leak_env: bool = False,
                 share_net: bool = False) -> None:
        super().__init__()
        self.drop, self.leak_env, self.share_net = drop, leak_env, share_net

    def _command(self, info: BwrapInfo, spec: RunSpec, fds: BwrapFds) -> list[str]:
        argv = super()._command(info, spec, fds)
        for group in self.drop:
            for i in range(len(argv) - len(group) + 1):
                if all(want is None or want == got for want, got in zip(group, argv[i:i + len(group)], strict=True)):
                    del argv[i:i + len(group)]
                    break
        if self.share_net:
            argv.insert(argv.index("--unshare-all") + 1, "--share-net")
        return argv

    def _bwrap_env(self, spec: RunSpec) -> dict[str, str]:
        return {**super()._bwrap_env(spec), **(spec.launcher_env if self.leak_env else {})}


def _report(backend: Any) -> SelfTestReport:
    return anyio.run(Sandbox(backend=backend, limits=SandboxLimits(timeout=5)).check)


def _failed(report: SelfTestReport) -> set[str]:
    return {c.name for c in report.failures()}


def test_the_self_test_passes_here(sandbox: Sandbox) -> None:
    report = Sandbox.self_test(backend="bubblewrap")
    assert report.passed, str(report)
    names = [c.name for c in report.checks]
    for name in ("remount", "write_etc", "write_bound_dir", "nested_userns", "network", "ptrace", "environ",
                 "proc_writable", "pids_limit", "host_listener", "marker_not_leaked", "no_leftover_process"):
        assert name in names
    assert "PASSED" in str(report) and report.reason() == ""
    assert report.mechanisms["seccomp"] == "on"


def test_without_seccomp_ptrace_is_caught() -> None:
    report = _report(_Weakened(drop=(("--seccomp", None),)))
    assert "ptrace" in _failed(report), str(report)


@as_root
def test_root_without_cap_drop_keeps_a_bounding_set() -> None:
    report = _report(_Weakened(drop=(("--cap-drop", "ALL"),)))
    assert "identity" in _failed(report), str(report)


@as_root
def test_root_without_cap_drop_or_uid_could_write_the_host() -> None:
    # uid 0 inside (host uid 0) with every capability: it can ptrace the sandbox's init and open
    # root-owned kernel knobs for writing. (The probe writes before it tries to remount, and puts a
    # mount it managed to remount back to read-only at once.)
    weak = _Weakened(drop=(("--cap-drop", "ALL"), ("--uid", "65534"), ("--gid", "65534"), ("--seccomp", None)))
    report = _report(weak)
    assert {"identity", "ptrace", "proc_writable"} <= _failed(report), str(report)


@as_root
def test_root_launcher_environment_leaks_through_proc_1_environ() -> None:
    report = _report(_Weakened(leak_env=True))
    assert "environ" in _failed(report), str(report)


@as_root
def test_root_uncovered_proc_sys_is_writable() -> None:
    report = _report(_Weakened(drop=(("--ro-bind-try", "/proc/sys", "/proc/sys"),)))
    assert "proc_writable" in _failed(report), str(report)


def test_with_the_host_network_the_network_checks_fail() -> None:
    report = _report(_Weakened(share_net=True))
    assert {"network", "host_listener"} <= _failed(report), str(report)


def test_no_bubblewrap_means_no_run_and_a_clear_reason(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    box = Sandbox(backend=BubblewrapBackend(bwrap=str(tmp_path / "no-bwrap")))
    with pytest.raises(SandboxUnavailable) as info:
        box.run_sync(["sh", "-c", f"touch {marker}"])
    assert isinstance(info.value, ToolrigError)
    assert "never runs unsandboxed" in str(info.value) and info.value.reason
    assert not marker.exists()
    with pytest.raises(SandboxUnavailable):
        box.run_python_sync(f"open({str(marker)!r}, 'w')")
    assert not marker.exists()


def test_a_failed_self_test_refuses_every_run(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    box = Sandbox(backend=_Weakened(drop=(("--cap-drop", "ALL"), ("--seccomp", None))), limits=SandboxLimits(timeout=5))
    with pytest.raises(SandboxUnavailable) as info:
        box.run_sync(["sh", "-c", f"touch {marker}"])
    assert "self-test failed" in str(info.value)
    assert not marker.exists()
