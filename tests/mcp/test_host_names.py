"""The HTTP front's Host / Origin check compares host names case-insensitively, and only that: real HTTP requests
(httpx with a custom ``Host``) to a real server on 127.0.0.1.

Host names are case-insensitive (RFC 9110 §4.2.3, RFC 4343): ``LOCALHOST:<port>`` names the same host as
``localhost:<port>``. Before the fix, our guard accepted it but the SDK's own check behind it (exact and
case-sensitive) answered 421. Every other name stays refused (DNS rebinding), trailing-dot names included.
"""

from __future__ import annotations

import json
import string
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from served import gateway_config, toolrig_serve

from toolrig import tool
from toolrig.mcp import serve_async

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
EXTRA = "MCP.Example.Test"
"""A name the operator added (in mixed case, as people write them)."""


@tool(permission="readonly")
def echo(text: str) -> str:
    """Echo a text.

    Args:
        text: the text.
    """
    return text


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[int]:
    """toolrig's HTTP server of ``echo`` on a free loopback port, in this event loop; yields the port."""
    ready: list[str] = []
    up = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        up.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async([echo], transport="http", port=0, on_ready=on_ready, audit=False,
                                          allowed_hosts=(EXTRA,), **options))
        with anyio.fail_after(30):
            await up.wait()
        yield int(urlsplit(ready[0]).port or 0)
        tg.cancel_scope.cancel()


async def _session(client: httpx.AsyncClient, port: int, headers: dict[str, str]) -> list[int]:
    """initialize, initialized, tools/list with ``headers``: the three statuses (the later ones only after a 200)."""
    url = f"http://127.0.0.1:{port}/mcp"
    first = await client.post(url, json=INIT, headers={**ACCEPT, **headers})
    if first.status_code != 200:
        return [first.status_code]
    session = {**ACCEPT, **headers, "mcp-session-id": first.headers["mcp-session-id"],
               "mcp-protocol-version": "2025-11-25"}
    second = await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    third = await client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
    return [first.status_code, second.status_code, third.status_code]


ACCEPTED = [
    {"host": "LOCALHOST:{port}"}, {"host": "LocalHost:{port}"}, {"host": "LOCALHOST"}, {"host": "localhost:{port}"},
    {"host": "mcp.example.test"}, {"host": "MCP.EXAMPLE.TEST:{port}"}, {"host": "mCp.ExAmPlE.tEsT:8443"},
    {"host": "LOCALHOST:{port}", "origin": "http://LOCALHOST:{port}"},
    {"host": "127.0.0.1:{port}", "origin": "HTTP://LocalHost:{port}"},
    {"host": "Mcp.Example.Test", "origin": "https://MCP.example.test"},
]
REFUSED = [
    {"host": "evil.test"}, {"host": "EVIL.TEST:{port}"}, {"host": "localhost.evil.test:{port}"},
    {"host": "LOCALHOST.EVIL.TEST"}, {"host": "127.0.0.1.nip.io:{port}"}, {"host": "mcp.example.test.evil.test"},
    {"host": "localhost.:{port}"}, {"host": "LOCALHOST."}, {"host": "Mcp.Example.Test."},
    {"host": "localhost..:{port}"},
    {"host": "xlocalhost:{port}"}, {"host": "LOCALHOST:1"}, {"host": "[::1]:1"}, {"host": "[::FFFF:127.0.0.1]:{port}"},
    {"host": "[0:0:0:0:0:0:0:1]:{port}"}, {"host": "[::1%25lo]:{port}"}, {"host": "[::127.0.0.1]:{port}"},
    {"host": "LOCALHOST:{port}", "origin": "http://EVIL.TEST"},
    {"host": "LOCALHOST:{port}", "origin": "http://localhost.:{port}"},
    {"host": "LOCALHOST:{port}", "origin": "http://LOCALHOST:3000"},
]


def _fill(headers: dict[str, str], port: int) -> dict[str, str]:
    return {k: v.replace("{port}", str(port)) for k, v in headers.items()}


@pytest.mark.parametrize("headers", ACCEPTED, ids=lambda h: " ".join(h.values()))
async def test_allowed_names_in_any_case_get_a_whole_session(headers: dict[str, str]) -> None:
    async with served() as port, httpx.AsyncClient(timeout=30) as client:
        assert await _session(client, port, _fill(headers, port)) == [200, 202, 200]


@pytest.mark.parametrize("headers", REFUSED, ids=lambda h: " ".join(h.values()))
async def test_other_names_stay_refused(headers: dict[str, str]) -> None:
    async with served() as port, httpx.AsyncClient(timeout=30) as client:
        statuses = await _session(client, port, _fill(headers, port))
        assert statuses == [403 if "origin" in headers else 421]
        assert await _session(client, port, {"host": f"127.0.0.1:{port}"}) == [200, 202, 200]


_CASE = st.lists(st.booleans(), min_size=32, max_size=32)


def _spelled(name: str, flips: list[bool]) -> str:
    return "".join(c.upper() if flip else c.lower() for c, flip in zip(name, flips + [False] * len(name), strict=False))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["localhost", "mcp.example.test"]), flips=_CASE, with_port=st.booleans())
def test_any_case_of_an_allowed_name_is_accepted(name: str, flips: list[bool], with_port: bool) -> None:
    async def check() -> None:
        async with served() as port, httpx.AsyncClient(timeout=30) as client:
            host = _spelled(name, flips) + (f":{port}" if with_port else "")
            assert await _session(client, port, {"host": host}) == [200, 202, 200], host

    anyio.run(check)


_LABEL = st.text(string.ascii_letters + string.digits, min_size=1, max_size=12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["localhost", "mcp.example.test", "127.0.0.1"]), flips=_CASE, before=_LABEL,
       after=_LABEL, where=st.sampled_from(["prefix", "suffix", "dot", "glued"]))
def test_an_allowed_name_inside_another_is_refused(name: str, flips: list[bool], before: str, after: str,
                                                   where: str) -> None:
    host = {"prefix": f"{before}.{_spelled(name, flips)}", "suffix": f"{_spelled(name, flips)}.{after}",
            "dot": f"{_spelled(name, flips)}.", "glued": f"{before}{_spelled(name, flips)}"}[where]

    async def check() -> None:
        async with served() as port, httpx.AsyncClient(timeout=30) as client:
            assert await _session(client, port, {"host": f"{host}:{port}"}) == [421], host

    anyio.run(check)


def test_toolrig_serve_http_takes_its_configured_and_loopback_names_in_any_case(tmp_path: Path) -> None:
    """The CLI (``toolrig serve --http``, the gateway) with ``[serve] allowed_hosts`` in mixed case."""
    config = gateway_config(tmp_path, audit=None, peer=False,
                            extra=f"[serve]\nallowed_hosts = [{json.dumps(EXTRA)}]\n[builtins]\nroot = \".\"\n")
    with toolrig_serve(tmp_path, config) as server:
        port = server.port

        async def statuses(headers: dict[str, str]) -> list[int]:
            async with httpx.AsyncClient(timeout=30) as client:
                return await _session(client, port, headers)

        for good in ("LOCALHOST:{port}", "mcp.example.test:{port}", "MCP.EXAMPLE.TEST", "Localhost"):
            assert anyio.run(statuses, {"host": good.replace("{port}", str(port))}) == [200, 202, 200], good
        for bad in ("evil.test", "localhost.evil.test:{port}", "127.0.0.1.nip.io", "LOCALHOST.:{port}",
                    "[::ffff:127.0.0.1]:{port}"):
            assert anyio.run(statuses, {"host": bad.replace("{port}", str(port))}) == [421], bad
