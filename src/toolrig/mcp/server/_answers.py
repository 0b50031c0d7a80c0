"""Request POSTs answered on SSE by toolrig itself; everything else still goes to the SDK's transport.

The SDK's ``StreamableHTTPServerTransport`` answers every request POST with sse-starlette's
``EventSourceResponse``, fed through a zero-buffer memory stream by a writer task: a task group of five tasks
per POST (the writer, the stream, a ping loop, a shutdown listener, a disconnect listener), a lock and a cancel
scope per event. That costs about a million instructions per ``tools/call`` (bench/README.md, "srvhttp").
:class:`SessionAnswers` sits between the session's message loop and the SDK transport and writes the SSE answer
of an ordinary request POST from the request's own task: the same headers, the same priming event (its id
stored first), the same ``event: message`` events with their stored ids, a ping comment every 15 s, and the
same end. What it cannot answer exactly as the SDK would (``initialize``, notifications and responses, a bad
header or body, a terminated session, GET, DELETE) it hands to the SDK transport with the body replayed.

An answer whose first message is the request's own response, within :data:`JSON_WINDOW` of the request, goes
out as one JSON body (``application/json``, as the SDK's JSON mode writes it; the client's ``Accept`` names both):
nothing else was sent for that request, and a JSON body keeps the connection alive where a client closes an SSE
answer before its end. That body is written by the task that sends the response (the session's handler), as it
routes it: the answer leaves before that task's own ending, without waking the request's task first. Any other
first message (a progress or log notification, the server's own request), a closed stream, or no message within
the window starts the SSE answer as before: headers, the priming event, then the events. Only an SSE answer
stores events: a JSON answer's stream has no event id the client ever sees, so it can never be resumed, and its
events would only push resumable streams' events out of a bounded store. The priming event is stored when the
answer becomes SSE, by whichever task decides it (the router on a first message that is not the response, the
request's task when the window ends or its stream is closed), before any message of that stream: the stored
order is the written order. An SSE answer ends when its client
leaves (a task watches for the disconnect); within the window no task watches (one per request was ~5% of a
forwarded call): a client gone then is seen when the window ends, or its answer is written to nobody (the server
drops it). Either way the request itself runs on, as with the SDK's transport.

Messages of the session's loop go to a request's own stream while its POST is answered here; any other (a
request whose stream was closed or broken, the standalone GET stream's) go to the SDK transport, which stores
them and routes them to a resumed stream (``Last-Event-ID``) as before: one event store serves both. An event
store is user code: one that raises on a priming event or on a message leaves the SSE answer without that event
id (logged; a resumption from before it cannot replay what follows), nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.streamable_http import EventStore, StreamableHTTPServerTransport, check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import is_version_at_least
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from toolrig.mcp.shared import context_streams

__all__ = ["SessionAnswers"]

log = logging.getLogger("toolrig.mcp.server")

_PING_SECONDS = 15.0
"""sse-starlette's default ping interval, kept."""
_BUFFER = 16
"""Messages a request's stream holds (the SDK's ``REQUEST_STREAM_BUFFER_SIZE``)."""
JSON_WINDOW = 0.1
"""Seconds an answer waits for its first message before it becomes an SSE stream (the priming event is that much
later at most); a request answered within it, with nothing sent before the answer, gets a JSON body."""
_RESUMABLE_FROM = "2025-11-25"
_JSON = "application/json"
_End = (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` giving the body already read, in one message, then the real one's messages (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _event_bytes(message: Any, event_id: str | None) -> bytes:
    """One ``event: message`` SSE event, as sse-starlette encodes the SDK's (JSON has no raw line breaks)."""
    data = message.model_dump_json(by_alias=True, exclude_unset=True)
    head = f"id: {event_id}\r\n" if event_id else ""
    return f"{head}event: message\r\ndata: {data}\r\n\r\n".encode()


class SessionAnswers:
    """One session's message routing, and the SSE answers of its request POSTs (see the module docstring).

    Use :meth:`run` as the session's loop streams (``read``, ``write``) in place of the transport's own, and
    :meth:`handle_request` in place of ``transport.handle_request``.
    """

    def __init__(self, transport: StreamableHTTPServerTransport, *, event_store: EventStore | None,
                 security: TransportSecurityMiddleware, session_id: str, retry_interval: int | None = None,
                 idle_timeout: float | None = None) -> None:
        self.transport = transport
        self.event_store = event_store
        self.security = security
        self.retry = "" if retry_interval is None else f"retry: {retry_interval}\r\n"
        self.idle_timeout = idle_timeout
        self.idle_scope = anyio.CancelScope()
        """Cancelled once no request has been in flight for ``idle_timeout`` seconds (the SDK transport's rule,
        kept here because requests answered here never reach the transport's count)."""
        self._in_flight = 0
        self.headers = [(b"cache-control", b"no-cache, no-transform"), (b"connection", b"keep-alive"),
                        (b"content-type", b"text/event-stream"), (b"mcp-session-id", session_id.encode("latin-1")),
                        (b"x-accel-buffering", b"no")]
        self.json_headers = [(b"content-type", _JSON.encode()), (b"mcp-session-id", session_id.encode("latin-1"))]
        self._read_in, self.read = context_streams()
        self.write = _Router(self)
        """The session loop's write stream: each message goes to its request's answer from the sending task (no
        routing task in between), else to the SDK transport."""
        self._transport_write: Any = None
        self._streams: dict[str, _Pending] = {}

    async def run(self, read: Any, write: Any, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Pump the transport's inbound messages to :attr:`read`; :attr:`write` routes the outbound ones."""
        self._transport_write = write
        try:
            task_status.started()
            try:
                async for item in read:
                    await self._read_in.send_in(getattr(read, "last_context", None), item)
            except anyio.ClosedResourceError:
                pass
            finally:  # the transport ended the session: so does its loop, and every answer being written here
                self._read_in.close()
                self.close_all()
        finally:  # cancelled once the session's loop has ended: no stream of it is left open
            self._read_in.close()
            self.read.close()
            self.write.closed = True

    def close_all(self) -> None:
        """End every answer being written here (the session ended)."""
        for pending in list(self._streams.values()):
            pending.inbox.close()
        self._streams.clear()

    async def route(self, session_message: SessionMessage) -> None:
        """Pass one message of the session's loop on: to its request's answer being written here, else to the SDK
        transport (dropped once the transport has ended the session)."""
        message = session_message.message
        target = None
        if isinstance(message, _End) and message.id is not None:
            target = str(message.id)
        elif isinstance(session_message.metadata, ServerMessageMetadata) \
                and session_message.metadata.related_request_id is not None:
            target = str(session_message.metadata.related_request_id)
        pending = self._streams.get(target) if target is not None else None
        if pending is None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._transport_write.send(session_message)
            return
        assert target is not None
        if pending.json:  # the request's first message, within the window: its answer is decided here
            pending.json = False
            if isinstance(message, _End):  # answered at once, nothing before: one JSON body, written from here,
                pending.answered = True  # and nothing stored (no id of this stream ever reaches the client)
                await self._json_answer(pending, message)
                return
        event_id = None
        if self.event_store is not None:  # an SSE answer: its priming event first, then this message
            if pending.resumable:
                await self._primed(pending, target)
            event_id = await self._stored(target, message)
        try:
            await pending.inbox.send((message, event_id))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            if self._streams.get(target) is pending:
                del self._streams[target]

    async def _json_answer(self, pending: _Pending, message: Any) -> None:
        """Write ``message`` as the request's JSON body (as the SDK's JSON mode writes it), then let the request's
        own task end (it waits until the body is written: an ASGI app that returns first cuts its response)."""
        try:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            headers = [*self.json_headers, (b"content-length", str(len(data)).encode())]
            await pending.send({"type": "http.response.start", "status": 200, "headers": headers})  # a no-op for
            await pending.send({"type": "http.response.body", "body": data, "more_body": False})  # a client gone
        except Exception:  # the server's own send: not expected to raise; the request's POST is left unanswered
            log.exception("writing the answer to request %s failed", message.id)
        finally:
            pending.inbox.close()

    async def _stored(self, stream_id: str, message: Any) -> str | None:
        """The event id ``message`` was stored under; None when the event store raised (user code: logged, and the
        message is still delivered, without an id: only a resumption after it could miss it, where a router that
        died on the error would end every answer of the session)."""
        assert self.event_store is not None
        try:
            return await self.event_store.store_event(stream_id, message)
        except Exception:
            log.exception("the event store failed to store a message of request %s: sent without an event id",
                          stream_id)
            return None

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request POST here when it is an ordinary request on SSE; anything else, the SDK transport.

        A request in flight (an open GET stream included) holds the session open; the idle countdown restarts
        when the last one ends.
        """
        if self.idle_timeout is None:
            await self._handle(scope, receive, send)
            return
        if self.idle_scope.cancel_called:  # the session is ending: answered as terminated
            if not self.transport.is_terminated:
                await self.transport.terminate()
            await self.transport.handle_request(scope, receive, send)
            return
        self._in_flight += 1
        self.idle_scope.deadline = math.inf
        try:
            await self._handle(scope, receive, send)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self.idle_scope.deadline = anyio.current_time() + self.idle_timeout

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST" or self.transport.is_terminated:
            await self.transport.handle_request(scope, receive, send)
            return
        request = Request(scope, receive)
        body = await request.body()
        message = self._ordinary_request(request, body)
        if message is None or await self.security.validate_request(request, is_post=True) is not None:
            await self.transport.handle_request(scope, _replayed(body, receive), send)
            return
        await self._answer(message, request, receive, send)

    def _ordinary_request(self, request: Request, body: bytes) -> mcp_types.JSONRPCRequest | None:
        has_json, has_sse = check_accept_headers(request)
        content_type = request.headers.get("content-type", "")
        if not (has_json and has_sse) or not any(
                part.strip() == _JSON for part in content_type.split(";")[0].split(",")):
            return None
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
        except (ValueError, ValidationError):
            return None
        if not isinstance(message, mcp_types.JSONRPCRequest) or message.method == "initialize":
            return None
        return message

    async def _answer(self, message: mcp_types.JSONRPCRequest, request: Request, receive: Receive,
                      send: Send) -> None:
        version = request.headers.get("mcp-protocol-version", mcp_types.DEFAULT_NEGOTIATED_VERSION)
        resumable = self.event_store is not None and is_version_at_least(version, _RESUMABLE_FROM)
        request_id = str(message.id)
        inbox, outbox = anyio.create_memory_object_stream[tuple[Any, str | None]](_BUFFER)
        pending = self._streams[request_id] = _Pending(inbox, send, resumable)
        close: Callable[[], Any] | None = None
        if resumable:
            async def close() -> None:
                pending.json = False
                inbox.close()

        async def close_standalone() -> None:
            self.transport.close_standalone_sse_stream()

        async def unanswered() -> None:
            error = mcp_types.ErrorData(code=-32800, message="Request cancelled")
            await self.write.send(SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=message.id,
                                                                            error=error)))

        metadata = ServerMessageMetadata(request_context=request, close_sse_stream=close,
                                         close_standalone_sse_stream=close_standalone if resumable else None,
                                         on_request_unanswered=unanswered, can_send_request=True)
        started = False
        try:
            await self._read_in.send(SessionMessage(message, metadata=metadata))
            first = await self._first(outbox)  # no watcher yet: a client gone within the window is seen after it
            if pending.answered:  # the answer came at once: its JSON body is written by the task that sent it
                with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                    await outbox.receive()  # until written (its inbox is closed then)
                return
            pending.json = False  # the window is over, or a message came first: an SSE answer
            priming = await self._primed(pending, request_id) if resumable else None
            async with anyio.create_task_group() as tg:  # an SSE answer ends when its client leaves
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope)
                await anyio.lowlevel.checkpoint()  # the watcher first: a client gone in the window ends it here
                started = True
                await send({"type": "http.response.start", "status": 200, "headers": self.headers})
                if priming is not None:
                    body = f"id: {priming}\r\ndata: \r\n{self.retry}\r\n".encode()
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                if first is not None:
                    await send({"type": "http.response.body", "body": _event_bytes(*first), "more_body": True})
                await self._write_events(outbox, send)
                tg.cancel_scope.cancel()
            if started:  # else the client left before anything was written: nothing to end
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if self._streams.get(request_id) is pending:
                del self._streams[request_id]
            inbox.close()
            outbox.close()

    async def _primed(self, pending: _Pending, request_id: str) -> str | None:
        """The id of the SSE answer's priming event, stored by the first task to ask (no await between its check
        and its claim), which the other waits for: stored before any message of the stream. None when the event
        store raised (user code: logged; the answer goes out without it, not resumable from its start)."""
        if pending.primed is not None:
            await pending.primed.wait()
            return pending.priming
        pending.primed = anyio.Event()
        assert self.event_store is not None
        try:
            pending.priming = await self.event_store.store_event(request_id, None)
        except Exception:  # user code
            log.exception("the event store failed to store the priming event of request %s: its SSE answer is "
                          "sent without one", request_id)
        finally:
            pending.primed.set()
        return pending.priming

    @staticmethod
    async def _first(outbox: MemoryObjectReceiveStream[tuple[Any, str | None]]) -> tuple[Any, str | None] | None:
        """The request's first message if it comes within :data:`JSON_WINDOW`; None if none came or the stream
        was closed (``close_sse_stream``): the answer is then an SSE stream."""
        with anyio.move_on_after(JSON_WINDOW):
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                return await outbox.receive()
        return None

    @staticmethod
    async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    @staticmethod
    async def _write_events(outbox: MemoryObjectReceiveStream[tuple[Any, str | None]], send: Send) -> None:
        while True:
            with anyio.move_on_after(_PING_SECONDS) as idle:
                try:
                    message, event_id = await outbox.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return
            if idle.cancelled_caught:
                ping = f": ping - {datetime.now(UTC)}\r\n\r\n".encode()
                await send({"type": "http.response.body", "body": ping, "more_body": True})
                continue
            await send({"type": "http.response.body", "body": _event_bytes(message, event_id), "more_body": True})
            if isinstance(message, _End):
                return


class _Pending:
    """A request POST being answered here: its messages' stream, its ASGI ``send``, what its answer is."""

    __slots__ = ("answered", "inbox", "json", "primed", "priming", "resumable", "send")

    def __init__(self, inbox: MemoryObjectSendStream[tuple[Any, str | None]], send: Send, resumable: bool) -> None:
        self.inbox = inbox
        self.send = send
        self.resumable = resumable
        """Its SSE answer begins with a priming event (an event store, and a protocol version that resumes)."""
        self.primed: anyio.Event | None = None
        """Set once its priming event is stored (created by the task that stores it); None before anyone asked."""
        self.priming: str | None = None
        """The priming event's id (None if the store raised)."""
        self.json = True
        """Nothing has been passed on for the request yet and its window is not over: if its response comes
        now, it is the JSON body."""
        self.answered = False
        """Its response came while ``json`` held: written as the JSON body by the task that sent it."""


class _Router:
    """:attr:`SessionAnswers.write`: what the SDK's session loop writes to (``send``, ``aclose``, ``async with``);
    each message is routed from the task that sends it (:meth:`SessionAnswers.route`)."""

    __slots__ = ("answers", "closed")

    def __init__(self, answers: SessionAnswers) -> None:
        self.answers = answers
        self.closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        await self.answers.route(item)

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> _Router:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True
