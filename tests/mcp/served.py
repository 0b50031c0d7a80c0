"""``toolrig serve --http`` as people run it, for the fault tests: a subprocess with a config file, its stderr read
line by line (``--json``: one JSON object a line), ``/healthz``, SDK clients (with a bearer token when given), and
signals sent by PID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp_helpers import PEER, PYTHON, REPO, free_port

from toolrig.mcp import open_pins


class Served:
    """A running ``toolrig serve --http``."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def events(self) -> list[dict[str, Any]]:
        """The JSON lines of stderr (logs are ``{"event": "log", ...}``)."""
        out = []
        for line in list(self.lines):
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def logs(self, contains: str) -> list[str]:
        """Log messages containing ``contains``."""
        return [e["message"] for e in self.events() if e.get("event") == "log" and contains in e.get("message", "")]

    def health(self, token: str | None = None) -> dict[str, Any]:
        """``/healthz``; with auth on, its details need ``token``."""
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        response = httpx.get(f"http://127.0.0.1:{self.port}/healthz", headers=headers, timeout=10)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        """Poll ``predicate`` (bounded); fail early if the server died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"toolrig serve exited ({self.proc.returncode}) waiting for {what}:\n"
                                     + "\n".join(self.lines[-40:]))
            time.sleep(0.05)
        raise AssertionError(f"not within {timeout} s: {what}\n" + "\n".join(self.lines[-40:]))

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def exit_code(self, timeout: float = 60.0) -> int:
        rc = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return rc


def gateway_config(tmp_path: Path, *, audit: Path | None, extra: str = "", peer: bool = True) -> Path:
    """A ``toolrig.toml``: the peer server (stdio, sandboxed, trusted), everything allowed, audit to ``audit``."""
    servers = ""
    if peer:
        servers = (f"[mcpServers.peer]\ncommand = {json.dumps(PYTHON)}\nargs = [{json.dumps(str(PEER))}, \"stdio\"]\n"
                   "trusted = true\n")
    audit_line = f"audit = {json.dumps(str(audit))}" if audit is not None else "audit = false"
    config = tmp_path / "toolrig.toml"
    config.write_text(f'name = "faults"\n{servers}\n[policy]\nallow = ["*"]\n\n[runtime]\n{audit_line}\n\n{extra}\n',
                      encoding="utf-8")
    return config


def approve_peer(tmp_path: Path) -> dict[str, str]:
    """Approve the peer's launch in a state file of the test's own; the environment that points at it."""
    open_pins(tmp_path / "mcp.db").approve_launch([PYTHON, str(PEER), "stdio"], None, {})
    return {"TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db")}


@contextmanager
def toolrig_serve(tmp_path: Path, config: Path, *, env: dict[str, str] | None = None, args: Sequence[str] = (),
                  ready_timeout: float = 120.0) -> Iterator[Served]:
    """Start ``toolrig serve --config CONFIG --http 127.0.0.1:PORT --json``; wait until it is ready; stop it by PID."""
    port = free_port()
    argv = [PYTHON, "-m", "toolrig", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}", "--json",
            *args]
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, **approve_peer(tmp_path), **(env or {})},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    served = Served(proc, port)
    try:
        served.wait_for(lambda: any(e.get("event") == "ready" for e in served.events()), "the ready line",
                        ready_timeout)
        yield served
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@asynccontextmanager
async def sdk_client(url: str, token: str | None = None) -> AsyncIterator[Any]:
    """The official SDK's ``Client`` on ``url`` (legacy handshake), with ``Authorization: Bearer token`` if given."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
            yield client
