"""Scale-out: two stateless `toolrig serve` replicas share rate limits, breakers, cache and approvals on a real
Redis, and write one audit log to a real PostgreSQL."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_helpers import PYTHON, free_port, running
from pg_server import postgres_server

from toolrig import ErrorKind, Runtime, ToolCall
from toolrig.audit import open_sink
from toolrig.mcp import MCPToolset

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOLS = '''
import os
from toolrig import TransientError, tool

@tool(permission="readonly", rate_limit="3/minute")
def limited() -> str:
    """A tool allowed three calls a minute, across every replica."""
    return "ok"

@tool(permission="readonly")
def flaky() -> str:
    """A tool whose dependency is down."""
    raise TransientError("the dependency is down")

@tool(permission="readonly", cacheable=True, metadata={"cache_scope": "global"})
def which_replica() -> int:
    """Which replica process computed this answer."""
    return os.getpid()

@tool(permission="write")
def guarded(note: str) -> str:
    """A tool a person must approve.

    Args:
        note: what to do.
    """
    return f"done: {note}"
'''


@contextmanager
def redis_url(tmp: Path) -> Iterator[str]:
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing (.ci/run installs it)")
        pytest.skip("redis-server is not installed")
    port = free_port()
    with running([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--dir", str(tmp)], port):
        yield f"redis://127.0.0.1:{port}/0"


def config(tmp: Path, redis: str, postgres: str, prefix: str) -> Path:
    (tmp / "replica_tools.py").write_text(TOOLS)
    path = tmp / "toolrig.toml"
    path.write_text(f"""
name = "replicated"
[serve]
stateless = true
[tools]
modules = ["replica_tools.py"]
[policy]
ask = ["guarded"]
allowed_tools = ["*"]
[approvals]
backend = "client"
queue = "{redis}?prefix={prefix}-approvals"
timeout = 120
[runtime]
state = "{redis}"
state_prefix = "{prefix}"
audit = "{postgres}"
audit_mode = "strict"
""")
    return path


def approve_pending(redis: str, prefix: str, env: dict[str, str]) -> bool:
    """Approve the one pending request through the CLI (another process than both replicas)."""
    queue = f"{redis}?prefix={prefix}-approvals"
    listed = subprocess.run([PYTHON, "-m", "toolrig", "approvals", "list", "--queue", queue, "--json"],
                            capture_output=True, text=True, env=env, timeout=60, check=True)
    pending = [r for r in json.loads(listed.stdout) if r.get("status", "pending") == "pending"]
    if not pending:
        return False
    subprocess.run([PYTHON, "-m", "toolrig", "approvals", "approve", pending[0]["id"], "--queue", queue],
                   capture_output=True, text=True, env=env, timeout=60, check=True)
    return True


async def test_two_stateless_replicas_share_state_approvals_and_one_audit_log(tmp_path: Path) -> None:
    prefix = f"scale-{secrets.token_hex(4)}"
    with ExitStack() as stack:
        redis = stack.enter_context(redis_url(tmp_path))
        postgres = stack.enter_context(postgres_server(tmp_path))
        path = config(tmp_path, redis, postgres, prefix)
        env = {"TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db"), "ALLOWED_TOOLS": ""}
        env = {k: v for k, v in env.items() if v}
        urls = []
        for i in range(2):
            port = free_port()
            stack.enter_context(running([PYTHON, "-m", "toolrig", "serve", "--config", str(path), "--http",
                                         f"127.0.0.1:{port}"], port, env=env, log=tmp_path / f"replica{i}.log"))
            urls.append(f"http://127.0.0.1:{port}/mcp")
        await check_replicas(urls, redis, prefix, {**os.environ, **env})
        rows = open_sink(postgres).query(limit=None)  # type: ignore[union-attr]
        assert len(rows) >= 12 and {r.tool for r in rows} >= {"limited", "flaky", "which_replica", "guarded"}
        assert all(r.status == "completed" for r in rows)


async def check_replicas(urls: list[str], redis: str, prefix: str, env: dict[str, str]) -> None:
    async with httpx2.AsyncClient() as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        response = await http.post(urls[0], json=init, headers={"accept": "application/json, text/event-stream"})
        assert response.status_code == 200 and "mcp-session-id" not in response.headers  # stateless
    a, b = MCPToolset(urls[0], name="a"), MCPToolset(urls[1], name="b")
    async with a, b:
        ra = Runtime(a, audit=False, approval=lambda *x: True)
        rb = Runtime(b, audit=False, approval=lambda *x: True)

        async def on(runtime: Runtime, name: str, **arguments: Any) -> Any:
            return await runtime.call(ToolCall(name=name, arguments=arguments))

        # one rate limit for the two replicas: three calls, then refused wherever the fourth lands
        limited = [await on(r, "limited") for r in (ra, rb, ra, rb)]
        assert [o.ok for o in limited] == [True, True, True, False]
        assert "rate_limited" in limited[3].content
        # one breaker: five failures spread over both replicas open it for both
        flaky = [await on(r, "flaky") for r in (ra, rb) * 3]
        assert all("execution_error" in o.content for o in flaky[:5]) and "circuit_open" in flaky[5].content
        assert "circuit_open" in (await on(ra, "flaky")).content
        # one cache: the answer computed by replica a is served by replica b
        first, second = await on(ra, "which_replica"), await on(rb, "which_replica")
        assert first.ok and second.ok and first.structured == second.structured
        # one approval queue: a call waiting on replica b is approved from a third process
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def guarded() -> None:
                results.append(await on(rb, "guarded", note="ship it"))

            tg.start_soon(guarded)
            with anyio.fail_after(90):
                while not await anyio.to_thread.run_sync(approve_pending, redis, prefix, env):
                    await anyio.sleep(0.2)
        assert results[0].ok and "done: ship it" in results[0].content
    assert ErrorKind.RATE_LIMITED.value in limited[3].content
