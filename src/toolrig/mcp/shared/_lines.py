"""Newline-delimited messages read with a bound, in linear time: :class:`LineSplitter` (both stdio transports).

Chunks go in, complete lines come out. A line is held only up to ``max_line`` bytes; past that the splitter
keeps the line's first and last :data:`KEEP` bytes (enough to tell which request the message answered, see
:mod:`toolrig.mcp.shared._oversized`) and drops the rest as it arrives, so a line of any length costs memory bounded
by ``max_line`` and time linear in its length (each byte is looked at once: no re-joining of a growing buffer).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KEEP", "LineSplitter", "Oversized"]

KEEP = 4096
"""Bytes kept of the beginning and of the end of a line that is too long."""


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the bound: its first and last bytes, and its length (so far, while still arriving)."""

    head: bytes
    tail: bytes
    size: int


class LineSplitter:
    """Splits a byte stream into lines (without their ``\\n``) of at most ``max_line`` bytes.

    Args:
        max_line: the longest line returned as a line; a longer one comes out as an :class:`Oversized`.
    """

    def __init__(self, max_line: int) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._head: bytes | None = None  # set while a line that is too long is being skipped
        self._tail = b""

    @property
    def skipping(self) -> Oversized | None:
        """The line being dropped because it is too long (None when none is)."""
        if self._head is None:
            return None
        return Oversized(head=self._head, tail=self._tail, size=self._size)

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines that ``chunk`` completes, in order."""
        out: list[bytes | Oversized] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._add(chunk[start:] if start else chunk)
                return out
            self._add(chunk[start:end])
            out.append(self._finish())
            start = end + 1

    def end(self) -> bytes | Oversized | None:
        """At the end of the stream: the last line if it had no ``\\n`` (None if there was nothing after the last)."""
        if self._head is None and not self._size:
            return None
        return self._finish()

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        if self._head is not None:
            self._size += len(piece)
            if len(self._head) < KEEP:
                self._head += piece[:KEEP - len(self._head)]
            self._tail = (self._tail + piece[-KEEP:])[-KEEP:]
        elif self._size + len(piece) > self.max_line:
            held = b"".join(self._parts)
            self._head = (held[:KEEP] + piece[:KEEP])[:KEEP]
            self._tail = (held[-KEEP:] + piece[-KEEP:])[-KEEP:]
            self._parts = []
            self._size += len(piece)
        else:
            self._parts.append(piece)
            self._size += len(piece)

    def _finish(self) -> bytes | Oversized:
        done: bytes | Oversized
        if self._head is not None:
            done = Oversized(head=self._head, tail=self._tail, size=self._size)
        else:
            done = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts, self._size, self._head, self._tail = [], 0, None, b""
        return done
