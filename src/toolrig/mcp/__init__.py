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

Gateway (``toolrig serve``): :class:`Gateway` from a :class:`GatewayConfig` — upstream servers, Python tools and
built-ins in a :class:`GatewayToolset` that reviews every upstream tool (:func:`scan_tool`, pins in a
:class:`PinStore`), served with the whole pipeline.

The toolrig core never imports this package.
"""

from __future__ import annotations

from toolrig.errors import MCPCallError, MCPConfigError, MCPMaybeRanError, MCPUnavailableError
from toolrig.mcp._approvers import ClientApprover
from toolrig.mcp._auth import BearerAuth, JWTVerifier, StaticTokens
from toolrig.mcp._callbacks import ElicitationHandler, LogHandler, SamplingHandler
from toolrig.mcp._config import MCPServers, from_config, read_servers
from toolrig.mcp._content import Prompts, PromptSource, Resources, ResourceSource
from toolrig.mcp._events import MemoryEventStore
from toolrig.mcp._gateway import Gateway, LaunchAsker
from toolrig.mcp._gateway_config import GatewayConfig, config_from_mapping, load_gateway_config
from toolrig.mcp._gateway_toolset import Blocked, GatewayToolset, PinMode
from toolrig.mcp._health import HealthState, ServerHealth
from toolrig.mcp._peer import PEER_KEY, ClientPeer, current_peer
from toolrig.mcp._pins import STATE_ENV, Pin, PinStatus, PinStore, canonical_definition, definition_hash, open_pins
from toolrig.mcp._report import startup_report, startup_text
from toolrig.mcp._scan import ScanReport, scan_definition, scan_tool
from toolrig.mcp._serve import build_server, http_app, serve, serve_async
from toolrig.mcp._server import ToolServer
from toolrig.mcp._stages import CallerCacheStage, served_stages
from toolrig.mcp._target import Target, parse_target
from toolrig.mcp._tool import MCPTool
from toolrig.mcp._toolset import ChangeListener, MCPToolset
from toolrig.mcp._upstream import UpstreamContent

__all__ = [
    "PEER_KEY",
    "STATE_ENV",
    "BearerAuth",
    "Blocked",
    "CallerCacheStage",
    "ChangeListener",
    "ClientApprover",
    "ClientPeer",
    "ElicitationHandler",
    "Gateway",
    "GatewayConfig",
    "GatewayToolset",
    "HealthState",
    "JWTVerifier",
    "LaunchAsker",
    "LogHandler",
    "MCPCallError",
    "MCPConfigError",
    "MCPMaybeRanError",
    "MCPServers",
    "MCPTool",
    "MCPToolset",
    "MCPUnavailableError",
    "MemoryEventStore",
    "Pin",
    "PinMode",
    "PinStatus",
    "PinStore",
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
    "UpstreamContent",
    "build_server",
    "canonical_definition",
    "config_from_mapping",
    "current_peer",
    "definition_hash",
    "from_config",
    "http_app",
    "load_gateway_config",
    "open_pins",
    "parse_target",
    "read_servers",
    "scan_definition",
    "scan_tool",
    "serve",
    "serve_async",
    "served_stages",
    "startup_report",
    "startup_text",
]
