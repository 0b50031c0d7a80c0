"""Fixtures of the built-in tool tests: the guard tests' canaries and network guard, runtimes, approvals."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builtin_helpers import Approvals

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "guards"))

from guard_helpers import Canary, NetworkGuard, PathCanary, is_literal, path_canary_at


@pytest.fixture
def security(shared_dir: Path) -> Path:
    return shared_dir / "data" / "security"


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    try:
        yield listener
    finally:
        listener.close()


@pytest.fixture
def path_canary(tmp_path: Path) -> Iterator[PathCanary]:
    with path_canary_at(tmp_path, "toolrig-builtins-") as canary:
        yield canary


@pytest.fixture
def deny_all() -> Approvals:
    return Approvals(False)


@pytest.fixture
def approve_all() -> Approvals:
    return Approvals(True)


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """As in the guard tests: no real DNS (non-literal names refused) and no connection off loopback."""
    guard = NetworkGuard()
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_literal(host):
            guard.names.append(str(host))
            raise socket.gaierror(socket.EAI_NONAME, f"real DNS is disabled in these tests ({host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in ("127.0.0.1", "::1"):
            guard.outside.append(address)
            raise ConnectionRefusedError(f"these tests never connect off loopback ({address!r})")
        real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return guard
