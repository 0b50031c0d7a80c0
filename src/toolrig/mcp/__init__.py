"""MCP both ways: MCP servers as toolsets, toolsets served as MCP servers, and the ``toolrig serve`` gateway.

Client side:

* :class:`MCPToolset` — one server's tools as ordinary toolrig tools (``trust="external"``), run through the
  same :class:`toolrig.Runtime` pipeline as local ones; the transport follows the target (a command line:
  stdio; ``http(s)://.../sse``: SSE; other ``http(s)://``: streamable HTTP; ``ws(s)://``: WebSocket).
* :func:`from_config` — the common ``{"mcpServers": {...}}`` format as one combined toolset, each server's
  tools prefixed with its name.

Built on the official ``mcp`` SDK (protocol, sessions, transports); nothing here parses JSON-RPC itself.
Server side:

* :func:`serve` / :func:`serve_async` — any toolset over stdio or streamable HTTP (loopback by default, Host and
  Origin checked always, optional bearer auth, 256-bit session ids bound to the user, a stateless mode);
  :func:`http_app` — the same as an ASGI app; every call goes through a :class:`toolrig.Runtime`.
* :class:`ClientPeer` — in a served call, the client behind it (log messages, sampling, elicitation).
* :class:`Resources` / :class:`Prompts` — resources and prompts served beside the tools.

The toolrig core never imports this package.
"""

from __future__ import annotations

from toolrig.mcp._auth import BearerAuth, JWTVerifier, StaticTokens
from toolrig.mcp._callbacks import ElicitationHandler, LogHandler, SamplingHandler
from toolrig.mcp._config import MCPServers, from_config, read_servers
from toolrig.mcp._content import Prompts, PromptSource, Resources, ResourceSource
from toolrig.mcp._errors import MCPCallError, MCPConfigError, MCPMaybeRanError, MCPNameError, MCPUnavailableError
from toolrig.mcp._events import MemoryEventStore
from toolrig.mcp._health import HealthState, ServerHealth
from toolrig.mcp._peer import PEER_KEY, ClientPeer, current_peer
from toolrig.mcp._scan import ScanReport, scan_definition, scan_tool
from toolrig.mcp._serve import build_server, http_app, serve, serve_async
from toolrig.mcp._server import ToolServer
from toolrig.mcp._stages import CallerCacheStage, served_stages
from toolrig.mcp._target import Target, parse_target
from toolrig.mcp._tool import MCPTool
from toolrig.mcp._toolset import ChangeListener, MCPToolset

__all__ = [
    "PEER_KEY",
    "BearerAuth",
    "CallerCacheStage",
    "ChangeListener",
    "ClientPeer",
    "ElicitationHandler",
    "HealthState",
    "JWTVerifier",
    "LogHandler",
    "MCPCallError",
    "MCPConfigError",
    "MCPMaybeRanError",
    "MCPNameError",
    "MCPServers",
    "MCPTool",
    "MCPToolset",
    "MCPUnavailableError",
    "MemoryEventStore",
    "PromptSource",
    "Prompts",
    "ResourceSource",
    "Resources",
    "SamplingHandler",
    "ScanReport",
    "ServerHealth",
    "StaticTokens",
    "Target",
    "ToolServer",
    "build_server",
    "current_peer",
    "from_config",
    "http_app",
    "parse_target",
    "read_servers",
    "scan_definition",
    "scan_tool",
    "serve",
    "serve_async",
    "served_stages",
]
