"""Executors: where tool bodies run (loop, threads, processes) and how their timeouts end them."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from typing import Any

import anyio
import anyio.to_thread
import process_tools as pt
import pytest

from toolrig import CallContext, Injected, ToolCall, current_context, schema_tool, tool
from toolrig._outcome import ErrorKind
from toolrig.errors import ExecutorUnavailable
from toolrig.runtime import (
    CallTimeoutError,
    Executors,
    InlineExecutor,
    ProcessExecutor,
    ProcessPool,
    Runtime,
    ThreadExecutor,
    ThreadHop,
    TimeoutStage,
    default_stages,
    minimal_stages,
    replace_stage,
)

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def runtime(tools: list[Any], **executors: Any) -> Runtime:
    """A minimal-pipeline runtime with the given executors (``inline=...``, ``thread=...``, ``process=...``)."""
    return Runtime(tools, stages=minimal_stages(), executors=Executors(**executors), audit=False)


# -- inline and thread ----------------------------------------------------------------------------

@pytest.mark.anyio
async def test_sync_inline_tool_runs_off_the_loop_so_the_loop_keeps_serving() -> None:
    release = threading.Event()
    loop_thread = threading.get_ident()

    @tool
    def blocking() -> bool:
        """Block until the event loop releases us: a deadlock if we ran in the loop thread."""
        assert release.wait(10)
        return threading.get_ident() != loop_thread

    async def releaser() -> None:
        await anyio.sleep(0)
        release.set()

    async with Runtime([blocking], audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(releaser)
                outcome = await rt.call(ToolCall(name="blocking"))
    assert outcome.ok and outcome.structured is True


@pytest.mark.anyio
async def test_in_loop_opt_in_and_async_tools_run_in_the_loop_thread() -> None:
    @tool
    def trivial() -> int:
        """Trivially fast."""
        return threading.get_ident()

    @tool
    async def native() -> int:
        """Async."""
        return threading.get_ident()

    async with runtime([trivial, native], inline=InlineExecutor(in_loop={"trivial"})) as rt:
        a = await rt.call(ToolCall(name="trivial"))
        b = await rt.call(ToolCall(name="native"))
    assert a.structured == b.structured == threading.get_ident()


@pytest.mark.anyio
@pytest.mark.parametrize("isolation", ["inline", "thread"])
async def test_context_and_context_vars_are_visible_in_worker_threads(isolation: str) -> None:
    @tool(isolation=isolation)
    def whoami(unit: Injected[str]) -> dict[str, Any]:
        """Report the context."""
        return {"user": current_context().user, "unit": unit, "request": request_id.get(),
                "thread": threading.get_ident()}

    token = request_id.set("req-42")
    try:
        async with Runtime([whoami], audit=False) as rt:
            outcome = await rt.call(ToolCall(name="whoami"), CallContext(user="ann", state={"unit": "metric"}))
    finally:
        request_id.reset(token)
    assert outcome.ok, outcome.content
    data = outcome.structured
    assert (data["user"], data["unit"], data["request"]) == ("ann", "metric", "req-42")
    assert data["thread"] != threading.get_ident()


@pytest.mark.anyio
async def test_tools_that_run_their_own_event_loop_work_in_worker_threads() -> None:
    """A sync schema tool inline, and an async tool in thread mode (invoke_sync runs asyncio.run there)."""
    echo = schema_tool(name="echo", description="Echo a number.", handler=lambda args: args["a"] * 2,
                       input_schema={"type": "object", "properties": {"a": {"type": "integer"}}})

    @tool(isolation="thread")
    async def threaded() -> int:
        """Async, but asked to run in a thread."""
        await anyio.sleep(0)
        return threading.get_ident()

    async with Runtime([echo, threaded], audit=False) as rt:
        doubled = await rt.call(ToolCall(name="echo", arguments={"a": 21}))
        elsewhere = await rt.call(ToolCall(name="threaded"))
    assert doubled.ok and doubled.structured == 42, doubled.content
    assert elsewhere.ok and elsewhere.structured != threading.get_ident(), elsewhere.content


@pytest.mark.anyio
async def test_thread_mode_is_bounded_by_its_capacity_limiter() -> None:
    gauge = {"now": 0, "peak": 0}
    lock = threading.Lock()
    both_tried = threading.Barrier(2, timeout=0.2)

    @tool(isolation="thread")
    def heavy(i: int) -> int:
        """Blocking work."""
        with lock:
            gauge["now"] += 1
            gauge["peak"] = max(gauge["peak"], gauge["now"])
        with contextlib.suppress(threading.BrokenBarrierError):  # a second body never comes in
            both_tried.wait()
        with lock:
            gauge["now"] -= 1
        return i

    async with runtime([heavy], thread=ThreadExecutor(limit=1)) as rt:
        with anyio.fail_after(10):
            outcomes = await rt.call_many([ToolCall(name="heavy", arguments={"i": i}) for i in range(3)])
    assert [o.structured for o in outcomes] == [0, 1, 2]
    assert gauge["peak"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("eager_wait", [0.0, 50e-6, 0.01])
async def test_thread_hop_reports_exceptions_and_refuses_work_when_closed(eager_wait: float) -> None:
    hop = ThreadHop(max_workers=2, eager_wait=eager_wait)

    def boom() -> None:
        raise KeyError("nope")

    with pytest.raises(KeyError):
        await hop.run(boom)
    assert await hop.run(sum, [1, 2, 3]) == 6
    assert 1 <= hop.threads <= 2
    hop.close()
    with pytest.raises(ExecutorUnavailable, match="closed"):
        await hop.run(sum, [1])


# -- timeouts -----------------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_async_tool_timeout_cancels_the_body() -> None:
    seen: list[str] = []

    @tool(timeout=0.2)
    async def slow() -> str:
        """Never ends."""
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            raise
        return "never"

    async with Runtime([slow], audit=False) as rt:
        with anyio.fail_after(10):
            outcome = await rt.call(ToolCall(name="slow"))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.TIMEOUT
    assert outcome.error.retryable and outcome.error.details["timeout"] == 0.2
    assert isinstance(outcome.exception, CallTimeoutError)
    assert seen == ["cancelled"]


@pytest.mark.anyio
@pytest.mark.parametrize("isolation", ["inline", "thread"])
async def test_sync_tool_timeout_returns_at_the_deadline_and_the_thread_finishes_later(isolation: str) -> None:
    release, finished = threading.Event(), threading.Event()

    @tool(isolation=isolation, timeout=0.2)
    def stuck() -> str:
        """Blocks until released."""
        release.wait(30)
        finished.set()
        return "late"

    async with Runtime([stuck], audit=False) as rt:
        with anyio.fail_after(10):
            outcome = await rt.call(ToolCall(name="stuck"))
        assert outcome.error is not None and outcome.error.kind is ErrorKind.TIMEOUT
        assert "may still finish" in outcome.content
        assert not finished.is_set()
        release.set()
        assert await anyio.to_thread.run_sync(finished.wait, 10)


@pytest.mark.anyio
async def test_stage_default_timeout_applies_to_tools_without_one() -> None:
    @tool
    async def slow() -> str:
        """Never ends."""
        await anyio.sleep_forever()
        return "never"

    st = replace_stage(default_stages(audit=False), "timeout", TimeoutStage(0.2))
    async with Runtime([slow], stages=st, audit=False) as rt:
        with anyio.fail_after(10):
            outcome = await rt.call(ToolCall(name="slow"))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.TIMEOUT
    with pytest.raises(ValueError):
        TimeoutStage(0)


# -- process ------------------------------------------------------------------------------------------

@pytest.fixture
async def proc_rt() -> Any:
    pool = ProcessPool(max_idle=1, kill_grace=0.2)
    tools = [pt.worker_pid, pt.async_worker_pid, pt.hang, pt.exit_hard, pt.kill_self, pt.segfault,
             pt.fail_transient, pt.fail_odd, pt.unpicklable_result, pt.who, pt.with_progress]
    rt = runtime(tools, process=ProcessExecutor(pool))
    yield rt, pool
    await rt.aclose()
    await pool.aclose()


@pytest.mark.anyio
async def test_process_tool_runs_in_a_reused_worker_and_prints_do_not_break_it(proc_rt: Any) -> None:
    import os

    rt, pool = proc_rt
    with anyio.fail_after(60):
        first = await rt.call(ToolCall(name="worker_pid", arguments={"note": "1"}))
        second = await rt.call(ToolCall(name="worker_pid", arguments={"note": "2"}))
        third = await rt.call(ToolCall(name="async_worker_pid"))
    assert first.ok and second.ok and third.ok, (first.content, second.content, third.content)
    assert first.structured != os.getpid()
    assert first.structured == second.structured == third.structured == first.meta["worker_pid"]
    assert pool.idle_pids == [first.structured]


@pytest.mark.anyio
async def test_process_timeout_kills_the_worker(proc_rt: Any) -> None:
    rt, _ = proc_rt
    with anyio.fail_after(60):
        outcome = await rt.call(ToolCall(name="hang"))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.TIMEOUT
    assert "stopped" in outcome.content and isinstance(outcome.exception, CallTimeoutError)
    await pt.wait_gone(outcome.meta["worker_pid"])


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "arguments", "how"), [
    ("exit_hard", {"code": 3}, "exited with code 3"),
    ("kill_self", {}, "killed by signal SIGKILL (9)"),
    ("segfault", {}, "killed by signal SIGSEGV (11)"),
])
async def test_process_crash_is_an_execution_error_and_the_host_carries_on(
        proc_rt: Any, name: str, arguments: dict[str, Any], how: str) -> None:
    rt, _ = proc_rt
    with anyio.fail_after(60):
        crashed = await rt.call(ToolCall(name=name, arguments=arguments))
        after = await rt.call(ToolCall(name="worker_pid"))
    assert crashed.error is not None and crashed.error.kind is ErrorKind.EXECUTION_ERROR
    assert f"process died: {how}" in crashed.content
    await pt.wait_gone(crashed.meta["worker_pid"])
    assert after.ok and after.structured != crashed.meta["worker_pid"]


@pytest.mark.anyio
async def test_process_errors_keep_their_class(proc_rt: Any) -> None:
    rt, _ = proc_rt
    with anyio.fail_after(60):
        transient = await rt.call(ToolCall(name="fail_transient", arguments={"message": "502"}))
        odd = await rt.call(ToolCall(name="fail_odd"))
        result = await rt.call(ToolCall(name="unpicklable_result"))
    from toolrig.errors import TransientError

    assert isinstance(transient.exception, TransientError) and "502" in transient.content
    assert isinstance(odd.exception, ConnectionError) and "OddError: 7: link down" in odd.content
    assert result.error is not None and result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "returned a function, which has no JSON form" in result.content
    assert transient.meta["worker_pid"] == result.meta["worker_pid"]  # errors do not cost the worker


@pytest.mark.anyio
async def test_process_tool_sees_the_picklable_context_and_relays_progress(proc_rt: Any) -> None:
    rt, _ = proc_rt
    reports: list[tuple[float, float | None, str | None]] = []

    def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    ctx = CallContext(user="ann", roles=frozenset({"admin"}), state={"unit": "imperial", "lock": threading.Lock()},
                      deps=threading.Lock(), progress=progress)
    with anyio.fail_after(60):
        who = await rt.call(ToolCall(name="who", arguments={"city": "Paris"}, id="c-7"), ctx)
        prog = await rt.call(ToolCall(name="with_progress", arguments={"steps": 2}), ctx)
    assert who.ok, who.content
    assert who.structured == {"city": "Paris", "user": "ann", "unit": "imperial", "roles": ["admin"],
                              "call_id": "c-7", "tool": "who", "has_deps": False}
    assert prog.ok and reports == [(1, 2, "step 1"), (2, 2, "step 2")]


@pytest.mark.anyio
async def test_a_tool_class_instance_runs_in_a_process_after_it_has_live_stats() -> None:
    async with Runtime([pt.Doubler], audit=False) as rt:
        with anyio.fail_after(60):
            first = await rt.call(ToolCall(name="doubler", arguments={"x": 2}))
            second = await rt.call(ToolCall(name="doubler", arguments={"x": "21"}))
        assert rt.tools()[0].state.stats.calls == 2
    assert first.ok and second.ok, (first.content, second.content)
    assert second.structured == {"double": 42, "pid": first.meta["worker_pid"]}


@pytest.mark.anyio
async def test_a_local_function_cannot_run_in_a_process() -> None:
    @tool(isolation="process")
    def local() -> int:
        """Defined inside a test."""
        return 1

    async with Runtime([local], audit=False) as rt:
        outcome = await rt.call(ToolCall(name="local"))
    assert outcome.error is not None and outcome.error.kind is ErrorKind.EXECUTION_ERROR
    assert "module level" in outcome.content


@pytest.mark.anyio
async def test_a_worker_that_cannot_start_is_reported(tmp_path: Any) -> None:
    crashing = tmp_path / "crashing"
    crashing.write_text("#!/bin/sh\nexit 4\n")
    stuck = tmp_path / "stuck"
    stuck.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/stuck.pid\nexec sleep 30\n")
    for script in (crashing, stuck):
        script.chmod(0o755)
    outcomes = []
    for pool in (ProcessPool(executable=str(crashing)), ProcessPool(executable=str(stuck), start_timeout=0.5)):
        async with runtime([pt.worker_pid], process=ProcessExecutor(pool)) as rt:
            with anyio.fail_after(30):
                outcomes.append(await rt.call(ToolCall(name="worker_pid")))
    assert [o.error.kind for o in outcomes if o.error] == [ErrorKind.EXECUTION_ERROR] * 2
    assert "could not start a worker process: it exited with code 4 before it was ready" in outcomes[0].content
    assert "it was not ready within 0.5 s" in outcomes[1].content
    await pt.wait_gone(int((tmp_path / "stuck.pid").read_text()))


@pytest.mark.anyio
async def test_closing_the_pool_stops_idle_workers() -> None:
    pool = ProcessPool(max_idle=2)
    with anyio.fail_after(60):
        await pool.prewarm(2)
        pids = pool.idle_pids
        assert len(pids) == 2
        await pool.aclose()
    assert pool.idle_pids == []
    await pt.wait_gone(*pids)
