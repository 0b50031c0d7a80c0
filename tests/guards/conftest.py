"""Fixtures of the guard tests: no real DNS, no connection off loopback, canaries that count."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import inotify_simple
import pytest

SECURITY = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "security"


@pytest.fixture
def security(shared_dir: Path) -> Path:
    return shared_dir / "data" / "security"


def load_json(name: str) -> Any:
    """A corpus file (None when ../shared is absent: the tests using it then skip via ``security``)."""
    path = SECURITY / name
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def load_lines(name: str) -> list[str]:
    path = SECURITY / name
    if not path.is_file():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def expand(entry: Any) -> str:
    """A corpus value, with ``{"payload_spec": ...}`` expanded (repeat/count/then or template/fill/count)."""
    if isinstance(entry, dict) and "payload_spec" in entry:
        spec = entry["payload_spec"]
        if "repeat" in spec:
            return str(spec["repeat"]) * int(spec["count"]) + str(spec.get("then", ""))
        return str(spec["template"]).replace("@@", str(spec["fill"]) * int(spec["count"]))
    return str(entry)


def _is_literal(host: object) -> bool:
    if host is None:
        return True
    text = host.decode() if isinstance(host, bytes) else str(host)
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


@dataclass
class NetworkGuard:
    """What the test tried: names resolved through getaddrinfo, connects off loopback (both refused)."""

    names: list[str] = field(default_factory=list)
    outside: list[Any] = field(default_factory=list)


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Real DNS is impossible here: getaddrinfo refuses any non-literal host, and a connect to anything
    but 127.0.0.1 / ::1 is refused before it leaves the machine."""
    guard = NetworkGuard()
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_literal(host):
            guard.names.append(str(host))
            raise socket.gaierror(socket.EAI_NONAME, f"real DNS is disabled in the guard tests ({host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    def _check(address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in ("127.0.0.1", "::1"):
            guard.outside.append(address)
            raise ConnectionRefusedError(f"the guard tests never connect off loopback ({address!r})")

    def connect(self: socket.socket, address: Any) -> None:
        _check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return guard


class Canary:
    """A real TCP listener on 127.0.0.1 that counts every connection it accepts (and closes it)."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._sock.close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    try:
        yield listener
    finally:
        listener.close()


WATCH = (inotify_simple.flags.OPEN | inotify_simple.flags.ACCESS | inotify_simple.flags.MODIFY
         | inotify_simple.flags.CLOSE_WRITE | inotify_simple.flags.CREATE | inotify_simple.flags.DELETE
         | inotify_simple.flags.MOVED_FROM | inotify_simple.flags.MOVED_TO | inotify_simple.flags.DELETE_SELF
         | inotify_simple.flags.MOVE_SELF)


class PathCanary:
    """``base/outside`` holds ``secret.txt`` (a unique token) and ``canary_dir/``, watched with inotify
    (opens, reads, writes, creations, deletions, moves); roots are made beside it with every setup of
    the corpus (symlinks out, a symlink chain, a hard link to the secret, a FIFO)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.outside = base / "outside"
        self.canary_dir = self.outside / "canary_dir"
        self.canary_dir.mkdir(parents=True)
        self.token = f"CANARY-{uuid.uuid4().hex}"
        self.secret = self.outside / "secret.txt"
        self.secret.write_text(self.token)
        (self.canary_dir / "inner.txt").write_text(self.token)
        self._notify = inotify_simple.INotify()
        for directory in (self.outside, self.canary_dir):
            self._notify.add_watch(directory, WATCH)
        # a file watch follows the inode, so it also sees the hard link made inside roots: renaming or
        # unlinking that inside name is not an outside write, so MOVE_SELF is left out for files
        for file in (self.secret, self.canary_dir / "inner.txt"):
            self._notify.add_watch(file, WATCH & ~inotify_simple.flags.MOVE_SELF)
        self.roots = 0

    def make_root(self) -> Path:
        self.roots += 1
        root = self.base / f"root{self.roots}"
        root.mkdir()
        (root / "inside.txt").write_text("inside")
        (root / "sub").mkdir()
        os.symlink("../outside", root / "link_to_outside")
        os.symlink(str(self.secret), root / "link_abs")
        os.symlink("/etc/passwd", root / "link_passwd")
        os.symlink("chain2", root / "chain1")
        os.symlink("../outside/secret.txt", root / "chain2")
        os.symlink("sub/../../outside", root / "link_dotdot")
        os.link(self.secret, root / "hardlink_to_outside")
        os.mkfifo(root / "fifo")
        self.drain()
        return root

    def drop_root(self, root: Path) -> None:
        shutil.rmtree(root)
        self.drain()

    def drain(self) -> list[Any]:
        return list(self._notify.read(timeout=0))

    def assert_untouched(self, what: str) -> None:
        events = self.drain()
        assert not events, f"{what}: the outside canary saw {events}"

    def snapshot(self) -> dict[str, str]:
        return {str(p.relative_to(self.outside)): (p.read_text() if p.is_file() else "<dir>")
                for p in sorted(self.outside.rglob("*"))}

    def close(self) -> None:
        self._notify.close()


@pytest.fixture
def path_canary(tmp_path: Path) -> Iterator[PathCanary]:
    """On tmpfs (/dev/shm) when there is one: thousands of roots are made and removed."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="toolrig-guards-", dir=shm)) if os.access(shm, os.W_OK) else tmp_path
    canary = PathCanary(base)
    try:
        yield canary
    finally:
        canary.close()
        if base != tmp_path:
            shutil.rmtree(base, ignore_errors=True)


def backends() -> list[Any]:
    """``use_openat2`` values to test: the walk always, openat2 where this kernel has it."""
    from toolrig.guards import PathGuard

    with PathGuard("/") as probe:
        has = probe.backend == "openat2"
    return [pytest.param(False, id="walk"),
            pytest.param(True, id="openat2", marks=pytest.mark.skipif(not has, reason="no openat2 on this kernel"))]
