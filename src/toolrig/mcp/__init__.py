"""MCP both ways: MCP servers as toolsets, toolsets served as MCP servers, and the ``toolrig serve`` gateway.

Client side:

* :class:`MCPToolset` — one server's tools as ordinary toolrig tools (``trust="external"``), run through the
  same :class:`toolrig.Runtime` pipeline as local ones; the transport follows the target (a command line:
  stdio; ``http(s)://.../sse``: SSE; other ``http(s)://``: streamable HTTP; ``ws(s)://``: WebSocket).
* :func:`from_config` — the common ``{"mcpServers": {...}}`` format as one combined toolset, each server's
  tools prefixed with its name.

Built on the official ``mcp`` SDK (protocol, sessions, transports); nothing here parses JSON-RPC itself.
The toolrig core never imports this package.
"""

from __future__ import annotations

from toolrig.mcp._callbacks import ElicitationHandler, LogHandler, SamplingHandler
from toolrig.mcp._config import MCPServers, from_config, read_servers
from toolrig.mcp._errors import MCPCallError, MCPConfigError, MCPMaybeRanError, MCPNameError, MCPUnavailableError
from toolrig.mcp._health import HealthState, ServerHealth
from toolrig.mcp._peer import PEER_KEY, ClientPeer, current_peer
from toolrig.mcp._target import Target, parse_target
from toolrig.mcp._tool import MCPTool
from toolrig.mcp._toolset import ChangeListener, MCPToolset

__all__ = [
    "PEER_KEY",
    "ChangeListener",
    "ClientPeer",
    "ElicitationHandler",
    "HealthState",
    "LogHandler",
    "MCPCallError",
    "MCPConfigError",
    "MCPMaybeRanError",
    "MCPNameError",
    "MCPServers",
    "MCPTool",
    "MCPToolset",
    "MCPUnavailableError",
    "SamplingHandler",
    "ServerHealth",
    "Target",
    "current_peer",
    "from_config",
    "parse_target",
    "read_servers",
]
