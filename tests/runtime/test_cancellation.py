"""Cancelling a running call reaches the tool: async bodies see CancelledError, processes die."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import process_tools as pt
import pytest

from toolrig import RetryPolicy, ToolCall, ToolOutcome, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import Runtime, SystemClock


class Hanger:
    """An async tool body that reports when it started and whether it saw the cancellation."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    async def __call__(self) -> str:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return "never"


def hanging_tool(hanger: Hanger) -> Any:
    return tool(name="hanging", description="Wait forever.")(hanger.__call__)


@pytest.mark.anyio
async def test_runtime_cancel_reaches_an_async_tool() -> None:
    hanger = Hanger()
    outcomes: list[ToolOutcome] = []
    async with Runtime([hanging_tool(hanger)], audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    outcomes.append(await rt.call(ToolCall(name="hanging", id="call-1")))

                tg.start_soon(run)
                await hanger.started.wait()
                assert rt.cancel("call-1")
        assert not rt.cancel("call-1")  # no longer running
    assert hanger.cancelled
    assert outcomes[0].error is not None and outcomes[0].error.kind is ErrorKind.CANCELLED


@pytest.mark.anyio
async def test_runtime_cancel_reaches_every_call_running_under_one_id_and_only_those() -> None:
    gate = anyio.Event()
    started: list[str] = []

    @tool(name="waits", description="Wait for the gate.")
    async def waits(label: str) -> str:
        started.append(label)
        await gate.wait()
        return label

    outcomes: dict[str, ToolOutcome] = {}
    async with Runtime([waits], audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run(call_id: str, label: str) -> None:
                    outcomes[label] = await rt.call(ToolCall(name="waits", arguments={"label": label}, id=call_id))

                tg.start_soon(run, "twice", "a")
                tg.start_soon(run, "twice", "b")
                tg.start_soon(run, "other", "c")
                while len(started) < 3:
                    await anyio.sleep(0.001)
                assert rt.stats()["running"] == 3
                assert rt.cancel("twice")
                assert not rt.cancel("never-ran")
                while rt.stats()["running"] != 1:
                    await anyio.sleep(0.001)
                gate.set()
        assert rt.stats()["running"] == 0
        assert not rt.cancel("other")  # finished: no longer running
    assert {k: o.error.kind for k, o in outcomes.items() if o.error} == {"a": ErrorKind.CANCELLED,
                                                                        "b": ErrorKind.CANCELLED}
    assert outcomes["c"].ok and outcomes["c"].content == "c"


@pytest.mark.anyio
async def test_cancelling_the_callers_task_reaches_an_async_tool() -> None:
    hanger = Hanger()
    async with Runtime([hanging_tool(hanger)], audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(rt.call, ToolCall(name="hanging"))
                await hanger.started.wait()
                tg.cancel_scope.cancel()
    assert hanger.cancelled


@pytest.mark.anyio
async def test_cancel_returns_promptly_for_a_sync_tool_in_a_thread() -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    @tool(isolation="thread")
    def blocking() -> str:
        """Blocks until released."""
        started.set()
        release.wait(30)
        finished.set()
        return "late"

    outcomes: list[ToolOutcome] = []
    async with Runtime([blocking], audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    outcomes.append(await rt.call(ToolCall(name="blocking", id="t-1")))

                tg.start_soon(run)
                assert await anyio.to_thread.run_sync(started.wait, 10)
                rt.cancel("t-1")
        assert outcomes[0].error is not None and outcomes[0].error.kind is ErrorKind.CANCELLED
        assert not finished.is_set()  # the thread could not be stopped: it is abandoned
        release.set()
        assert await anyio.to_thread.run_sync(finished.wait, 10)


@pytest.mark.anyio
async def test_cancel_interrupts_a_retry_backoff() -> None:
    sleeping = anyio.Event()

    class SlowClock(SystemClock):
        async def sleep(self, seconds: float) -> None:
            sleeping.set()
            await anyio.sleep(seconds)

    calls: list[int] = []

    @tool(permission="readonly", retry=RetryPolicy(max_attempts=3, initial_delay=60, max_delay=60))
    async def down() -> str:
        """Always fails."""
        calls.append(1)
        raise ConnectionError("down")

    outcomes: list[ToolOutcome] = []
    async with Runtime([down], clock=SlowClock(), audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    outcomes.append(await rt.call(ToolCall(name="down", id="r-1")))

                tg.start_soon(run)
                await sleeping.wait()
                rt.cancel("r-1")
    assert outcomes[0].error is not None and outcomes[0].error.kind is ErrorKind.CANCELLED
    assert len(calls) == 1


async def _start_reporting_call(rt: Runtime, tg: anyio.abc.TaskGroup, listener: Any,
                                call_id: str) -> list[int]:
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    tg.start_soon(rt.call, ToolCall(name="report_and_hang", arguments={"port": port}, id=call_id))
    return await pt.accept_pids(listener)


@pytest.mark.anyio
async def test_runtime_cancel_kills_a_process_tool_and_its_children() -> None:
    async with Runtime([pt.report_and_hang], audit=False) as rt, \
            await anyio.create_tcp_listener(local_host="127.0.0.1") as multi:
        listener = multi.listeners[0]
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                outcomes: list[ToolOutcome] = []

                async def run() -> None:
                    port = listener.extra(anyio.abc.SocketAttribute.local_port)
                    outcomes.append(await rt.call(ToolCall(name="report_and_hang", arguments={"port": port},
                                                           id="p-1")))

                tg.start_soon(run)
                worker, grandchild = await pt.accept_pids(listener)
                assert not pt.gone(worker) and not pt.gone(grandchild)
                assert rt.cancel("p-1")
        assert outcomes[0].error is not None and outcomes[0].error.kind is ErrorKind.CANCELLED
        await pt.wait_gone(worker, grandchild)


@pytest.mark.anyio
async def test_cancelling_the_callers_task_kills_a_process_tool() -> None:
    async with Runtime([pt.report_and_hang], audit=False) as rt, \
            await anyio.create_tcp_listener(local_host="127.0.0.1") as multi:
        listener = multi.listeners[0]
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                worker, grandchild = await _start_reporting_call(rt, tg, listener, "p-2")
                tg.cancel_scope.cancel()
        await pt.wait_gone(worker, grandchild)
