"""Bounded HTTP bodies from an MCP server: :class:`BoundedTransport`, under the SDK's HTTP and SSE clients.

The SDK's streamable-HTTP client reads a JSON answer whole, however large (``response.aread()``), and fails
the request whose SSE event is over its limit with ``CONNECTION_CLOSED``; its SSE client has a fixed 1 MiB
event limit, and an event over it ends the session. A :class:`BoundedTransport` wraps the real transport
of the ``httpx2.AsyncClient`` handed to the SDK (its public ``http_client=`` / ``httpx_client_factory=``)
and reads every response body itself, in pieces, holding at most ``limit`` bytes of one message:

* a JSON body over ``limit`` bytes (by its ``Content-Length``, or as it arrives) is not read further; the SDK
  reads in its place the ``MESSAGE_TOO_LARGE`` error answering the request that POST carried, so only that
  call fails (:mod:`toolrig.mcp.shared._oversized`); so is a body, or an SSE event, of more than ``MAX_VALUES`` JSON
  values;
* an SSE body is passed on one whole event at a time (:class:`~toolrig.mcp.client._sse_events.EventSplitter`). On a
  POST's stream (the answer to one request) an event over the limit that is not the server's own request or
  notification is answered the same way and the stream is not read further; on a GET stream (the SSE
  transport's, which carries every answer) an event over the limit is dropped as it arrives, and the
  request it answered, known from its first or last bytes, gets the error;
* while a body is read for a request, reading stops when the client cancels that request (its deadline
  passed): the cancellation is a ``notifications/cancelled`` POST through this same transport;
* a POST's SSE stream is read to its end (briefly: ``DRAIN_SECONDS``) before the event answering its request is
  passed on, and so is a body the SDK closes early, or one nobody reads (the ``202`` answering a notification):
  the SDK stops at the answer it waits for, and closing a response before its end closes its TCP connection.
  Read to the end, the keep-alive connection serves the next request (one connection, not one per call);
* a call cancelled while its answer is read (its deadline passed, its caller went away) is not drained: its
  connection is closed and its pool slot freed, the request is no longer awaited — also when it was cancelled
  before its answer began — and the body's iterators are closed when it is, not left to the garbage collector;
* requests ask for ``Accept-Encoding: identity`` and a compressed body is refused unread, so a cap on the
  bytes read is a cap on the message (no decompression bomb).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp_types
import pydantic_core

from toolrig.mcp.client._sse_events import EventSplitter, event_data
from toolrig.mcp.shared import KEEP, Awaiting, MessageOrigin, Oversized, origin_of, too_large_error, too_many_values

__all__ = ["BoundedTransport"]

log = logging.getLogger("toolrig.mcp")

RequestId = str | int

_DROPPED = ("content-length", "content-encoding")
"""Headers of the upstream's answer not passed on (the body passed on is the bounded one, never compressed)."""

DRAIN_SECONDS = 0.5
"""How long closing a POST's unfinished answer waits for its end (see ``_Body._drain``)."""


def _sent_message(request: httpx2.Request) -> Any:
    """What :class:`Awaiting` needs of the JSON-RPC message a POST carries (our own SDK's), or None.

    A request, or a ``notifications/cancelled``, as the SDK's message type; any other message (a response to a
    server's request, another notification) and anything that is not one JSON-RPC message is None. The SDK wrote
    the body from its own validated message: it is parsed, not validated again (``model_construct``).
    """
    if request.method != "POST":
        return None
    try:
        data = pydantic_core.from_json(request.content, cache_strings=False)
    except (httpx2.RequestNotRead, ValueError):
        return None
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or not isinstance(method := data.get("method"), str):
        return None
    params = data.get("params")
    if params is not None and not isinstance(params, dict):
        return None
    request_id = data.get("id")
    if request_id is None and "id" not in data:
        if method != "notifications/cancelled":
            return None
        return mcp_types.JSONRPCNotification.model_construct(jsonrpc="2.0", method=method, params=params)
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    return mcp_types.JSONRPCRequest.model_construct(jsonrpc="2.0", id=request_id, method=method, params=params)


def _json_error(error: mcp_types.JSONRPCError) -> bytes:
    return error.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


def _sse_error(error: mcp_types.JSONRPCError) -> bytes:
    return b"event: message\ndata: " + _json_error(error) + b"\n\n"


class BoundedTransport(httpx2.AsyncBaseTransport):
    """Wraps ``inner`` so that no response body of more than ``limit`` bytes is read (see the module docstring).

    Args:
        inner: the transport that does the HTTP (``httpx2.AsyncHTTPTransport()`` by default).
        limit: the most bytes of one message (a JSON body, an SSE event).
        server: the server's name, for errors and logs.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None, *, limit: int, server: str) -> None:
        self.inner = inner if inner is not None else httpx2.AsyncHTTPTransport()
        self.limit = limit
        self.server = server
        self.awaiting = Awaiting()
        self._reading: dict[str, set[anyio.CancelScope]] = {}
        self.reads_ahead = True
        """Whether a POST's stream is read to its end before its answer passes: until one did not end in time."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        sent = _sent_message(request)
        if sent is not None:
            self.awaiting.sent(sent)
            self._stop_cancelled(sent)
        request.headers["accept-encoding"] = "identity"
        request_id = sent.id if isinstance(sent, mcp_types.JSONRPCRequest) else None
        try:
            response = await self.inner.handle_async_request(request)
        except BaseException:  # no answer will be read from this POST (cancelled or failed before its headers)
            if request_id is not None:
                self.awaiting.done(request_id)
            raise
        if response.status_code == 202:  # accepted: the answer comes on another stream (the SSE transport's)
            request_id = None
        body = self._bounded(request, response, request_id)
        return httpx2.Response(response.status_code, headers=body.headers, stream=body, request=request,
                               extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _stop_cancelled(self, message: Any) -> None:
        if isinstance(message, mcp_types.JSONRPCNotification) and message.method == "notifications/cancelled":
            for scope in self._reading.get(str((message.params or {}).get("requestId")), ()):
                scope.cancel()

    def _bounded(self, request: httpx2.Request, response: httpx2.Response, request_id: RequestId | None
                 ) -> _Body:
        headers = response.headers.copy()  # the list copied, not each header normalized again
        for name in _DROPPED:
            if name in headers:
                del headers[name]
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        body: httpx2.AsyncByteStream
        if encoding not in ("", "identity"):
            body = _Refused(self, response.stream, request_id, f"a compressed body ({encoding}) although it was "
                            "asked for none")
            if "content-type" in headers:
                del headers["content-type"]
            headers["content-type"] = "application/json"
        elif kind == "text/event-stream":
            body = _EventBody(self, response.stream, request_id)
        else:
            declared = response.headers.get("content-length", "")
            body = _JsonBody(self, response.stream, request_id, int(declared) if declared.isdigit() else None)
        body.headers = headers
        body.reuse = request.method == "POST"
        return body

    # -- used by the bodies --------------------------------------------------------------------------
    async def read(self, chunks: AsyncIterator[bytes], request_id: RequestId | None) -> bytes | None:
        """The next chunk of a body; None at its end, or when ``request_id`` was cancelled (then nothing more)."""
        if request_id is not None and request_id not in self.awaiting:
            return None
        key = str(request_id)
        with anyio.CancelScope() as scope:
            self._reading.setdefault(key, set()).add(scope)
            try:
                return await anext(chunks)
            except StopAsyncIteration:
                return None
            finally:
                scopes = self._reading.get(key)
                if scopes is not None:
                    scopes.discard(scope)
                    if not scopes:
                        del self._reading[key]
        return None

    def too_large(self, request_id: RequestId, size: int | None = None, values: bool = False
                  ) -> mcp_types.JSONRPCError:
        self.awaiting.done(request_id)
        return too_large_error(request_id, server=self.server, limit=self.limit, size=size, values=values)

    def refusal(self, request_id: RequestId, why: str) -> mcp_types.JSONRPCError:
        self.awaiting.done(request_id)
        return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(
            code=mcp_types.INTERNAL_ERROR, message=f"MCP server {self.server} sent {why}; it was not read"))


class _Body(httpx2.AsyncByteStream):
    def __init__(self, owner: BoundedTransport, inner: Any, request_id: RequestId | None) -> None:
        self.owner = owner
        self.inner = inner
        self.request_id = request_id
        self.chunks: AsyncIterator[bytes] = aiter(inner)
        self.drained = False
        self.headers = httpx2.Headers()
        self.reuse = False
        """A POST's body: read to its end on close when it is one nobody reads (a notification's 202)."""

    async def aclose(self) -> None:
        """Close the body: what is left of a POST's answer still awaited, or of a body nobody reads (a notification's
        ``202``), is drained first (:meth:`_drain`); a cancelled request's is not: its connection is closed."""
        try:
            awaited = self.request_id in self.owner.awaiting if self.request_id is not None else self.reuse
            if awaited and not self.drained:
                await self._drain()
        finally:
            if self.request_id is not None:
                self.owner.awaiting.done(self.request_id)
            try:
                closing = getattr(self.chunks, "aclose", None)  # the inner stream's iterator, closed here, not
                if closing is not None:  # left to the garbage collector (a task per body)
                    await closing()
            finally:
                await self.inner.aclose()

    async def _drain(self) -> None:
        """Read what is left of a POST's answer, briefly, so that its keep-alive connection can be used again.

        The SDK closes a POST's SSE stream as soon as the answer it waits for has arrived, before the server's
        end of the stream (which follows at once) was read: closing a response before its end closes its TCP
        connection, and every call would open a new one. What is left is read (and dropped) for at most
        ``DRAIN_SECONDS`` and ``limit`` bytes; a server that keeps the stream open longer loses the connection,
        and its later answers pass at once (``reads_ahead`` off: one call waited, not every call).
        """
        self.drained = True  # once: what is left after a drain (the answer passed) is not read again on close
        if not self.owner.reads_ahead:
            return
        size = 0
        with anyio.move_on_after(DRAIN_SECONDS) as scope:
            async for chunk in self.chunks:
                size += len(chunk)
                if size > self.owner.limit:
                    return
        if scope.cancelled_caught:  # a server that keeps its streams open: its answers pass at once from now on
            self.owner.reads_ahead = False
            log.info("MCP server %s keeps a POST's stream open after its answer: each call gets a new connection",
                     self.owner.server)


class _Refused(_Body):
    def __init__(self, owner: BoundedTransport, inner: Any, request_id: RequestId | None, why: str) -> None:
        super().__init__(owner, inner, request_id)
        self.why = why

    async def __aiter__(self) -> AsyncIterator[bytes]:
        log.warning("MCP server %s sent %s; not read", self.owner.server, self.why)
        if self.request_id is not None:
            yield _json_error(self.owner.refusal(self.request_id, self.why))


class _JsonBody(_Body):
    """A body read whole up to the limit; over it, the error answering the request instead."""

    def __init__(self, owner: BoundedTransport, inner: Any, request_id: RequestId | None, declared: int | None
                 ) -> None:
        super().__init__(owner, inner, request_id)
        self.declared = declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = await self._read()
        if body:
            yield body

    async def _read(self) -> bytes:
        limit = self.owner.limit
        if self.declared is not None and self.declared > limit:
            return self._over(self.declared)
        parts: list[bytes] = []
        size = 0
        while (chunk := await self.owner.read(self.chunks, self.request_id)) is not None:
            size += len(chunk)
            if size > limit:
                return self._over(size)
            parts.append(chunk)
        if self.request_id is not None and self.request_id not in self.owner.awaiting:
            return b""  # cancelled while it was read: nobody waits for the rest, or for a part
        body = b"".join(parts)
        if self.request_id is not None and too_many_values(body):
            log.warning("MCP server %s answered with too many JSON values: not read", self.owner.server)
            return _json_error(self.owner.too_large(self.request_id, values=True))
        return body

    def _over(self, size: int) -> bytes:
        log.warning("MCP server %s answered with a body of %s bytes or more, over its limit of %s: not read",
                    self.owner.server, f"{size:,}", f"{self.owner.limit:,}")
        return b"" if self.request_id is None else _json_error(self.owner.too_large(self.request_id, size))


class _EventBody(_Body):
    """An SSE body passed on whole event by whole event (see the module docstring)."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        events = EventSplitter(self.owner.limit)
        while True:
            chunk = await self.owner.read(self.chunks, self.request_id)
            if chunk is None:
                if self.request_id is not None and self.request_id not in self.owner.awaiting:
                    raise httpx2.SSEError("the request was cancelled: its stream is not read any further")
                rest = events.end()
                out = [] if rest is None else [rest]
            else:
                out = events.feed(chunk)
            for event in out:
                passed, ends = self._pass(event)
                if passed is not None and not ends and self._answers(passed):
                    await self._drain()  # the end of the stream first: the connection is free when the caller
                    yield passed  # has its answer (and sends its next request)
                    return
                if passed is not None:
                    yield passed
                if ends:
                    return
            if chunk is None:
                return
            overflowing = events.overflowing
            if overflowing is not None:
                stop = self._on_overflow(overflowing)
                if stop is not None:
                    yield stop
                    return

    def _answers(self, event: bytes) -> bool:
        """Whether ``event`` is the answer to this POST's request (the last message its stream carries)."""
        if self.request_id is None:
            return False
        message = _event_message(event)
        return (isinstance(message, dict) and "method" not in message
                and str(message.get("id")) == str(self.request_id))

    def _pass(self, event: bytes | Oversized) -> tuple[bytes | None, bool]:
        """What goes on for one whole event (None: nothing), and whether the stream ends after it."""
        if isinstance(event, bytes) and not too_many_values(event):
            self._note(event)
            return event, False
        values = isinstance(event, bytes)
        if isinstance(event, bytes):
            event = Oversized(head=event[:KEEP], tail=event[-KEEP:], size=len(event))
        answer = self._answer(event, values=values)
        return answer, answer is not None and self.request_id is not None

    def _origin(self, event: Oversized, *, whole: bool) -> MessageOrigin:
        first, last = event_data(event.head, event.tail if whole else b"")
        return origin_of(first, last)

    def _on_overflow(self, event: Oversized) -> bytes | None:
        """What to do while an event over the limit arrives: an answer that ends the stream, or None to read on."""
        origin = self._origin(event, whole=False)
        if self.request_id is not None:  # a POST's stream: its answer is too large, unless the server asks something
            if origin.from_server:
                return None
            return _sse_error(self.owner.too_large(self.request_id, event.size))
        if self.owner.awaiting.awaits(origin) or (origin.id is None and event.size <= 2 * self.owner.limit):
            return None
        raise httpx2.SSEError(f"MCP server {self.owner.server} sent an event of over {event.size:,} bytes (its limit "
                              f"is {self.owner.limit:,}) that no call waits for")

    def _answer(self, event: Oversized, values: bool = False) -> bytes | None:
        """The error event answering the request a message too large answered, once it has all arrived."""
        origin = self._origin(event, whole=True)
        much = "too many JSON values" if values else f"{event.size:,} bytes"
        log.warning("MCP server %s sent an event of %s, over its limits (%s bytes): dropped", self.owner.server,
                    much, f"{self.owner.limit:,}")
        size = None if values else event.size
        if self.request_id is not None and not origin.from_server:
            return _sse_error(self.owner.too_large(self.request_id, size, values))
        if origin.id is not None and origin.id in self.owner.awaiting:
            return _sse_error(self.owner.too_large(origin.id, size, values))
        return None

    def _note(self, event: bytes) -> None:
        """On a GET stream, an answer that arrives ends the wait for it (one parse of the event's data)."""
        if self.request_id is None and len(self.owner.awaiting):
            message = _event_message(event)
            if isinstance(message, dict) and "method" not in message and "id" in message:
                self.owner.awaiting.done(message["id"])


def _event_message(event: bytes) -> Any:
    """The JSON value of an SSE event's data (None: no data, or not JSON)."""
    data = b"\n".join(line[5:].removeprefix(b" ") for line in event.splitlines() if line.startswith(b"data:"))
    try:
        return pydantic_core.from_json(data, cache_strings=False) if data else None
    except ValueError:
        return None
