"""The retry stage: decisions by error class, backoff with jitter and cap, one retry layer."""

from __future__ import annotations

import random

import anyio
import pytest

from toolrig import RetryPolicy, ToolCall, ToolOutcome, tool
from toolrig._outcome import ErrorKind, ToolError
from toolrig.errors import ModelRetry, RateLimitedError, TransientError
from toolrig.runtime import (
    CallTimeoutError,
    FakeClock,
    Invocation,
    RetryStage,
    Runtime,
    default_stages,
    minimal_stages,
)
from toolrig.runtime._chain import CallNext
from toolrig.runtime.stages._retry import backoff_delay, next_delay, should_retry

POLICY = RetryPolicy(max_attempts=4, initial_delay=0.5, multiplier=2.0, max_delay=3.0, jitter=0.2)


def failed(exc: BaseException) -> ToolOutcome:
    return ToolOutcome.failure("c1", "t", ToolError.of(ErrorKind.EXECUTION_ERROR, str(exc)), exception=exc)


# -- deciding (pure) ------------------------------------------------------------------------------

@pytest.mark.parametrize("exc", [TimeoutError("slow"), ConnectionError("reset"), ConnectionResetError(),
                                 TransientError("502"), RateLimitedError("slow down"),
                                 CallTimeoutError("t", 0.2)])
def test_retried_classes(exc: BaseException) -> None:
    assert should_retry(POLICY, failed(exc), idempotent=True)


@pytest.mark.parametrize("exc", [ValueError("timeout"), KeyError("connection"), ModelRetry("try x"),
                                 RuntimeError("temporarily unavailable, retry")])
def test_other_classes_are_not_retried_whatever_the_message_says(exc: BaseException) -> None:
    assert not should_retry(POLICY, failed(exc), idempotent=True)


def test_custom_retry_on_is_matched_by_type_and_own_timeouts_stay_retried() -> None:
    policy = RetryPolicy(retry_on=(KeyError,))
    assert should_retry(policy, failed(KeyError("k")), idempotent=True)
    assert not should_retry(policy, failed(ConnectionError()), idempotent=True)
    assert should_retry(policy, failed(CallTimeoutError("t", 1.0)), idempotent=True)


def test_success_and_errors_without_exception_are_not_retried() -> None:
    no_exc = ToolOutcome.failure("c1", "t", ToolError.of(ErrorKind.TIMEOUT, "slow"))
    assert not should_retry(POLICY, no_exc, idempotent=True)


def test_non_idempotent_needs_explicit_permission() -> None:
    outcome = failed(ConnectionError())
    assert not should_retry(POLICY, outcome, idempotent=False)
    allowed = RetryPolicy(retry_non_idempotent=True)
    assert should_retry(allowed, outcome, idempotent=False)


def test_backoff_is_exponential_jittered_and_capped() -> None:
    assert [backoff_delay(POLICY, n, 0.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert backoff_delay(POLICY, 1, 0.5) == pytest.approx(0.55)  # + 20% * 0.5
    assert backoff_delay(POLICY, 3, 0.999) == 2.0 + 2.0 * 0.2 * 0.999
    assert backoff_delay(POLICY, 3, 1.0) == 2.4
    assert backoff_delay(POLICY, 4, 0.9) == 3.0  # the cap holds with jitter too


def test_next_delay_stops_at_max_attempts() -> None:
    outcome = failed(ConnectionError())
    assert next_delay(POLICY, outcome, 3, idempotent=True, jitter_sample=0.0) == 2.0
    assert next_delay(POLICY, outcome, 4, idempotent=True, jitter_sample=0.0) is None


def test_retry_after_is_honoured_or_stops_when_too_long() -> None:
    assert next_delay(POLICY, failed(RateLimitedError(retry_after=2.5)), 1, idempotent=True,
                      jitter_sample=0.0) == 2.5
    assert next_delay(POLICY, failed(RateLimitedError(retry_after=0.01)), 1, idempotent=True,
                      jitter_sample=0.0) == 0.5  # never shorter than the backoff
    assert next_delay(POLICY, failed(RateLimitedError(retry_after=60)), 1, idempotent=True,
                      jitter_sample=0.0) is None


# -- the stage in a runtime -------------------------------------------------------------------------

class Flaky:
    """Fails with the given exceptions, one per call, then returns "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def flaky_tool(flaky: Flaky, **options: object) -> object:
    async def flaky_call() -> str:
        """Fail, then succeed."""
        return await flaky()

    options.setdefault("permission", "readonly")
    return tool(**options)(flaky_call)


@pytest.mark.anyio
async def test_retries_until_success_with_exact_seeded_delays() -> None:
    flaky = Flaky(ConnectionError("reset"), TimeoutError("read timed out"))
    clock = FakeClock()
    seeded = random.Random(1234)
    expected = random.Random(1234)
    stages = [*minimal_stages(), RetryStage(jitter=seeded.random)]
    async with Runtime([flaky_tool(flaky, retry=POLICY)], stages=stages, clock=clock, audit=False) as rt:
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert outcome.ok and outcome.content == "ok"
    assert outcome.attempts == 3 and flaky.calls == 3
    assert clock.sleeps == [backoff_delay(POLICY, 1, expected.random()), backoff_delay(POLICY, 2, expected.random())]
    assert 0.5 <= clock.sleeps[0] <= 0.6 and 1.0 <= clock.sleeps[1] <= 1.2


@pytest.mark.anyio
async def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    flaky = Flaky(*[ConnectionError(f"reset {i}") for i in range(10)])
    clock = FakeClock()
    stages = [*minimal_stages(), RetryStage(jitter=lambda: 0.0)]
    async with Runtime([flaky_tool(flaky, retry=POLICY)], stages=stages, clock=clock, audit=False) as rt:
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert not outcome.ok and outcome.attempts == 4 and flaky.calls == 4
    assert "reset 3" in outcome.content
    assert clock.sleeps == [0.5, 1.0, 2.0]


@pytest.mark.anyio
@pytest.mark.parametrize("exc", [ValueError("connection timed out"), ModelRetry("use another city")])
async def test_non_retryable_errors_run_once(exc: BaseException) -> None:
    flaky = Flaky(exc)
    clock = FakeClock()
    async with Runtime([flaky_tool(flaky, retry=POLICY)], stages=[*minimal_stages(), RetryStage()],
                       clock=clock, audit=False) as rt:
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert not outcome.ok and outcome.attempts == 1 and flaky.calls == 1 and clock.sleeps == []


@pytest.mark.anyio
async def test_transient_and_rate_limited_errors_are_retried_honouring_retry_after() -> None:
    flaky = Flaky(TransientError("502 from upstream"), RateLimitedError("429", retry_after=2.75))
    clock = FakeClock()
    async with Runtime([flaky_tool(flaky, retry=POLICY)], stages=[*minimal_stages(), RetryStage(jitter=lambda: 0.0)],
                       clock=clock, audit=False) as rt:
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert outcome.ok and outcome.attempts == 3
    assert clock.sleeps == [0.5, 2.75]


@pytest.mark.anyio
async def test_non_idempotent_tools_are_not_retried_unless_the_policy_says_so() -> None:
    write = Flaky(ConnectionError("reset"))
    allowed = Flaky(ConnectionError("reset"))
    tools = [flaky_tool(write, retry=POLICY, permission="write"),
             tool(name="allowed", permission="destructive", description="Delete, flakily.",
                  retry=RetryPolicy(retry_non_idempotent=True))(allowed.__call__)]
    async with Runtime(tools, stages=[*minimal_stages(), RetryStage()], clock=FakeClock(), audit=False) as rt:
        once = await rt.call(ToolCall(name="flaky_call"))
        twice = await rt.call(ToolCall(name="allowed"))
    assert not once.ok and once.attempts == 1 and write.calls == 1
    assert "not idempotent" in once.meta["retry_skipped"]
    assert twice.ok and twice.attempts == 2 and allowed.calls == 2


@pytest.mark.anyio
async def test_stage_default_policy_applies_only_to_tools_without_one() -> None:
    plain = Flaky(ConnectionError(), ConnectionError())
    single = Flaky(ConnectionError())
    tools = [flaky_tool(plain), tool(name="single", permission="readonly", description="Once.",
                                     retry=RetryPolicy(max_attempts=1))(single.__call__)]
    stages = [*minimal_stages(), RetryStage(RetryPolicy(max_attempts=3, initial_delay=0.1, jitter=0))]
    async with Runtime(tools, stages=stages, clock=FakeClock(), audit=False) as rt:
        assert (await rt.call(ToolCall(name="flaky_call"))).attempts == 3
        assert (await rt.call(ToolCall(name="single"))).attempts == 1
    assert plain.calls == 3 and single.calls == 1

    none = Flaky(ConnectionError())
    async with Runtime([flaky_tool(none)], clock=FakeClock(), audit=False) as rt:  # default: no retry
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert not outcome.ok and outcome.attempts == 1 and none.calls == 1


@pytest.mark.anyio
async def test_each_attempt_gets_its_number_in_the_invocation() -> None:
    seen: list[int] = []

    class Recorder:
        name = "recorder"

        async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
            seen.append(inv.attempt)
            return await call_next(inv)

    flaky = Flaky(ConnectionError(), ConnectionError())
    stages = [*minimal_stages(), RetryStage(), Recorder()]
    async with Runtime([flaky_tool(flaky, retry=POLICY)], stages=stages, clock=FakeClock(), audit=False) as rt:
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert seen == [1, 2, 3] and outcome.attempts == 3


@pytest.mark.anyio
async def test_own_timeouts_are_retried_and_the_timed_out_attempt_was_cancelled() -> None:
    attempts: list[str] = []

    @tool(permission="readonly", timeout=0.05, retry=RetryPolicy(max_attempts=2, retry_on=()))
    async def slow_once() -> str:
        """Hang on the first attempt only."""
        if not attempts:
            attempts.append("started")
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                attempts.append("cancelled")
                raise
        attempts.append("second")
        return "done"

    clock = FakeClock()
    async with Runtime([slow_once], clock=clock, audit=False) as rt:
        with anyio.fail_after(10):
            outcome = await rt.call(ToolCall(name="slow_once"))
    assert outcome.ok and outcome.attempts == 2
    assert attempts == ["started", "cancelled", "second"]
    assert len(clock.sleeps) == 1


# -- one retry layer ----------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_nested_runtimes_do_not_multiply_attempts() -> None:
    """A gateway-like tool forwards to an inner runtime whose tool also has a retry policy."""
    inner_flaky = Flaky(*[ConnectionError("upstream down") for _ in range(20)])
    inner = Runtime([flaky_tool(inner_flaky, retry=RetryPolicy(max_attempts=3))], clock=FakeClock(), audit=False)

    @tool(permission="readonly", retry=RetryPolicy(max_attempts=3))
    async def gateway() -> str:
        """Forward to the inner runtime (as an MCP proxy would)."""
        outcome = await inner.call(ToolCall(name="flaky_call"))
        if outcome.exception is not None:
            raise outcome.exception
        return outcome.content

    async with Runtime([gateway], clock=FakeClock(), audit=False) as outer:
        outcome = await outer.call(ToolCall(name="gateway"))
    await inner.aclose()
    assert not outcome.ok and outcome.attempts == 3
    assert inner_flaky.calls == 3  # 3 outer attempts x 1 inner attempt, not 3 x 3


@pytest.mark.anyio
async def test_a_self_retrying_tool_is_not_wrapped_again() -> None:
    transport = Flaky(*[ConnectionError("session lost") for _ in range(20)])

    @tool(permission="readonly", retry=RetryPolicy(max_attempts=1))
    async def mcp_like() -> str:
        """Reconnects twice by itself before giving up."""
        for _ in range(2):
            try:
                return await transport()
            except ConnectionError:
                continue
        raise ConnectionError("gave up after 2 reconnects")

    stages = default_stages(audit=False, retry=RetryPolicy(max_attempts=5))
    async with Runtime([mcp_like], stages=stages, clock=FakeClock(), audit=False) as rt:
        outcome = await rt.call(ToolCall(name="mcp_like"))
    assert not outcome.ok and outcome.attempts == 1 and transport.calls == 2


@pytest.mark.anyio
async def test_full_default_chain_makes_exactly_max_attempts_calls() -> None:
    flaky = Flaky(*[ConnectionError("down") for _ in range(20)])
    clock = FakeClock()
    async with Runtime([flaky_tool(flaky, retry=RetryPolicy(max_attempts=4, jitter=0))],
                       clock=clock, audit=False) as rt:
        names = [s.name for s in rt.stages]
        outcome = await rt.call(ToolCall(name="flaky_call"))
    assert names.index("retry") == names.index("timeout") - 1
    if "breaker" in names:  # the breaker counts one failure per call, outside the retries
        assert names.index("breaker") < names.index("retry")
    assert flaky.calls == 4 and outcome.attempts == 4
    assert clock.sleeps == [0.1, 0.2, 0.4]
