"""Fixtures of the sandbox tests: a self-tested sandbox, canaries outside it, a loopback listener.

These tests need bubblewrap. `.ci/run` installs it, so under CI (``CI=true``) a missing or broken
bubblewrap fails the tests instead of skipping them.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from sandbox_helpers import Canaries, adopt_orphans

from toolrig.sandbox import BubblewrapBackend, Sandbox, SandboxLimits


def _need_bubblewrap() -> None:
    reason = BubblewrapBackend().unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"bubblewrap must work under CI (.ci/run installs it): {reason}")
    pytest.skip(f"no bubblewrap on this machine: {reason}")


@pytest.fixture(scope="session", autouse=True)
def _orphans_stay_ours() -> None:
    """Escaped or orphaned sandbox processes reparent to this test run (see ``adopt_orphans``)."""
    if not adopt_orphans() and os.environ.get("CI"):
        pytest.fail("PR_SET_CHILD_SUBREAPER is needed to count surviving sandbox processes")


@pytest.fixture(scope="session")
def need_bubblewrap() -> None:
    """Skip (fail under CI) unless bubblewrap works here."""
    _need_bubblewrap()


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    """A bubblewrap sandbox with short limits, self-tested once for the whole session."""
    _need_bubblewrap()
    box = Sandbox(backend="bubblewrap", limits=SandboxLimits(timeout=10))
    report = anyio.run(box.check)
    assert report.passed, str(report)
    return box


@pytest.fixture
def canaries(tmp_path: Path) -> Iterator[Canaries]:
    secret = "CANARY-" + secrets.token_hex(16)
    home_file = Path.home() / f".toolrig-sandbox-canary-{secrets.token_hex(6)}"
    tmp_file = tmp_path / "canary" / "secret.txt"
    tmp_file.parent.mkdir()
    for path in (home_file, tmp_file):
        path.write_text(secret + "\n")
        path.chmod(0o600)
    try:
        yield Canaries(secret, (tmp_file, home_file))
    finally:
        home_file.unlink(missing_ok=True)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback listener on the host; a sandbox must never reach it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()
