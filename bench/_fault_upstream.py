"""The upstream of bench_faults.py: the official SDK's ``MCPServer`` over streamable HTTP, killed and restarted.

    python _fault_upstream.py PORT

Tools: ``echo(text)`` answers at once, ``slow(seconds)`` after a while.
"""

from __future__ import annotations

import sys


def main(port: int) -> None:
    import anyio
    import uvicorn
    from mcp.server import MCPServer

    server = MCPServer("fault-upstream")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answer after ``seconds``."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
