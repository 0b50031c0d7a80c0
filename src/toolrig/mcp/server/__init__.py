"""The MCP server side: any toolset served over stdio or streamable HTTP through a Runtime (:class:`ToolServer`,
:func:`serve`), sessions, bearer auth, request limits, the approver that asks the client, draining on shutdown.

Other parts of :mod:`toolrig.mcp` import this package's names from here, never its private modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.mcp.server._approvers import ClientApprover
    from toolrig.mcp.server._auth import BearerAuth, JWTVerifier, StaticTokens, VerifiedToken, check_agent_layers
    from toolrig.mcp.server._events import MemoryEventStore
    from toolrig.mcp.server._serve import build_server, http_app, run_blocking, serve, serve_async
    from toolrig.mcp.server._server import ToolServer
    from toolrig.mcp.server._stages import CallerCacheStage, served_stages

# Served lazily: importing one name loads only the module that defines it.
_LAZY = {
    "ClientApprover": "toolrig.mcp.server._approvers",
    "BearerAuth": "toolrig.mcp.server._auth",
    "JWTVerifier": "toolrig.mcp.server._auth",
    "StaticTokens": "toolrig.mcp.server._auth",
    "VerifiedToken": "toolrig.mcp.server._auth",
    "check_agent_layers": "toolrig.mcp.server._auth",
    "MemoryEventStore": "toolrig.mcp.server._events",
    "build_server": "toolrig.mcp.server._serve",
    "http_app": "toolrig.mcp.server._serve",
    "run_blocking": "toolrig.mcp.server._serve",
    "serve": "toolrig.mcp.server._serve",
    "serve_async": "toolrig.mcp.server._serve",
    "ToolServer": "toolrig.mcp.server._server",
    "CallerCacheStage": "toolrig.mcp.server._stages",
    "served_stages": "toolrig.mcp.server._stages",
}


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BearerAuth",
    "CallerCacheStage",
    "ClientApprover",
    "JWTVerifier",
    "MemoryEventStore",
    "StaticTokens",
    "ToolServer",
    "VerifiedToken",
    "build_server",
    "check_agent_layers",
    "http_app",
    "run_blocking",
    "serve",
    "serve_async",
    "served_stages",
]
