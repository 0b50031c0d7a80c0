"""Sends and receives that complete at once without a yield (:func:`toolrig.mcp.shared._context_streams.send_now`,
``receive_now``): what they deliver, where they wait, that they stay cancellation points, and their errors."""

from __future__ import annotations

import anyio
import pytest

from toolrig.mcp.shared import context_streams
from toolrig.mcp.shared._context_streams import receive_now, send_now

pytestmark = pytest.mark.anyio


async def test_items_go_at_once_when_they_can_and_wait_when_they_cannot() -> None:
    send, receive = anyio.create_memory_object_stream[int](1)
    await send_now(send, 1)  # room in the buffer
    got: list[int] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(send_now, send, 2)  # the buffer is full: waits for a receive
        await anyio.sleep(0.01)
        got.append(await receive_now(receive))
        got.append(await receive_now(receive))
    assert got == [1, 2]
    async with anyio.create_task_group() as tg:  # nothing there: the receive waits for the send
        async def later() -> None:
            await anyio.sleep(0.01)
            await send_now(send, 3)
        tg.start_soon(later)
        assert await receive_now(receive) == 3


async def test_a_cancelled_caller_sends_and_receives_nothing() -> None:
    send, receive = anyio.create_memory_object_stream[int](1)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await send_now(send, 1)
    assert scope.cancelled_caught
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()
    send.send_nowait(2)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await receive_now(receive)
    assert scope.cancelled_caught
    assert receive.receive_nowait() == 2  # still there


async def test_closed_and_ended_streams_raise_as_anyio_does() -> None:
    send, receive = anyio.create_memory_object_stream[int](1)
    send.close()
    with pytest.raises(anyio.EndOfStream):
        await receive_now(receive)
    with pytest.raises(anyio.ClosedResourceError):
        await send_now(send, 1)
    send2, receive2 = anyio.create_memory_object_stream[int](1)
    receive2.close()
    with pytest.raises(anyio.BrokenResourceError):
        await send_now(send2, 1)


async def test_context_streams_carry_the_senders_context_in_order() -> None:
    send, receive = context_streams()
    async with anyio.create_task_group() as tg:
        async def sender() -> None:
            for i in range(5):
                await send.send(i)
            await send.aclose()
        tg.start_soon(sender)
        got = [item async for item in receive]
    assert got == list(range(5))
    assert receive.last_context is not None
