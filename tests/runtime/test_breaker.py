"""The circuit breaker: transitions under a FakeClock, what counts, per-tool settings, probes."""

from __future__ import annotations

import logging
import socket

import anyio
import pytest

from toolrig import CallContext, ErrorKind, ToolCall, ToolError, ToolOutcome, tool
from toolrig.errors import ModelRetry, RateLimitedError
from toolrig.runtime import BreakerStage, FakeClock, RateLimitStage, Runtime, default_stages
from toolrig.runtime.stages._breaker import classify_outcome
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage
from toolrig.state import BreakerConfig, BreakerResult, CircuitState, RedisState

pytestmark = pytest.mark.anyio

health = {"up": False, "runs": 0}
gate: dict[str, anyio.Event] = {}


@tool
def flaky(x: int = 0) -> str:
    """Fails while the service is down."""
    health["runs"] += 1
    if not health["up"]:
        raise RuntimeError("service down")
    return "ok"


@tool
def slow_fail() -> str:
    """Times out."""
    health["runs"] += 1
    raise TimeoutError("no answer in 5 s")


@tool
def retry_me(x: int) -> str:
    """Asks the model to change its arguments."""
    raise ModelRetry("use a positive x")


@tool(rate_limit="1/minute")
def limited() -> str:
    """Rate limited by our own limiter."""
    raise RuntimeError("never reached after the first call")


@tool(metadata={"breaker": {"failure_threshold": 1}})
def fragile() -> str:
    """Opens at the first failure (tool metadata)."""
    raise RuntimeError("down")


@tool(metadata={"breaker": False})
def unguarded() -> str:
    """No breaker (tool metadata)."""
    health["runs"] += 1
    raise RuntimeError("down")


@tool
async def waits() -> str:
    """Blocks until released (a half-open probe in progress)."""
    gate["started"].set()
    await gate["release"].wait()
    if not health["up"]:
        raise RuntimeError("still down")
    return "recovered"


TOOLS = [flaky, slow_fail, retry_me, limited, fragile, unguarded, waits]


@pytest.fixture(autouse=True)
def _reset() -> None:
    health.update(up=False, runs=0)
    gate.update(started=anyio.Event(), release=anyio.Event())


def make(stage: BreakerStage | None = None, clock: FakeClock | None = None, **kw: object) -> Runtime:
    stages = [ResolveStage(), ValidateStage(), RateLimitStage(), stage or BreakerStage(failure_threshold=3,
                                                                                        recovery_time=30)]
    return Runtime(TOOLS, stages=stages, clock=clock or FakeClock(), **kw)


async def call(rt: Runtime, tool_name: str, /, **args: object) -> ToolOutcome:
    return await rt.call(ToolCall(name=tool_name, arguments=args), CallContext(user="u"))


async def test_closed_open_half_open_closed() -> None:
    clock = FakeClock()
    async with make(clock=clock) as rt:
        failures = [await call(rt, "flaky") for _ in range(3)]
        assert [o.error.kind for o in failures] == [ErrorKind.EXECUTION_ERROR] * 3
        assert failures[2].meta["circuit"] == "open"
        clock.advance(10)
        refused = await call(rt, "flaky")
        assert health["runs"] == 3  # the open circuit did not call the tool
        error = refused.error
        assert error is not None and error.kind is ErrorKind.CIRCUIT_OPEN and error.retryable
        assert error.details["retry_after"] == pytest.approx(20.0) and error.details["state"] == "open"
        assert "paused after 3 consecutive failures" in refused.content and "Try again in 20 seconds" in refused.content
        clock.advance(20)
        health["up"] = True
        probe = await call(rt, "flaky")
        assert probe.ok and probe.meta["circuit"] == "closed" and health["runs"] == 4
        after = [await call(rt, "flaky") for _ in range(3)]
    assert all(o.ok for o in after) and all("circuit" not in o.meta for o in after)


async def test_half_open_probe_failure_opens_again_for_a_full_recovery_time() -> None:
    clock = FakeClock()
    async with make(clock=clock) as rt:
        for _ in range(3):
            await call(rt, "flaky")
        clock.advance(30)
        probe = await call(rt, "flaky")
        assert not probe.ok and probe.meta["circuit"] == "open" and health["runs"] == 4
        clock.advance(29)
        refused = await call(rt, "flaky")
        clock.advance(1)
        health["up"] = True
        second_probe = await call(rt, "flaky")
    assert refused.error is not None and refused.error.details["retry_after"] == pytest.approx(1.0)
    assert second_probe.ok and health["runs"] == 5


async def test_concurrent_calls_are_refused_while_the_probe_runs() -> None:
    clock = FakeClock()
    async with make(BreakerStage(failure_threshold=1, recovery_time=5), clock) as rt:
        gate["release"].set()
        await call(rt, "waits")  # fails: opens the circuit
        gate.update(started=anyio.Event(), release=anyio.Event())
        clock.advance(5)
        health["up"] = True
        results: dict[str, ToolOutcome] = {}

        async def probe() -> None:
            results["probe"] = await call(rt, "waits")

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(probe)
                await gate["started"].wait()
                results["during"] = await call(rt, "waits")
                gate["release"].set()
        after = await call(rt, "flaky", x=1)
    during = results["during"].error
    assert during is not None and during.kind is ErrorKind.CIRCUIT_OPEN and during.details["state"] == "half_open"
    assert "a trial call is in progress" in results["during"].content
    assert results["probe"].ok and results["probe"].content == "recovered"
    assert after.ok  # another tool has its own circuit


async def test_a_cancelled_probe_lets_the_next_call_probe() -> None:
    clock = FakeClock()
    async with make(BreakerStage(failure_threshold=1, recovery_time=5), clock) as rt:
        gate["release"].set()
        await call(rt, "waits")
        gate.update(started=anyio.Event(), release=anyio.Event())
        clock.advance(5)
        outcomes: list[ToolOutcome] = []
        cancelled_call = ToolCall(name="waits")

        async def probe() -> None:
            outcomes.append(await rt.call(cancelled_call))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(probe)
                await gate["started"].wait()
                assert rt.cancel(cancelled_call.id)
        health["up"] = True
        gate["release"].set()
        next_call = await call(rt, "waits")
    assert outcomes[0].error is not None and outcomes[0].error.kind is ErrorKind.CANCELLED
    assert next_call.ok  # the lease was freed: no waiting for probe_timeout


async def test_timeouts_count_as_failures() -> None:
    async with make() as rt:
        outcomes = [await call(rt, "slow_fail") for _ in range(4)]
    assert [o.error.kind for o in outcomes] == [ErrorKind.TIMEOUT] * 3 + [ErrorKind.CIRCUIT_OPEN]


async def test_model_errors_bad_arguments_and_our_limits_never_open_the_circuit() -> None:
    stage = BreakerStage(failure_threshold=3)
    async with make(stage) as rt:
        for _ in range(5):
            assert (await call(rt, "retry_me", x=-1)).error.kind is ErrorKind.RETRY_REQUESTED
            assert (await call(rt, "flaky", x="not a number")).error.kind is ErrorKind.INVALID_ARGUMENTS
        await call(rt, "limited")
        limited = [await call(rt, "limited") for _ in range(5)]
        still = await call(rt, "retry_me", x=1)
        assert (await stage.state("flaky", rt.services)).state is CircuitState.CLOSED
    assert all(o.error.kind is ErrorKind.RATE_LIMITED for o in limited)
    assert still.error is not None and still.error.kind is ErrorKind.RETRY_REQUESTED  # not circuit_open


def test_classification_of_outcomes() -> None:
    def failed(kind: ErrorKind, exc: BaseException | None = None) -> ToolOutcome:
        return ToolOutcome.failure("c", "t", ToolError.of(kind, "m"), exception=exc)

    assert classify_outcome(ToolOutcome(call_id="c", name="t", ok=True)) is BreakerResult.SUCCESS
    assert classify_outcome(failed(ErrorKind.EXECUTION_ERROR, RuntimeError())) is BreakerResult.FAILURE
    assert classify_outcome(failed(ErrorKind.TIMEOUT)) is BreakerResult.FAILURE
    assert classify_outcome(failed(ErrorKind.RATE_LIMITED, RateLimitedError("429"))) is BreakerResult.FAILURE
    assert classify_outcome(failed(ErrorKind.RATE_LIMITED)) is BreakerResult.NEUTRAL  # our own limiter
    for kind in (ErrorKind.INVALID_ARGUMENTS, ErrorKind.DENIED, ErrorKind.APPROVAL_REQUIRED,
                 ErrorKind.APPROVAL_DENIED, ErrorKind.NOT_FOUND, ErrorKind.CANCELLED):
        assert classify_outcome(failed(kind)) is BreakerResult.NEUTRAL
    assert classify_outcome(failed(ErrorKind.EXECUTION_ERROR, ModelRetry("x"))) is BreakerResult.NEUTRAL


async def test_a_success_resets_the_consecutive_count() -> None:
    async with make() as rt:
        for _ in range(2):
            await call(rt, "flaky")
        health["up"] = True
        await call(rt, "flaky")
        health["up"] = False
        outcomes = [await call(rt, "flaky") for _ in range(3)]
    assert [o.error.kind for o in outcomes] == [ErrorKind.EXECUTION_ERROR] * 3
    assert outcomes[2].meta["circuit"] == "open"


async def test_per_tool_settings_from_metadata_and_stage_overrides() -> None:
    stage = BreakerStage(failure_threshold=3, overrides={"flaky": {"failure_threshold": 1, "recovery_time": 60},
                                                        "fragile": {"failure_threshold": 2}})
    async with make(stage) as rt:
        assert not (await call(rt, "flaky")).ok
        assert (await call(rt, "flaky")).error.details["retry_after"] == pytest.approx(60)
        kinds = [(await call(rt, "fragile")).error.kind for _ in range(3)]
        free = [await call(rt, "unguarded") for _ in range(8)]
    assert kinds == [ErrorKind.EXECUTION_ERROR, ErrorKind.EXECUTION_ERROR, ErrorKind.CIRCUIT_OPEN]
    assert all(o.error.kind is ErrorKind.EXECUTION_ERROR for o in free)
    assert stage.config_for(fragile.spec) == BreakerConfig(failure_threshold=2)
    assert stage.config_for(unguarded.spec) is None
    async with make(BreakerStage()) as rt:  # metadata alone: fragile opens after one failure
        assert [(await call(rt, "fragile")).error.kind for _ in range(2)] == [
            ErrorKind.EXECUTION_ERROR, ErrorKind.CIRCUIT_OPEN]


async def test_bad_settings_are_refused_or_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match="unknown breaker setting"):
        BreakerStage(overrides={"t": {"threshold": 2}})
    with pytest.raises(ValueError):
        BreakerStage(failure_threshold=0)
    def odd_tool() -> str:
        """Misspelt breaker settings."""
        return "x"

    odd = tool(metadata={"breaker": {"failure_treshold": 1}})(odd_tool)
    caplog.set_level(logging.WARNING, "toolrig.runtime.stages._breaker")
    stage = BreakerStage(failure_threshold=4)
    assert stage.config_for(odd.spec) == BreakerConfig(failure_threshold=4)
    assert "ignoring metadata['breaker']" in caplog.text


async def test_reset_closes_the_circuit() -> None:
    stage = BreakerStage(failure_threshold=1)
    async with make(stage) as rt:
        await call(rt, "flaky")
        assert (await stage.state("flaky", rt.services)).state is CircuitState.OPEN
        await stage.reset("flaky", rt.services)
        health["up"] = True
        assert (await call(rt, "flaky")).ok


async def test_breaker_in_the_full_default_chain() -> None:
    clock = FakeClock()
    async with Runtime(TOOLS, clock=clock, stages=default_stages(audit=False)) as rt:
        kinds = [(await call(rt, "flaky", x=i)).error.kind for i in range(6)]
        clock.advance(30)
        health["up"] = True
        probe = await call(rt, "flaky", x=99)
    assert kinds == [ErrorKind.EXECUTION_ERROR] * 5 + [ErrorKind.CIRCUIT_OPEN]  # default threshold: 5
    assert probe.ok


async def test_unreachable_redis_fails_open_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = RedisState(f"redis://127.0.0.1:{port}/0", socket_timeout=1.0)
    caplog.set_level(logging.WARNING, "toolrig.runtime.stages._breaker")
    async with make(BreakerStage(failure_threshold=1), state=state) as rt:
        health["up"] = True
        outcomes = [await call(rt, "flaky") for _ in range(3)]
    await state.aclose()
    assert all(o.ok for o in outcomes)
    assert "shared state unavailable" in caplog.text


@pytest.mark.parametrize("shared", ["memory", "redis"])
async def test_probe_now_tries_the_next_call_at_once_and_a_failed_trial_reopens(shared: str) -> None:
    """Issue item 11: a dependency known to be back is tried at once, not after the rest of recovery_time."""
    import os
    import uuid

    clock = FakeClock()
    state = None
    if shared == "redis":
        url = os.environ.get("REDIS_URL")
        if not url:
            if os.environ.get("CI"):
                pytest.fail("REDIS_URL is not set (.ci/run starts a Redis)")
            pytest.skip("REDIS_URL is not set")
        state = RedisState(url, prefix=f"test-probe-{uuid.uuid4().hex[:12]}")
    stage = BreakerStage(failure_threshold=2, recovery_time=30)
    async with make(stage, clock, state=state) as rt:
        for _ in range(2):
            await call(rt, "flaky")
        assert (await call(rt, "flaky")).error.kind is ErrorKind.CIRCUIT_OPEN  # type: ignore[union-attr]
        stage.probe_now(["flaky"])
        failed_trial = await call(rt, "flaky")  # still down: the trial runs at once, fails, and reopens
        assert failed_trial.error is not None and failed_trial.error.kind is ErrorKind.EXECUTION_ERROR
        assert health["runs"] == 3 and failed_trial.meta["circuit"] == "open"
        refused = await call(rt, "flaky")  # one trial per probe_now: the rest waits again
        assert refused.error is not None and refused.error.details["retry_after"] == pytest.approx(30.0)
        health["up"] = True
        stage.probe_now(["flaky"])
        trial = await call(rt, "flaky")
        assert trial.ok and trial.meta["circuit"] == "closed" and health["runs"] == 4
        stage.probe_now(["flaky"])  # a closed circuit is unaffected
        assert (await call(rt, "flaky")).ok


async def test_a_call_refused_during_a_trial_is_told_to_try_again_soon() -> None:
    """The trial's lease (recovery_time) is a guard against a dead prober, not how long a client should wait."""
    clock = FakeClock()
    async with make(BreakerStage(failure_threshold=1, recovery_time=30), clock) as rt:
        gate["release"].set()
        await call(rt, "waits")
        gate.update(started=anyio.Event(), release=anyio.Event())
        clock.advance(30)
        health["up"] = True
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, rt, "waits")
            with anyio.fail_after(5):
                await gate["started"].wait()
            during = await call(rt, "waits")
            gate["release"].set()
    assert during.error is not None and during.error.details["state"] == "half_open"
    assert during.error.details["retry_after"] == pytest.approx(1.0) and "Try again in 1 second," in during.content
