"""An upstream that comes back is tried at once: :func:`probe_on_reconnect`.

A circuit breaker opened by an upstream's outage would otherwise refuse its tools for the breaker's whole
``recovery_time`` after the server is back. When the connection to a server is open again (its tools listed),
each of its tools gets its half-open trial on the next call (:meth:`toolrig.runtime.BreakerStage.probe_now`):
recovery follows the upstream, not the breaker's clock; a failed trial reopens the circuit as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from toolrig.mcp.client._toolset import MCPToolset
from toolrig.runtime import BreakerStage
from toolrig.toolsets import Toolset

__all__ = ["probe_on_reconnect", "upstream_servers"]

log = logging.getLogger("toolrig.mcp")


def upstream_servers(toolset: Toolset) -> list[MCPToolset]:
    """The MCP servers ``toolset`` is built from, however it is composed (a gateway's upstreams, an MCPToolset
    wrapped in filters or prefixes, several combined): see :meth:`toolrig.toolsets.Toolset.walk`."""
    found: dict[int, MCPToolset] = {}
    for part in toolset.walk():
        if isinstance(part, MCPToolset):
            found.setdefault(id(part), part)
    return list(found.values())


def probe_on_reconnect(runtime: Any, servers: Iterable[MCPToolset]) -> None:
    """Whenever one of ``servers`` reconnects, the breakers of ``runtime`` try its tools at once."""
    breakers = [s for s in runtime.stages if isinstance(s, BreakerStage)]
    if not breakers:
        return
    for server in servers:
        server.connection.on_reconnect(_prober(breakers, server))


def _prober(breakers: list[BreakerStage], server: MCPToolset) -> Any:
    def probe() -> None:
        names = [tool.name for tool in server.list()]
        for breaker in breakers:
            breaker.probe_now(names)
        log.info("MCP server %s is back: its %d tools are tried at once", server.name, len(names))

    return probe
