"""The official SDK's high-level ``MCPServer`` with a tool returning ``str`` (its output schema wraps the string
as ``{"result": ...}``), over stdio: a peer whose structured content the gateway must pass through."""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("sdk-peer")


@server.tool()
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


if __name__ == "__main__":
    server.run("stdio")
