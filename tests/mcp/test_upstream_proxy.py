"""Upstream MCP servers over HTTP honour the environment's proxy (``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``,
``NO_PROXY``), as urllib and httpx do: a real forward proxy on 127.0.0.1 carries the calls, and every bound of the
client still applies (the proxy's transport sits under the same bounded transport)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from toolrig import tool
from toolrig.mcp import MCPToolset, serve_async
from toolrig.mcp.client._transports import proxy_for

pytestmark = pytest.mark.anyio

BEHIND = "mcp.behind-the-proxy.test"
"""A name only the proxy knows (it connects it to the server on 127.0.0.1): the client never resolves it."""
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                   "no_proxy")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@tool(permission="readonly")
def shout(text: str) -> str:
    """Shout a text.

    Args:
        text: the text.
    """
    return text.upper()


@asynccontextmanager
async def served() -> AsyncIterator[str]:
    ready: list[str] = []
    up = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        up.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async([shout], transport="http", port=0, on_ready=on_ready, audit=False,
                                          allowed_hosts=[f"{BEHIND}:*"]))
        with anyio.fail_after(30):
            await up.wait()
        yield ready[0]
        tg.cancel_scope.cancel()


class ForwardProxy:
    """A plain-HTTP forward proxy, one request per connection: it reads the request (absolute-form), sends it to its
    host in origin-form with ``Connection: close``, relays the answer to its end and closes; it records each
    request line as the client sent it."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.port = 0

    async def _relay(self, source: Any, sink: anyio.abc.ByteStream) -> None:
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                await sink.send(await source.receive())
        with suppress(Exception):
            await sink.send_eof()

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            buffered = BufferedByteReceiveStream(client)
            head = await buffered.receive_until(b"\r\n\r\n", 65536) + b"\r\n\r\n"
            line, *headers = head.decode("latin-1").split("\r\n")
            self.requests.append(line)
            method, target, version = line.split(" ")
            authority, _, path = target.split("://", 1)[1].partition("/")
            host, _, port = authority.rpartition(":")
            host = "127.0.0.1" if host == BEHIND else host
            kept = [h for h in headers if h and h.split(":", 1)[0].strip().lower() not in ("connection",
                                                                                          "proxy-connection")]
            origin = "\r\n".join([f"{method} /{path} {version}", *kept, "connection: close", "", ""])
            async with await anyio.connect_tcp(host, int(port)) as upstream:
                await upstream.send(origin.encode("latin-1") + bytes(buffered.buffer))
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._relay, buffered, upstream)
                    await self._relay(upstream, client)
                    tg.cancel_scope.cancel()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ForwardProxy]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, self._handle)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
        await listener.aclose()


async def test_a_server_only_the_proxy_reaches_is_called_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served() as url, ForwardProxy().running() as proxy:
        behind = url.replace("127.0.0.1", BEHIND)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        with anyio.fail_after(60):
            async with MCPToolset(behind, prefix="up") as remote:
                result = await remote.get("up__shout").__call_tool__({"text": "via proxy"})  # type: ignore[union-attr]
        assert result.text == "VIA PROXY"
        assert proxy.requests and all(r.split(" ")[1].startswith(f"http://{BEHIND}:") for r in proxy.requests)
        assert any(r.startswith("POST ") for r in proxy.requests)


async def test_a_loopback_server_is_never_proxied(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served() as url, ForwardProxy().running() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        for local in (url, url.replace("127.0.0.1", "localhost")):
            with anyio.fail_after(60):
                async with MCPToolset(local, prefix="up") as remote:
                    result = await remote.get("up__shout").__call_tool__({"text": "x"})  # type: ignore[union-attr]
            assert result.text == "X"
        assert proxy.requests == []


@pytest.mark.parametrize("no_proxy", [BEHIND, "*", f"localhost,{BEHIND}", f" .{BEHIND.split('.', 1)[1]} "])
async def test_no_proxy_keeps_the_calls_direct(monkeypatch: pytest.MonkeyPatch, no_proxy: str) -> None:
    async with served() as url, ForwardProxy().running() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", no_proxy)
        with anyio.fail_after(60):
            async with MCPToolset(url.replace("127.0.0.1", BEHIND), prefix="up", fail_on_start=False) as remote:
                assert remote.names() == []  # direct: the name resolves nowhere, so the server is unavailable
        assert proxy.requests == []


def test_which_proxy_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    assert proxy_for("http://mcp.example.com/mcp") is None
    monkeypatch.setenv("http_proxy", "http://proxy.internal:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://tls-proxy.internal:3128")
    assert proxy_for("http://mcp.example.com/mcp") == "http://proxy.internal:3128"
    assert proxy_for("https://mcp.example.com/mcp") == "http://tls-proxy.internal:3128"
    monkeypatch.setenv("NO_PROXY", "example.com:8443, .internal.example, [::1]:9000")
    assert proxy_for("https://mcp.example.com:8443/mcp") is None  # a domain, on its port
    assert proxy_for("https://mcp.example.com/mcp") == "http://tls-proxy.internal:3128"  # another port
    assert proxy_for("http://a.b.internal.example/mcp") is None
    assert proxy_for("http://internal.example/mcp") is None
    assert proxy_for("http://notinternal.example/mcp") == "http://proxy.internal:3128"
    assert proxy_for("http://[2001:db8::1]:9000/mcp") is not None  # NO_PROXY names [::1]:9000 only
    assert proxy_for("http://[::1]:9001/mcp") is None and proxy_for("http://127.0.0.5/mcp") is None  # loopback
    assert proxy_for("http://localhost:8000/mcp") is None and proxy_for("http://a.localhost/mcp") is None
    monkeypatch.delenv("http_proxy")
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv("ALL_PROXY", "http://any.internal:8080")
    assert proxy_for("http://elsewhere.example.org/mcp") == "http://any.internal:8080"
