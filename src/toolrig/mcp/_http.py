"""The streamable HTTP app: Host / Origin checks (always on), optional bearer auth, the MCP endpoint.

The SDK switches DNS-rebinding protection off unless the server binds a loopback address; here it is
on whatever the bind address: the ``Host`` header must name an allowed host (loopback names, the bind
address, and what ``allowed_hosts`` adds), and a browser's ``Origin``, when present, must be an allowed
origin. Bad requests are refused (421 / 403) before authentication and before any MCP message is read.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolrig.mcp._auth import BearerAuth
from toolrig.mcp._events import MemoryEventStore
from toolrig.mcp._server import ToolServer
from toolrig.mcp._sessions import SessionManager

__all__ = ["HostOriginGuard", "allowed_hosts_for", "build_app"]

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _bracketed(host: str) -> str:
    try:
        if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
            return f"[{host}]"
    except ValueError:
        pass
    return host


def allowed_hosts_for(bind: str, extra: Iterable[str] = ()) -> list[str]:
    """Host header patterns accepted for a server bound to ``bind`` (``name`` or ``name:*`` or ``name:port``)."""
    hosts = list(_LOOPBACK)
    if bind not in ("0.0.0.0", "::", "", "127.0.0.1", "localhost", "::1"):
        hosts.append(_bracketed(bind))
    hosts.extend(extra)
    return hosts


def _matches(value: str, patterns: Iterable[str]) -> bool:
    value = value.lower()
    for given in patterns:
        pattern = given.lower()
        if value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1])):
            return True
        if ":" not in pattern.removeprefix("[").split("]")[-1] and value.startswith(pattern + ":"):
            return True  # a bare host name allows any port
    return False


class HostOriginGuard:
    """ASGI middleware refusing requests whose ``Host`` (421) or ``Origin`` (403) is not allowed."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str]) -> None:
        self.app = app
        self.hosts = list(hosts)
        self.origins = list(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, str] = {k: v.decode("latin-1") for k, v in scope["headers"] if k in (b"host", b"origin")}
        host = headers.get(b"host", "")
        if not host or not _matches(host, self.hosts):
            await Response("Invalid Host header", status_code=421)(scope, receive, send)
            return
        origin = headers.get(b"origin")
        if origin is not None and not _matches(origin, self.origins):
            await Response("Invalid Origin header", status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _origins(hosts: Iterable[str], extra: Iterable[str]) -> list[str]:
    out = []
    for host in hosts:
        base = host if ":" in host.removeprefix("[").split("]")[-1] else f"{host}:*"
        out += [f"http://{base}", f"https://{base}", f"http://{host}", f"https://{host}"]
    return out + list(extra)


def _health(server: ToolServer, manager: SessionManager, extra: Callable[[], Mapping[str, Any]] | None
            ) -> Callable[[Request], Any]:
    async def health(request: Request) -> Response:
        body = {"status": "ok", "server": server.server.name, "sessions": manager.session_count,
                **(extra() if extra is not None else {})}
        return JSONResponse(json.loads(json.dumps(body, default=str)))

    return health


def build_app(server: ToolServer, *, path: str = "/mcp", host: str = "127.0.0.1",
              allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
              auth: BearerAuth | None = None, stateless: bool = False, json_response: bool = False,
              event_store: EventStore | None = None, retry_interval: int | None = None,
              idle_timeout: float | None = 1800.0, max_sessions: int | None = 10_000,
              health: Callable[[], Mapping[str, Any]] | None = None) -> Starlette:
    """The ASGI app serving ``server`` at ``path`` (and ``GET /healthz``).

    Args:
        host: the address the app will be bound to (its name is an allowed Host).
        allowed_hosts: more Host values to accept (``name``, ``name:port`` or ``name:*``), e.g. the public name
            behind a load balancer.
        allowed_origins: more Origin values to accept (``https://app.example.com``).
        auth: require a bearer token issued for this server.
        stateless: no sessions (replicas behind a load balancer).
        json_response: JSON bodies instead of SSE streams.
        event_store: resumable streams (default: an in-memory store in stateful mode).
        retry_interval: milliseconds clients should wait before reconnecting a closed stream.
        idle_timeout: seconds before an idle session is closed.
        max_sessions: most sessions at once.
        health: extra fields for ``/healthz``.
    """
    hosts = allowed_hosts_for(host, allowed_hosts)
    origins = _origins(hosts, allowed_origins)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=[h if ":" in h.split("]")[-1] else f"{h}:*" for h in hosts]
                                         + hosts, allowed_origins=origins)
    if event_store is None and not stateless:
        event_store = MemoryEventStore()
    manager = SessionManager(server, security=security, stateless=stateless, json_response=json_response,
                             event_store=event_store, retry_interval=retry_interval, idle_timeout=idle_timeout,
                             max_sessions=max_sessions)
    endpoint: ASGIApp = manager
    routes: list[BaseRoute] = []
    middleware: list[Middleware] = [Middleware(HostOriginGuard, hosts=hosts, origins=origins)]
    if auth is not None:
        metadata_url = build_resource_metadata_url(AnyHttpUrl(auth.audience)) if auth.issuer else None
        endpoint = RequireAuthMiddleware(manager, list(auth.required_scopes), metadata_url)
        middleware += [Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(
            auth.verifier, resource_server_url=AnyHttpUrl(auth.audience))), Middleware(AuthContextMiddleware)]
        if auth.issuer:
            routes += create_protected_resource_routes(resource_url=AnyHttpUrl(auth.audience),
                                                       authorization_servers=[AnyHttpUrl(auth.issuer)],
                                                       scopes_supported=list(auth.required_scopes) or None)
    routes += [Route(path, endpoint=endpoint), Route("/healthz", _health(server, manager, health), methods=["GET"])]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lambda _app: manager.run())
    app.state.session_manager = manager
    app.state.tool_server = server
    return app
