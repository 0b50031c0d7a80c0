"""Calls to an HTTP upstream reuse its keep-alive connection: N calls, not N TCP connections.

The upstream (``counting_upstream.py``, the SDK's own server) counts the connections it accepted. The SDK's client
closes a POST's SSE answer as soon as the answer it waits for has arrived, before the end of that stream; toolrig's
transport reads the end first (:mod:`toolrig.mcp.client._http_bounds`), so the connection stays usable.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp_helpers import PYTHON, free_port, stop, wait_for_port
from served import gateway_config, sdk_client, toolrig_serve

from toolrig.mcp import MCPToolset

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("counting_upstream.py")
CALLS = 30


@contextmanager
def counting_upstream(mode: str = "sse") -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([PYTHON, str(UPSTREAM), str(port), mode], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


async def _connections(ts: MCPToolset) -> int:
    tool = ts.get("connections")
    assert tool is not None
    result = await tool.__call_tool__({})
    return int(json.loads(result.text)["result"]) if result.text.startswith("{") else int(result.text)


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_sequential_calls_to_an_http_upstream_use_one_connection(mode: str) -> None:
    with counting_upstream(mode) as url:
        async with MCPToolset(url, health_interval=None) as ts:
            before = await _connections(ts)
            echo = ts.get("echo")
            assert echo is not None
            for i in range(CALLS):
                assert (await echo.__call_tool__({"text": f"call {i}"})).text == f"call {i}"
            after = await _connections(ts)
    # the handshake's connection and the session's GET stream at most; then no new one for the calls
    assert before <= 3
    assert after == before, f"{after - before} new TCP connections for {CALLS} calls"


async def test_concurrent_calls_open_at_most_one_connection_each_in_flight() -> None:
    with counting_upstream() as url:
        async with MCPToolset(url, health_interval=None) as ts:
            before = await _connections(ts)
            echo = ts.get("echo")
            assert echo is not None
            for _ in range(3):  # three waves of 8 calls in flight: the second and third reuse the first's
                async with anyio.create_task_group() as tg:
                    for i in range(8):
                        tg.start_soon(echo.__call_tool__, {"text": f"many {i}"})
            after = await _connections(ts)
    assert after - before <= 8


async def test_gateway_calls_to_an_http_upstream_reuse_its_connection(tmp_path: Path) -> None:
    with counting_upstream() as url:
        extra = f"[mcpServers.up]\nurl = {json.dumps(url)}\nprefix = false\n"
        config = gateway_config(tmp_path, audit=tmp_path / "audit.db", peer=False, extra=extra)
        with toolrig_serve(tmp_path, config) as served:
            async with sdk_client(served.url) as client:
                async def connections() -> int:
                    answer = await client.call_tool("connections", {})
                    assert not answer.is_error, answer
                    text = "".join(c.text for c in answer.content if c.type == "text")  # fenced: data, not orders
                    found = re.search(r'"result": (\d+)', text)
                    assert found is not None, text
                    return int(found.group(1))

                before = await connections()
                for i in range(CALLS):
                    answer = await client.call_tool("echo", {"text": f"through the gateway {i}"})
                    assert not answer.is_error, answer
                after = await connections()
    assert after == before, f"{after - before} new TCP connections for {CALLS} gateway calls"
