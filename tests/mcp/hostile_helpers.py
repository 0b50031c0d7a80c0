"""A hostile upstream (``hostile_forwarder.py``, SDK-built) behind ``toolrig serve --http`` with bearer tokens for
alice, bob and a CI identity whose token names the agent ``ci-bot``; SDK clients for them.

The gateway serves the same hostile server three times: ``evil`` (forwarding rules left at their default,
"ask"), ``fwd`` (sampling and elicitation forwarded: "allow") and ``walled`` ("deny"). Its policy asks before
any ``evil__*`` tool runs, except for the agent ``ci-bot``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import HERE, PYTHON, free_port, running

from toolrig.audit import AuditLog, AuditRecord

HOSTILE = HERE / "hostile_forwarder.py"
TOKENS = {"alice": "tok-alice", "bob": "tok-bob", "ci": "tok-ci"}
AUDIENCE = "http://127.0.0.1/mcp"


@dataclass(frozen=True)
class HostileGateway:
    url: str
    base: str
    audit: Path
    queue: Path
    upstream_log: Path
    serve_log: Path

    def upstream_events(self, event: str) -> list[dict[str, Any]]:
        """What the hostile server recorded for ``event`` (what it got back)."""
        if not self.upstream_log.exists():
            return []
        lines = self.upstream_log.read_text(encoding="utf-8").splitlines()
        return [e for e in map(json.loads, lines) if e["event"] == event]

    async def rows(self, tool: str, *, count: int = 1, timeout: float = 30.0, **filters: Any) -> list[AuditRecord]:
        """At least ``count`` completed audit rows of ``tool`` (waits for the gateway's writer)."""
        with anyio.fail_after(timeout):
            while True:
                rows = [r for r in AuditLog(self.audit).query(tool=tool, **filters) if r.status == "completed"] \
                    if self.audit.exists() else []
                if len(rows) >= count:
                    return rows
                await anyio.sleep(0.05)


def gateway_toml(hostile_url: str, tmp: Path) -> str:
    return f"""
name = "hostile-test"

[serve.auth]
audience = "{AUDIENCE}"
tokens = {{ "tok-alice" = "alice", "tok-bob" = "bob", "tok-ci" = {{ user = "ci", agent = "ci-bot" }} }}

[mcpServers.evil]
url = "{hostile_url}"

[mcpServers.fwd]
url = "{hostile_url}"
forward_sampling = "allow"
forward_elicitation = "allow"

[mcpServers.walled]
url = "{hostile_url}"
forward_sampling = "deny"
forward_elicitation = "deny"

[policy]
allow = ["fwd__*", "walled__*"]
layers = [{{ agent = "ci-bot", allow = ["evil__*"] }}]

[approvals]
backend = "client"
queue = "{tmp / 'approvals.db'}"
timeout = 60

[runtime]
audit = "{tmp / 'audit.db'}"
"""


@contextmanager
def hostile_gateway(tmp: Path) -> Iterator[HostileGateway]:
    """The hostile server and ``toolrig serve --http`` in front of it, both stopped by PID afterwards."""
    upstream_port, port = free_port(), free_port()
    upstream_log = tmp / "hostile.jsonl"
    config = tmp / "toolrig.toml"
    config.write_text(gateway_toml(f"http://127.0.0.1:{upstream_port}/mcp", tmp), encoding="utf-8")
    env = {"TOOLRIG_MCP_STATE": str(tmp / "mcp.db"), "TOOLRIG_APPROVALS": str(tmp / "approvals.db")}
    with running([PYTHON, str(HOSTILE), str(upstream_port)], upstream_port, env={"HOSTILE_LOG": str(upstream_log)}), \
            running([PYTHON, "-m", "toolrig", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"], port,
                    env=env, log=tmp / "serve.log"):
        yield HostileGateway(url=f"http://127.0.0.1:{port}/mcp", base=f"http://127.0.0.1:{port}",
                             audit=tmp / "audit.db", queue=tmp / "approvals.db", upstream_log=upstream_log,
                             serve_log=tmp / "serve.log")


@asynccontextmanager
async def sdk_client(gw: HostileGateway, who: str, *, name: str = "test-client", **callbacks: Any
                     ) -> AsyncIterator[Client]:
    """An official SDK client with ``who``'s bearer token, calling itself ``name`` in the handshake."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[who]}"},
                                  timeout=httpx2.Timeout(60, read=300)) as http, \
            Client(streamable_http_client(gw.url, http_client=http), mode="legacy", cache=None,
                   client_info=mcp_types.Implementation(name=name, version="1"), **callbacks) as client:
        yield client


def result_text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


async def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll ``predicate()`` until it returns something truthy (bounded)."""
    with anyio.fail_after(timeout):
        while not (value := predicate()):
            await anyio.sleep(0.05)
        return value
