"""Sandbox.run and run_python: what a run gets, what it cannot reach, how it is stopped."""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

import anyio
import pytest
from sandbox_helpers import Canaries, accepted, sandbox_processes

from toolrig.errors import ConfigError
from toolrig.sandbox import Sandbox, SandboxLimits, SandboxResult

SHORT = SandboxLimits(timeout=3)


def run(box: Sandbox, argv: list[str], **options: object) -> SandboxResult:
    return box.run_sync(argv, **options)


def test_exit_code_output_and_stdin(sandbox: Sandbox) -> None:
    result = run(sandbox, ["sh", "-c", "read line; echo out:$line; echo err >&2; exit 3"], stdin="hello\n")
    assert (result.exit_code, result.stdout, result.stderr) == (3, b"out:hello\n", b"err\n")
    assert result.backend == "bubblewrap" and not result.ok and result.signal is None
    assert run(sandbox, ["true"]).ok


def test_identity_is_nobody_without_capabilities(sandbox: Sandbox) -> None:
    result = run(sandbox, ["sh", "-c", "id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"])
    lines = result.text.split()
    assert lines[:2] == ["65534", "65534"]
    assert all(v.strip("0") == "" for v in lines[3::2])


def test_host_environment_never_reaches_the_sandbox(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    token = secrets.token_hex(16)
    monkeypatch.setenv("TOOLRIG_TEST_SECRET_KEY", token)
    result = run(sandbox, ["sh", "-c", "env; cat /proc/1/environ /proc/self/environ; for f in /proc/[0-9]*/environ; "
                                       "do cat $f; done"])
    assert token.encode() not in result.stdout + result.stderr
    names = {line.split("=", 1)[0] for line in result.text.splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PWD", "SHLVL", "_", "OLDPWD"}


def test_env_option_adds_variables(sandbox: Sandbox) -> None:
    assert run(sandbox, ["sh", "-c", "echo $GREETING"], env={"GREETING": "hi"}).stdout == b"hi\n"


def test_host_files_are_invisible(sandbox: Sandbox, canaries: Canaries) -> None:
    before = canaries.snapshot()
    paths = " ".join(str(p) for p in canaries.files)
    result = run(sandbox, ["sh", "-c", f"cat {paths} /proc/1/root{canaries.files[0]} /proc/self/root/etc/shadow "
                                       f"/etc/shadow; ls / /root /proc/1/root; echo x >> {canaries.files[0]}"])
    assert canaries.secret.encode() not in result.stdout + result.stderr
    assert canaries.snapshot() == before
    assert b"shadow" not in run(sandbox, ["ls", "/etc"]).stdout


def test_no_marker_file_reaches_the_host(sandbox: Sandbox, tmp_path: Path) -> None:
    name = f"toolrig-marker-{secrets.token_hex(6)}"
    bound = tmp_path / "bound"
    bound.mkdir()
    targets = [f"/tmp/{name}", f"/root/{name}", f"/{name}", f"/etc/{name}", f"/usr/{name}", f"/dev/shm/{name}",
               f"/proc/1/root/tmp/{name}", f"/proc/self/cwd/../{name}", f"{bound}/{name}", f"{tmp_path}/{name}"]
    box = Sandbox(backend="bubblewrap", limits=SHORT, ro_paths=[bound])
    script = "; ".join(f"touch {t} 2>/dev/null; mkdir -p {t}d 2>/dev/null" for t in targets)
    run(box, ["sh", "-c", script])
    for target in [*targets, f"{Path.home()}/{name}"]:
        resolved = target.replace("/proc/1/root", "").replace("/proc/self/cwd/..", "")
        assert not os.path.exists(resolved) and not os.path.exists(resolved + "d"), target


def test_read_only_paths_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("keep")
    box = Sandbox(backend="bubblewrap", limits=SHORT, ro_paths=[tmp_path])
    result = run(box, ["sh", "-c", f"cat {tmp_path}/keep.txt; echo no > {tmp_path}/keep.txt; rm {tmp_path}/keep.txt"])
    assert result.stdout.startswith(b"keep")
    assert (tmp_path / "keep.txt").read_text() == "keep"


def test_host_workdir_is_the_one_writable_host_place(tmp_path: Path) -> None:
    box = Sandbox(backend="bubblewrap", limits=SHORT, workdir=tmp_path)
    result = run(box, ["sh", "-c", "echo made > out.txt; pwd"])
    assert result.stdout == b"/work\n"
    assert (tmp_path / "out.txt").read_text() == "made\n"


def test_disk_is_capped(sandbox: Sandbox) -> None:
    limits = SandboxLimits(timeout=10, disk=4 << 20, file_size=64 << 20)
    result = run(sandbox, ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do head -c 1048576 /dev/zero > f$i || exit 9; done"],
                 limits=limits)
    assert result.exit_code == 9
    result = run(sandbox, ["sh", "-c", "head -c 8388608 /dev/zero > /dev/shm/x || exit 9"], limits=limits)
    assert result.exit_code == 9


def test_no_network_not_even_the_host_loopback(sandbox: Sandbox, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    code = (f"import socket\nr = 'connected'\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2)\n"
            "except OSError:\n r = 'refused'\nr")
    result = sandbox.run_python_sync(code)
    assert result.value == "refused"
    assert not accepted(listener)
    assert sandbox.run_python_sync("import socket\nsorted(n for _, n in socket.if_nameindex())").value == ["lo"]


def test_network_when_allowed_reaches_the_loopback(listener: socket.socket) -> None:
    box = Sandbox(backend="bubblewrap", limits=SHORT, network=True)
    port = listener.getsockname()[1]
    box.run_python_sync(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2).close()")
    listener.setblocking(True)
    listener.settimeout(10)
    conn, _ = listener.accept()
    conn.close()


def test_timeout_kills_setsid_and_double_fork_survivors(sandbox: Sandbox) -> None:
    token = f"9{secrets.randbelow(10**8)}"
    script = (f"sleep {token} & setsid sleep {token} & (sleep {token} &) ; "
              f"trap '' TERM; sh -c 'trap \"\" TERM; sleep {token}' & wait")
    result = run(sandbox, ["sh", "-c", script], timeout=1.5)
    assert result.timed_out and result.killed and result.exit_code is None
    assert result.leftover_processes == 0
    assert sandbox_processes(token.encode()) == []


def test_a_finished_run_leaves_no_daemon(sandbox: Sandbox) -> None:
    token = f"8{secrets.randbelow(10**8)}"
    result = run(sandbox, ["sh", "-c", f"setsid sleep {token} > /dev/null 2>&1 < /dev/null & echo started"])
    assert result.ok and result.stdout == b"started\n"
    assert sandbox_processes(token.encode()) == []


def test_signals_cannot_reach_the_host(sandbox: Sandbox) -> None:
    parent = os.getpid()
    result = run(sandbox, ["sh", "-c", f"kill -9 {parent} 1 -1; kill -9 $PPID; echo alive"])
    assert os.getpid() == parent
    assert b"alive" in result.stdout or result.exit_code is not None


def test_output_is_capped_and_a_flood_is_killed(sandbox: Sandbox) -> None:
    limits = SandboxLimits(timeout=20, output=1000)
    result = run(sandbox, ["sh", "-c", "head -c 1500 /dev/zero; head -c 10 /dev/zero >&2"], limits=limits)
    assert len(result.stdout) == 1000 and result.stdout_truncated and not result.stderr_truncated
    assert result.ok
    flood = run(sandbox, ["yes"], limits=limits)
    assert flood.killed and flood.kill_reason == "output" and len(flood.stdout) == 1000


def test_run_python_values_errors_and_output(sandbox: Sandbox, tmp_path: Path) -> None:
    assert sandbox.run_python_sync("1+1").value == 2
    result = sandbox.run_python_sync("import sys\nprint('hi')\nprint('e', file=sys.stderr)\n{'a': [1, 2.5, None]}")
    assert (result.stdout, result.stderr, result.value, result.has_value) == (b"hi\n", b"e\n", {"a": [1, 2.5, None]},
                                                                            True)
    assert not sandbox.run_python_sync("x = 1").has_value
    assert sandbox.run_python_sync("object()").value_repr.startswith("<object object")
    failed = sandbox.run_python_sync("def f():\n    raise KeyError('nope')\nf()")
    assert failed.error is not None and failed.error.type == "builtins.KeyError" and "nope" in failed.error.message
    assert "f()" in failed.error.traceback and not failed.ok and failed.exit_code == 1
    assert sandbox.run_python_sync("raise SystemExit(4)").exit_code == 4
    assert sandbox.run_python_sync("import sys\nsys.stdin.read()", stdin="data").value == "data"
    syntax = sandbox.run_python_sync("def (")
    assert syntax.error is not None and syntax.error.type == "builtins.SyntaxError"
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    assert sandbox.run_python_sync("import helper_mod\nhelper_mod.VALUE + 1", python_path=[tmp_path]).value == 42


def test_a_forged_reply_is_only_data(sandbox: Sandbox) -> None:
    code = "import os\nos.write(int(os.environ.get('TOOLRIG_REPLY', 'fd:1')[3:] or 1), b'not json')\n1"
    result = sandbox.run_python_sync(code)
    assert result.value is None or result.value == 1


def test_argv_must_be_a_list_of_strings(sandbox: Sandbox) -> None:
    with pytest.raises(ConfigError):
        run(sandbox, [])
    with pytest.raises(ConfigError):
        sandbox.run_sync("echo hi")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Sandbox(backend="chroot")
    with pytest.raises(ConfigError):
        SandboxLimits(timeout=0)


def test_sync_wrappers_work_inside_an_event_loop(sandbox: Sandbox) -> None:
    async def main() -> int | None:
        return sandbox.run_sync(["true"]).exit_code

    assert anyio.run(main) == 0
