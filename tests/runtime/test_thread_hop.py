"""ThreadHop: the worker threads that run sync tool bodies (context, reuse, capacity, abandonment)."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from toolrig import ToolCall, tool
from toolrig._outcome import ErrorKind
from toolrig.errors import ExecutorBusyError
from toolrig.runtime import Executors, InlineExecutor, Runtime, ThreadHop, minimal_stages

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("hop_request_id", default="-")

EAGER = [0.0, 50e-6, 0.01]  # always the asynchronous hand-back, the default, a long eager wait


@pytest.mark.anyio
@pytest.mark.parametrize("eager_wait", EAGER)
async def test_a_context_var_set_by_the_caller_is_visible_in_the_worker(eager_wait: float) -> None:
    hop = ThreadHop(max_workers=2, eager_wait=eager_wait)
    token = request_id.set("req-7")
    try:
        seen, thread = await hop.run(lambda: (request_id.get(), threading.get_ident()))
    finally:
        request_id.reset(token)
        hop.close()
    assert seen == "req-7" and thread != threading.get_ident()


@pytest.mark.anyio
@pytest.mark.parametrize("eager_wait", EAGER)
async def test_a_def_tool_sees_the_callers_context_var_through_the_runtime(eager_wait: float) -> None:
    @tool
    def whoami() -> str:
        """Report the request id."""
        return request_id.get()

    executors = Executors(inline=InlineExecutor(hop=ThreadHop(2, eager_wait=eager_wait)))
    token = request_id.set("req-9")
    try:
        async with Runtime([whoami], stages=minimal_stages(), executors=executors, audit=False) as rt:
            outcome = await rt.call(ToolCall(name="whoami"))
    finally:
        request_id.reset(token)
    assert outcome.ok and outcome.content == "req-9", outcome.content


@pytest.mark.anyio
@pytest.mark.parametrize("eager_wait", EAGER)
async def test_sequential_jobs_reuse_one_worker_and_errors_come_back(eager_wait: float) -> None:
    hop = ThreadHop(max_workers=8, eager_wait=eager_wait)

    def boom(i: int) -> None:
        raise ValueError(i)

    try:
        for i in range(30):
            assert await hop.run(int.__add__, i, 1) == i + 1
            with pytest.raises(ValueError):
                await hop.run(boom, i)
        assert hop.threads == 1
        assert hop.stats()["busy"] == 0 and hop.stats()["stuck"] == 0
    finally:
        hop.close()


@pytest.mark.anyio
async def test_at_most_max_workers_run_at_once_and_the_rest_queue() -> None:
    hop = ThreadHop(max_workers=2)
    lock = threading.Lock()
    gauge = {"now": 0, "peak": 0}

    def work(i: int) -> int:
        with lock:
            gauge["now"] += 1
            gauge["peak"] = max(gauge["peak"], gauge["now"])
        threading.Event().wait(0.02)
        with lock:
            gauge["now"] -= 1
        return i

    results: list[int] = []

    async def one(i: int) -> None:
        results.append(await hop.run(work, i))

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(one, i)
    finally:
        hop.close()
    assert sorted(results) == list(range(6))
    assert gauge["peak"] == 2 and hop.threads == 0  # closed: the list of threads is handed to close()


@pytest.mark.anyio
async def test_a_job_cancelled_before_it_starts_never_runs_and_a_running_one_counts_as_stuck() -> None:
    hop = ThreadHop(max_workers=1, eager_wait=0.0)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocker() -> str:
        started.set()
        release.wait(30)
        ran.append("blocker")
        return "late"

    def queued() -> str:
        ran.append("queued")
        return "never"

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hop.run, blocker)
                assert await anyio.to_thread.run_sync(started.wait, 10)
                tg.start_soon(hop.run, queued)
                await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
            stats = hop.stats()
            assert stats["stuck"] == 1 and stats["busy"] == 1
            with pytest.raises(ExecutorBusyError):  # the only worker is stuck: fail at once, do not queue
                await hop.run(queued)
            release.set()
            while hop.stats()["stuck"]:
                await anyio.sleep(0.01)
            assert await hop.run(str.upper, "ok") == "OK"
    finally:
        release.set()
        hop.close()
    assert ran == ["blocker"]
    assert hop.stats()["busy"] == 0


@pytest.mark.anyio
@pytest.mark.parametrize("eager_wait", EAGER)
async def test_a_def_tool_past_its_timeout_ends_with_a_timeout_outcome_and_finishes_later(eager_wait: float) -> None:
    release, finished = threading.Event(), threading.Event()

    @tool(timeout=0.1)
    def slow() -> str:
        """Blocks until released."""
        release.wait(30)
        finished.set()
        return "late"

    executors = Executors(inline=InlineExecutor(hop=ThreadHop(2, eager_wait=eager_wait)))
    async with Runtime([slow], stages=minimal_stages(), executors=executors, audit=False) as rt:
        with anyio.fail_after(10):
            outcome = await rt.call(ToolCall(name="slow"))
        assert outcome.error is not None and outcome.error.kind is ErrorKind.TIMEOUT
        stats: dict[str, Any] = rt.stats()["executors"]["inline"]["threads"]
        assert stats["stuck"] == 1 and not finished.is_set()
        release.set()
        assert await anyio.to_thread.run_sync(finished.wait, 10)


@pytest.mark.anyio
@pytest.mark.parametrize("eager_wait", EAGER)
@pytest.mark.parametrize("raised", [GeneratorExit, KeyboardInterrupt, SystemExit])
async def test_a_def_tools_base_exception_handed_back_late_is_an_outcome(eager_wait: float,
                                                                         raised: type[BaseException]) -> None:
    """A body's ``GeneratorExit`` handed back through the loop (not within the eager wait) must reach the
    pipeline as the body's exception: thrown into the waiting coroutine, it closed the whole call instead."""
    started = threading.Event()

    @tool(name="late_raiser")
    def late() -> str:
        """Raise after the eager wait has passed."""
        started.wait(0.05)  # nobody sets it: just outlast any eager wait
        raise raised

    executors = Executors(inline=InlineExecutor(hop=ThreadHop(2, eager_wait=eager_wait)))
    async with Runtime([late], executors=executors, audit=False) as rt:
        outcomes = [await rt.call(ToolCall(name="late_raiser", id=f"c{n}")) for n in range(2)]
    assert [o.error.kind if o.error else None for o in outcomes] == [ErrorKind.EXECUTION_ERROR] * 2
    assert all(raised.__name__ in o.content for o in outcomes), [o.content for o in outcomes]
