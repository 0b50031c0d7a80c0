"""Streamable HTTP sessions: :class:`SessionManager`, built from the SDK's public transport and runner.

Why not the SDK's ``StreamableHTTPSessionManager``: its session ids are ``uuid4().hex`` (122 random bits);
here they come from :func:`secrets.token_urlsafe` (256 bits). Like the SDK's, a session is bound to the
principal that opened it (a request with another credential, or none, gets 404 as if the session did
not exist). Each request runs with :data:`~toolrig.mcp.server._server.caller_identity` set (session id, user, and the
agent its credential names), which the SDK carries into the handler of every message of that request.

A session ends when its client deletes it, when it has had no request in flight for ``idle_timeout`` seconds
(a client killed without closing its session: its streams close with its connections, then the countdown
runs), or when the server stops. Its end releases what it held: the transport, the server's per-session
state, and its events in a :class:`~toolrig.mcp.server._events.MemoryEventStore`.

In a stateful session with SSE answers, request POSTs are answered by toolrig itself
(:class:`~toolrig.mcp.server._answers.SessionAnswers`, the same bytes as the SDK's transport writes at about a third
less CPU per call; a request answered at once with nothing sent before its answer gets a JSON body, which keeps
the client's connection alive); ``initialize``, notifications, GET streams, resumption and DELETE stay the SDK
transport's.

While the server drains (:meth:`SessionManager.close`), new sessions and stateless requests get HTTP 503.

Stateless mode (``stateless=True``) keeps nothing between requests: for replicas behind a load balancer.
Requests with a 2026-era ``MCP-Protocol-Version`` (no initialize handshake) are answered with a JSON-RPC
error naming the handshake versions served here, so a client falls back to ``initialize``.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import mcp_types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import principal_components
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection, serve_loop
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, EventStore, StreamableHTTPServerTransport
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from toolrig.mcp.server._answers import SessionAnswers
from toolrig.mcp.server._auth import agent_of
from toolrig.mcp.server._events import MemoryEventStore, SessionEvents
from toolrig.mcp.server._server import CallerIdentity, ToolServer, caller_identity

__all__ = ["SessionManager", "new_session_id", "user_of"]

log = logging.getLogger("toolrig.mcp.server")

_VERSION_HEADER = b"mcp-protocol-version"
_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("latin-1")


def new_session_id() -> str:
    """A session id: 256 bits from the operating system's CSPRNG, URL-safe."""
    return secrets.token_urlsafe(32)


def user_of(scope: Scope) -> str | None:
    """The authenticated user of a request (the token's subject, else its client id), or None."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    return token.subject or token.client_id


def _principal(scope: Scope) -> tuple[str, str | None, str | None] | None:
    user = scope.get("user")
    return principal_components(user.access_token) if isinstance(user, AuthenticatedUser) else None


def _error(message: str, status: int, code: int = mcp_types.INVALID_REQUEST, data: Any = None) -> Response:
    body = mcp_types.JSONRPCError(jsonrpc="2.0", id=None, error=mcp_types.ErrorData(code=code, message=message,
                                                                                     data=data))
    return Response(body.model_dump_json(by_alias=True, exclude_none=True), status_code=status,
                    media_type="application/json")


class SessionManager:
    """Runs the MCP sessions of one HTTP endpoint (an ASGI app; enter :meth:`run` in the app's lifespan).

    Args:
        server: the toolrig server whose SDK ``Server`` handles the messages.
        security: Host / Origin settings handed to the SDK transport as well (checked first by the app).
        stateless: no sessions at all (every request stands alone).
        json_response: answer with JSON bodies instead of SSE streams.
        event_store: makes SSE streams resumable (``Last-Event-ID``); stateful mode only.
        retry_interval: milliseconds suggested to clients before they reconnect a closed stream.
        idle_timeout: seconds without a request after which a session is closed (None: never).
        max_sessions: most sessions open at once (None: no limit).
    """

    def __init__(self, server: ToolServer, *, security: TransportSecuritySettings, stateless: bool = False,
                 json_response: bool = False, event_store: EventStore | None = None,
                 retry_interval: int | None = None, idle_timeout: float | None = 1800.0,
                 max_sessions: int | None = 10_000) -> None:
        self.server = server
        self.security = security
        self.stateless = stateless
        self.json_response = json_response
        self.event_store = event_store
        self.retry_interval = retry_interval
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._transports: dict[str, StreamableHTTPServerTransport] = {}
        self._answers: dict[str, SessionAnswers] = {}
        self._security = TransportSecurityMiddleware(security)
        self._owners: dict[str, tuple[str, str | None, str | None] | None] = {}
        self._events: dict[str, SessionEvents] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._lifespan: Any = None
        self._posts = 0
        self._posts_done: anyio.Event | None = None
        self.closing = False
        """True once :meth:`close` was called: new sessions are refused."""

    @property
    def session_count(self) -> int:
        """Sessions open now."""
        return len(self._transports)

    def close(self) -> None:
        """Refuse new sessions (and stateless requests) from now on: the server is draining."""
        self.closing = True

    async def wait_answered(self, timeout: float) -> bool:
        """Wait until no POST is being answered (at most ``timeout`` seconds); whether none is."""
        with anyio.move_on_after(timeout):
            while self._posts:
                self._posts_done = anyio.Event()
                await self._posts_done.wait()
        return not self._posts

    async def end_sessions(self) -> None:
        """End every session now (their open streams close cleanly)."""
        for session_id, transport in list(self._transports.items()):
            await self._discard(session_id, transport)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Own the sessions' tasks while the app runs."""
        lowlevel = self.server.server
        async with lowlevel.lifespan(lowlevel) as state, anyio.create_task_group() as tg:
            self._tg, self._lifespan = tg, state
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                self._tg = None
                for session_id in list(self._transports):
                    self.server.forget_session(session_id)
                self._transports.clear()
                self._answers.clear()
                self._owners.clear()
                self._events.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._tg is None:
            raise RuntimeError("SessionManager.run() is not active (enter it in the app's lifespan)")
        version = session_id = None
        for key, value in scope["headers"]:  # both headers in one pass over them
            if key == _VERSION_HEADER:
                version = value.decode("latin-1") if version is None else version
            elif key == _SESSION_HEADER:
                session_id = value.decode("latin-1") if session_id is None else session_id
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            supported = {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version}
            await _error(f"protocol version {version!r} is not served here; use the initialize handshake",
                         400, mcp_types.UNSUPPORTED_PROTOCOL_VERSION, supported)(scope, receive, send)
            return
        if self.closing and (self.stateless or session_id is None):
            await _error("the server is shutting down", 503, mcp_types.INTERNAL_ERROR)(scope, receive, send)
            return
        post = scope.get("method") == "POST"  # the POSTs being answered are counted: a drain waits for them
        self._posts += post
        try:
            if self.stateless:
                await self._stateless(version, scope, receive, send)
            else:
                await self._stateful(session_id, scope, receive, send)
        finally:
            self._posts -= post
            if post and not self._posts and self._posts_done is not None:
                self._posts_done.set()

    # -- stateless --------------------------------------------------------------------------------
    async def _stateless(self, version: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        transport = StreamableHTTPServerTransport(mcp_session_id=None, is_json_response_enabled=self.json_response,
                                                  security_settings=self.security)
        lowlevel = self.server.server

        async def run(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            async with transport.connect() as (read, write):
                task_status.started()
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read, write, inline_methods=frozenset({"initialize"}),
                    transport_builder=lambda _md: TransportContext(kind="streamable-http", can_send_request=False))
                connection = Connection.from_envelope(version or mcp_types.DEFAULT_NEGOTIATED_VERSION, None, None)
                try:
                    await serve_connection(lowlevel, dispatcher, connection=connection, lifespan_state=self._lifespan,
                                           init_options=self.server.initialization_options())
                except Exception:
                    log.exception("a stateless MCP request failed")

        identity = CallerIdentity(session_id=None, user=user_of(scope), agent=agent_of(scope), transport="http")
        token = caller_identity.set(identity)
        try:
            assert self._tg is not None
            await self._tg.start(run)
            await transport.handle_request(scope, receive, send)
        finally:
            caller_identity.reset(token)
            with anyio.CancelScope(shield=True):
                await transport.terminate()

    # -- stateful ------------------------------------------------------------------------------------
    async def _stateful(self, session_id: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        principal = _principal(scope)
        if session_id is None:
            await self._open(principal, scope, receive, send)
            return
        transport = self._transports.get(session_id)
        if transport is None or self._owners.get(session_id) != principal:
            # unknown, expired, or opened by someone else: all look the same from outside
            await _error("Session not found", 404)(scope, receive, send)
            return
        await self._serve(transport, session_id, scope, receive, send)
        if transport.is_terminated:
            await self._discard(session_id, transport)

    async def _serve(self, transport: StreamableHTTPServerTransport, session_id: str, scope: Scope,  # noqa: PLR0917
                     receive: Receive, send: Send, status: Callable[[int], None] | None = None) -> None:
        token = caller_identity.set(CallerIdentity(session_id=session_id, user=user_of(scope), agent=agent_of(scope),
                                                   transport="http"))
        answers = self._answers.get(session_id)
        handle = transport.handle_request if answers is None else answers.handle_request
        try:
            if status is None:
                await handle(scope, receive, send)
                return

            async def watch(message: Any) -> None:
                if message["type"] == "http.response.start":
                    status(message["status"])
                await send(message)

            await handle(scope, receive, watch)
        finally:
            caller_identity.reset(token)

    async def _open(self, principal: Any, scope: Scope, receive: Receive, send: Send) -> None:
        if self.max_sessions is not None and len(self._transports) >= self.max_sessions:
            await _error("Too many open sessions", 503, mcp_types.INTERNAL_ERROR)(scope, receive, send)
            return
        session_id = new_session_id()
        events = None if self.event_store is None else SessionEvents(self.event_store)
        own = not self.json_response  # request POSTs answered on SSE here (_answers.py); the idle rule with them
        transport = StreamableHTTPServerTransport(
            mcp_session_id=session_id, is_json_response_enabled=self.json_response, event_store=events,
            security_settings=self.security, retry_interval=self.retry_interval,
            idle_timeout=None if own else self.idle_timeout)
        self._transports[session_id] = transport
        if own:
            self._answers[session_id] = SessionAnswers(transport, event_store=events, security=self._security,
                                                       session_id=session_id, retry_interval=self.retry_interval,
                                                       idle_timeout=self.idle_timeout)
        self._owners[session_id] = principal
        if events is not None:
            self._events[session_id] = events
        answered: list[int] = []
        try:
            assert self._tg is not None
            await self._tg.start(self._run_session, session_id, transport)
            await self._serve(transport, session_id, scope, receive, send, status=answered.append)
        finally:
            if not answered or answered[0] >= 400:  # the opening request failed: nothing was established
                await self._discard(session_id, transport)

    async def _run_session(self, session_id: str, transport: StreamableHTTPServerTransport, *,
                           task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        answers = self._answers.get(session_id)
        async with transport.connect() as (sdk_read, sdk_write), anyio.create_task_group() as tg:
            read, write, idle = sdk_read, sdk_write, transport.idle_scope or anyio.CancelScope()
            if answers is not None:
                await tg.start(answers.run, sdk_read, sdk_write)
                read, write, idle = answers.read, answers.write, answers.idle_scope
            task_status.started()
            try:
                with idle:
                    await serve_loop(self.server.server, read, write, lifespan_state=self._lifespan,
                                     session_id=session_id, init_options=self.server.initialization_options())
            except Exception:
                log.exception("MCP session %s failed", session_id[:8])
            finally:
                tg.cancel_scope.cancel()
                await self._discard(session_id, transport)

    async def _discard(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._transports.pop(session_id, None)
        answers = self._answers.pop(session_id, None)
        if answers is not None:
            answers.close_all()
        self._owners.pop(session_id, None)
        self.server.forget_session(session_id)
        events = self._events.pop(session_id, None)
        if events is not None and isinstance(self.event_store, MemoryEventStore):
            self.event_store.forget_streams(f"{events.tag}/")
        if not transport.is_terminated:
            with anyio.CancelScope(shield=True):
                await transport.terminate()
