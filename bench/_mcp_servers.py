"""The servers of bench_mcp.py, one trivial tool each (``async echo(text) -> text``), run as subprocesses.

The tool is async for both: the SDK runs a sync tool in the event loop itself, toolrig on a worker thread
(so that a slow one cannot block the loop); an async tool compares the servers, not that choice.

    python _mcp_servers.py toolrig stdio | toolrig http PORT
    python _mcp_servers.py sdk stdio     | sdk http PORT
"""

from __future__ import annotations

import sys


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
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    which, how = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    (toolrig_server if which == "toolrig" else sdk_server)(how, port)
