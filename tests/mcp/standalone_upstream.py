"""An upstream that asks its client outside the call's stream: the official SDK's ``MCPServer`` over streamable
HTTP, run as a subprocess, whose GET streams are answered late.

    python standalone_upstream.py PORT DELAY_SECONDS

Tools: ``echo(text)``, and ``ask()``: sends ``elicitation/create`` on the session's standalone (GET) stream, as a
server does when it asks without naming the call it belongs to, and answers with what the client said. The SDK's
server drops such a message when no GET stream is open yet (there is no event store to replay it from), so a client
that POSTs the call before the server has answered its GET never sees the question. Each GET is held
``DELAY_SECONDS`` before it reaches the SDK's transport.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context


def main(port: int, delay: float) -> None:
    server = MCPServer("standalone")

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the user for a name on the standalone stream."""
        answer = await ctx.session.elicit_form(
            "who is there?", {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}})
        return f"{answer.action}: {answer.content}"

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    app = server.streamable_http_app()

    async def late_get(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await anyio.sleep(delay)
        await app(scope, receive, send)

    uvicorn.run(late_get, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
