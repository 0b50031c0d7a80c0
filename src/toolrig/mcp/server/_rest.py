"""The served tools over plain HTTP, for clients that do not speak MCP: ``POST /tools/{name}`` and
``GET /openapi.json`` (``toolrig serve --openapi``).

The same server, the same pipeline and the same guards as the MCP endpoint: the app's Host / Origin checks and body
limits apply, the bearer auth of ``[serve.auth]`` is required on both routes (401 / 403 before anything is read),
the caller's user and agent come from the credential only, and each call runs through the server's runtime (policy,
approval, limits, fencing, audit) and is drained on shutdown like an MCP call. The request body is the arguments
(a JSON object); the answer is the :class:`~toolrig.ToolOutcome` as JSON, with a status by its error kind
(:data:`toolrig.openapi.ERROR_STATUS`).
"""

from __future__ import annotations

import secrets
from typing import Any

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolrig import CallContext, ToolCall
from toolrig.mcp.server._auth import BearerAuth, agent_of
from toolrig.mcp.server._server import ToolServer
from toolrig.mcp.server._sessions import user_of

__all__ = ["OPENAPI_PATH", "TOOLS_PREFIX", "rest_routes"]

TOOLS_PREFIX = "/tools"
OPENAPI_PATH = "/openapi.json"


class _CallTool:
    """``POST /tools/{name}``: one call through the server's runtime."""

    def __init__(self, server: ToolServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from toolrig.openapi import ERROR_STATUS

        request = Request(scope, receive)
        if request.method != "POST":
            await Response("call a tool with POST", status_code=405, headers={"allow": "POST"})(scope, receive, send)
            return
        name = str(request.path_params.get("name", ""))
        text = (await request.body()).decode("utf-8", "replace")
        call = ToolCall(name=name, arguments=text, id=f"http_{secrets.token_hex(12)}")
        context = CallContext(user=user_of(scope), agent=agent_of(scope), session=f"http-{secrets.token_urlsafe(16)}",
                              metadata={"transport": "http-openapi"})
        runtime = self.server.runtime
        outcome = await self.server.calls.run(call, lambda: runtime.call(call, context), context)
        status = 200 if outcome.ok else ERROR_STATUS.get(outcome.error.kind.value, 500) if outcome.error else 502
        await JSONResponse(outcome.to_dict(), status_code=status)(scope, receive, send)


class _Document:
    """``GET /openapi.json``: the document of the tools the runtime offers now."""

    def __init__(self, server: ToolServer, bearer: bool) -> None:
        self.server = server
        self.bearer = bearer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from toolrig.openapi import to_openapi

        request = Request(scope, receive)
        base = str(request.base_url).rstrip("/")
        doc = to_openapi(self.server.runtime.tools(), title=self.server.server.name,
                         version=self.server.server.version or "1.0.0", server_url=base, prefix=TOOLS_PREFIX,
                         bearer=self.bearer)
        await JSONResponse(doc)(scope, receive, send)


def rest_routes(server: ToolServer, auth: BearerAuth | None) -> list[BaseRoute]:
    """The routes serving ``server`` 's tools over plain HTTP, behind ``auth`` when given."""
    call: ASGIApp = _CallTool(server)
    document: ASGIApp = _Document(server, bearer=auth is not None)
    if auth is not None:
        metadata_url = _metadata_url(auth)
        call = RequireAuthMiddleware(call, list(auth.required_scopes), metadata_url)
        document = RequireAuthMiddleware(document, list(auth.required_scopes), metadata_url)
    return [Route(TOOLS_PREFIX + "/{name}", endpoint=call), Route(OPENAPI_PATH, endpoint=document)]


def _metadata_url(auth: BearerAuth) -> Any:
    from mcp.server.auth.routes import build_resource_metadata_url

    return build_resource_metadata_url(AnyHttpUrl(auth.audience)) if auth.issuer else None
