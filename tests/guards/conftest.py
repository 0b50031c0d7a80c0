"""Fixtures of the guard tests: no real DNS, no connection off loopback, canaries that count."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from guard_helpers import Canary, NetworkGuard, PathCanary, is_literal, path_canary_at
from webserver import LocalServer


@pytest.fixture
def security(shared_dir: Path) -> Path:
    return shared_dir / "data" / "security"


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Real DNS is impossible here: getaddrinfo refuses any non-literal host, and a connect to anything
    but 127.0.0.1 / ::1 is refused before it leaves the machine."""
    guard = NetworkGuard()
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_literal(host):
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


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    try:
        yield listener
    finally:
        listener.close()


@pytest.fixture
def path_canary(tmp_path: Path) -> Iterator[PathCanary]:
    with path_canary_at(tmp_path, "toolrig-guards-") as canary:
        yield canary


@pytest.fixture
def web() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 (``webserver.LocalServer``), stopped afterwards."""
    server = LocalServer()
    try:
        yield server
    finally:
        server.stop()
