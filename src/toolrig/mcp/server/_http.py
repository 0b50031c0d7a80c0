"""The streamable HTTP app: Host / Origin checks (always on), optional bearer auth, the MCP endpoint.

The SDK switches DNS-rebinding protection off unless the server binds a loopback address; here it is
on whatever the bind address: the ``Host`` header must name an allowed host (loopback names, the bind
address, and what ``allowed_hosts`` adds), and a browser's ``Origin``, when present, must be an allowed
origin. Bad requests are refused (421 / 403) before authentication and before any MCP message is read.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolrig.mcp.server._auth import BearerAuth
from toolrig.mcp.server._events import MemoryEventStore
from toolrig.mcp.server._limits import BODY_TIMEOUT, MAX_BODY_BYTES, RequestLimits
from toolrig.mcp.server._server import ToolServer
from toolrig.mcp.server._sessions import SessionManager

__all__ = ["HostOriginGuard", "allowed_hosts_for", "build_app"]

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_KNOWN_MAX = 1024
"""Most Host / Origin decisions a guard remembers (then it forgets them all and decides again)."""


def _bracketed(host: str) -> str:
    """``host`` as it appears in a Host header: an IPv6 literal in brackets, anything else unchanged."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name, not an address
        return host
    return f"[{host}]" if isinstance(address, ipaddress.IPv6Address) else host


def allowed_hosts_for(bind: str, extra: Iterable[str] = ()) -> list[str]:
    """Host header patterns accepted for a server bound to ``bind`` (``name`` or ``name:*`` or ``name:port``)."""
    hosts = list(_LOOPBACK)
    if bind not in ("0.0.0.0", "::", "", "127.0.0.1", "localhost", "::1"):
        hosts.append(_bracketed(bind))
    hosts.extend(extra)
    return hosts


_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*)"
                   r"(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<rest>.+)")


def _split(value: str, *, origin: bool) -> tuple[str, str, str | None] | None:
    """``(scheme, host, port)`` of a Host (scheme ``""``) or Origin value, or None when it is not well formed.

    Only what a browser or an HTTP client sends is well formed: an ASCII host name or IP literal and an
    optional numeric port (plus ``http(s)://`` for an Origin); no user-info, path, spaces, or trailing dot (a
    resolver may send ``localhost.`` to DNS, where a hostile network can rebind it: docs/mcp.md). The caller
    lower-cases the value first: names and schemes are case-insensitive.
    """
    scheme = ""
    if origin:
        m = _ORIGIN.fullmatch(value)
        if m is None:
            return None
        scheme, value = m["scheme"], m["rest"]
    hm = _HOST.fullmatch(value)
    if hm is None:
        return None
    return scheme, hm["name"], hm["port"]


def _matches(value: str, patterns: Iterable[str], *, origin: bool = False, port: int | None = None,
             bound: Iterable[str] = ()) -> bool:
    """Whether a Host / Origin ``value`` is one of ``patterns`` (``name``, ``name:port``, ``name:*``).

    With ``port`` (the port the server listens on), the names in ``bound`` (loopback names, the bind address)
    are accepted with that port or none: ``127.0.0.1:other`` names another service, not this one.
    """
    parts = _split(value.lower(), origin=origin)
    if parts is None:
        return False
    scheme, name, given_port = parts
    for pattern in patterns:
        expected = _split(pattern.lower().removesuffix(":*"), origin=origin)
        if expected is None or expected[:2] != (scheme, name):
            continue
        if expected[2] is not None:
            if given_port == expected[2]:
                return True
            continue
        if pattern.endswith(":*") and given_port is None:
            continue
        if port is not None and given_port is not None and name in bound and int(given_port) != port:
            continue
        return True
    return False


class HostOriginGuard:
    """ASGI middleware refusing requests whose ``Host`` (421) or ``Origin`` (403) is not allowed."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str], port: int | None = None,
                 bound: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = list(hosts)
        self.origins = list(origins)
        self.port = port
        self.bound = frozenset(h.lower() for h in bound)
        self._known: dict[tuple[bytes, bool], bool] = {}
        """Decisions already taken, by header value (a client sends the same Host on every request)."""

    def _allowed(self, value: bytes, *, origin: bool) -> bool:
        key = (value, origin)
        known = self._known.get(key)
        if known is None:
            known = _matches(value.decode("latin-1"), self.origins if origin else self.hosts, origin=origin,
                             port=self.port, bound=self.bound)
            if len(self._known) >= _KNOWN_MAX:
                self._known.clear()
            self._known[key] = known
        return known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host: bytes | None = None
        origin: bytes | None = None
        hosts = origins = 0
        for key, value in scope["headers"]:
            if key == b"host":
                host, hosts = value, hosts + 1
            elif key == b"origin":
                origin, origins = value, origins + 1
        if hosts != 1 or host is None or not self._allowed(host, origin=False):
            await Response("Invalid Host header: this server does not answer to that name; its operator can add "
                           "it to [serve] allowed_hosts (toolrig.toml)", status_code=421)(scope, receive, send)
            return
        if origins > 1 or (origin is not None and not self._allowed(origin, origin=True)):
            await Response("Invalid Origin header", status_code=403)(scope, receive, send)
            return
        if host.lower() != host or (origin is not None and origin.lower() != origin):
            scope = _lowered(scope)
        await self.app(scope, receive, send)


def _lowered(scope: Scope) -> Scope:
    """``scope`` with its (accepted) ``Host`` and ``Origin`` in lower case: host names and schemes are
    case-insensitive, and what runs after the guard (the SDK's own check of both, exact and case-sensitive)
    then sees the spelling it was configured with."""
    headers = [(k, v.lower() if k in (b"host", b"origin") else v) for k, v in scope["headers"]]
    return {**scope, "headers": headers}


class _Direct:
    """ASGI middleware (the innermost): an HTTP request for the MCP path goes straight to its endpoint.

    What Starlette's router would pick, after the exception middleware had wrapped the request and every route
    had been matched against its path; the endpoint raises nothing those would handle. Anything else (other
    paths, a ``root_path``, the lifespan) takes the router as before.
    """

    def __init__(self, app: ASGIApp, *, path: str, endpoint: ASGIApp) -> None:
        self.app = app
        self.path = path
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and not scope.get("root_path"):
            await self.endpoint(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _origins(hosts: Iterable[str], extra: Iterable[str]) -> list[str]:
    out = []
    for host in hosts:
        base = host if ":" in host.removeprefix("[").split("]")[-1] else f"{host}:*"
        out += [f"http://{base}", f"https://{base}", f"http://{host}", f"https://{host}"]
    return out + list(extra)


def _may_see_details(request: Request, auth: BearerAuth | None) -> bool:
    """Without auth, anyone; with it, only a request whose token is valid for this server and has every scope
    the endpoint requires."""
    if auth is None:
        return True
    user = request.scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return False
    credentials = request.scope.get("auth")
    scopes = set(credentials.scopes) if isinstance(credentials, AuthCredentials) else set()
    return set(auth.required_scopes) <= scopes


def _health(server: ToolServer, manager: SessionManager, extra: Callable[[], Mapping[str, Any]] | None,
            auth: BearerAuth | None) -> Callable[[Request], Any]:
    """``GET /healthz``: the status word for anyone; with auth on, the details (server, sessions, upstreams and
    their states) only for a request with a valid token."""
    async def health(request: Request) -> Response:
        body = {"status": "ok", "server": server.server.name, "sessions": manager.session_count,
                **(extra() if extra is not None else {})}
        if not _may_see_details(request, auth):
            return JSONResponse({"status": str(body.get("status", "ok"))})
        return JSONResponse(json.loads(json.dumps(body, default=str)))

    return health


def build_app(server: ToolServer, *, path: str = "/mcp", host: str = "127.0.0.1",
              allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
              auth: BearerAuth | None = None, stateless: bool = False, json_response: bool = False,
              event_store: EventStore | None = None, retry_interval: int | None = None,
              idle_timeout: float | None = 1800.0, max_sessions: int | None = 10_000,
              health: Callable[[], Mapping[str, Any]] | None = None, port: int | None = None,
              max_body: int = MAX_BODY_BYTES, body_timeout: float = BODY_TIMEOUT, openapi: bool = False) -> Starlette:
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
        health: extra fields for ``/healthz`` (with ``auth``, shown only to requests with a valid token: others
            get ``{"status": ...}`` alone).
        port: the port the app is served on; loopback names and the bind address are then accepted as Host /
            Origin only with this port (or none). None (an app run in process): any port.
        max_body: largest POST body in bytes (413 beyond); body_timeout: seconds to send it (408 beyond).
        openapi: also serve the tools over plain HTTP, ``POST /tools/{name}`` and ``GET /openapi.json``
            (:mod:`toolrig.mcp.server._rest`), behind the same checks and auth.
    """
    hosts = allowed_hosts_for(host, allowed_hosts)
    origins = _origins(hosts, allowed_origins)
    # The guard accepts names in any case and hands on lower-cased Host / Origin values; the SDK compares exactly.
    low_hosts = [h.lower() for h in hosts]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=[h if ":" in h.split("]")[-1] else f"{h}:*" for h in low_hosts]
                                         + low_hosts, allowed_origins=[o.lower() for o in origins])
    if event_store is None and not stateless:
        event_store = MemoryEventStore()
    manager = SessionManager(server, security=security, stateless=stateless, json_response=json_response,
                             event_store=event_store, retry_interval=retry_interval, idle_timeout=idle_timeout,
                             max_sessions=max_sessions)
    endpoint: ASGIApp = manager
    routes: list[BaseRoute] = []
    bound = [*_LOOPBACK, _bracketed(host)]
    middleware: list[Middleware] = [Middleware(HostOriginGuard, hosts=hosts, origins=origins, port=port, bound=bound),
                                    Middleware(RequestLimits, max_body=max_body, body_timeout=body_timeout,
                                               rpc_paths=frozenset({path}) if openapi else None)]
    if auth is not None:
        metadata_url = build_resource_metadata_url(AnyHttpUrl(auth.audience)) if auth.issuer else None
        endpoint = RequireAuthMiddleware(manager, list(auth.required_scopes), metadata_url)
        middleware += [Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(
            auth.verifier, resource_server_url=AnyHttpUrl(auth.audience))), Middleware(AuthContextMiddleware)]
        if auth.issuer:
            routes += create_protected_resource_routes(resource_url=AnyHttpUrl(auth.audience),
                                                       authorization_servers=[AnyHttpUrl(auth.issuer)],
                                                       scopes_supported=list(auth.required_scopes) or None)
    middleware.append(Middleware(_Direct, path=path, endpoint=endpoint))
    routes += [Route(path, endpoint=endpoint),
               Route("/healthz", _health(server, manager, health, auth), methods=["GET"])]
    if openapi:
        from toolrig.mcp.server._rest import rest_routes

        routes += rest_routes(server, auth)
    app = Starlette(routes=routes, middleware=middleware, lifespan=lambda _app: manager.run())
    app.state.session_manager = manager
    app.state.tool_server = server
    return app
