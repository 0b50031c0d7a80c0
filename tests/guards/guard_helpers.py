"""Helpers of the guard tests: corpora, a network guard, canaries that count (fixtures in conftest)."""

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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import inotify_simple
import pytest

SECURITY = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "security"


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


def is_literal(host: object) -> bool:
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


@contextmanager
def path_canary_at(tmp_path: Path, prefix: str) -> Iterator[PathCanary]:
    """A :class:`PathCanary` on tmpfs (/dev/shm) when there is one (thousands of roots are made and removed),
    else under ``tmp_path``; closed and removed afterwards."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=shm)) if os.access(shm, os.W_OK) else tmp_path
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
