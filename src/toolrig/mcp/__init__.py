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
from toolrig.mcp.client import (
    ChangeListener,
    ForwardGate,
    ForwardRules,
    MCPServers,
    MCPTool,
    MCPToolset,
    from_config,
    read_servers,
)
from toolrig.mcp.shared import (
    PEER_KEY,
    ClientPeer,
    ElicitationHandler,
    HealthState,
    LaunchSandbox,
    LogHandler,
    SamplingHandler,
    ServerHealth,
    Target,
    current_peer,
    parse_target,
)

if TYPE_CHECKING:
    from toolrig.mcp.gateway import (
        STATE_ENV,
        Blocked,
        Gateway,
        GatewayConfig,
        GatewayToolset,
        LaunchAsker,
        LaunchPlan,
        Pin,
        PinKind,
        PinMode,
        PinStatus,
        PinStore,
        ScanReport,
        UpstreamContent,
        canonical_definition,
        config_from_mapping,
        definition_hash,
        launch_targets,
        list_offers,
        load_gateway_config,
        open_pins,
        scan_definition,
        scan_prompt,
        scan_resource,
        scan_tool,
        startup_report,
        startup_text,
    )
    from toolrig.mcp.server import (
        BearerAuth,
        CallerCacheStage,
        ClientApprover,
        JWTVerifier,
        MemoryEventStore,
        StaticTokens,
        ToolServer,
        VerifiedToken,
        build_server,
        http_app,
        serve,
        serve_async,
        served_stages,
    )
    from toolrig.mcp.shared import CompletionCalls, ContentCalls, Prompts, PromptSource, Resources, ResourceSource

# Served lazily, so that a client (`MCPToolset`) does not import the server, gateway and policy machinery.
_LAZY = {
    "BearerAuth": "toolrig.mcp.server",
    "Blocked": "toolrig.mcp.gateway",
    "CallerCacheStage": "toolrig.mcp.server",
    "ClientApprover": "toolrig.mcp.server",
    "CompletionCalls": "toolrig.mcp.shared._content",
    "ContentCalls": "toolrig.mcp.shared._content",
    "Gateway": "toolrig.mcp.gateway",
    "GatewayConfig": "toolrig.mcp.gateway",
    "GatewayToolset": "toolrig.mcp.gateway",
    "JWTVerifier": "toolrig.mcp.server",
    "LaunchAsker": "toolrig.mcp.gateway",
    "LaunchPlan": "toolrig.mcp.gateway",
    "MemoryEventStore": "toolrig.mcp.server",
    "Pin": "toolrig.mcp.gateway",
    "PinKind": "toolrig.mcp.gateway",
    "PinMode": "toolrig.mcp.gateway",
    "PinStatus": "toolrig.mcp.gateway",
    "PinStore": "toolrig.mcp.gateway",
    "PromptSource": "toolrig.mcp.shared._content",
    "Prompts": "toolrig.mcp.shared._content",
    "ResourceSource": "toolrig.mcp.shared._content",
    "Resources": "toolrig.mcp.shared._content",
    "STATE_ENV": "toolrig.mcp.gateway",
    "ScanReport": "toolrig.mcp.gateway",
    "StaticTokens": "toolrig.mcp.server",
    "ToolServer": "toolrig.mcp.server",
    "UpstreamContent": "toolrig.mcp.gateway",
    "VerifiedToken": "toolrig.mcp.server",
    "build_server": "toolrig.mcp.server",
    "canonical_definition": "toolrig.mcp.gateway",
    "config_from_mapping": "toolrig.mcp.gateway",
    "definition_hash": "toolrig.mcp.gateway",
    "http_app": "toolrig.mcp.server",
    "launch_targets": "toolrig.mcp.gateway",
    "list_offers": "toolrig.mcp.gateway",
    "load_gateway_config": "toolrig.mcp.gateway",
    "open_pins": "toolrig.mcp.gateway",
    "scan_definition": "toolrig.mcp.gateway",
    "scan_prompt": "toolrig.mcp.gateway",
    "scan_resource": "toolrig.mcp.gateway",
    "scan_tool": "toolrig.mcp.gateway",
    "serve": "toolrig.mcp.server",
    "serve_async": "toolrig.mcp.server",
    "served_stages": "toolrig.mcp.server",
    "startup_report": "toolrig.mcp.gateway",
    "startup_text": "toolrig.mcp.gateway",
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
    "CompletionCalls",
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
