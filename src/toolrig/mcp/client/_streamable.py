"""The client side of MCP's streamable HTTP transport, without a task per request: :func:`streamable_http`.

It gives the SDK's session (``mcp.Client``) its read and write streams, over one pooled keep-alive
``httpx2.AsyncClient`` whose bodies a :class:`~toolrig.mcp.client._http_bounds.BoundedTransport` reads. The SDK's own
transport hands every message to a writer task, which starts a task per request to POST it. Here the task that writes
a message POSTs it itself (``send`` returns once the answer, or the end of its stream, has been passed to the read
stream), and each whole event is parsed once. The protocol is kept as the SDK's transport speaks it:

* every POST carries ``Accept: application/json, text/event-stream``, the ``Mcp-Session-Id`` the server gave at
  ``initialize``, the negotiated ``MCP-Protocol-Version``, and any header the session stamps on the message;
* a request's answer is a JSON body or an SSE stream, which may carry the server's requests and notifications before
  the answer: they reach the session as they arrive (with the writer's context), its answers POSTed meanwhile;
* a stream ended without the answer after events with ids is resumed with ``Last-Event-ID`` (the SDK's attempts);
* after ``notifications/initialized`` a GET stream carries the server's messages outside calls, reopened like the
  SDK's; the next request waits (at most :data:`GET_STREAM_WAIT` s) until the server has answered that GET (a server
  drops its own requests sent before the stream is open);
* a redirect is followed only within the endpoint's origin and when it keeps the method (the SDK's rule);
* ``notifications/cancelled`` of a 2026 session is not sent (the request's POST, closed with its cancelled task, is);
* on close, the session is ended with DELETE.

Failures as in the SDK's transport: a 202, an unfollowed redirect, an HTTP error status or a body that cannot be
parsed fails the one request it answers (a JSON-RPC error in an error body is passed on as it is); a POST that cannot
be sent or whose answer cannot be read (the server is gone) ends the session (``CONNECTION_CLOSED``, reconnect).
The answers of ``tools/call`` requests toolrig sends itself (:mod:`toolrig.mcp.client._direct_call`) are taken off
the read side for their callers; everything else reaches the session as before."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolrig.mcp.client._direct import DirectPost
from toolrig.mcp.client._direct_call import DirectCalls
from toolrig.mcp.client._reconnect import LAST_EVENT_ID, MAX_RECONNECT_ATTEMPTS, StreamProgress
from toolrig.mcp.client._redirects import next_within_origin, unfollowed_redirect
from toolrig.mcp.client._session_streams import Item, WriteStream, wire_body
from toolrig.mcp.client._sse_parse import EventParser, SSEEvent
from toolrig.mcp.shared import ContextReceive, context_streams

__all__ = ["streamable_http"]

log = logging.getLogger("toolrig.mcp")

SESSION_ID = "mcp-session-id"
GET_STREAM_WAIT = 2.0
"""How long the first request after ``notifications/initialized`` waits for the server to answer the GET stream."""

_ACCEPT = "application/json, text/event-stream"
_SSE_HEADERS = {"accept": "text/event-stream", "cache-control": "no-store"}


def _error(request_id: Any, message: str, code: int) -> SessionMessage:
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id,
                                       error=mcp_types.ErrorData(code=code, message=message)))


class _Transport:
    def __init__(self, url: str, client: httpx2.AsyncClient, tg: anyio.abc.TaskGroup, server: str,
                 direct: DirectPost | None) -> None:
        self.url = httpx2.URL(url)
        self.client = client
        self.direct = direct
        self.tg = tg
        self.server = server
        self.session_id: str | None = None
        self.version: str | None = None
        """The negotiated ``MCP-Protocol-Version``: from the session's stamp on each message, cleared at
        ``initialize`` (the handshake goes without it)."""
        self._send, self.read = context_streams()
        self.calls = DirectCalls(self.send, tg.start_soon)
        self._broken = False
        self._listening: anyio.Event | None = None
        """Set once the server answered (or refused) the GET stream opened after ``notifications/initialized``."""

    # -- the write side -----------------------------------------------------------------------------
    async def send(self, item: SessionMessage) -> None:
        if self._broken:
            raise anyio.ClosedResourceError
        message = item.message
        metadata = item.metadata if isinstance(item.metadata, ClientMessageMetadata) else None
        if isinstance(message, JSONRPCNotification):
            if message.method == "notifications/cancelled" and self.version in MODERN_PROTOCOL_VERSIONS:
                return  # a 2026 session: the request's stream closed with its cancelled writer is the signal
            if message.method == "notifications/initialized":
                self._listening = anyio.Event()
                self.tg.start_soon(self._get_stream, self._listening)
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            self.version = None
        elif metadata is not None and metadata.headers is not None:
            stamped = metadata.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            if stamped is not None:
                self.version = stamped
        try:
            if not isinstance(message, JSONRPCRequest):
                await self._post_other(message, metadata)
            elif metadata is not None and metadata.resumption_token:
                await self._resume_request(message, metadata)
            else:
                if self._listening is not None and not self._listening.is_set():
                    with anyio.move_on_after(GET_STREAM_WAIT):
                        await self._listening.wait()
                    self._listening.set()  # waited once: a server slow to answer its GET does not hold later calls
                await self._post_request(message, metadata)
        except Exception as exc:  # the server cannot be reached or its answer not read: the session ends (the SDK's)
            if not self._broken:
                log.warning("MCP server %s: %s failed: %s: %s", self.server,
                            getattr(message, "method", "an answer"), type(exc).__name__, exc)
            self.close()
            raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        """End the read stream (the session sees the transport close)."""
        self._broken = True
        self._send.close()

    # -- HTTP -----------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"accept": _ACCEPT, "content-type": "application/json"}
        if self.session_id:
            headers[SESSION_ID] = self.session_id
        if self.version:
            headers[MCP_PROTOCOL_VERSION_HEADER] = self.version
        return headers

    async def _open(self, method: str, headers: dict[str, str], content: bytes | None = None) -> httpx2.Response:
        """Send a request, following a redirect only within the origin (at most ``max_redirects``)."""
        if (method == "POST" and content is not None and self.direct is not None and self.direct.usable()
                and (answer := await self.direct.send(self.url, headers, content)) is not None):
            return answer
        request = self.client.build_request(method, self.url, headers=headers, content=content)
        followed = 0
        while True:
            response = await self.client.send(request, stream=True, follow_redirects=False)
            following = next_within_origin(response)
            if following is None or followed == self.client.max_redirects:
                return response
            try:
                await response.aread()  # so the connection goes back to the pool
            finally:
                await response.aclose()
            request = following
            followed += 1

    async def _deliver(self, item: Item) -> None:
        if not self.calls.take(item):
            await self._send.send(item)

    async def _fail(self, request_id: Any, message: str, code: int = mcp_types.CONNECTION_CLOSED) -> None:
        """The request ``request_id`` ends with an error (best effort: a closed session has no one to tell)."""
        try:
            await self._deliver(_error(request_id, message, code))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("read stream closed before request %r could be resolved", request_id)

    async def _post_other(self, message: Any, metadata: ClientMessageMetadata | None) -> None:
        """A notification, or an answer to the server's request: POSTed; its answer (202) is not read."""
        headers = self._headers()
        if metadata is not None and metadata.headers is not None:
            headers.update(metadata.headers)
        response = await self._open("POST", headers, wire_body(message))
        try:
            if (redirect := unfollowed_redirect(response)) is not None:
                log.warning("MCP server %s: %s", self.server, redirect)
        finally:
            await response.aclose()

    async def _post_request(self, message: JSONRPCRequest, metadata: ClientMessageMetadata | None) -> None:
        headers = self._headers()
        if metadata is not None and metadata.headers is not None:
            headers.update(metadata.headers)
        response = await self._open("POST", headers, wire_body(message))
        try:
            status = response.status_code
            if status == 202:  # an answer to a request comes on its POST: 202 says none will
                await self._fail(message.id, "server answered a request with 202 Accepted", mcp_types.INVALID_REQUEST)
            elif (redirect := unfollowed_redirect(response)) is not None:
                log.warning("MCP server %s: %s", self.server, redirect)
                await self._fail(message.id, redirect, mcp_types.INVALID_REQUEST)
            elif status >= 400:
                await self._error_status(response, message.id)
            else:
                if message.method == "initialize" and (session_id := response.headers.get(SESSION_ID)):
                    self.session_id = session_id
                kind = response.headers.get("content-type", "").lower()
                if kind.startswith("text/event-stream"):
                    await self._sse_answer(response, message, metadata)
                elif kind.startswith("application/json"):
                    await self._json_answer(response, message.id)
                else:
                    log.error("MCP server %s answered with the content type %r", self.server, kind)
                    await self._fail(message.id, f"Unexpected content type: {kind}", mcp_types.INVALID_REQUEST)
        finally:
            await response.aclose()

    async def _error_status(self, response: httpx2.Response, request_id: Any) -> None:
        """A request answered with an HTTP error: its JSON-RPC error if the body is one, else one for the status."""
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            try:
                parsed = jsonrpc_message_adapter.validate_json(await response.aread(), by_name=False)
            except (httpx2.StreamError, ValidationError):
                parsed = None
            if isinstance(parsed, JSONRPCError):  # a server may send ``id: null``: this request's id correlates
                await self._deliver(SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=parsed.error)))
                return
        if response.status_code == 404:
            if self.session_id is None:
                error = mcp_types.ErrorData(code=mcp_types.METHOD_NOT_FOUND, message="Not Found")
            else:
                error = mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message="Session terminated")
        else:
            error = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message="Server returned an error response")
        await self._deliver(SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error)))

    async def _json_answer(self, response: httpx2.Response, request_id: Any) -> None:
        try:
            message = jsonrpc_message_adapter.validate_json(await response.aread(), by_name=False)
        except (httpx2.StreamError, ValidationError) as exc:
            log.warning("MCP server %s: could not parse a JSON answer: %s", self.server, exc)
            await self._fail(request_id, f"Failed to parse JSON response: {exc}", mcp_types.PARSE_ERROR)
            return
        await self._deliver(SessionMessage(message))

    # -- SSE ----------------------------------------------------------------------------------------------
    async def _events(self, response: httpx2.Response, request_id: Any, metadata: ClientMessageMetadata | None,
                      progress: StreamProgress) -> bool:
        """Pass a stream's messages on; True once the answer to ``request_id`` came (``progress``: ids, retry)."""
        on_token = metadata.on_resumption_token_update if metadata is not None else None
        parser = EventParser()
        async with aclosing(response.aiter_raw()) as chunks:  # closed here when the answer came (or on cancel), not
            async for chunk in chunks:  # left to the garbage collector (a task per call)
                for event in parser.feed(chunk):
                    if event.id:
                        progress.last_id = event.id
                    if event.retry is not None:
                        progress.retry = event.retry
                    if await self._event(event, request_id, on_token):
                        return True
        return False

    async def _event(self, event: SSEEvent, request_id: Any, on_token: Any) -> bool:
        """Pass one event's message on; True when it answers (a response or error: the stream's last message)."""
        if event.event != "message":
            log.warning("MCP server %s sent an SSE event of type %r: ignored", self.server, event.event)
            return False
        if not event.data:  # a priming event: only its id (for resuming)
            if event.id and on_token is not None:
                await on_token(event.id)
            return False
        try:
            message = jsonrpc_message_adapter.validate_json(event.data, by_name=False)
            answers = isinstance(message, JSONRPCResponse | JSONRPCError)
            if request_id is not None and isinstance(message, JSONRPCResponse | JSONRPCError):
                message.id = request_id
            await self._deliver(SessionMessage(message))
            if event.id and on_token is not None:
                await on_token(event.id)
            return answers
        except Exception as exc:  # a message that does not parse, or a session closing under us
            log.warning("MCP server %s sent an SSE message that could not be passed on: %s", self.server, exc)
            if request_id is not None:
                await self._fail(request_id, f"Failed to parse SSE message: {exc}", mcp_types.PARSE_ERROR)
                return True
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._deliver(exc)
            return False

    async def _sse_answer(self, response: httpx2.Response, message: JSONRPCRequest,
                          metadata: ClientMessageMetadata | None) -> None:
        progress = StreamProgress()
        try:
            if await self._events(response, message.id, metadata, progress):
                return
        except httpx2.SSEError as exc:
            await self._fail(message.id, f"SSE stream failed: {exc}")
            return
        except Exception as exc:  # the stream broke off: resumed below if it can be
            log.debug("SSE stream of MCP server %s ended: %s", self.server, exc)
        if progress.last_id is not None:
            log.info("SSE stream of MCP server %s ended before its answer: resuming", self.server)
            await self._resume(message, metadata, progress)
        else:
            await self._fail(message.id, "SSE stream ended without a response")

    async def _resume(self, message: JSONRPCRequest, metadata: ClientMessageMetadata | None,
                      progress: StreamProgress) -> None:
        """Reopen a request's stream with ``Last-Event-ID`` until its answer comes (the SDK's attempts and delays)."""
        attempt = 0
        while attempt < MAX_RECONNECT_ATTEMPTS:
            await progress.wait()
            assert progress.last_id is not None
            headers = {**self._headers(), **_SSE_HEADERS, LAST_EVENT_ID: progress.last_id}
            is_sse = False
            try:
                response = await self._open("GET", headers)
                try:
                    response.raise_for_status()
                    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                    is_sse = kind == "text/event-stream"
                    if not is_sse:
                        raise httpx2.SSEError(f"Expected response with content type 'text/event-stream', got {kind!r}.")
                    if await self._events(response, message.id, metadata, progress):
                        return
                finally:
                    await response.aclose()
            except httpx2.SSEError as exc:
                if is_sse:
                    await self._fail(message.id, f"SSE stream failed: {exc}")
                    return
                attempt += 1
                continue
            except Exception as exc:
                log.debug("MCP server %s: resuming a stream failed: %s", self.server, exc)
                attempt += 1
                continue
            attempt = 0  # it ended again without the answer: reopened, the attempts counted afresh (the SDK's)
        await self._fail(message.id, "SSE stream ended and reconnection attempts were exhausted")

    async def _resume_request(self, message: JSONRPCRequest, metadata: ClientMessageMetadata) -> None:
        """A request the session asks to resume (a resumption token): its stream read again from that event."""
        assert metadata.resumption_token is not None
        headers = {**self._headers(), **_SSE_HEADERS, LAST_EVENT_ID: metadata.resumption_token}
        response = await self._open("GET", headers)
        try:
            if (redirect := unfollowed_redirect(response)) is not None:
                log.warning("MCP server %s: %s", self.server, redirect)
                await self._fail(message.id, redirect, mcp_types.INVALID_REQUEST)
                return
            response.raise_for_status()
            try:
                await self._events(response, message.id, metadata, StreamProgress())
            except httpx2.SSEError as exc:
                await self._fail(message.id, f"SSE stream failed: {exc}")
        finally:
            await response.aclose()

    async def _get_stream(self, listening: anyio.Event) -> None:
        """The server's messages outside calls (GET), reopened when it ends (the SDK's attempts and delays);
        ``listening`` is set once the server has answered the first attempt, or it failed."""
        progress = StreamProgress()
        attempt = 0
        while attempt < MAX_RECONNECT_ATTEMPTS:
            try:
                if not self.session_id:
                    return
                headers = {**self._headers(), **_SSE_HEADERS}
                if progress.last_id:
                    headers[LAST_EVENT_ID] = progress.last_id
                response = await self._open("GET", headers)
                listening.set()
                try:
                    if (redirect := unfollowed_redirect(response)) is not None:
                        log.warning("MCP server %s: GET stream not opened: %s", self.server, redirect)
                        return
                    response.raise_for_status()
                    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                    if kind != "text/event-stream":
                        raise httpx2.SSEError(f"Expected response with content type 'text/event-stream', got {kind!r}.")
                    await self._events(response, None, None, progress)
                finally:
                    await response.aclose()
                attempt = 0
            except Exception:
                log.debug("GET stream of MCP server %s failed", self.server, exc_info=True)
                attempt += 1
            finally:
                listening.set()  # also when there is no session, it failed, or the task is cancelled
            if attempt >= MAX_RECONNECT_ATTEMPTS:
                return
            await progress.wait()

    async def terminate(self) -> None:
        """End the server's session (DELETE)."""
        try:
            response = await self._open("DELETE", self._headers())
            try:
                await response.aread()
            finally:
                await response.aclose()
            if response.status_code == 405:
                log.debug("MCP server %s does not allow ending its session", self.server)
            elif response.status_code not in (200, 204):
                log.warning("MCP server %s: ending the session failed: %s", self.server, response.status_code)
        except Exception as exc:
            log.warning("MCP server %s: ending the session failed: %s", self.server, exc)


@asynccontextmanager
async def streamable_http(url: str, client: httpx2.AsyncClient, *, server: str, terminate_on_close: bool = True,
                          direct: httpx2.AsyncBaseTransport | None = None,
                          on_calls: Callable[[DirectCalls], None] | None = None
                          ) -> AsyncIterator[tuple[ContextReceive, WriteStream]]:
    """The (read, write) streams of a streamable-HTTP session with ``url`` over ``client`` (see the module docstring).

    ``client`` is the caller's (its headers, auth, timeouts, the :class:`BoundedTransport` bounding every body; not
    closed here); ``direct``, its only transport, takes the POSTs while the client would not act (``DirectPost``);
    ``on_calls`` gets the transport's :class:`DirectCalls`.
    """
    async with anyio.create_task_group() as tg:
        transport = _Transport(url, client, tg, server, None if direct is None else DirectPost(client, direct))
        if on_calls is not None:
            on_calls(transport.calls)
        try:
            yield transport.read, WriteStream(transport)
        finally:
            if transport.session_id and terminate_on_close:
                await transport.terminate()
            tg.cancel_scope.cancel()
            transport.close()
