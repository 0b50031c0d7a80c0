"""A real redis-server for tests: ``REDIS_URL`` when set, else one started here on 127.0.0.1.

Used by ``tests/state/conftest.py`` and ``tests/runtime/test_shared_state.py``.
"""

from __future__ import annotations

import os
import selectors
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["redis_server"]

READY = b"Ready to accept connections"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Read the server's log until it says it is ready (no polling: waits on the pipe)."""
    assert proc.stdout is not None
    seen = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while READY not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                raise RuntimeError(f"redis-server did not start: {seen.decode(errors='replace')[-500:]}")
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"redis-server exited: {seen.decode(errors='replace')[-500:]}")
            seen += chunk


@contextmanager
def redis_server(workdir: Path) -> Iterator[str | None]:
    """Yield a Redis URL (``REDIS_URL``, or a server started here), or None when neither is possible."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    exe = shutil.which("redis-server")
    if exe is None:
        yield None
        return
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(workdir), "--loglevel", "notice"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(proc, time.monotonic() + 20)
        assert proc.stdout is not None
        drain = threading.Thread(target=proc.stdout.read, daemon=True)  # keep the log pipe from filling
        drain.start()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
