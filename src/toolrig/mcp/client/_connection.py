"""One supervised client connection to an MCP server: connect, list, call, reconnect with backoff.

A background task (the supervisor) keeps the session open: it connects, lists the tools, then waits
until the session is lost (a call saw the connection close, or a health ping failed), and connects
again after a backoff delay. A call that finds no session waits for the next attempt (and hurries it
along); if that fails, the call ends with :class:`MCPUnavailableError` — it was never sent. A call whose
connection breaks after it was sent ends with :class:`MCPMaybeRanError` and is never sent again.

A failure that belongs to one call stays with that call: an answer over the server's ``max_message_bytes``
(:class:`~toolrig.errors.ResultTooLargeError`) or one call's response stream lost while the transport lives
on (``CONNECTION_CLOSED`` for that request alone: :class:`MCPMaybeRanError`) fails that call and leaves the
session, and the other calls in flight, alone. The session is lost only when the transport says so (its read
stream ended, or it broke) or a health ping fails.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp_types
from mcp import Client, MCPError

from toolrig import CallContext, Retry
from toolrig.errors import MCPCallError, MCPMaybeRanError, MCPUnavailableError, ResultTooLargeError
from toolrig.mcp.client import _direct_call as direct
from toolrig.mcp.client._direct_call import DirectCalls
from toolrig.mcp.client._forward import Forwarder
from toolrig.mcp.client._listing import Unreadable, error_text, unreadable_of
from toolrig.mcp.client._transports import message_limit, open_transport
from toolrig.mcp.shared import ServerHealth, Target, is_too_large

__all__ = ["DEFAULT_RECONNECT", "Connection", "ToolsListener"]

log = logging.getLogger("toolrig.mcp")

DEFAULT_RECONNECT = Retry(max_attempts=1_000_000, initial_delay=0.5, multiplier=2.0, max_delay=30.0,
                                jitter=0.2)
"""Backoff between reconnection attempts (``max_attempts`` is ignored: the supervisor keeps trying)."""

_LOST_CODES = frozenset({mcp_types.CONNECTION_CLOSED})
_MAX_PAGES = 100
_REFRESH_SETTLE = 0.1
"""Seconds a tool-list refresh waits after list_changed, so that a burst of notifications costs one listing."""

ToolsListener = Callable[[list[mcp_types.Tool], list[Unreadable]], Awaitable[None]]
"""Called with the tools of every (re)listing, and the entries of it that could not be read."""


class Connection:
    """A supervised session with one server.

    Args:
        target: where the server is.
        name: the server's name, for health and logs.
        connect_timeout: seconds for one connection attempt (handshake and tool listing included).
        reconnect: backoff between attempts.
        health_interval: seconds between health pings while idle (None: no pings).
        on_tools: called with the new tool list after every (re)listing, and the entries left out of it because
            they cannot be read (:mod:`toolrig.mcp.client._listing`).
        forwarder: where server-to-client requests go (user callbacks, else the calling client).
        sandbox: the :class:`toolrig.sandbox.Sandbox` a stdio server is started in (None: started as it is).
    """

    def __init__(self, target: Target, *, name: str, connect_timeout: float = 30.0,
                 reconnect: Retry = DEFAULT_RECONNECT, health_interval: float | None = 30.0,
                 on_tools: ToolsListener | None = None, forwarder: Forwarder | None = None,
                 errlog: TextIO | None = None, client_info: mcp_types.Implementation | None = None,
                 auth: Any = None, sandbox: Any = None, direct_calls: bool = True) -> None:
        self.target, self.name, self.connect_timeout = target, name, connect_timeout
        self.reconnect, self.health_interval = reconnect, health_interval
        self._on_tools = on_tools
        self.forwarder = forwarder or Forwarder(name=name)
        self._errlog, self._auth, self._sandbox = errlog, auth, sandbox
        self._client_info = client_info or mcp_types.Implementation(name="toolrig", version=_version())
        self.health = ServerHealth(server=name)
        self._client: Client | None = None
        self._ready = anyio.Event()
        self._lost = anyio.Event()
        self._poke = anyio.Event()
        self._closed = False
        self._refresh_lock = anyio.Lock()
        self._refresh_queued = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._first = anyio.Event()
        self._reconnected: list[Callable[[], None]] = []
        self.direct_calls = direct_calls
        """Send ``tools/call`` without the SDK's session where :mod:`~toolrig.mcp.client._direct_call` can (the
        same answers; False: always through ``mcp.Client``)."""
        self._calls: DirectCalls | None = None
        self._direct_sent = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self, tg: anyio.abc.TaskGroup, *, wait: bool) -> None:
        """Start the supervisor in ``tg``; with ``wait``, return after the first attempt (raising if it failed)."""
        self._tg = tg
        tg.start_soon(self._supervise, self._first)
        if wait:
            await self._first.wait()
            if self._client is None:
                raise MCPUnavailableError(f"cannot connect to MCP server {self.name} ({self.target.describe()}): "
                                          f"{self.health.last_error}")

    async def first_attempt(self) -> None:
        """Wait until the first connection attempt has succeeded or failed."""
        await self._first.wait()

    def close(self) -> None:
        """Stop reconnecting (the task group that runs the supervisor is cancelled by the owner)."""
        self._closed = True
        self.health = self.health.changed(state="closed")

    def on_reconnect(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` each time a lost session is open again (its tools listed): the server is back."""
        self._reconnected.append(listener)

    @property
    def connected(self) -> bool:
        """True while a session is open."""
        return self._client is not None

    async def _supervise(self, first: anyio.Event) -> None:
        attempt = 0
        while not self._closed:
            self._lost = anyio.Event()
            try:
                # One scope around the whole session: its deadline bounds the connection attempt and is
                # lifted once connected (the session's task groups must nest inside it).
                with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
                    async with AsyncExitStack() as stack:
                        client = await self._open(stack)
                        scope.deadline = math.inf
                        attempt = 0
                        self._went_up(client)
                        first.set()
                        await self._serve_until_lost(client)
                if scope.cancelled_caught:
                    self._went_down(TimeoutError(f"no answer within {self.connect_timeout:g} s"))
            except Exception as exc:  # any failure to connect or a broken session: report, back off, retry
                self._went_down(exc)
            finally:
                self._client = None
                self._reset_ready()
            first.set()
            if self._closed:
                break
            attempt += 1
            delay = min(self.reconnect.max_delay, self.reconnect.delay(attempt) * (1 + self.reconnect.jitter
                                                                                   * random.random()))
            with anyio.move_on_after(delay):
                await self._poke.wait()
            self._poke = anyio.Event()

    async def _open(self, stack: AsyncExitStack) -> Client:
        self._calls = None

        def on_calls(calls: DirectCalls) -> None:
            self._calls = calls if self.direct_calls else None

        transport = open_transport(self.target, errlog=self._errlog, auth=self._auth, sandbox=self._sandbox,
                                   name=self.name, on_end=lambda: self.mark_lost("the server closed the connection"),
                                   on_calls=on_calls)
        client = Client(transport, mode="legacy", cache=None,
                        client_info=self._client_info, message_handler=self._on_message,
                        **self.forwarder.client_callbacks())
        await stack.enter_async_context(client)
        await self._list_tools(client)
        return client

    def _went_up(self, client: Client) -> None:
        info = client.server_info
        self._client = client
        self.health = self.health.changed(state="up", last_error=None, connects=self.health.connects + 1,
                                          failures=0, server_info=f"{info.name} {info.version}" if info else None)
        self._ready.set()
        log.info("connected to MCP server %s (%s)", self.name, self.target.describe())
        if self.health.connects > 1:
            for listener in list(self._reconnected):
                try:
                    listener()
                except Exception:  # a listener's bug must not take the session down
                    log.exception("reconnect listener of MCP server %s failed", self.name)

    def _went_down(self, exc: BaseException) -> None:
        reason = _describe(exc)
        if not self._closed:
            self.health = self.health.changed(state="down", last_error=reason, failures=self.health.failures + 1)
            log.warning("MCP server %s is unavailable: %s", self.name, reason)

    async def _serve_until_lost(self, client: Client) -> None:
        while True:
            if self.health_interval is None:
                await self._lost.wait()
                return
            with anyio.move_on_after(self.health_interval):
                await self._lost.wait()
                return
            with anyio.fail_after(self.connect_timeout):
                await client.session.send_request(mcp_types.PingRequest(), mcp_types.EmptyResult)

    def _reset_ready(self) -> None:
        """A fresh "connected" event, unless the current one was never set (callers may be waiting on it)."""
        if self._ready.is_set():
            self._ready = anyio.Event()

    def mark_lost(self, reason: str) -> None:
        """Tell the supervisor the session is broken (it reconnects); new calls wait for the next session."""
        if self._closed:
            return
        if self._client is not None:
            self._client = None
            self._reset_ready()
        if not self._lost.is_set():
            log.warning("lost the session with MCP server %s: %s", self.name, reason)
            self.health = self.health.changed(state="down", last_error=reason)
            self._lost.set()

    async def session(self) -> Client:
        """The open session, waiting (up to ``connect_timeout``) for the supervisor to open one.

        Raises:
            MCPUnavailableError: no session could be opened in time (nothing was sent).
        """
        client = self._client
        if client is not None:
            return client
        if self._closed:
            raise MCPUnavailableError(f"the connection to MCP server {self.name} is closed")
        with anyio.move_on_after(self.connect_timeout):
            while self._client is None and not self._closed:
                self._poke.set()
                await self._ready.wait()
        if self._client is None:
            raise MCPUnavailableError(f"MCP server {self.name} is unavailable: {self.health.last_error or 'timed out'}")
        return self._client

    # -- notifications -----------------------------------------------------------------------------
    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            if self._tg is not None and not self._refresh_queued:  # a flood costs at most two listings
                self._refresh_queued = True
                self._tg.start_soon(self._queued_refresh)
        elif isinstance(message, Exception):
            log.debug("transport error from MCP server %s: %s", self.name, message)

    async def _queued_refresh(self) -> None:
        """A refresh after ``_REFRESH_SETTLE`` seconds, so that a burst of notifications is one listing."""
        await anyio.sleep(_REFRESH_SETTLE)
        if self._client is None:  # not connected: the reconnect lists the tools anyway
            self._refresh_queued = False
            return
        await self.refresh()

    async def refresh(self) -> None:
        """List the tools again (after ``notifications/tools/list_changed``).

        A listing that fails to arrive (an error answer, a timeout) leaves the tools as they were; one that arrives
        but cannot be read (not one entry: the listing, or every entry of it) takes the session down, as it does
        at connection: no call goes out to a server whose tools cannot be read, and the reconnection lists them
        again.
        """
        client = self._client
        if client is None:
            return
        try:
            await self._list_tools(client)
        except (MCPError, OSError, TimeoutError) as exc:
            log.warning("could not refresh the tools of MCP server %s: %s", self.name, _describe(exc))
        except Exception as exc:  # an unreadable listing (pydantic's ValidationError, every entry unreadable), the rest
            self.mark_lost(f"its tool listing could not be read: {_describe(exc)}")

    async def _list_tools(self, client: Client) -> None:
        async with self._refresh_lock:
            self._refresh_queued = False  # this listing covers every notification before it
            tools: list[mcp_types.Tool] = []
            unreadable: list[Unreadable] = []
            cursor: str | None = None
            for number in range(1, _MAX_PAGES + 1):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                unreadable.extend(unreadable_of(page, number))
                cursor = page.next_cursor
                if not cursor:
                    break
            if unreadable and not tools:
                first = unreadable[0]
                more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
                raise MCPUnavailableError(f"every tool MCP server {self.name} lists is unreadable: {first.shown}: "
                                          f"{first.reason}{more}")
            if self._on_tools is not None:
                await self._on_tools(tools, unreadable)

    # -- calls -------------------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: Mapping[str, Any], context: CallContext | None
                        ) -> mcp_types.CallToolResult:
        """Call ``name``; progress goes to ``context.report_progress``; the call is never sent twice.

        Raises:
            MCPUnavailableError: not connected (not sent).
            MCPMaybeRanError: the connection broke after the request was sent.
            MCPCallError: the server answered with a protocol error.
        """
        client = await self.session()

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if context is not None:
                await context.report_progress(progress, total, message)

        calls = self._calls
        with self.forwarder.in_flight(context):
            try:
                if calls is not None and direct.usable(client):
                    self._direct_sent += 1
                    return await direct.call_tool(client, calls, name, dict(arguments), report)
                return await client.call_tool(name, dict(arguments), progress_callback=report)
            except MCPError as exc:
                if is_too_large(exc):
                    raise ResultTooLargeError(f"{name}: {exc.message}", limit=message_limit(self.target),
                                              server=self.name) from exc
                if exc.code in _LOST_CODES:
                    reason = self._lost_answer(client, name, exc.message)
                    await self._check_alive(client)
                    raise MCPMaybeRanError(reason) from exc
                raise MCPCallError(f"MCP server {self.name} refused the call to {name}: {exc.message}") from exc
            except RuntimeError as exc:  # the SDK's output-schema validation of structured content
                raise MCPCallError(f"{name} returned an invalid result: {exc}") from exc
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                self.mark_lost(_describe(exc))
                raise MCPMaybeRanError(f"the connection to MCP server {self.name} broke during {name}: "
                                       f"{_describe(exc)}; it may have run, so it was not sent again") from exc

    @property
    def direct_sent(self) -> int:
        """``tools/call`` requests sent without the SDK's session so far (a stat: the direct path was taken)."""
        return self._direct_sent

    def _lost_answer(self, client: Client, name: str, reason: str) -> str:
        """Why the answer to ``name`` never came: the session closed, or only this call's stream broke.

        When the session closes, the transport has already said so (the read stream ended) before the
        pending calls hear ``CONNECTION_CLOSED``: the connection is marked lost then, not here. While the
        session is still this one, only the call's own answer was lost, and nothing else is touched.
        """
        if self._client is client:
            return (f"the answer of MCP server {self.name} to {name} was lost ({reason}); it may have run, so it "
                    "was not sent again")
        return (f"the connection to MCP server {self.name} closed while {name} was running; it may have run, so "
                "it was not sent again")

    async def _check_alive(self, client: Client) -> None:
        """After one call's answer was lost with the session still open: ping it, and mark it lost if that fails.

        A server that died shows here at once (the ping cannot be sent); one that is only slow does not (a ping
        that times out proves nothing, and the periodic health ping goes on).
        """
        if self._client is not client:
            return
        with anyio.move_on_after(self.connect_timeout):
            try:
                await client.session.send_request(mcp_types.PingRequest(), mcp_types.EmptyResult)
            except (MCPError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                if self._client is client:
                    self.mark_lost(_describe(exc))

    async def request(self, fn: Callable[[Client], Awaitable[Any]]) -> Any:
        """Run ``fn(client)`` on the session (listing or reading resources and prompts); read-only requests.

        Raises:
            MCPUnavailableError: not connected, or the connection broke (safe to retry).
            MCPError: the server answered with an error.
        """
        client = await self.session()
        try:
            return await fn(client)
        except MCPError as exc:
            if exc.code in _LOST_CODES:  # the connection is marked lost by the transport when it is (see above)
                raise MCPUnavailableError(f"MCP server {self.name} went away: {exc.message}") from exc
            raise
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self.mark_lost(_describe(exc))
            raise MCPUnavailableError(f"MCP server {self.name} went away: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    cause = _transport_cause(exc)
    if cause is not None:  # the SDK's "Connection closed" hides why: the transport broke on this
        return _describe(cause)
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = error_text(exc)  # pydantic's own text quotes what the server sent: never shown
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _transport_cause(exc: BaseException) -> BaseException | None:
    """What broke the transport (a refused connection, an HTTP error), when ``exc`` only says the session's
    streams closed: the transports raise ``BrokenResourceError`` from it."""
    seen = exc.__cause__ or exc.__context__
    for _ in range(8):  # a short chain: the session's error, the broken stream, its cause
        if seen is None:
            return None
        if isinstance(seen, anyio.BrokenResourceError) and seen.__cause__ is not None:
            return seen.__cause__
        seen = seen.__cause__ or seen.__context__
    return None


def _version() -> str:
    from toolrig import __version__

    return __version__
