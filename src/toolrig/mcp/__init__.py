"""MCP both ways: MCP servers as toolsets, toolsets served as MCP servers, and the ``toolrig serve`` gateway.

Client side:

* :class:`MCPToolset` — one server's tools as ordinary toolrig tools (``trust="external"``), run through the
  same :class:`toolrig.Runtime` pipeline as local ones; the transport follows the target (a command line:
  stdio; ``http(s)://.../sse``: SSE; other ``http(s)://``: streamable HTTP; ``ws(s)://``: WebSocket).
* :func:`from_config` — the common ``{"mcpServers": {...}}`` format as one combined toolset, each server's
  tools prefixed with its name.
* A launched (stdio) server runs in the OS sandbox when asked (``MCPToolset(..., sandbox=True)``, an entry's
  ``"sandbox"``, :class:`LaunchSandbox`); the gateway sandboxes every one unless its entry says ``false``.

Built on the official ``mcp`` SDK (protocol, sessions, transports); nothing here parses JSON-RPC itself.
Server side:

* :func:`serve` / :func:`serve_async` — any toolset over stdio or streamable HTTP (loopback by default, Host and
  Origin checked always, optional bearer auth, 256-bit session ids bound to the user, a stateless mode);
  :func:`http_app` — the same as an ASGI app; every call goes through a :class:`toolrig.Runtime`.
* :class:`ClientPeer` — in a served call, the client behind it (log messages, sampling, elicitation).
* :class:`ForwardGate` / :class:`ForwardRules` — what an upstream's sampling and elicitation requests may do
  when passed on to that client (deny / ask / allow per server; labelled, escaped, audited).
* :class:`Resources` / :class:`Prompts` — resources and prompts served beside the tools.

Gateway (``toolrig serve``): :class:`Gateway` from a :class:`GatewayConfig` — upstream servers, Python tools and
built-ins in a :class:`GatewayToolset` that reviews every upstream tool, resource and prompt (collisions,
:func:`scan_tool` / :func:`scan_resource` / :func:`scan_prompt`, pins in a :class:`PinStore`), served with the
whole pipeline (resource reads and prompt gets included).

The toolrig core never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolrig.errors import MCPCallError, MCPConfigError, MCPMaybeRanError, MCPUnavailableError
from toolrig.mcp._callbacks import ElicitationHandler, LogHandler, SamplingHandler
from toolrig.mcp._config import MCPServers, from_config, read_servers
from toolrig.mcp._forward_gate import ForwardGate, ForwardRules
from toolrig.mcp._health import HealthState, ServerHealth
from toolrig.mcp._peer import PEER_KEY, ClientPeer, current_peer
from toolrig.mcp._target import LaunchSandbox, Target, parse_target
from toolrig.mcp._tool import MCPTool
from toolrig.mcp._toolset import ChangeListener, MCPToolset

if TYPE_CHECKING:
    from toolrig.mcp._approvers import ClientApprover
    from toolrig.mcp._auth import BearerAuth, JWTVerifier, StaticTokens, VerifiedToken
    from toolrig.mcp._content import ContentCalls, Prompts, PromptSource, Resources, ResourceSource
    from toolrig.mcp._events import MemoryEventStore
    from toolrig.mcp._gateway import Gateway
    from toolrig.mcp._gateway_config import GatewayConfig, config_from_mapping, load_gateway_config
    from toolrig.mcp._gateway_launch import LaunchAsker, LaunchPlan, launch_targets
    from toolrig.mcp._gateway_toolset import Blocked, GatewayToolset, PinMode
    from toolrig.mcp._pins import (
        STATE_ENV,
        Pin,
        PinKind,
        PinStatus,
        PinStore,
        canonical_definition,
        definition_hash,
        open_pins,
    )
    from toolrig.mcp._report import startup_report, startup_text
    from toolrig.mcp._scan import ScanReport, scan_definition, scan_prompt, scan_resource, scan_tool
    from toolrig.mcp._serve import build_server, http_app, serve, serve_async
    from toolrig.mcp._server import ToolServer
    from toolrig.mcp._stages import CallerCacheStage, served_stages
    from toolrig.mcp._upstream import UpstreamContent, list_offers

# Served lazily, so that a client (`MCPToolset`) does not import the server, gateway and policy machinery.
_LAZY = {
    "BearerAuth": "toolrig.mcp._auth",
    "Blocked": "toolrig.mcp._gateway_toolset",
    "CallerCacheStage": "toolrig.mcp._stages",
    "ClientApprover": "toolrig.mcp._approvers",
    "ContentCalls": "toolrig.mcp._content",
    "Gateway": "toolrig.mcp._gateway",
    "GatewayConfig": "toolrig.mcp._gateway_config",
    "GatewayToolset": "toolrig.mcp._gateway_toolset",
    "JWTVerifier": "toolrig.mcp._auth",
    "LaunchAsker": "toolrig.mcp._gateway_launch",
    "LaunchPlan": "toolrig.mcp._gateway_launch",
    "MemoryEventStore": "toolrig.mcp._events",
    "Pin": "toolrig.mcp._pins",
    "PinKind": "toolrig.mcp._pins",
    "PinMode": "toolrig.mcp._gateway_toolset",
    "PinStatus": "toolrig.mcp._pins",
    "PinStore": "toolrig.mcp._pins",
    "PromptSource": "toolrig.mcp._content",
    "Prompts": "toolrig.mcp._content",
    "ResourceSource": "toolrig.mcp._content",
    "Resources": "toolrig.mcp._content",
    "STATE_ENV": "toolrig.mcp._pins",
    "ScanReport": "toolrig.mcp._scan",
    "StaticTokens": "toolrig.mcp._auth",
    "ToolServer": "toolrig.mcp._server",
    "UpstreamContent": "toolrig.mcp._upstream",
    "VerifiedToken": "toolrig.mcp._auth",
    "build_server": "toolrig.mcp._serve",
    "canonical_definition": "toolrig.mcp._pins",
    "config_from_mapping": "toolrig.mcp._gateway_config",
    "definition_hash": "toolrig.mcp._pins",
    "http_app": "toolrig.mcp._serve",
    "launch_targets": "toolrig.mcp._gateway_launch",
    "list_offers": "toolrig.mcp._upstream",
    "load_gateway_config": "toolrig.mcp._gateway_config",
    "open_pins": "toolrig.mcp._pins",
    "scan_definition": "toolrig.mcp._scan",
    "scan_prompt": "toolrig.mcp._scan",
    "scan_resource": "toolrig.mcp._scan",
    "scan_tool": "toolrig.mcp._scan",
    "serve": "toolrig.mcp._serve",
    "serve_async": "toolrig.mcp._serve",
    "served_stages": "toolrig.mcp._stages",
    "startup_report": "toolrig.mcp._report",
    "startup_text": "toolrig.mcp._report",
}


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolrig.mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "PEER_KEY",
    "STATE_ENV",
    "BearerAuth",
    "Blocked",
    "CallerCacheStage",
    "ChangeListener",
    "ClientApprover",
    "ClientPeer",
    "ContentCalls",
    "ElicitationHandler",
    "ForwardGate",
    "ForwardRules",
    "Gateway",
    "GatewayConfig",
    "GatewayToolset",
    "HealthState",
    "JWTVerifier",
    "LaunchAsker",
    "LaunchPlan",
    "LaunchSandbox",
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
    "PinKind",
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
    "VerifiedToken",
    "build_server",
    "canonical_definition",
    "config_from_mapping",
    "current_peer",
    "definition_hash",
    "from_config",
    "http_app",
    "launch_targets",
    "list_offers",
    "load_gateway_config",
    "open_pins",
    "parse_target",
    "read_servers",
    "scan_definition",
    "scan_prompt",
    "scan_resource",
    "scan_tool",
    "serve",
    "serve_async",
    "served_stages",
    "startup_report",
    "startup_text",
]
