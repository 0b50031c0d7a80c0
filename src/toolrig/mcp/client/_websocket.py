"""A WebSocket client transport (``ws://`` / ``wss://``, subprotocol ``mcp``) in the SDK's transport shape.

The SDK (2.x) ships stdio, SSE and streamable HTTP clients but no WebSocket one. A transport is an
async context manager yielding a (read, write) pair of streams of :class:`mcp.shared.message.SessionMessage`;
this one moves each JSON-RPC message as one text frame, parsed and dumped by the SDK's own types
(no JSON-RPC is interpreted here: the session above does that).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from toolrig.mcp.shared import KEEP, origin_of, too_large_error, too_many_values, unreadable_error

__all__ = ["websocket_client"]

log = logging.getLogger("toolrig.mcp")

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
"""What a transport yields: messages from the server (or parse errors), and messages to it."""

MAX_FRAME = 16 * 1024 * 1024
"""Largest frame accepted from the server by default (bytes). A larger one closes the connection (close code
1009): a frame cannot be skipped without reading it, so over WebSocket an oversized message ends the session.
A frame of more JSON values than :data:`~toolrig.mcp.shared._oversized.MAX_VALUES` answers its request with an error."""


@asynccontextmanager
async def websocket_client(url: str, *, headers: Mapping[str, str] | None = None,
                           open_timeout: float = 30.0, max_message: int = MAX_FRAME) -> AsyncIterator[Streams]:
    """Connect to an MCP server over WebSocket and yield the (read, write) streams.

    Raises:
        OSError: the connection could not be opened (refused, DNS, TLS, handshake rejected).
    """
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](16)
    try:
        socket = await connect(url, subprotocols=[_subprotocol("mcp")], additional_headers=dict(headers or {}),
                               open_timeout=open_timeout, max_size=max_message)
    except InvalidHandshake as exc:
        raise ConnectionRefusedError(f"WebSocket handshake with {url} failed: {exc}") from exc

    async def reader() -> None:
        async with read_send:
            try:
                async for frame in socket:
                    data = frame.encode("utf-8") if isinstance(frame, str) else frame
                    await read_send.send(_parse(data, server=url, limit=max_message))
            except ConnectionClosed:
                return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def writer() -> None:
        async with write_receive:
            try:
                async for message in write_receive:
                    await socket.send(message.message.model_dump_json(by_alias=True, exclude_unset=True))
            except ConnectionClosed:
                await read_send.aclose()

    async with socket, anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            tg.cancel_scope.cancel()
            await read_stream.aclose()
            await write_stream.aclose()


def _subprotocol(name: str) -> Any:
    from websockets.typing import Subprotocol

    return Subprotocol(name)


def _parse(data: bytes, *, server: str, limit: int) -> SessionMessage | Exception:
    """One frame as a message; a frame of too many JSON values answers its request with an error instead."""
    if too_many_values(data):
        origin = origin_of(data[:KEEP], data[-KEEP:])
        log.warning("dropped a WebSocket frame of too many JSON values from the MCP server at %s", server)
        if origin.id is None:
            return ValueError("a message of too many JSON values was dropped")
        return SessionMessage(too_large_error(origin.id, server=server, limit=limit, values=True))
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(data, by_name=False))
    except ValueError as exc:
        log.warning("dropped a malformed WebSocket frame from the MCP server: %s", exc)
        origin = origin_of(data[:KEEP], data[-KEEP:])
        if origin.id is not None:  # the request it answers fails now instead of waiting for its deadline
            return SessionMessage(unreadable_error(origin.id, server=server, problem=exc))
        return exc
