"""A call to an HTTP upstream cancelled while its answer streams in leaves nothing behind: the connection goes back
to the pool (or is closed), no task, no un-awaited coroutine, no response left open.

A real upstream (``slow_upstream.py``, the SDK's server) streams progress slowly on each call's SSE answer; the
client is toolrig's streamable-HTTP transport over a :class:`BoundedTransport` with a pool of two connections (the
session's GET stream holds one), behind a loopback TCP relay that counts the connections open through it.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
from mcp import Client
from mcp_helpers import PYTHON, free_port, stop, wait_for_port

from toolrig.mcp.client._http_bounds import BoundedTransport
from toolrig.mcp.client._lean_http import LeanTransport
from toolrig.mcp.client._streamable import streamable_http

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("slow_upstream.py")
ROUNDS = 24
RELAY = "relay"


@contextmanager
def slow_upstream() -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen([PYTHON, str(UPSTREAM), str(port)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        stop(proc)


class Relay:
    """A loopback TCP relay to ``port`` that counts the connections open through it now."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.open = 0
        self.opened = 0

    async def serve(self, listener: anyio.abc.SocketListener) -> None:
        await listener.serve(self._relay)

    async def _relay(self, near: anyio.abc.SocketStream) -> None:
        self.open += 1
        self.opened += 1
        try:
            async with near, await anyio.connect_tcp("127.0.0.1", self.port) as far, \
                    anyio.create_task_group() as tg:
                async def pipe(src: Any, dst: Any) -> None:
                    try:
                        async for chunk in src:
                            await dst.send(chunk)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        pass
                    tg.cancel_scope.cancel()  # one side closed: close both

                tg.start_soon(pipe, near, far, name=RELAY)
                tg.start_soon(pipe, far, near, name=RELAY)
        finally:
            self.open -= 1


@asynccontextmanager
async def relayed(port: int) -> AsyncIterator[tuple[str, Relay]]:
    relay = Relay(port)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(relay.serve, listener, name=RELAY)
        yield f"http://127.0.0.1:{listener.extra(anyio.abc.SocketAttribute.local_port)}/mcp", relay
        tg.cancel_scope.cancel()


@asynccontextmanager
async def session(url: str, pool: int, transport: BoundedTransport, mode: str) -> AsyncIterator[Client]:
    """A session with the upstream at ``url`` over ``transport`` (toolrig's streamable-HTTP client)."""
    async with httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(30.0, read=300.0)) as http:

        @asynccontextmanager
        async def streams() -> AsyncIterator[Any]:
            async with streamable_http(url, http, server="slow") as pair:
                yield pair

        async with Client(streams(), mode=mode, cache=None) as client:  # type: ignore[arg-type]
            yield client


async def cancelled_mid_stream(client: Client, after: int, *, later: bool) -> None:
    """Call ``slow``; cancel the call once ``after`` progress events of its streamed answer have arrived: at once
    (while the event is handed on), or ``later`` (while the next bytes are awaited: after the caller moved on)."""
    seen = 0
    arrived = anyio.Event()
    with anyio.CancelScope() as scope:

        async def progress(done: float, total: float | None, message: str | None) -> None:
            nonlocal seen
            seen += 1
            if seen >= after:
                arrived.set()
                if not later:
                    scope.cancel()

        async def cancel_later() -> None:
            await arrived.wait()
            for _ in range(after):  # let the caller go back to reading the stream
                await anyio.sleep(0)
            scope.cancel()

        async with anyio.create_task_group() as tg:
            if later:
                tg.start_soon(cancel_later)
            await client.call_tool("slow", {"steps": 400}, progress_callback=progress)
    assert scope.cancelled_caught and seen >= after  # cancelled while the body was read, not after its answer


def tasks() -> list[str]:
    """The names of the tasks running now, the relay's left out."""
    return sorted(name for t in asyncio.all_tasks()
                  if RELAY not in (name := t.get_name()) and "Relay" not in name and "SocketListener" not in name)


class Recorder:
    """Records what every task created on the loop runs (a task factory: the loop's own, observed)."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def __call__(self, loop: asyncio.AbstractEventLoop, coro: Any, **options: Any) -> asyncio.Task[Any]:
        self.created.append(type(coro).__name__ if not hasattr(coro, "__qualname__") else coro.__qualname__)
        return asyncio.Task(coro, loop=loop, **options)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("inner", ["httpcore2", "lean"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_calls_cancelled_mid_stream_release_their_connections_and_leave_nothing_behind(mode: str, inner: str
                                                                                             ) -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []  # what the loop reports: a task destroyed pending, a generator failing to close
    handler, factory = loop.get_exception_handler(), loop.get_task_factory()
    recorder = Recorder()
    loop.set_exception_handler(lambda _, context: errors.append(context))
    loop.set_task_factory(recorder)  # type: ignore[arg-type]
    http: httpx2.AsyncBaseTransport = (LeanTransport() if inner == "lean"
                                       else httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_connections=2)))
    transport = BoundedTransport(http, limit=1 << 20, server="slow")
    with slow_upstream() as port, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with relayed(port) as (url, relay):
            async with session(url, 2, transport, mode) as client:
                with anyio.fail_after(120):  # a hang guard (a leaked pool slot blocks the next call), not a timing
                    assert (await client.call_tool("echo", {"text": "first"})).content[0].text == "first"
                    recorder.created.clear()
                    for i in range(8):
                        assert (await client.call_tool("echo", {"text": f"{i}"})).content[0].text == f"{i}"
                    # each answered call closed its streams itself: no task left to the garbage collector to do it
                    assert [c for c in recorder.created if "athrow" in c or "aclose" in c] == []
                    before, opened = tasks(), relay.opened
                    for i in range(ROUNDS):
                        await cancelled_mid_stream(client, after=1 + i % 4, later=i % 2 == 1)
                        got = await client.call_tool("echo", {"text": f"after {i}"})  # the pool still has room
                        assert got.content[0].text == f"after {i}"
                    done = await client.call_tool("slow", {"steps": 3})
                    assert done.content[0].text == "done after 3"
                    with anyio.move_on_after(10):  # wait, bounded, for what is closing to finish closing
                        while Counter(tasks()) - Counter(before) or transport.awaiting or relay.open > 2:
                            await anyio.sleep(0.01)
                    assert Counter(tasks()) - Counter(before) == Counter()  # no task left over
                    assert len(transport.awaiting) == 0  # no cancelled request is still awaited
                    # at most the session's GET stream and one idle keep-alive connection stay open; a cancelled
                    # call's connection is closed (its answer was cut), and nothing else needs a new one
                    assert relay.open <= 2, f"{relay.open} connections still open after {ROUNDS} cancelled calls"
                    assert relay.opened - opened <= ROUNDS + ROUNDS // 4, relay.opened - opened
            gc.collect()
            await anyio.sleep(0)
        gc.collect()
        await anyio.sleep(0)  # the finalizers gc scheduled run
    loop.set_exception_handler(handler)
    loop.set_task_factory(factory)
    problems = [w for w in caught if issubclass(w.category, RuntimeWarning | ResourceWarning)]
    assert problems == [], [str(w.message) for w in problems]
    assert errors == []
