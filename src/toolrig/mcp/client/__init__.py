"""The MCP client side: an MCP server as a toolset (:class:`MCPToolset`), its connection and transports,
the ``mcpServers`` config format, forwarding of a server's requests, recovery after a reconnect.

Other parts of :mod:`toolrig.mcp` import this package's names from here, never its private modules."""

from __future__ import annotations

from toolrig.mcp.client._config import MCPServers, expand_servers, from_config, read_servers, server_namespaces
from toolrig.mcp.client._forward_gate import ForwardGate, ForwardRules, gate_from_config
from toolrig.mcp.client._listing import Unreadable, error_text, unreadable_of
from toolrig.mcp.client._recovery import probe_on_reconnect, upstream_servers
from toolrig.mcp.client._sandboxed import server_sandbox
from toolrig.mcp.client._tool import MCPTool
from toolrig.mcp.client._toolset import ChangeListener, MCPToolset

__all__ = [
    "ChangeListener",
    "ForwardGate",
    "ForwardRules",
    "MCPServers",
    "MCPTool",
    "MCPToolset",
    "Unreadable",
    "error_text",
    "expand_servers",
    "from_config",
    "gate_from_config",
    "probe_on_reconnect",
    "read_servers",
    "server_namespaces",
    "server_sandbox",
    "unreadable_of",
    "upstream_servers",
]
