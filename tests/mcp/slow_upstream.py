"""An upstream whose answers stream slowly: the official SDK's ``MCPServer`` over streamable HTTP, run as a subprocess.

    python slow_upstream.py PORT

Tools: ``echo(text)``, and ``slow(steps)``: a progress notification every few milliseconds, ``steps`` of them, on
the call's SSE stream before its answer (a body read while it arrives).
"""

from __future__ import annotations

import sys

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context


def main(port: int) -> None:
    server = MCPServer("slow")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def slow(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, slowly, then answer."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps)
            await anyio.sleep(0.01)
        return f"done after {steps}"

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
