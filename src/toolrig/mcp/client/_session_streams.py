"""The write stream the SDK's session is given by :func:`~toolrig.mcp.client._streamable.streamable_http`, the
item type of its read stream (a :class:`~toolrig.mcp.shared.ContextReceive`), and a message's body on the wire."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Protocol

from mcp.shared.message import SessionMessage

__all__ = ["Item", "WriteStream", "wire_body"]

Item = SessionMessage | Exception


def wire_body(message: Any) -> bytes:
    """A JSON-RPC message as a POST carries it."""
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")  # type: ignore[no-any-return]


class Sender(Protocol):
    """What a :class:`WriteStream` writes through."""

    async def send(self, item: SessionMessage) -> None: ...

    def close(self) -> None: ...


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
