"""How a streamable-HTTP client reopens an SSE stream that ended early (the SDK's rules): :class:`StreamProgress`
keeps how far a stream was read, :meth:`StreamProgress.wait` waits as the server asked before the next attempt."""

from __future__ import annotations

import anyio

__all__ = ["LAST_EVENT_ID", "MAX_RECONNECT_ATTEMPTS", "RECONNECT_DELAY_MS", "StreamProgress"]

LAST_EVENT_ID = "last-event-id"
RECONNECT_DELAY_MS = 1000
"""Wait before reopening a stream when the server gave no ``retry`` (the SDK's default)."""
MAX_RECONNECT_ATTEMPTS = 2
"""Failed attempts in a row to reopen a stream before it is given up (the SDK's)."""


class StreamProgress:
    """How far a stream was read: the last event id seen and the server's last ``retry`` (ms)."""

    __slots__ = ("last_id", "retry")

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry: int | None = None

    async def wait(self) -> None:
        """Sleep for the server's ``retry``, or :data:`RECONNECT_DELAY_MS` when it gave none."""
        await anyio.sleep((self.retry if self.retry is not None else RECONNECT_DELAY_MS) / 1000)
