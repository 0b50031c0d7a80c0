"""The call's cancel scope entered where the call may first suspend (toolrig.runtime._scope): same outcomes as a scope
around the whole call, on a matrix; a body that cannot suspend runs with none."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from toolrig import ToolCall, ToolOutcome, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import Runtime, default_stages, minimal_stages
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._invoke import code_never_suspends


class Outer:
    """A third-party stage (no compiled form, not passing through): the scope is entered before it, i.e. around the
    whole call, as before the lazy scope — the general path the fast one is compared with."""

    name = "outer"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return await call_next(inv)


async def _no_await() -> int:
    return 1


async def _awaits() -> int:
    await anyio.sleep(0)
    return 1


async def _async_for(items: Any) -> int:
    async for _ in items:
        pass
    return 1


async def _async_with(lock: Any) -> int:
    async with lock:
        return 1


async def _nested_await() -> int:
    return sum([await anyio.sleep(0) or 1 for _ in range(2)])


def _sync() -> int:
    return 1


class _Callable:
    async def __call__(self) -> int:
        return 1


def test_code_never_suspends_only_for_plain_async_functions_without_await() -> None:
    assert code_never_suspends(_no_await)
    assert code_never_suspends(lambda: None) is False  # not a coroutine function
    for fn in (_awaits, _async_for, _async_with, _nested_await, _sync, _Callable(), _Callable().__call__,
               functools.partial(_no_await)):
        assert not code_never_suspends(fn), fn


def _stage_lists() -> dict[str, Callable[[], list[Any]]]:
    return {"minimal": minimal_stages, "default": lambda: default_stages(audit=False)}


async def _run(stages: list[Any], body: Callable[..., Any], call_id: str, *, from_outside: bool = False,
               approval: Any = None) -> ToolOutcome:
    fn = tool(name="t", description="A tool.")(body)
    async with Runtime([fn], stages=stages, audit=False, approval=approval) as rt:
        _RUNTIMES[call_id] = rt
        try:
            with anyio.fail_after(10):
                if not from_outside:
                    return await rt.call(ToolCall(name="t", id=call_id))
                out: list[ToolOutcome] = []
                async with anyio.create_task_group() as tg:
                    async def run() -> None:
                        out.append(await rt.call(ToolCall(name="t", id=call_id)))

                    tg.start_soon(run)
                    while not _STARTED.get(call_id):
                        await anyio.sleep(0.001)
                    assert rt.cancel(call_id)  # from another task
                return out[0]
        finally:
            _RUNTIMES.pop(call_id, None)
            _STARTED.pop(call_id, None)


_RUNTIMES: dict[str, Runtime] = {}
_STARTED: dict[str, bool] = {}


async def ok_no_await() -> str:
    return "done"


async def ok_awaits() -> str:
    await anyio.sleep(0)
    return "done"


async def fails_no_await() -> str:
    raise ValueError("bad")


async def raises_cancelled_no_await() -> str:
    raise anyio.get_cancelled_exc_class()()


async def cancels_itself_no_await() -> str:
    assert _RUNTIMES["self"].cancel("self")  # nothing left to land on: the call ends as it would have
    return "done"


async def cancels_itself_then_awaits() -> str:
    assert _RUNTIMES["self"].cancel("self")
    await anyio.sleep(0)
    return "not reached"


async def waits_for_cancel() -> str:
    _STARTED["waiter"] = True
    await anyio.sleep_forever()
    return "never"


def _summary(outcome: ToolOutcome) -> tuple[Any, ...]:
    return outcome.ok, None if outcome.error is None else outcome.error.kind, outcome.content if outcome.ok else None


CASES: list[tuple[Callable[..., Any], str, bool]] = [
    (ok_no_await, "plain", False),
    (ok_awaits, "plain", False),
    (fails_no_await, "plain", False),
    (raises_cancelled_no_await, "plain", False),
    (cancels_itself_no_await, "self", False),
    (cancels_itself_then_awaits, "self", False),
    (waits_for_cancel, "waiter", True),
]


@pytest.mark.anyio
@pytest.mark.parametrize("pipeline", ["minimal", "default"])
@pytest.mark.parametrize(("body", "call_id", "from_outside"), CASES, ids=[c[0].__name__ for c in CASES])
async def test_the_scope_entered_late_gives_the_outcomes_of_a_scope_around_the_call(
        pipeline: str, body: Callable[..., Any], call_id: str, from_outside: bool) -> None:
    stages = _stage_lists()[pipeline]
    late = await _run(stages(), body, call_id, from_outside=from_outside)
    whole = await _run([Outer(), *stages()], body, call_id, from_outside=from_outside)
    assert _summary(late) == _summary(whole)
    expected = {"cancels_itself_then_awaits": ErrorKind.CANCELLED, "waits_for_cancel": ErrorKind.CANCELLED,
                "fails_no_await": ErrorKind.EXECUTION_ERROR, "raises_cancelled_no_await": ErrorKind.EXECUTION_ERROR}
    assert _summary(late)[1] is expected.get(body.__name__)


@pytest.mark.anyio
async def test_a_body_that_cannot_suspend_runs_without_a_cancel_scope_and_one_that_can_with() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def quick() -> str:
        """Returns at once."""
        seen["quick"] = next(iter(holder["rt"]._running)).scope
        return "q"

    @tool
    async def slow() -> str:
        """Awaits."""
        seen["slow"] = next(iter(holder["rt"]._running)).scope
        await anyio.sleep(0)
        return "s"

    holder: dict[str, Runtime] = {}
    for stages in (minimal_stages(), default_stages(audit=False)):
        async with Runtime([quick, slow], stages=stages, audit=False) as rt:
            holder["rt"] = rt
            assert (await rt.call(ToolCall(name="quick"))).ok and (await rt.call(ToolCall(name="slow"))).ok
        assert seen["quick"] is None
        assert isinstance(seen["slow"], anyio.CancelScope)


@pytest.mark.anyio
@pytest.mark.parametrize("audit", [False, True])
async def test_cancel_reaches_a_call_waiting_in_a_stage_before_the_tool(audit: bool, tmp_path: Any) -> None:
    asked = anyio.Event()

    async def approver(call: ToolCall, ctx: Any, reason: str) -> bool:
        asked.set()
        await anyio.sleep_forever()
        return True

    @tool(requires_approval=True)
    async def guarded() -> str:
        """Needs approval."""
        return "ran"

    out: list[ToolOutcome] = []
    target = str(tmp_path / "audit.sqlite") if audit else False
    async with Runtime([guarded], approval=approver, audit=target) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    out.append(await rt.call(ToolCall(name="guarded", id="g")))

                tg.start_soon(run)
                await asked.wait()
                done = threading.Event()
                await anyio.to_thread.run_sync(lambda: (rt.cancel("g"), done.set()))  # from another thread
    assert out[0].error is not None and out[0].error.kind is ErrorKind.CANCELLED


@pytest.mark.anyio
async def test_the_callers_own_cancellation_still_propagates_through_a_late_scope() -> None:
    started = anyio.Event()
    finished: list[ToolOutcome] = []

    @tool
    async def hangs() -> str:
        """Waits forever."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    async with Runtime([hangs], audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    finished.append(await rt.call(ToolCall(name="hangs")))

                tg.start_soon(run)
                await started.wait()
                tg.cancel_scope.cancel()
        assert rt.stats()["running"] == 0
    assert finished == []  # the caller was cancelled: no outcome, the cancellation went up


class WaitsFirst:
    """A third-party stage that suspends before the rest of the chain."""

    name = "waits-first"

    def __init__(self) -> None:
        self.waiting = anyio.Event()

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        self.waiting.set()
        await anyio.sleep_forever()
        return await call_next(inv)


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["outermost", "after-resolve"])
async def test_cancel_reaches_a_third_party_stage_waiting_before_the_tool(where: str) -> None:
    stage = WaitsFirst()
    stages: list[Any] = [stage, *minimal_stages()] if where == "outermost" else [*minimal_stages(), stage]
    out: list[ToolOutcome] = []
    async with Runtime([tool(name="t", description="A tool.")(ok_no_await)], stages=stages, audit=False) as rt:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    out.append(await rt.call(ToolCall(name="t", id="w")))

                tg.start_soon(run)
                await stage.waiting.wait()
                assert rt.cancel("w")
    assert out[0].error is not None and out[0].error.kind is ErrorKind.CANCELLED


@pytest.mark.anyio
async def test_a_task_started_by_a_call_that_never_suspends_does_not_enter_its_scope_later() -> None:
    import asyncio

    from toolrig.runtime._scope import CURRENT_CALL, enter_call_scope

    later: list[Any] = []

    async def afterwards() -> None:
        running = CURRENT_CALL.get()  # the context was copied while the call ran
        enter_call_scope()
        later.append(running)

    @tool
    async def spawns() -> str:
        """Starts a task and returns."""
        later.append(asyncio.get_running_loop().create_task(afterwards()))
        return "ok"

    async with Runtime([spawns], audit=False) as rt:
        assert (await rt.call(ToolCall(name="spawns"))).ok
        await later[0]
    running = later[1]
    assert running is not None and not running.live and running.scope is None
