"""Sandbox.wrap: a long-lived sandboxed program whose pipes the caller owns, started as a real subprocess."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from sandbox_helpers import Canaries, accepted, sandbox_processes

from toolrig.errors import ConfigError, SandboxError, SandboxUnavailable
from toolrig.sandbox import BubblewrapBackend, DockerBackend, Sandbox, SandboxLimits, WrappedCommand
from toolrig.sandbox._wrap import check_wrappable

LIMITS = SandboxLimits(timeout=1, memory=2048 << 20, pids=64, open_files=200)


def wrap(box: Sandbox, argv: list[str], **options: object) -> WrappedCommand:
    return anyio.run(lambda: box.wrap(argv, **options))  # type: ignore[arg-type]


@contextmanager
def started(wrapped: WrappedCommand, **popen: object) -> Iterator[subprocess.Popen[bytes]]:
    """Start the wrapped command as a caller would (its own session, our pipes); stop it by PID, then close."""
    proc = subprocess.Popen(list(wrapped.argv), env=dict(wrapped.env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, **popen)  # type: ignore[call-overload]
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
        assert wrapped.close() == 0


def run(wrapped: WrappedCommand, stdin: bytes = b"") -> tuple[int, str, str]:
    with started(wrapped) as proc:
        out, err = proc.communicate(stdin, timeout=60)
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture(scope="module")
def box(need_bubblewrap: None) -> Sandbox:
    sandbox = Sandbox(backend="bubblewrap", limits=LIMITS)
    assert anyio.run(sandbox.check).passed
    return sandbox


def test_the_caller_owns_the_pipes_and_the_program_is_nobody_without_capabilities(box: Sandbox) -> None:
    wrapped = wrap(box, ["sh", "-c", "read line; echo out:$line; echo err >&2; id -u; id -g; "
                                     "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; exit 3"])
    code, out, err = run(wrapped, b"hello\n")
    lines = out.split()
    assert code == 3 and lines[:3] == ["out:hello", "65534", "65534"] and err == "err\n"
    assert all(v.strip("0") == "" for v in lines[4::2])
    assert wrapped.command[0] == "/usr/bin/sh" and wrapped.backend == "bubblewrap" and not wrapped.network


def test_a_long_lived_program_has_no_cpu_limit_but_keeps_the_others(box: Sandbox) -> None:
    code, out, _ = run(wrap(box, ["cat", "/proc/self/limits"]))
    limits = {line[:26].strip(): line[26:].split()[:2] for line in out.splitlines()[1:]}
    assert code == 0 and limits["Max cpu time"] == ["unlimited", "unlimited"]
    assert limits["Max address space"] == [str(LIMITS.memory)] * 2
    assert limits["Max open files"] == [str(LIMITS.open_files)] * 2
    assert limits["Max core file size"] == ["0", "0"]


def test_host_environment_and_env_values_stay_off_every_command_line(box: Sandbox,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    host_secret, given = secrets.token_hex(12), secrets.token_hex(12)
    monkeypatch.setenv("TOOLRIG_TEST_HOST_SECRET", host_secret)
    wrapped = wrap(box, ["sh", "-c", "echo ready; read x; env; for f in /proc/[0-9]*/environ; do cat $f; done"],
                   env={"GIVEN": given})
    with started(wrapped) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # the launcher, now bubblewrap
        out, _ = proc.communicate(b"go\n", timeout=30)
    assert b"bwrap" in cmdline and b"--args" in cmdline and given.encode() not in cmdline
    assert f"GIVEN={given}" in out.decode() and host_secret not in out.decode()
    names = {line.split("=", 1)[0] for line in out.decode().splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PWD", "SHLVL", "_", "GIVEN"}


def test_inherited_descriptors_do_not_reach_the_program(box: Sandbox) -> None:
    read_end, write_end = os.pipe()
    try:
        with started(wrap(box, ["ls", "/proc/self/fd"]), pass_fds=(read_end, write_end)) as proc:
            out, _ = proc.communicate(timeout=30)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert sorted(int(fd) for fd in out.split()) == [0, 1, 2, 3]  # 3: ls's own listing of the directory


def test_a_python_program_of_a_virtualenv_starts_with_what_it_needs(box: Sandbox, tmp_path: Path) -> None:
    script = tmp_path / "app" / "server.py"
    script.parent.mkdir()
    script.write_text("import sys, pydantic\nprint(sys.prefix, pydantic.VERSION)\n")
    wrapped = wrap(box, [sys.executable, str(script)])
    code, out, err = run(wrapped)
    assert code == 0, err
    assert out.split()[0] == sys.prefix
    assert str(script) in wrapped.ro_paths and not wrapped.rw_paths


def test_the_program_cannot_read_or_write_the_host(box: Sandbox, canaries: Canaries, tmp_path: Path) -> None:
    before = canaries.snapshot()
    given = tmp_path / "given.txt"
    given.write_text("readable\n")
    marker = f"toolrig-wrap-marker-{secrets.token_hex(6)}"
    targets = [tmp_path / marker, given.parent / f"{marker}.2", Path.home() / marker, Path("/tmp") / marker]
    script = "; ".join([*(f"cat {p}" for p in canaries.files), f"cat {given}", f"echo x >> {given}",
                        *(f"touch {t}" for t in targets)])
    _, out, _ = run(wrap(box, ["sh", "-c", script], ro_paths=[given]))
    assert "readable" in out and canaries.secret not in out
    assert canaries.snapshot() == before and given.read_text() == "readable\n"
    assert not any(t.exists() for t in targets)


def test_rw_paths_and_a_configured_working_directory(box: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    (tmp_path / "rw").mkdir()
    script = "pwd; echo no > here.txt; echo yes > ../rw/there.txt; ls"
    _, out, err = run(wrap(box, ["sh", "-c", script], cwd=tmp_path / "ro", rw_paths=[tmp_path / "rw"]))
    assert out.splitlines()[0] == str(tmp_path / "ro") and "Read-only" in err
    assert not (tmp_path / "ro" / "here.txt").exists() and (tmp_path / "rw" / "there.txt").read_text() == "yes\n"
    wrapped = wrap(box, ["sh", "-c", "echo yes > here.txt"], cwd=tmp_path / "ro", rw_paths=[tmp_path / "ro"])
    assert run(wrapped)[0] == 0 and (tmp_path / "ro" / "here.txt").read_text() == "yes\n"
    (tmp_path / "link").symlink_to(tmp_path / "rw")  # a path given through a symlink is bound where it was given
    wrapped = wrap(box, ["sh", "-c", f"echo via > {tmp_path / 'link' / 'via.txt'}"], rw_paths=[tmp_path / "link"])
    assert run(wrapped)[0] == 0 and (tmp_path / "rw" / "via.txt").read_text() == "via\n"
    link_to_root = tmp_path / "root-link"
    link_to_root.symlink_to("/")
    with pytest.raises(ConfigError):
        wrap(box, ["true"], rw_paths=[link_to_root])


def test_without_a_working_directory_it_starts_in_an_empty_one_at_the_host_path(box: Sandbox,
                                                                              tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "named.txt").write_text("named\n")
    (tmp_path / "other.txt").write_text("other\n")
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(wrap(box, ["sh", "-c", "pwd; ls; cat named.txt", "named.txt"]))
    assert out.split() == [str(tmp_path), "named.txt", "named"]


def test_no_network_unless_asked(box: Sandbox, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    code = f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 3)\nexcept OSError as e:\n print(e)"
    _, out, _ = run(wrap(box, [sys.executable, "-c", code]))
    assert "refused" in out.lower() or "unreachable" in out.lower()
    assert not accepted(listener)
    run(wrap(box, [sys.executable, "-c", code], network=True))
    listener.setblocking(True)
    listener.settimeout(10)
    listener.accept()[0].close()


def test_nothing_survives_the_program(box: Sandbox) -> None:
    token = f"7{secrets.randbelow(10**8)}"
    wrapped = wrap(box, ["sh", "-c", f"setsid sleep {token} </dev/null >/dev/null 2>&1 & (sleep {token} &); "
                                     "echo ready; exec sleep 1000"])
    with started(wrapped) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert len(sandbox_processes(token.encode())) >= 2  # the sleeps (and the shell, bubblewrap, its init)
    deadline = time.monotonic() + 30
    while sandbox_processes(token.encode()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes(token.encode()) == []


def test_close_kills_a_program_still_running_where_a_cgroup_holds_it(box: Sandbox) -> None:
    backend = anyio.run(box.backend)
    assert isinstance(backend, BubblewrapBackend)
    if backend.cgroups.pids is None:
        pytest.skip("no writable cgroup here: the program dies with bubblewrap instead")
    wrapped = wrap(box, ["sh", "-c", "echo ready; exec sleep 1000"])
    proc = subprocess.Popen(list(wrapped.argv), env=dict(wrapped.env), stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert wrapped.close() >= 1
    assert proc.wait(timeout=30) is not None
    proc.stdout.close()


def test_it_fails_closed_without_an_adequate_sandbox() -> None:
    missing = Sandbox(backend=BubblewrapBackend(bwrap="/nonexistent/bwrap"))
    with pytest.raises(SandboxUnavailable, match="nonexistent"):
        wrap(missing, ["true"])
    with pytest.raises(SandboxUnavailable, match="only bubblewrap"):
        check_wrappable(DockerBackend())


def test_bad_commands_and_paths_are_refused_before_anything_starts(box: Sandbox, tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="no such executable"):
        wrap(box, ["definitely-not-a-command-here"])
    with pytest.raises(ConfigError):
        wrap(box, "sh -c true")  # type: ignore[arg-type]
    for options in ({"cwd": tmp_path / "missing"}, {"ro_paths": [tmp_path / "missing"]}, {"rw_paths": ["/"]},
                    {"rw_paths": ["/proc/self"]}, {"cwd": tmp_path / "file"}):
        (tmp_path / "file").write_text("")
        with pytest.raises(ConfigError):
            wrap(box, ["true"], **options)
