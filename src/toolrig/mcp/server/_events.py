"""A bounded in-memory event store: resumable SSE streams for a stateful streamable HTTP server.

With an event store, every server-to-client message on a stream gets an event id; a client whose
stream broke reconnects with ``Last-Event-ID`` and receives what it missed. Only the newest
``max_events`` events are kept (per server process).

One store serves every session of an endpoint, but the SDK names a stream after the JSON-RPC request id
(``"1"``) or ``"_GET_stream"``, the same in every session: resuming one's own stream with ``Last-Event-ID``
would replay other sessions' messages on a stream of that name. :class:`SessionEvents` gives each session its
own view of the store: its stream names and event ids carry a random per-session tag, and an event id of
another session (or any id it did not issue) replays nothing.
"""

from __future__ import annotations

import base64
import os
import secrets
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage

__all__ = ["MemoryEventStore", "SessionEvents"]

_ID_BYTES = 18
"""Random bytes per event id (144 bits; 24 URL-safe characters)."""


class MemoryEventStore(EventStore):
    """Keeps the newest ``max_events`` events; event ids are random and unguessable."""

    def __init__(self, max_events: int = 10_000) -> None:
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.max_events = max_events
        self._events: OrderedDict[str, tuple[str, JSONRPCMessage | None]] = OrderedDict()
        self._random = b""
        self._drawn = 0

    def _new_id(self) -> str:
        """A random event id, as ``secrets.token_urlsafe(18)`` makes one, from random bytes drawn ahead in bulk (one
        call to the operating system's CSPRNG per 256 ids, not one per event: two events per call)."""
        if self._drawn + _ID_BYTES > len(self._random):
            self._random, self._drawn = os.urandom(_ID_BYTES * 256), 0
        raw = self._random[self._drawn:self._drawn + _ID_BYTES]
        self._drawn += _ID_BYTES
        return base64.urlsafe_b64encode(raw).decode("ascii")

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = self._new_id()
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.max_events:
            self._events.popitem(last=False)
        return event_id

    @property
    def event_count(self) -> int:
        """Events kept now."""
        return len(self._events)

    def forget_streams(self, prefix: str) -> int:
        """Drop the events of every stream whose id starts with ``prefix`` (a closed session's); how many."""
        gone = [event_id for event_id, (stream, _) in self._events.items() if stream.startswith(prefix)]
        for event_id in gone:
            del self._events[event_id]
        return len(gone)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        if last_event_id not in self._events:
            return None
        stream_id = self._events[last_event_id][0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if event_id == last_event_id:
                after = True
            elif after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message=message, event_id=event_id))
        return stream_id


class SessionEvents(EventStore):
    """One session's view of a shared :class:`EventStore`: it stores and replays only that session's events."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.tag = secrets.token_urlsafe(12)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = await self.store.store_event(f"{self.tag}/{stream_id}", message)
        return f"{self.tag}.{event_id}"

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        head, _, inner = last_event_id.partition(".")
        if head != self.tag or not inner:
            return None  # another session's event, or none this store issued

        async def forward(event: EventMessage) -> None:
            await send_callback(EventMessage(message=event.message, event_id=f"{self.tag}.{event.event_id}"))

        stream = await self.store.replay_events_after(inner, forward)
        if stream is None or not stream.startswith(f"{self.tag}/"):
            return None
        return stream.removeprefix(f"{self.tag}/")
