"""The self-test's inside half: tries to break out in every way listed, reports each result as JSON.

Run in the sandbox as ``python -I -S probe.py CONFIG`` (standard library only). CONFIG names the
host's loopback listener port, a host directory bound read-only, the launcher's marker variable and
the process limit. Every check passes only when the attempt *fails*; the host adds its own checks
(nothing connected to its listener, nothing written to the bound directory, no process left).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any

_MS_REMOUNT, _MS_BIND, _MS_RDONLY = 32, 4096, 1
_CLONE_NEWUSER, _CLONE_NEWNS = 0x10000000, 0x00020000
_PTRACE_ATTACH, _PTRACE_DETACH, _WALL = 16, 17, 0x40000000
_ALLOWED_ENV = {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "TOOLRIG_REPLY", "PWD"}

_libc = ctypes.CDLL(None, use_errno=True)


def _fails(call: Callable[[], int]) -> tuple[bool, str]:
    result = call()
    if result == -1:
        return True, os.strerror(ctypes.get_errno())
    return False, f"returned {result}"


def _binary_fails(argv: list[str]) -> tuple[bool, str]:
    if shutil.which(argv[0]) is None:
        return True, f"{argv[0]} absent"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    return done.returncode != 0, f"{' '.join(argv)} -> {done.returncode} {done.stderr.strip()[:120]}"


def check_remount(_: dict[str, Any]) -> tuple[bool, str]:
    ok1, why1 = _fails(lambda: _libc.mount(None, b"/usr", None, _MS_REMOUNT | _MS_BIND, None))
    if not ok1:  # it worked: put it back at once, so that this probe never writes the host itself
        _libc.mount(None, b"/usr", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None)
    ok2, why2 = _fails(lambda: _libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
    ok3, why3 = _binary_fails(["mount", "-o", "remount,rw", "/usr"])
    return ok1 and ok2 and ok3, f"remount /usr: {why1}; mount tmpfs: {why2}; {why3}"


def _write_fails(path: str, mode: str = "a") -> tuple[bool, str]:
    try:
        with open(path, mode) as handle:
            handle.write("toolrig-probe\n")
    except OSError as exc:
        return True, f"{path}: {errno.errorcode.get(exc.errno or 0, exc.errno)}"
    return False, f"{path}: written"


def check_write_etc(_: dict[str, Any]) -> tuple[bool, str]:
    results = [_write_fails("/etc/passwd"), _write_fails("/etc/toolrig-probe", "w"),
               _write_fails("/usr/toolrig-probe", "w"), _write_fails("/toolrig-probe", "w")]
    return all(r[0] for r in results), "; ".join(r[1] for r in results)


def check_write_bound_dir(config: dict[str, Any]) -> tuple[bool, str]:
    bound = config["bound_dir"]
    results = [_write_fails(os.path.join(bound, "canary.txt")), _write_fails(os.path.join(bound, "new.txt"), "w")]
    return all(r[0] for r in results), "; ".join(r[1] for r in results)


def check_nested_userns(_: dict[str, Any]) -> tuple[bool, str]:
    ok1, why1 = _fails(lambda: _libc.unshare(_CLONE_NEWUSER))
    ok2, why2 = _fails(lambda: _libc.unshare(_CLONE_NEWNS))
    ok3, why3 = _binary_fails(["unshare", "-U", "true"])
    return ok1 and ok2 and ok3, f"unshare(CLONE_NEWUSER): {why1}; unshare(CLONE_NEWNS): {why2}; {why3}"


def check_network(config: dict[str, Any]) -> tuple[bool, str]:
    names = sorted(name for _, name in socket.if_nameindex())
    try:
        with socket.create_connection(("127.0.0.1", int(config["port"])), timeout=3):
            connected = "connected to the host's loopback listener"
    except OSError as exc:
        connected = f"connect refused ({type(exc).__name__})"
    ok = names in ([], ["lo"]) and connected.startswith("connect refused")
    return ok, f"interfaces {names}; {connected}"


def check_ptrace(_: dict[str, Any]) -> tuple[bool, str]:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(write)
        os.read(read, 1)
        os._exit(0)
    os.close(read)
    try:
        ok1, why1 = _fails(lambda: _libc.ptrace(_PTRACE_ATTACH, child, None, None))
        if not ok1:
            os.waitpid(child, 0)  # the attach stop
            _libc.ptrace(_PTRACE_DETACH, child, None, None)
        ok2, why2 = _fails(lambda: _libc.ptrace(_PTRACE_ATTACH, 1, None, None))
        if not ok2:  # it worked: let the sandbox's init go again, or the whole run hangs
            os.waitpid(1, _WALL)
            _libc.ptrace(_PTRACE_DETACH, 1, None, None)
    finally:
        os.close(write)
        os.waitpid(child, 0)
    return ok1 and ok2, f"attach to own child: {why1}; attach to pid 1: {why2}"


def _environ_names(pid: str) -> set[str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return set()
    return {item.split(b"=", 1)[0].decode("utf-8", "replace") for item in data.split(b"\0") if item}


def check_environ(config: dict[str, Any]) -> tuple[bool, str]:
    marker = config["marker"].encode()
    leaks, names = [], set(os.environ)
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        names |= _environ_names(pid)
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if marker in handle.read():
                    leaks.append(pid)
        except OSError:
            continue
    extra = sorted(names - _ALLOWED_ENV)
    ok = not leaks and not extra
    return ok, f"marker in /proc/{{{','.join(leaks)}}}/environ; unexpected names {extra}" if not ok else (
        f"only {sorted(names)}")


def check_proc_writable(_: dict[str, Any]) -> tuple[bool, str]:
    writable = []
    for root, dirs, files in os.walk("/proc"):
        parts = root.split("/")
        if len(parts) > 2 and (parts[2].isdigit() or parts[2] in ("self", "thread-self")):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(root, name)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY))
            except OSError:
                continue
            writable.append(path)
    return not writable, f"writable: {writable[:10]} ({len(writable)})" if writable else "no kernel knob writable"


def check_identity(_: dict[str, Any]) -> tuple[bool, str]:
    with open("/proc/self/status") as handle:
        status = dict(line.split(":\t", 1) for line in handle.read().splitlines() if ":\t" in line)
    caps = {k: status.get(k, "?").strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    no_caps = all(v.strip("0") == "" for v in caps.values())
    ids = (os.getuid(), os.getgid(), os.geteuid(), os.getegid())
    ok = no_caps and ids == (65534,) * 4 and status.get("NoNewPrivs", "").strip() == "1"
    return ok, f"ids {ids}; caps {caps}; NoNewPrivs {status.get('NoNewPrivs', '?').strip()}; " \
               f"Seccomp {status.get('Seccomp', '?').strip()}"


def check_process_view(_: dict[str, Any]) -> tuple[bool, str]:
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    root_view = sorted(os.listdir("/proc/1/root")) == sorted(os.listdir("/"))
    shadow = os.path.exists("/proc/self/root/etc/shadow") or os.path.exists("/proc/1/root/etc/shadow")
    ok = len(pids) <= 8 and root_view and not shadow
    return ok, f"{len(pids)} processes visible; /proc/1/root is this root: {root_view}; shadow visible: {shadow}"


def check_pids_limit(config: dict[str, Any]) -> tuple[bool, str]:
    limit = int(config["pids"])
    read, write = os.pipe()
    children, failure = [], ""
    try:
        for _ in range(limit + 8):
            try:
                child = os.fork()
            except OSError as exc:
                failure = errno.errorcode.get(exc.errno or 0, str(exc.errno))
                break
            if child == 0:
                os.close(write)
                os.read(read, 1)
                os._exit(0)
            children.append(child)
    finally:
        os.close(write)
        for child in children:
            os.waitpid(child, 0)
    return bool(failure) and len(children) < limit, f"{len(children)} forks, then {failure or 'no failure'}"


CHECKS = {"identity": check_identity, "write_etc": check_write_etc, "write_bound_dir": check_write_bound_dir,
          "remount": check_remount, "nested_userns": check_nested_userns,
          "network": check_network, "ptrace": check_ptrace, "environ": check_environ,
          "proc_writable": check_proc_writable, "process_view": check_process_view,
          "pids_limit": check_pids_limit}


def main() -> None:
    """Run every check; write ``{"checks": {name: [passed, detail]}}`` to the reply channel."""
    config = json.loads(sys.argv[1])
    results: dict[str, Any] = {}
    for name, check in CHECKS.items():
        try:
            results[name] = list(check(config))
        except Exception as exc:  # a check that crashed proves nothing: it fails
            results[name] = [False, f"check crashed: {type(exc).__name__}: {exc}"]
    channel = os.environ.get("TOOLRIG_REPLY", "")
    data = json.dumps({"checks": results}).encode()
    if channel.startswith("fd:"):
        os.write(int(channel[3:]), data)
    elif channel.startswith("file:"):
        with open(channel[5:], "wb") as handle:
            handle.write(data)


if __name__ == "__main__":
    main()
