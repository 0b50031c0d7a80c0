"""A bounded in-memory event store: resumable SSE streams for a stateful streamable HTTP server.

With an event store, every server-to-client message on a stream gets an event id; a client whose
stream broke reconnects with ``Last-Event-ID`` and receives what it missed. Only the newest
``max_events`` events are kept (per server process).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage

__all__ = ["MemoryEventStore"]


class MemoryEventStore(EventStore):
    """Keeps the newest ``max_events`` events; event ids are random and unguessable."""

    def __init__(self, max_events: int = 10_000) -> None:
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.max_events = max_events
        self._events: OrderedDict[str, tuple[str, JSONRPCMessage | None]] = OrderedDict()

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = secrets.token_urlsafe(18)
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.max_events:
            self._events.popitem(last=False)
        return event_id

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
