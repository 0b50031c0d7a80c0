"""Memory streams that carry the sender's ``contextvars`` context with each item, as the SDK's session loop
expects of its read and write streams (it runs a message's handler in the context the message was sent from):
:func:`context_streams`. The MCP client's streamable-HTTP transport and the server's own SSE answers use them."""

from __future__ import annotations

import contextvars
from abc import ABC, abstractmethod
from typing import Any, Self

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["ContextReceive", "ContextSend", "ReceiveStream", "context_streams"]


class ReceiveStream(ABC):
    """What a receive stream offers on top of ``receive`` and ``aclose``: ``async for`` (until the stream ends)
    and ``async with`` (closes it)."""

    __slots__ = ()

    @abstractmethod
    async def receive(self) -> Any:
        """The next item; raises ``anyio.EndOfStream`` once the stream has ended."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the stream."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ContextSend:
    """A send stream carrying the sender's ``contextvars`` context with each item (what the SDK's loop expects:
    it runs a message's handler in the context it was sent from, ``last_context`` on the receiving side)."""

    __slots__ = ("inner",)

    def __init__(self, inner: MemoryObjectSendStream[tuple[contextvars.Context, Any]]) -> None:
        self.inner = inner

    async def send(self, item: Any) -> None:
        await self.inner.send((contextvars.copy_context(), item))

    async def send_in(self, context: contextvars.Context | None, item: Any) -> None:
        await self.inner.send((context or contextvars.copy_context(), item))

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        self.inner.close()

    async def __aenter__(self) -> ContextSend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.inner.close()


class ContextReceive(ReceiveStream):
    """The receiving side of :class:`ContextSend`: yields items, keeps each one's context in ``last_context``."""

    __slots__ = ("inner", "last_context")

    def __init__(self, inner: MemoryObjectReceiveStream[tuple[contextvars.Context, Any]]) -> None:
        self.inner = inner
        self.last_context: contextvars.Context | None = None

    async def receive(self) -> Any:
        context, item = await self.inner.receive()
        self.last_context = context
        return item

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        self.inner.close()


def context_streams() -> tuple[ContextSend, ContextReceive]:
    """A connected pair with no buffer: each send waits for its receive."""
    send, receive = anyio.create_memory_object_stream[tuple[contextvars.Context, Any]](0)
    return ContextSend(send), ContextReceive(receive)
