"""Pieces of the sandbox that need no sandbox: the seccomp program, Docker's command line, limits, exports."""

from __future__ import annotations

import shutil
import struct

import anyio
import pytest

from toolrig.errors import ConfigError
from toolrig.sandbox import DockerBackend, Sandbox, SandboxLimits
from toolrig.sandbox._backend import RunSpec, minimal_env
from toolrig.sandbox._docker import docker_argv
from toolrig.sandbox._seccomp import _ARCHES, seccomp_program, seccomp_supported


@pytest.mark.parametrize("machine", sorted(_ARCHES))
def test_seccomp_program_is_well_formed(machine: str) -> None:
    program = seccomp_program(machine)
    assert len(program) % 8 == 0 and 20 < len(program) // 8 < 256
    first = struct.unpack("=HBBI", program[:8])
    assert first == (0x20, 0, 0, 4)  # load the architecture first
    assert struct.unpack("=HBBI", program[-8:])[3] == 0x80000000  # the last return kills


def test_both_architectures_name_the_same_calls() -> None:
    x86, arm = _ARCHES["x86_64"][1], _ARCHES["aarch64"][1]
    assert set(x86) - {"iopl", "ioperm"} == set(arm)
    with pytest.raises(ValueError):
        seccomp_program("sparc")
    assert not seccomp_supported("sparc")


def test_limits_validate_and_derive() -> None:
    limits = SandboxLimits(timeout=2.5)
    assert limits.cpu == 4 and limits.rlimits()["CORE"] == 0
    assert limits.with_changes(pids=8).pids == 8
    for bad in ({"memory": 1}, {"pids": 2}, {"timeout": float("nan")}, {"output": -1}, {"cpu_seconds": 0}):
        with pytest.raises(ConfigError):
            SandboxLimits(**bad)  # type: ignore[arg-type]


def test_docker_command_line_holds_every_limit() -> None:
    spec = RunSpec(argv=("python3", "-c", "1"), limits=SandboxLimits(memory=64 << 20, pids=10), stdin=b"x",
                   env=minimal_env({"A": "1"}), ro_paths=("/opt/lib",))
    argv = docker_argv("docker", "img:1", "box", spec, [("/h/f", "/run/f", "ro")])
    text = " ".join(argv)
    for part in ("--rm", "--network none", f"--memory {64 << 20}", f"--memory-swap {64 << 20}", "--pids-limit 10",
                 "--read-only", "--cap-drop ALL", "--security-opt no-new-privileges", "--user 65534:65534",
                 "--ulimit core=0:0", "--interactive", "type=bind,source=/h/f,target=/run/f,readonly",
                 "--env A=1", "--tmpfs /work:"):
        assert part in text, part
    assert argv[-4:] == ["img:1", "python3", "-c", "1"]
    shared = docker_argv("docker", "img", "b", RunSpec(argv=("true",), limits=SandboxLimits(), network=True), [])
    assert "--network bridge" in " ".join(shared) and "--interactive" not in shared


def _engine_reason() -> str | None:
    if shutil.which("docker") is None:
        return "the docker client is not installed"
    return DockerBackend().unavailable_reason()


def test_docker_backend_runs_in_a_container() -> None:
    reason = _engine_reason()
    if reason:
        pytest.skip(f"no Docker engine on this machine: {reason}")
    box = Sandbox(backend="docker", limits=SandboxLimits(timeout=60))
    assert anyio.run(box.check).passed
    assert box.run_python_sync("1+1").value == 2


def test_docker_without_engine_is_unavailable_with_the_reason() -> None:
    reason = _engine_reason()
    if reason is None:
        pytest.skip("a Docker engine answers here")
    report = Sandbox.self_test(backend="docker")
    assert not report.passed and report.checks[0].name == "available"
