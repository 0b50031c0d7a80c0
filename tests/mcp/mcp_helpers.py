"""Helpers for the MCP tests: free ports, subprocess servers stopped by PID, waiting without sleeps."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PEER = HERE / "peer_server.py"
FIXTURE = HERE / "fixture_server.py"
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 60.0) -> None:
    """Poll until 127.0.0.1:port accepts connections (bounded; fails early if ``proc`` exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process we started (and its group), by PID."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@contextmanager
def running(argv: Sequence[str], port: int | None = None, *, env: dict[str, str] | None = None,
            cwd: Path | None = None, log: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` in its own process group; wait for ``port`` if given; stop it by PID afterwards."""
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(list(argv), env={**os.environ, **(env or {})}, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=out, start_new_session=True)
    try:
        if port is not None:
            wait_for_port(port, proc)
        yield proc
    finally:
        stop(proc)
        if log is not None:
            out.close()  # type: ignore[union-attr]


@contextmanager
def peer_http(mode: str = "http", env: dict[str, str] | None = None) -> Iterator[str]:
    """The peer server over HTTP (``http``), SSE (``sse``) or WebSocket (``ws``); yields its URL."""
    port = free_port()
    with running([PYTHON, str(PEER), mode, str(port)], port, env=env):
        if mode == "http":
            yield f"http://127.0.0.1:{port}/mcp"
        elif mode == "sse":
            yield f"http://127.0.0.1:{port}/sse"
        else:
            yield f"ws://127.0.0.1:{port}/"


def read_log(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def wait_until(predicate: object, timeout: float = 30.0) -> None:
    """Poll ``predicate()`` until true (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def which(name: str) -> str | None:
    return shutil.which(name)
