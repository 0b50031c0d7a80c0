"""An upstream for the keep-alive tests: the official SDK's ``MCPServer`` over streamable HTTP that counts the TCP
connections it accepted (each distinct client address and port), run as a subprocess.

    python counting_upstream.py PORT [sse|json]

Tools: ``echo(text)``, and ``connections()``: how many TCP connections it has accepted so far.
``sse`` (the SDK's default) answers every POST with an SSE stream, ``json`` with a JSON body.
"""

from __future__ import annotations

import sys
from typing import Any


def main(port: int, mode: str) -> None:
    import uvicorn
    from mcp.server import MCPServer

    seen: set[tuple[str, int]] = set()
    server = MCPServer("counting")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def connections() -> int:
        """How many TCP connections this server has accepted."""
        return len(seen)

    app = server.streamable_http_app(json_response=mode == "json")

    async def counted(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("client"):
            host, client_port = scope["client"]
            seen.add((host, client_port))
        await app(scope, receive, send)

    uvicorn.run(counted, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "sse")
