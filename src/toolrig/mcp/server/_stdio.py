"""The stdio transport of toolrig's MCP server: bounded lines, and an answer to every malformed message.

The SDK's ``stdio_server()`` reads a line however long it is, and a line that is not a JSON-RPC message
reaches the session as an exception that no client ever hears of. Here each line of stdin is read with a
bound (``max_line`` bytes; the rest of a longer line is read and dropped in small pieces, never held: the
:class:`~toolrig.mcp.shared._lines.LineSplitter` the client transport uses too; it is answered with the request's id
when its first or last bytes tell it) and checked first, as the HTTP endpoint checks a body
(:mod:`toolrig.mcp.server._limits`): what does not parse as standard JSON gets ``-32700``, a batch, a
non-object, a bad ``jsonrpc``/``method``/``id`` or a message of no known shape gets ``-32600`` (with the
request's id when it has a usable one), and the server reads on. Only valid messages are handed to the SDK's
transport, which still owns stdout (and keeps stray output of tools off the wire). Stdin is read from a
private duplicate; descriptor 0 points at ``/dev/null`` meanwhile, so tools and their children read nothing
of the protocol.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
from collections import deque
from collections.abc import AsyncIterator
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


class _CheckedLines:
    """Valid message lines of ``source`` for the SDK's reader; errors for the rest go to ``answer``."""

    def __init__(self, source: io.BufferedIOBase, max_line: int) -> None:
        self.source = source
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
            chunk = await anyio.to_thread.run_sync(self.source.read1, _CHUNK, abandon_on_cancel=True)
            if chunk:
                self._pending.extend(self._lines.feed(chunk))
            else:
                self._ended = True
                last = self._lines.end()
                if last is not None:
                    self._pending.append(last)
        return self._pending.popleft()

    async def _answer(self, problem: tuple[int, str, str | int | None]) -> None:
        code, text, ident = problem
        await self.ready.wait()
        error = mcp_types.JSONRPCError(jsonrpc="2.0", id=ident, error=mcp_types.ErrorData(code=code, message=text))
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.write.send(SessionMessage(error))


@contextlib.asynccontextmanager
async def checked_stdio(max_line: int = MAX_LINE_BYTES) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport fed only checked lines of this process's stdin (see the module docstring)."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)
    source = os.fdopen(private, "rb", closefd=False)
    lines = _CheckedLines(source, max_line)
    try:
        async with stdio_server(stdin=cast(Any, lines)) as (read, write):
            lines.write = write
            lines.ready.set()
            yield read, write
    finally:
        os.dup2(private, 0)  # the wire back on descriptor 0; the private duplicate may still be read by a
        # reader thread abandoned at shutdown, so it is left open (closefd=False) rather than recycled under it
