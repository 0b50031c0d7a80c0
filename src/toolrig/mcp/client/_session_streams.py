"""The read and write streams the SDK's session is given by :func:`~toolrig.mcp.client._streamable.streamable_http`."""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Any, Protocol

import anyio
from mcp.shared.message import SessionMessage

__all__ = ["Item", "ReadStream", "WriteStream"]

Item = SessionMessage | Exception


class Sender(Protocol):
    """What a :class:`WriteStream` writes through."""

    async def send(self, item: SessionMessage) -> None: ...

    def close(self) -> None: ...


class ReadStream:
    """The session's read stream: messages with the context of the task that passed them on (``last_context``)."""

    __slots__ = ("_inner", "last_context")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.last_context: contextvars.Context | None = None

    async def receive(self) -> Item:
        context, item = await self._inner.receive()
        self.last_context = context
        return item  # type: ignore[no-any-return]

    def __aiter__(self) -> ReadStream:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> ReadStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class WriteStream:
    """The session's write stream: ``send`` POSTs the message (see the module docstring)."""

    __slots__ = ("_transport",)

    def __init__(self, transport: Sender) -> None:
        self._transport = transport

    async def send(self, item: SessionMessage, /) -> None:
        await self._transport.send(item)

    async def aclose(self) -> None:
        self._transport.close()

    async def __aenter__(self) -> WriteStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
