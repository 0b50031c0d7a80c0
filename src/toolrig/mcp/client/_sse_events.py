"""An SSE body cut into whole events of bounded size: :class:`EventSplitter` (what the HTTP bounds pass on).

Lines come from :class:`~toolrig.mcp.shared._lines.LineSplitter`; an event is its lines up to a blank one. An event
is held until it is complete and then passed on whole, as valid UTF-8 (an invalid byte becomes U+FFFD here,
so the SDK's own count of the event, made on the decoded text, is never larger than ours). An event of more
than ``limit`` bytes is dropped as it arrives, keeping its first and last bytes, and comes out as an
:class:`~toolrig.mcp.shared._lines.Oversized`; :attr:`EventSplitter.overflowing` shows it while it is still arriving.
A server that ends lines with a lone ``\\r`` has events that look like one long line here: they are held
whole up to the limit, and over it they are dropped (never passed on unchecked).
"""

from __future__ import annotations

from toolrig.mcp.shared import KEEP, LineSplitter, Oversized

__all__ = ["EventSplitter", "event_data"]


def event_data(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """The JSON text at the start and at the end of an event's ``data`` (what :func:`origin_of` reads)."""
    first = b""
    for line in head.split(b"\n"):
        if line.startswith(b"data:"):
            first = line[5:].removeprefix(b" ")
            break
    cut = tail.rfind(b"\ndata:")
    last = tail[cut + 6:].removeprefix(b" ") if cut >= 0 else tail
    return first, last.rstrip(b"\r\n")


class EventSplitter:
    """Splits an SSE byte stream into whole events of at most ``limit`` bytes (see the module docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lines = LineSplitter(limit)
        self._held: list[bytes] = []
        self._size = 0
        self._drop: Oversized | None = None  # the event being dropped: head, tail so far, size so far

    @property
    def overflowing(self) -> Oversized | None:
        """The event being dropped because it is too long (None when none is)."""
        if self._drop is not None:
            return self._drop
        line = self._lines.skipping
        if line is None:
            return None
        held = b"".join(self._held)
        return Oversized(head=(held + line.head)[:KEEP], tail=line.tail, size=self._size + line.size)

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The events ``chunk`` completes, in order: whole events (with their blank line) or :class:`Oversized`."""
        out: list[bytes | Oversized] = []
        for line in self._lines.feed(chunk):
            if isinstance(line, Oversized):
                self._long_line(line)
                continue
            blank = not line.strip(b"\r")
            if self._drop is not None:
                if blank:
                    out.append(self._end_drop())
                else:
                    self._grow_drop(line + b"\n")
                continue
            self._held.append(line + b"\n")
            self._size += len(line) + 1
            if self._size > self.limit:
                self._start_drop(b"", b"", 0)
                if blank:
                    out.append(self._end_drop())
            elif blank:
                out.append(self._release())
        return out

    def end(self) -> bytes | Oversized | None:
        """At the end of the body: an event left without its blank line (None if there is none)."""
        last = self._lines.end()
        if isinstance(last, Oversized):
            self._long_line(last)
        elif last and self._drop is not None:
            self._grow_drop(last)
        elif last:
            self._held.append(last)
            self._size += len(last)
        if self._drop is not None:
            return self._end_drop()
        return self._release() if self._held else None

    def _long_line(self, line: Oversized) -> None:
        if self._drop is None:
            self._start_drop(line.head, line.tail, line.size)
        else:
            self._drop = Oversized(head=self._drop.head, tail=line.tail, size=self._drop.size + line.size)

    def _start_drop(self, head: bytes, tail: bytes, size: int) -> None:
        held = b"".join(self._held)
        self._drop = Oversized(head=(held + head)[:KEEP], tail=(held[-KEEP:] + tail)[-KEEP:], size=self._size + size)
        self._held, self._size = [], 0

    def _end_drop(self) -> Oversized:
        dropped = self._drop
        assert dropped is not None
        self._drop = None
        return dropped

    def _grow_drop(self, piece: bytes) -> None:
        assert self._drop is not None
        self._drop = Oversized(head=self._drop.head, tail=(self._drop.tail + piece[-KEEP:])[-KEEP:],
                               size=self._drop.size + len(piece))

    def _release(self) -> bytes | Oversized:
        event = b"".join(self._held)
        self._held, self._size = [], 0
        try:
            event.decode("utf-8")
        except UnicodeDecodeError:
            event = event.decode("utf-8", errors="replace").encode("utf-8")
            if len(event) > self.limit:
                return Oversized(head=event[:KEEP], tail=event[-KEEP:], size=len(event))
        return event
