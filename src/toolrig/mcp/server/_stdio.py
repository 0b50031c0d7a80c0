"""The stdio transport of toolrig's MCP server: bounded lines, and an answer to every malformed message.

The SDK's ``stdio_server()`` reads a line however long it is, and a line that is not a JSON-RPC message
reaches the session as an exception that no client ever hears of. Here each line of stdin is read with a
bound (``max_line`` bytes; the rest of a longer line is read and dropped in small pieces, never held: the
:class:`~toolrig.mcp.shared._lines.LineSplitter` the client transport uses too; it is answered with the request's id
when its first or last bytes tell it) and checked first, as the HTTP endpoint checks a body
(:mod:`toolrig.mcp.server._limits`): what does not parse as standard JSON gets ``-32700``, a batch, a
non-object, a bad ``jsonrpc``/``method``/``id`` or a message of no known shape gets ``-32600`` (with the
request's id when it has a usable one), and the server reads on. Only valid messages are handed to the SDK's
transport. Stdin is read from a private duplicate; descriptor 0 points at ``/dev/null`` meanwhile, so tools and
their children read nothing of the protocol. Stdout likewise: the wire is a private duplicate of descriptor 1, which
points at stderr meanwhile (what the SDK's transport does), so stray output of tools stays off the wire.

When the wire is a pipe or a socket (as an MCP client starts a server), it is read and written without blocking,
on the event loop: a read or write that cannot proceed waits for the descriptor to be ready
(:func:`anyio.wait_readable` / :func:`anyio.wait_writable`). The SDK's transport instead hands every line read, and
every write and flush of an answer, to a worker thread: three thread round trips per call, which cost more CPU
than the rest of its transport. Anything else (a file, a terminal) is read and written in a worker thread as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import anyio
import anyio.to_thread
import mcp_types
import pydantic
import pydantic_core
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from toolrig.mcp.server._limits import MAX_BODY_BYTES, envelope_problem
from toolrig.mcp.shared import LineSplitter, Oversized, request_id_of

__all__ = ["MAX_LINE_BYTES", "checked_stdio"]

MAX_LINE_BYTES = MAX_BODY_BYTES
"""Longest message line accepted over stdio (4 MiB, as an HTTP body)."""

_CHUNK = 1 << 16


def _usable_id(message: Any) -> str | int | None:
    ident = message.get("id") if isinstance(message, dict) else None
    return ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None


def problem_of(line: bytes) -> tuple[int, str, str | int | None] | None:
    """``(code, message, id)`` of the JSON-RPC error a line deserves, or None when it is a valid message."""
    try:
        message = pydantic_core.from_json(line, allow_inf_nan=False)
    except ValueError as exc:
        return mcp_types.PARSE_ERROR, f"Parse error: {exc}", None
    problem = envelope_problem(message)
    if problem is None:
        try:
            mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except pydantic.ValidationError:
            problem = "not a JSON-RPC request, notification or response"
    if problem is None:
        return None
    return mcp_types.INVALID_REQUEST, f"Invalid request: {problem}", _usable_id(message)


def _streams(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket (read and written without blocking), not a file or a terminal."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _nonblocking(fd: int) -> Iterator[None]:
    """``fd`` without blocking while inside; its flags restored after (the open file may be shared)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)


class _Wire:
    """The SDK's stdout (``write`` and ``flush``) on a descriptor without blocking, on the event loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._pending = bytearray()

    async def write(self, text: str) -> None:
        self._pending += text.encode("utf-8")

    async def flush(self) -> None:
        while self._pending:
            try:
                written = os.write(self.fd, self._pending)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            del self._pending[:written]


class _CheckedLines:
    """Valid message lines of ``source`` for the SDK's reader; errors for the rest go to ``answer``.

    With ``nonblocking``, ``source``'s descriptor is in non-blocking mode and read on the event loop.
    """

    def __init__(self, source: io.BufferedIOBase, max_line: int, *, nonblocking: bool = False) -> None:
        self.source = source
        self.nonblocking = nonblocking
        self.max_line = max_line
        self.write: Any = None
        self.ready = anyio.Event()
        self._lines = LineSplitter(max_line)
        self._pending: deque[bytes | Oversized] = deque()
        self._ended = False

    def __aiter__(self) -> _CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._next_line()
            if isinstance(line, Oversized):
                ident = request_id_of(line.head, line.tail)
                await self._answer((mcp_types.INVALID_REQUEST, f"Invalid request: a message over "
                                    f"{self.max_line:,} bytes", ident))
                continue
            if not line.strip():
                continue
            problem = problem_of(line)
            if problem is None:
                return line.decode("utf-8")
            await self._answer(problem)

    async def _next_line(self) -> bytes | Oversized:
        while not self._pending:
            if self._ended:
                raise StopAsyncIteration
            chunk = await self._read()
            if chunk:
                self._pending.extend(self._lines.feed(chunk))
            else:
                self._ended = True
                last = self._lines.end()
                if last is not None:
                    self._pending.append(last)
        return self._pending.popleft()

    async def _read(self) -> bytes:
        if not self.nonblocking:
            return await anyio.to_thread.run_sync(self.source.read1, _CHUNK, abandon_on_cancel=True)
        fd = self.source.fileno()
        while True:
            try:
                return os.read(fd, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(fd)

    async def _answer(self, problem: tuple[int, str, str | int | None]) -> None:
        code, text, ident = problem
        await self.ready.wait()
        error = mcp_types.JSONRPCError(jsonrpc="2.0", id=ident, error=mcp_types.ErrorData(code=code, message=text))
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.write.send(SessionMessage(error))


def _divert(fd: int, flags: int) -> int:
    """Point ``fd`` elsewhere (stdin: ``/dev/null``; stdout: stderr, else ``/dev/null``).

    Returns:
        A private duplicate of the wire (close-on-exec, above the standard descriptors).
    """
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        other = os.dup(2) if fd == 1 else os.open(os.devnull, flags)
    except OSError:
        other = os.open(os.devnull, flags)
    try:
        os.dup2(other, fd)
    finally:
        os.close(other)
    return private


def _stdout_on_wire() -> bool:
    """Whether ``sys.stdout`` writes to descriptor 1 (else the SDK's transport serves it in place, as it does)."""
    try:
        return bool(sys.stdout.buffer.fileno() == 1)
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.asynccontextmanager
async def checked_stdio(max_line: int = MAX_LINE_BYTES) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport fed only checked lines of this process's stdin (see the module docstring)."""
    async with contextlib.AsyncExitStack() as stack:
        private = _divert(0, os.O_RDONLY)
        stack.callback(os.dup2, private, 0)  # the wire back on descriptor 0; the private duplicate may still be read
        # by a reader thread abandoned at shutdown, so it is left open (closefd=False) rather than recycled under it
        reading = _streams(private)
        if reading:
            stack.enter_context(_nonblocking(private))
        source = os.fdopen(private, "rb", closefd=False)
        lines = _CheckedLines(source, max_line, nonblocking=reading)
        wire: _Wire | None = None
        if _stdout_on_wire() and _streams(1):
            out = _divert(1, os.O_WRONLY)
            stack.callback(os.dup2, out, 1)
            stack.enter_context(_nonblocking(out))
            wire = _Wire(out)
        async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, wire)) as (read, write):
            lines.write = write
            lines.ready.set()
            yield read, write
