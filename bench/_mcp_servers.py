"""The servers and fronts of bench_mcp.py, one trivial tool each (``async echo(text) -> text``), as subprocesses.

The tool is async everywhere: the SDK runs a sync tool in the event loop itself, toolrig on a worker thread
(so that a slow one cannot block the loop); an async tool compares the servers, not that choice.

    python _mcp_servers.py toolrig stdio | toolrig http PORT      toolrig's server (project environment)
    python _mcp_servers.py sdk stdio     | sdk http PORT          the SDK's MCPServer (the upstream, and a peer)
    python _mcp_servers.py fastmcp-proxy PORT URL                 FastMCP ``create_proxy(URL)``, its default
    python _mcp_servers.py fastmcp-reuse PORT URL                 FastMCP proxy over one connected Client
    python _mcp_servers.py sdk-forward PORT URL                   MCPServer whose echo forwards over one Client

All but ``toolrig`` run in the peers' own environment (``requirements-mcp.txt``); every HTTP server listens on
127.0.0.1 with uvicorn (uvloop and httptools installed in both environments).
"""

from __future__ import annotations

import sys
from typing import Any


def toolrig_server(transport: str, port: int) -> None:
    from toolrig import tool
    from toolrig.mcp import serve
    from toolrig.toolsets import FunctionToolset

    @tool(permission="readonly")
    async def echo(text: str) -> str:
        """Echo the text back.

        Args:
            text: what to echo.
        """
        return text

    serve(FunctionToolset([echo]), transport="stdio" if transport == "stdio" else "http", port=port, audit=False,
          name="toolrig-bench")


def _uvicorn(app: Any, port: int) -> None:
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def sdk_server(transport: str, port: int) -> None:
    from mcp.server import MCPServer

    server = MCPServer("sdk-bench")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    if transport == "stdio":
        server.run("stdio")
    else:
        _uvicorn(server.streamable_http_app(), port)


def fastmcp_proxy(port: int, url: str, *, reuse: bool) -> None:
    import anyio
    from fastmcp import Client
    from fastmcp.server import create_proxy

    async def main() -> None:
        if not reuse:  # the default: a fresh upstream session for every request
            await create_proxy(url).run_http_async(host="127.0.0.1", port=port, show_banner=False,
                                                  log_level="warning")
            return
        async with Client(url) as client:  # connected: FastMCP reuses its session for every request
            await create_proxy(client).run_http_async(host="127.0.0.1", port=port, show_banner=False,
                                                     log_level="warning")

    anyio.run(main)


def sdk_forward(port: int, url: str) -> None:
    """The SDK's own server with a hand-written tool that forwards to the upstream over one open ``Client``."""
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    from mcp import Client
    from mcp.server import MCPServer

    upstream: list[Any] = []

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with Client(url, mode="legacy", cache=None) as client:
            upstream.append(client)
            yield

    server = MCPServer("sdk-forward", lifespan=lifespan)

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back (answered by the upstream)."""
        result = await upstream[0].call_tool("echo", {"text": text})
        return str(result.content[0].text)

    _uvicorn(server.streamable_http_app(), port)


if __name__ == "__main__":
    which = sys.argv[1]
    if which in ("toolrig", "sdk"):
        how = sys.argv[2]
        (toolrig_server if which == "toolrig" else sdk_server)(how, int(sys.argv[3]) if how == "http" else 0)
    elif which in ("fastmcp-proxy", "fastmcp-reuse"):
        fastmcp_proxy(int(sys.argv[2]), sys.argv[3], reuse=which == "fastmcp-reuse")
    elif which == "sdk-forward":
        sdk_forward(int(sys.argv[2]), sys.argv[3])
    else:
        raise SystemExit(f"unknown server {which}")
