"""Server-sent events out of the bytes of an SSE body: :class:`EventParser` (the field rules of the SSE format)."""

from __future__ import annotations

__all__ = ["EventParser", "SSEEvent"]


class SSEEvent:
    """One server-sent event: its type, data, the last event id seen on its stream, and its retry (ms)."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, event: str, data: bytes, id: str, retry: int | None) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry


class EventParser:
    """Events out of the bytes of an SSE body (the rules of httpx2's parser, which the SDK's transport uses).

    The bounded transport passes the body on in whole events; a line cut between two pieces is joined anyway.
    An event without its blank line at the end of the body is dropped, as the SSE format says.
    """

    __slots__ = ("_data", "_event", "_id", "_partial", "_pending", "_retry")

    def __init__(self) -> None:
        self._event = ""
        self._data: list[bytes] = []
        self._id = ""
        self._retry: int | None = None
        self._pending = False
        self._partial = b""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events ``chunk`` completes (a line cut at its end waits for the next chunk)."""
        if self._partial:
            chunk, self._partial = self._partial + chunk, b""
        events: list[SSEEvent] = []
        for line in chunk.splitlines(keepends=True):
            if line[-1:] not in (b"\n", b"\r"):
                self._partial = line
                break
            event = self._line(line.rstrip(b"\r\n"))
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: bytes) -> SSEEvent | None:
        if not line:
            if not self._pending:
                return None
            event = SSEEvent(self._event or "message", b"\n".join(self._data), self._id, self._retry)
            self._event, self._data, self._retry, self._pending = "", [], None, False
            return event
        if line[:1] == b":":
            return None
        field, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            self._data.append(value)
            self._pending = True
        elif field == b"event":
            self._event = value.decode("utf-8", "replace")
            self._pending = True
        elif field == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
                self._pending = True
        elif field == b"retry":
            try:
                self._retry = int(value)
                self._pending = True
            except ValueError:
                pass
        return None
