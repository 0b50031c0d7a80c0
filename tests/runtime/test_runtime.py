from typing import Any

import anyio
import pytest

from toolrig import CallContext, Injected, ToolCall, ToolOutcome, current_context, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import Invocation, Runtime, default_stages, insert_before, minimal_stages, remove_stage
from toolrig.runtime._chain import CallNext


@tool(permission="readonly")
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first.
        b: second.
    """
    return a + b


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.peak = 0


@pytest.mark.anyio
async def test_call_many_1000_calls_in_order_with_concurrency_limit() -> None:
    gauge = Gauge()

    @tool(permission="readonly")
    async def slow_echo(i: int) -> int:
        """Echo after yielding."""
        gauge.now += 1
        gauge.peak = max(gauge.peak, gauge.now)
        await anyio.sleep(0)
        await anyio.sleep(0)
        gauge.now -= 1
        return i

    rt = Runtime([slow_echo], audit=False)
    calls = [ToolCall(name="slow_echo", arguments={"i": i}) for i in range(1000)]
    with anyio.fail_after(60):
        outcomes = await rt.call_many(calls, max_concurrency=16)
    assert [o.call_id for o in outcomes] == [c.id for c in calls]
    assert [o.structured for o in outcomes] == list(range(1000))
    assert all(o.ok for o in outcomes)
    assert 1 < gauge.peak <= 16
    await rt.aclose()


@pytest.mark.anyio
async def test_call_many_mixes_failures_without_losing_order() -> None:
    rt = Runtime([add], audit=False)
    calls = [ToolCall(name="add", arguments={"a": 1, "b": 2}), ToolCall(name="nope"),
             ToolCall(name="add", arguments={"a": "x"})]
    kinds = [o.error.kind if o.error else None for o in await rt.call_many(calls)]
    assert kinds == [None, ErrorKind.NOT_FOUND, ErrorKind.INVALID_ARGUMENTS]
    await rt.aclose()


def test_call_sync_from_plain_code() -> None:
    rt = Runtime([add], audit=False)
    try:
        out = rt.call_sync(ToolCall(name="add", arguments='{"a": 2, "b": "40"}'))
        assert out.ok and out.content == "42" and out.structured == 42
        assert out.duration_ms > 0
    finally:
        rt.close()


@pytest.mark.anyio
async def test_injected_state_and_progress_reach_the_tool() -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    @tool(permission="readonly")
    async def work(steps: int, db: Injected[dict[str, str]], ctx: CallContext) -> str:
        """Do some steps."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        assert current_context() is ctx
        return f"{db['name']} for {ctx.user}"

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    rt = Runtime([work], audit=False)
    ctx = CallContext(user="ann", state={"db": {"name": "main"}}, progress=on_progress)
    out = await rt.call(ToolCall(name="work", arguments={"steps": 2}), ctx)
    assert out.ok, out.content
    assert out.content == "main for ann"
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert "db" not in work.spec.input_schema["properties"]
    await rt.aclose()


@pytest.mark.anyio
async def test_cancel_a_running_call() -> None:
    started = anyio.Event()

    @tool(permission="readonly")
    async def wait_forever() -> str:
        """Never finishes."""
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    rt = Runtime([wait_forever], audit=False)
    call = ToolCall(name="wait_forever")
    result: list[ToolOutcome] = []

    async def run() -> None:
        result.append(await rt.call(call))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            assert rt.cancel(call.id)
    assert result[0].error is not None and result[0].error.kind == ErrorKind.CANCELLED
    assert not rt.cancel(call.id)
    await rt.aclose()


class Broken:
    name = "broken"

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        raise ZeroDivisionError("stage bug")


@pytest.mark.anyio
async def test_a_failing_stage_becomes_an_internal_error_outcome() -> None:
    rt = Runtime([add], stages=[*minimal_stages(), Broken()], audit=False)
    out = await rt.call(ToolCall(name="add", arguments={"a": 1, "b": 1}))
    assert out.error is not None and out.error.kind == ErrorKind.INTERNAL_ERROR
    assert "ZeroDivisionError" in out.error.message


def test_stage_list_helpers() -> None:
    stages = default_stages(audit=False)
    names = [s.name for s in stages]
    assert names.index("resolve") < names.index("validate") < names.index("approval")
    fewer = remove_stage(stages, "repair")
    assert "repair" not in [s.name for s in fewer]
    more = insert_before(stages, "validate", Broken())
    assert [s.name for s in more].index("broken") == names.index("validate")
    with pytest.raises(KeyError, match="no stage named"):
        remove_stage(stages, "nope")


def test_not_found_suggests_closest_names() -> None:
    rt = Runtime([add], audit=False)
    try:
        out = rt.call_sync(ToolCall(name="ad", arguments={}))
    finally:
        rt.close()
    assert out.error is not None and out.error.kind == ErrorKind.NOT_FOUND
    assert "add" in out.error.message and out.error.details["suggestions"] == ["add"]


def test_outcome_is_json_serialisable() -> None:
    import json

    rt = Runtime([add], audit=False)
    try:
        out = rt.call_sync(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    finally:
        rt.close()
    data: dict[str, Any] = json.loads(json.dumps(out.to_dict()))
    assert data["ok"] is True and data["name"] == "add" and data["meta"]["version"] == "1.0.0"


@pytest.mark.anyio
async def test_two_running_calls_with_the_same_id_are_both_tracked() -> None:
    started: list[int] = []
    both = anyio.Event()

    @tool(permission="readonly")
    async def park(n: int) -> int:
        """Wait until cancelled."""
        started.append(n)
        if len(started) == 2:
            both.set()
        await anyio.sleep_forever()
        return n

    rt = Runtime([park], audit=False)
    results: list[ToolOutcome] = []

    async def run(n: int) -> None:
        results.append(await rt.call(ToolCall(name="park", arguments={"n": n}, id="same")))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, 1)
            tg.start_soon(run, 2)
            await both.wait()
            assert rt.cancel("same")
    assert [o.error.kind for o in results if o.error] == [ErrorKind.CANCELLED, ErrorKind.CANCELLED]
    assert not rt.cancel("same")
    await rt.aclose()


def test_each_tool_runs_only_the_stages_that_can_apply_to_it() -> None:
    """The chain is compiled per tool: a plain readonly tool skips fence, cache, approval, retry, ..."""
    from toolrig import RetryPolicy
    from toolrig.runtime import Invocation, default_stages, insert_before

    @tool(permission="readonly")
    def plain(x: int) -> int:
        """Plain."""
        return x

    @tool(trust="external", cacheable=True, rate_limit="5/minute", retry=RetryPolicy(max_attempts=2),
          permission="destructive")
    def busy(x: int) -> int:
        """Everything on."""
        return x

    class Custom:
        name = "custom"

        async def __call__(self, inv: Invocation, call_next: Any) -> Any:
            return await call_next(inv)

    rt = Runtime([plain, busy], audit=False)
    lean = rt.chain_for(plain)
    assert lean[:3] == ["telemetry", "resolve", "repair"]
    assert not {"fence", "hooks", "approval", "rate_limit", "cache", "retry", "timeout"} & set(lean)
    assert {"validate", "output", "loop_guard", "breaker"} <= set(lean)
    assert set(rt.chain_for(busy)) == {s.name for s in rt.stages} - {"hooks", "timeout"}  # no hooks, no default timeout
    unknown = Runtime([plain], stages=insert_before(default_stages(audit=False), "approval", Custom()))
    assert "approval" in unknown.chain_for(plain)  # a stage that might decide keeps approval (fail closed)
    hooked = Runtime([plain], audit=False, hooks=[object()])
    assert hooked.chain_for(plain) == [s.name for s in hooked.stages]  # a hook may redirect: the whole list
