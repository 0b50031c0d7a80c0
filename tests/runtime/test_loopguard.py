"""The loop guard: warn, then block, identical calls within a window (FakeClock)."""

from __future__ import annotations

import pytest

from toolrig import CallContext, ErrorKind, ToolCall, ToolOutcome, tool
from toolrig.runtime import FakeClock, LoopGuardStage, Runtime, default_stages
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage

pytestmark = pytest.mark.anyio

runs: list[dict[str, object]] = []


@tool
def lookup(key: str, limit: int = 10) -> str:
    """Look something up."""
    runs.append({"key": key, "limit": limit})
    return f"value of {key}"


@tool(metadata={"loop_guard": False})
def poll_status(job: str) -> str:
    """Polling is expected to repeat."""
    return "running"


@tool
def broken(key: str) -> str:
    """Always fails."""
    raise RuntimeError("nope")


@pytest.fixture(autouse=True)
def _reset() -> None:
    runs.clear()


def make(stage: LoopGuardStage | None = None, clock: FakeClock | None = None) -> Runtime:
    stages = [ResolveStage(), ValidateStage(), stage or LoopGuardStage()]
    return Runtime([lookup, poll_status, broken], stages=stages, clock=clock or FakeClock())


async def call(rt: Runtime, tool_name: str, /, session: str | None = "s1", user: str | None = "u",
               **args: object) -> ToolOutcome:
    return await rt.call(ToolCall(name=tool_name, arguments=args), CallContext(session=session, user=user))


async def test_warns_from_the_third_and_blocks_from_the_fifth_identical_call() -> None:
    async with make() as rt:
        outcomes = [await call(rt, "lookup", key="k") for _ in range(6)]
    assert len(runs) == 4  # the fifth and sixth never ran
    assert [o.ok for o in outcomes] == [True, True, True, True, False, False]
    assert [("loop_warning" in o.meta) for o in outcomes[:4]] == [False, False, True, True]
    assert outcomes[0].content == "value of k"
    warned = outcomes[2]
    assert warned.content.startswith("value of k\n\n[note: this is call 3 to lookup with these same arguments")
    assert warned.meta["loop_warning"] == {"count": 3, "window": 60.0, "block_after": 5}
    blocked = outcomes[4].error
    assert blocked is not None and blocked.kind is ErrorKind.LOOP_DETECTED and not blocked.retryable
    assert blocked.details == {"count": 5, "window": 60.0}
    assert "called 5 times with the same arguments within 60 seconds" in outcomes[4].content


async def test_argument_order_and_defaults_do_not_hide_a_repeat() -> None:
    async with make(LoopGuardStage(warn_after=2, block_after=3)) as rt:
        await rt.call(ToolCall(name="lookup", arguments='{"limit": 10, "key": "k"}'), CallContext(session="s1"))
        second = await rt.call(ToolCall(name="lookup", arguments={"key": "k"}), CallContext(session="s1"))
        third = await rt.call(ToolCall(name="lookup", arguments={"key": "k", "limit": "10"}),
                              CallContext(session="s1"))
    assert "loop_warning" in second.meta
    assert third.error is not None and third.error.kind is ErrorKind.LOOP_DETECTED


async def test_different_arguments_tools_sessions_and_users_count_apart() -> None:
    async with make(LoopGuardStage(warn_after=2, block_after=2)) as rt:
        outcomes = [
            await call(rt, "lookup", key="a"),
            await call(rt, "lookup", key="b"),
            await call(rt, "lookup", key="a", limit=5),
            await call(rt, "lookup", session="s2", key="a"),
            await call(rt, "lookup", user="other", key="a"),
            await call(rt, "broken", key="a"),
        ]
        repeat = await call(rt, "lookup", key="a")
    assert all("loop_warning" not in o.meta for o in outcomes) and outcomes[-1].error.kind is ErrorKind.EXECUTION_ERROR
    assert repeat.error is not None and repeat.error.kind is ErrorKind.LOOP_DETECTED


async def test_the_window_slides_with_the_clock() -> None:
    clock = FakeClock()
    async with make(LoopGuardStage(warn_after=2, block_after=3, window=30), clock) as rt:
        await call(rt, "lookup", key="k")
        clock.advance(20)
        warned = await call(rt, "lookup", key="k")
        clock.advance(11)  # the first call is now out of the window
        warned_again = await call(rt, "lookup", key="k")
        clock.advance(31)
        fresh = await call(rt, "lookup", key="k")
    assert warned.meta["loop_warning"]["count"] == 2
    assert warned_again.ok and warned_again.meta["loop_warning"]["count"] == 2
    assert "loop_warning" not in fresh.meta


async def test_failures_get_the_warning_too() -> None:
    async with make(LoopGuardStage(warn_after=2, block_after=4)) as rt:
        outcomes = [await call(rt, "broken", key="k") for _ in range(2)]
    assert outcomes[1].error is not None and outcomes[1].error.kind is ErrorKind.EXECUTION_ERROR
    assert outcomes[1].content.startswith("Error (execution_error)") and "[note: this is call 2" in outcomes[1].content


async def test_opt_out_by_metadata_and_by_name() -> None:
    async with make(LoopGuardStage(warn_after=1, block_after=1, exempt={"lookup"})) as rt:
        polls = [await call(rt, "poll_status", job="j") for _ in range(10)]
        lookups = [await call(rt, "lookup", key="k") for _ in range(10)]
    assert all(o.ok and "loop_warning" not in o.meta for o in polls + lookups)


async def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        LoopGuardStage(warn_after=5, block_after=3)
    with pytest.raises(ValueError):
        LoopGuardStage(window=0)


async def test_loop_guard_in_the_full_default_chain() -> None:
    async with Runtime([lookup], clock=FakeClock(), stages=default_stages(audit=False)) as rt:
        outcomes = [await call(rt, "lookup", key="k") for _ in range(5)]
    assert "loop_warning" in outcomes[2].meta
    assert outcomes[4].error is not None and outcomes[4].error.kind is ErrorKind.LOOP_DETECTED
    assert len(runs) == 4


async def test_long_arguments_are_counted_by_digest() -> None:
    big = "x" * 5000
    async with make(LoopGuardStage(warn_after=2, block_after=3)) as rt:
        outcomes = [await call(rt, "lookup", key=big) for _ in range(3)]
        other = await call(rt, "lookup", key=big + "y")
    assert "loop_warning" in outcomes[1].meta
    assert outcomes[2].error is not None and outcomes[2].error.kind is ErrorKind.LOOP_DETECTED
    assert other.ok and "loop_warning" not in other.meta


def test_loop_note_for_external_tools_goes_after_the_fence() -> None:
    import anyio as _anyio

    from toolrig import ToolCall as _Call
    from toolrig import tool as _tool
    from toolrig.runtime import Runtime as _Runtime

    @_tool(permission="readonly", trust="external")
    def fetch_page(url: str) -> str:
        """Fetch a page."""
        return "page text"

    rt = _Runtime([fetch_page], audit=False)
    outs = [_anyio.run(rt.call, _Call(name="fetch_page", arguments={"url": "u"})) for _ in range(3)]
    last = outs[-1]
    assert last.ok and "loop_warning" in last.meta
    closing = last.content.index("</external_tool_result")
    assert "[note: this is call 3" in last.content[closing:]
    assert "[note:" not in last.content[:closing]


async def test_each_tool_counts_its_own_calls_with_the_step_compiled_for_it() -> None:
    @tool
    def lookup_again(key: str, limit: int = 10) -> str:
        """The same parameters as lookup."""
        return f"again {key}"

    stages = [ResolveStage(), ValidateStage(), LoopGuardStage(exempt={"poll_status"})]
    async with Runtime([lookup, lookup_again, poll_status], stages=stages, clock=FakeClock()) as rt:
        mixed = [await call(rt, name, key="k") for _ in range(4) for name in ("lookup", "lookup_again")]
        polls = [await call(rt, "poll_status", job="j") for _ in range(6)]
        fifth = await call(rt, "lookup", key="k")
    assert [o.meta.get("loop_warning", {}).get("count") for o in mixed] == [None, None, None, None, 3, 3, 4, 4]
    assert all(o.ok and "loop_warning" not in o.meta for o in polls)
    assert fifth.error is not None and fifth.error.kind is ErrorKind.LOOP_DETECTED
