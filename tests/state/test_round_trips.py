"""One call's shared-state checks (loop guard, rate limits, breaker) cost one Redis round trip, counted for real
by a TCP relay between the client and a real redis-server; batching keeps each stage's meaning on both backends."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ErrorKind, Retry, ToolCall, ToolOutcome, TransientError, tool
from toolrig.runtime import (
    BreakerStage,
    FakeClock,
    LoopGuardStage,
    RateLimitStage,
    RetryStage,
    Runtime,
    default_stages,
    replace_stage,
)
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage
from toolrig.state import CircuitState, RedisState, StateBackend

pytestmark = pytest.mark.anyio


class RoundTripRelay:
    """A TCP relay in front of Redis counting round trips: each time a client speaks after it was answered.

    A pipelined batch or one script is one round trip however many commands it holds, or packets it takes.
    Runs its own event loop in a thread; stopped on exit.
    """

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self._path = parts.path
        self.round_trips = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}{self._path}"

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        relays = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in relays:
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        asking = False

        async def ask() -> None:
            nonlocal asking
            while data := await reader.read(65536):
                if not asking:
                    asking = True
                    self.round_trips += 1
                up_writer.write(data)
                await up_writer.drain()
            up_writer.close()

        async def answer() -> None:
            nonlocal asking
            while data := await up_reader.read(65536):
                asking = False
                writer.write(data)
                await writer.drain()
            writer.close()

        await asyncio.gather(ask(), answer(), return_exceptions=True)

    def __enter__(self) -> RoundTripRelay:
        self._thread.start()
        assert self._ready.wait(timeout=30), "the relay did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


@tool(rate_limit="1000/minute")
def lookup(key: str) -> str:
    """Look a key up (rate limited, loop guarded, behind a breaker)."""
    return f"value of {key}"


@tool(rate_limit="1000/minute")
def flaky(key: str) -> str:
    """Always fails."""
    raise RuntimeError("down")


@pytest.fixture
def relay(redis_url: str) -> Iterator[RoundTripRelay]:
    with RoundTripRelay(redis_url) as relay:
        yield relay


@pytest.fixture
async def counted(relay: RoundTripRelay) -> AsyncIterator[Runtime]:
    """A runtime whose Redis traffic goes through ``relay``; tool, per-user and quota limits all apply."""
    state = RedisState(relay.url, prefix=f"test-trips-{uuid.uuid4().hex[:12]}")
    stages = replace_stage(default_stages(audit=False), "rate_limit",
                           RateLimitStage(per_user="1000/minute", quotas={"u": "5000/day"}))
    async with Runtime([lookup, flaky], state=state, stages=stages) as rt:
        yield rt
    await state.delete_matching(state.prefix + ":")
    await state.aclose()


async def call(rt: Runtime, name: str, key: str, session: str = "s") -> ToolOutcome:
    return await rt.call(ToolCall(name=name, arguments={"key": key}), CallContext(user="u", session=session))


async def trips(relay: RoundTripRelay, rt: Runtime, name: str, keys: list[str]) -> tuple[int, list[ToolOutcome]]:
    before = relay.round_trips
    outcomes = [await call(rt, name, key) for key in keys]
    return relay.round_trips - before, outcomes


async def test_a_call_checks_loop_guard_limits_and_breaker_in_one_round_trip(relay: RoundTripRelay,
                                                                              counted: Runtime) -> None:
    assert {"loop_guard", "rate_limit", "breaker"} <= set(counted.chain_for(lookup))
    assert (await call(counted, "lookup", "warm-up")).ok  # connects and loads the script (once per process)
    used, outcomes = await trips(relay, counted, "lookup", [f"k{i}" for i in range(12)])
    assert all(o.ok for o in outcomes)
    assert used == 12  # one per call: three limits, a loop count and a circuit look, together


async def test_refused_calls_take_one_round_trip_and_a_failure_one_more_to_count_it(relay: RoundTripRelay,
                                                                                     counted: Runtime) -> None:
    assert (await call(counted, "lookup", "warm-up")).ok
    used, looped = await trips(relay, counted, "lookup", ["same"] * 7)
    assert [o.ok for o in looped] == [True] * 4 + [False] * 3  # blocked from the fifth identical call
    assert used == 7  # a blocked call stops inside the one request
    assert not (await call(counted, "flaky", "warm-up")).ok  # loads the failure-counting script (once per server)
    used, failed = await trips(relay, counted, "flaky", [f"f{i}" for i in range(3)])
    assert all(o.error is not None and o.error.kind is ErrorKind.EXECUTION_ERROR for o in failed)
    assert used == 6  # the check, then the breaker counts the failure (awaited: its state goes in the outcome)


# -- the meaning of each stage is kept, on both backends ------------------------------------------------------------

@tool(rate_limit="3/minute", metadata={"breaker": {"failure_threshold": 1, "recovery_time": 10.0}})
def scarce(key: str, fail: bool = False) -> str:
    """Three calls a minute; fails on request."""
    if fail:
        raise RuntimeError("down")
    return key


def guarded(state: StateBackend, clock: FakeClock) -> Runtime:
    stages = replace_stage(default_stages(audit=False), "loop_guard", LoopGuardStage(warn_after=1, block_after=2))
    return Runtime([scarce, nesting, inner], state=state, clock=clock, stages=stages)


async def run(rt: Runtime, name: str, **args: Any) -> ToolOutcome:
    return await rt.call(ToolCall(name=name, arguments=args), CallContext(user="u", session="s"))


async def test_a_blocked_loop_consumes_no_rate_limit(backend: StateBackend) -> None:
    async with guarded(backend, FakeClock()) as rt:
        looped = [await run(rt, "scarce", key="a") for _ in range(3)]
        assert [o.error.kind if o.error else None for o in looped] == [None, ErrorKind.LOOP_DETECTED,
                                                                      ErrorKind.LOOP_DETECTED]
        fresh = [await run(rt, "scarce", key=k) for k in ("b", "c", "d")]
    assert [o.ok for o in fresh] == [True, True, False]  # the blocked calls took no hit of 3/minute
    assert fresh[2].error is not None and fresh[2].error.kind is ErrorKind.RATE_LIMITED


async def test_a_rate_limited_call_takes_no_breaker_trial(backend: StateBackend) -> None:
    clock = FakeClock()
    async with guarded(backend, clock) as rt:
        assert not (await run(rt, "scarce", key="a", fail=True)).ok  # opens the circuit (threshold 1)
        assert (await run(rt, "scarce", key="b")).error.kind is ErrorKind.CIRCUIT_OPEN  # type: ignore[union-attr]
        assert (await run(rt, "scarce", key="c")).error.kind is ErrorKind.CIRCUIT_OPEN  # type: ignore[union-attr]
        clock.advance(11)  # a trial is due; the limit (3/minute) is spent
        limited = await run(rt, "scarce", key="d")
        assert limited.error is not None and limited.error.kind is ErrorKind.RATE_LIMITED
        breaker = next(s for s in rt.stages if isinstance(s, BreakerStage))
        seen = await breaker.state("scarce", rt.services)
    assert seen.allowed and seen.state is CircuitState.HALF_OPEN  # the trial is still free for the next call


@tool(rate_limit="1/minute", metadata={"loop_guard": False})
async def inner(n: int) -> int:
    """Once a minute."""
    return n


@tool
async def nesting(n: int) -> list[bool]:
    """Calls ``inner`` twice through the same runtime, from inside its own call."""
    rt = NESTED["rt"]
    return [(await run(rt, "inner", n=i)).ok for i in range(2)]


NESTED: dict[str, Runtime] = {}


async def test_a_nested_call_asks_for_itself(backend: StateBackend) -> None:
    async with guarded(backend, FakeClock()) as rt:
        NESTED["rt"] = rt
        try:
            outer = await run(rt, "nesting", n=1)
        finally:
            NESTED.clear()
    assert outer.ok and outer.structured == [True, False]  # the inner calls never read the outer call's answers


async def test_a_batch_stops_after_the_first_refusal(backend: StateBackend) -> None:
    from limits import parse

    from toolrig.state import BreakerConfig, BreakerPeek, LimitRequest, LimitStep, WindowStep, admit

    limit = LimitRequest(parse("1/minute"), ("tool", "t"))
    steps = [WindowStep("k", 0.0, 60.0, 2), LimitStep((limit,)), BreakerPeek("t", BreakerConfig(), 0.0)]
    first = await admit(backend, steps)
    assert first[0] == 1 and first[1].allowed and first[2].allowed  # type: ignore[union-attr]
    assert first[2].state is CircuitState.CLOSED  # type: ignore[union-attr]
    second = await admit(backend, steps)
    assert second[0] == 2 and second[1:] == [None, None]  # the loop count stopped the batch: no hit taken
    third = await admit(backend, [LimitStep((limit,)), BreakerPeek("t", BreakerConfig(), 0.0)])
    assert third[0].allowed is False and third[1] is None  # type: ignore[union-attr]
    assert 0 < third[0].retry_after <= 60  # type: ignore[union-attr]


TRIES: list[int] = []


@tool(rate_limit="100/minute", idempotent=True, metadata={"loop_guard": False},
      retry=Retry(max_attempts=3, initial_delay=0.0, jitter=0.0, retry_on=(TransientError,)))
def shaky(key: str) -> str:
    """Fails for a while (retried)."""
    TRIES.append(1)
    raise TransientError("flaky dependency")


async def test_a_stage_reached_again_in_one_call_asks_again(backend: StateBackend) -> None:
    """A retry placed between the rate limit and the breaker: the second attempt sees the circuit the first
    attempt's failure opened, not the look taken before the call."""
    TRIES.clear()
    stages = [ResolveStage(), ValidateStage(), RateLimitStage(), RetryStage(), BreakerStage(failure_threshold=1)]
    async with Runtime([shaky], state=backend, clock=FakeClock(), stages=stages) as rt:
        out = await run(rt, "shaky", key="a")
    assert len(TRIES) == 1  # the second attempt was refused by the open circuit
    assert out.error is not None and out.error.kind is ErrorKind.CIRCUIT_OPEN


@settings(max_examples=25)
@given(users=st.lists(st.text(min_size=1, max_size=40), min_size=2, max_size=2, unique=True),
       arguments=st.dictionaries(st.text(max_size=20), st.text(max_size=200) | st.integers(), max_size=4))
def test_any_user_and_arguments_batch_safely_on_redis(redis_url: str, users: list[str],
                                                      arguments: dict[str, Any]) -> None:
    """Names and arguments from outside (quotes, NULs, glob and Lua-looking text) only ever reach the script as
    data: each user's limit stays its own, and the loop count is per argument set."""
    from limits import parse

    from toolrig.state import LimitRequest, LimitStep, WindowStep, admit, canonical_arguments

    async def scenario() -> None:
        state = RedisState(redis_url, prefix=f"test-fuzz-{uuid.uuid4().hex[:12]}")
        try:
            key = f"loop:{canonical_arguments(arguments)}"
            for user in users:
                limit = LimitRequest(parse("1/minute"), ("user", quote(user, safe="")), "user")
                first = await admit(state, [WindowStep(key, 1.0, 60.0, 0), LimitStep((limit,))])
                again = await admit(state, [LimitStep((limit,))])
                assert first[1].allowed and not again[0].allowed  # type: ignore[union-attr]
            counted = await admit(state, [WindowStep(key, 2.0, 60.0, 0)])
            assert counted == [len(users) + 1]
        finally:
            await state.delete_matching(state.prefix + ":")
            await state.aclose()

    anyio.run(scenario)
