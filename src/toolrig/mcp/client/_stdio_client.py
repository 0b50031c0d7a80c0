"""The stdio client transport: a server as a subprocess, its stdout read in bounded lines, in linear time.

The SDK's ``stdio_client`` joins every chunk onto the unfinished line (a 50 MB line cost 20 s of CPU, time
quadratic in its length) and holds a line however long it is. This transport has the SDK's shape (an async
context manager yielding the (read, write) streams of :class:`~mcp.shared.message.SessionMessage`, each line
parsed by the SDK's own message type; no JSON-RPC is dispatched here) and its shutdown sequence, and reads
stdout with :class:`~toolrig.mcp.shared._lines.LineSplitter`:

* a line is at most ``max_message`` bytes; a longer one is dropped as it arrives (never held) and, when it
  answers a request a call still awaits, that request gets a ``MESSAGE_TOO_LARGE`` error instead
  (:mod:`toolrig.mcp.shared._oversized`): that call fails, the session and every other call go on. So does a line
  of more than ``MAX_VALUES`` JSON values, counted before it is parsed;
* while such a line is being dropped, reading goes on only as long as a call may be waiting behind it: the
  call it answers (or, when it cannot be told yet, any call) — a call leaves when it is answered or cancelled,
  which the client does when the call's deadline passes. With no call left (and no call at all after another
  ``max_message`` bytes), reading stops there: the pipe cannot be resynchronised in the middle of a line, so
  the session ends, the server is stopped, and the connection's supervisor starts it again. A server that
  writes an endless line therefore costs CPU only until the deadline of the calls it holds up;
* shutdown: stdin closed, 2 s for the server to exit, then SIGTERM to its process group and SIGKILL 2 s later.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TextIO

import anyio
import anyio.abc
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from toolrig.mcp.shared import (
    KEEP,
    Awaiting,
    LineSplitter,
    MessageOrigin,
    Oversized,
    origin_of,
    too_large_error,
    too_many_values,
    unreadable_error,
)

__all__ = ["stdio_client"]

log = logging.getLogger("toolrig.mcp")

CHUNK = 1 << 16
"""Bytes asked of the pipe per read."""

_EXIT_GRACE = 2.0
_KILL_GRACE = 2.0
_REAP_GRACE = 2.0
_POLL = 0.01

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class _Pipes:
    """The reader and writer tasks of one server process."""

    def __init__(self, process: anyio.abc.Process, to_session: MemoryObjectSendStream[SessionMessage | Exception],
                 from_session: MemoryObjectReceiveStream[SessionMessage], *, max_message: int, server: str) -> None:
        self.process = process
        self.to_session = to_session
        self.from_session = from_session
        self.max_message = max_message
        self.server = server
        self.awaiting = Awaiting()
        self._skip_origin: tuple[bytes, MessageOrigin] | None = None

    async def write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            async with self.from_session:
                async for item in self.from_session:
                    self.awaiting.sent(item.message)
                    line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(line.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self.to_session.aclose()  # the server may be alive but deaf: the session sees the end

    async def read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        lines = LineSplitter(self.max_message)
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # the session went away first
            async with self.to_session:
                while True:
                    try:
                        chunk = await stdout.receive(CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                        last = lines.end()
                        if last is not None:
                            await self._deliver(last)
                        return
                    for item in lines.feed(chunk):
                        await self._deliver(item)
                    skipping = lines.skipping
                    if skipping is not None and not self._worth_reading(skipping):
                        log.warning("MCP server %s: stopped reading a message of over %s bytes (its limit is %s) "
                                    "that no call waits for any more; the session is restarted", self.server,
                                    f"{skipping.size:,}", f"{self.max_message:,}")
                        return

    def _worth_reading(self, skipping: Oversized) -> bool:
        """Whether to go on dropping the line that is too long (see the module docstring)."""
        if self._skip_origin is None or self._skip_origin[0] is not skipping.head:
            self._skip_origin = (skipping.head, origin_of(skipping.head, b""))
        origin = self._skip_origin[1]
        if self.awaiting.awaits(origin):
            return True
        return origin.id is None and skipping.size <= 2 * self.max_message

    async def _deliver(self, item: bytes | Oversized) -> None:
        if isinstance(item, Oversized):
            await self._refuse(origin_of(item.head, item.tail), size=item.size)
            return
        line = item.strip()
        if not line:
            return
        if too_many_values(line):
            await self._refuse(origin_of(line[:KEEP], line[-KEEP:]), values=True)
            return
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            log.warning("MCP server %s sent a line that is not a JSON-RPC message: %s", self.server, exc)
            origin = origin_of(line[:KEEP], line[-KEEP:])
            if origin.id is not None and origin.id in self.awaiting:  # the call it answers fails now, not never
                error = unreadable_error(origin.id, server=self.server, problem=exc)
                self.awaiting.received(error)
                await self.to_session.send(SessionMessage(error))
                return
            await self.to_session.send(exc)
            return
        self.awaiting.received(message)
        await self.to_session.send(SessionMessage(message))

    async def _refuse(self, origin: MessageOrigin, *, size: int | None = None, values: bool = False) -> None:
        """A message too large to read: the request it answers gets the error instead; anything else is dropped."""
        if origin.id is not None and origin.id in self.awaiting:
            error = too_large_error(origin.id, server=self.server, limit=self.max_message, size=size, values=values)
            self.awaiting.received(error)
            await self.to_session.send(SessionMessage(error))
            return
        what = "a request or notification" if origin.from_server else "a message that answers no waiting call"
        much = "too many JSON values" if values else f"{size or 0:,} bytes"
        log.warning("MCP server %s sent %s of %s, over its limits (%s bytes): dropped", self.server, what, much,
                    f"{self.max_message:,}")


@asynccontextmanager
async def stdio_client(command: str, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None,
                       cwd: str | None = None, errlog: TextIO, max_message: int, server: str
                       ) -> AsyncIterator[Streams]:
    """Start ``command`` and yield the (read, write) streams of its stdio (see the module docstring).

    The server gets the SDK's minimal environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``,
    ``USER``) plus ``env``, its own process group, and ``errlog`` as its stderr.

    Raises:
        OSError: the process cannot be started.
    """
    process = await anyio.open_process([command, *args], env=get_default_environment() | dict(env or {}),
                                       stderr=errlog, cwd=cwd, start_new_session=True)
    # No await between the start and the task group: a cancellation there would leak the process.
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    pipes = _Pipes(process, to_session, from_session, max_message=max_message, server=server)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipes.read)
        tg.start_soon(pipes.write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # the server is stopped even when the caller is cancelled
                read_stream.close()
                write_stream.close()
                await _stop(process)
            tg.cancel_scope.cancel()


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the server time to exit, then stop its whole process group (every wait bounded)."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(_EXIT_GRACE):  # returncode, not wait(): a child holding the pipes would hang it
        while process.returncode is None:
            await anyio.sleep(_POLL)
    if process.returncode is None:
        await terminate_posix_process_tree(process, _KILL_GRACE)
    with anyio.move_on_after(_REAP_GRACE):
        await process.aclose()
    if process.returncode is None:
        log.warning("MCP server process %d is still alive after SIGKILL; abandoning it", process.pid)
