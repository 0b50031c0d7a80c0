"""The protective stages over one real Redis: shared by runtimes, and by separate processes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolrig import CallContext, ErrorKind, ToolCall, ToolOutcome, tool
from toolrig.runtime import (
    BreakerStage,
    CacheStage,
    FakeClock,
    LoopGuardStage,
    RateLimitStage,
    Runtime,
    default_stages,
    replace_stage,
)
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage
from toolrig.state import RedisState

pytestmark = pytest.mark.anyio

# The Redis launcher lives with the state tests; load it by path (tests/ is not a package).
_spec = importlib.util.spec_from_file_location("toolrig_test_redis_server",
                                               Path(__file__).parents[1] / "state" / "redis_server.py")
assert _spec is not None and _spec.loader is not None
_redis_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_redis_server)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _redis_server.redis_server(tmp_path_factory.mktemp("redis")) as url:
        if url is None:
            pytest.skip("no REDIS_URL set and no redis-server on PATH")
        yield url


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    from redis import Redis

    name = f"test-shared-{uuid.uuid4().hex[:12]}"
    yield name
    with Redis.from_url(redis_url) as client:
        keys = list(client.scan_iter(match=f"{name}:*"))
        if keys:
            client.delete(*keys)


runs: dict[str, int] = {}


@tool(rate_limit="4/minute", cacheable=True)
def quote(symbol: str) -> str:
    """Price of a symbol."""
    runs[symbol] = runs.get(symbol, 0) + 1
    return f"{symbol}: 42"


@tool
def fragile(fail: bool = True) -> str:
    """Fails on request."""
    runs["fragile"] = runs.get("fragile", 0) + 1
    if fail:
        raise RuntimeError("backend down")
    return "ok"


def pipeline(**breaker: Any) -> list[Any]:
    stages = default_stages(audit=False)
    return replace_stage(stages, "breaker", BreakerStage(**breaker)) if breaker else stages


async def call(rt: Runtime, tool_name: str, /, user: str = "u", **args: object) -> ToolOutcome:
    return await rt.call(ToolCall(name=tool_name, arguments=args), CallContext(user=user, session="s"))


async def test_runtime_builds_and_closes_its_redis_backend_from_a_url(redis_url: str) -> None:
    rt = Runtime([quote], state=redis_url, stages=pipeline())
    state = rt.services.state
    assert isinstance(state, RedisState) and state.prefix == "toolrig"
    before = await state.client.client_id()
    await rt.aclose()
    await rt.aclose()  # idempotent
    assert await state.client.client_id() != before  # its connection was closed: a new one answers
    await state.client.aclose()


async def test_a_backend_passed_in_is_left_open_for_its_other_users(redis_url: str, prefix: str) -> None:
    state = RedisState(redis_url, prefix=prefix)
    async with Runtime([quote], state=state, stages=pipeline()) as rt:
        assert rt.services.state is state
        before = await state.client.client_id()
    assert await state.client.client_id() == before  # the same connection: not closed by the runtime
    await state.aclose()


async def test_two_runtimes_share_limits_cache_breakers_and_loop_counts(redis_url: str, prefix: str) -> None:
    runs.clear()
    clock = FakeClock()
    one_state, two_state = RedisState(redis_url, prefix=prefix), RedisState(redis_url, prefix=prefix)
    one = Runtime([quote, fragile], state=one_state, clock=clock, stages=pipeline(failure_threshold=2))
    two = Runtime([quote, fragile], state=two_state, clock=clock, stages=pipeline(failure_threshold=2))
    async with one, two:
        assert (await call(one, "quote", symbol="A")).meta["cache"] == "miss"
        assert (await call(two, "quote", symbol="A")).meta["cache"] == "hit"  # cache shared
        warned = await call(one, "quote", symbol="A")  # third identical call across both runtimes
        assert warned.meta["loop_warning"]["count"] == 3
        assert (await call(two, "quote", symbol="B")).ok  # 4th hit of the 4/minute limit
        limited = await call(one, "quote", symbol="C")
        assert limited.error is not None and limited.error.kind is ErrorKind.RATE_LIMITED
        await call(one, "fragile", fail=True)
        await call(two, "fragile", fail=True)  # second failure, in the other runtime: opens the circuit
        refused = await call(one, "fragile", fail=False)
        assert refused.error is not None and refused.error.kind is ErrorKind.CIRCUIT_OPEN
        clock.advance(30)
        assert (await call(two, "fragile", fail=False)).ok  # the half-open probe, from either runtime
        assert (await call(one, "fragile", fail=False)).ok
    assert runs == {"A": 1, "B": 1, "fragile": 4}
    for state in (one_state, two_state):
        await state.aclose()


async def test_breaker_transitions_on_redis_with_a_fake_clock(redis_url: str, prefix: str) -> None:
    runs.clear()
    clock = FakeClock()
    state = RedisState(redis_url, prefix=prefix)
    stages = [ResolveStage(), ValidateStage(), BreakerStage(failure_threshold=3, recovery_time=10)]
    async with Runtime([fragile], state=state, clock=clock, stages=stages) as rt:
        kinds = [(await call(rt, "fragile", fail=True)).error.kind for _ in range(4)]
        clock.advance(10)
        reopened = await call(rt, "fragile", fail=True)  # failed probe
        still_open = await call(rt, "fragile", fail=False)
        clock.advance(10)
        closed = await call(rt, "fragile", fail=False)
    await state.aclose()
    assert kinds == [ErrorKind.EXECUTION_ERROR] * 3 + [ErrorKind.CIRCUIT_OPEN]
    assert reopened.meta["circuit"] == "open" and still_open.error.kind is ErrorKind.CIRCUIT_OPEN
    assert closed.ok and closed.meta["circuit"] == "closed"
    assert runs["fragile"] == 5


async def test_cache_stale_fallback_and_invalidation_on_redis(redis_url: str, prefix: str) -> None:
    runs.clear()
    clock = FakeClock()
    state = RedisState(redis_url, prefix=prefix)
    cache = CacheStage(ttl=5, stale_on_error=True)

    @tool(cacheable=True)
    def rates(base: str) -> dict[str, float]:
        """Exchange rates."""
        runs["rates"] = runs.get("rates", 0) + 1
        if runs["rates"] > 1:
            raise ConnectionError("rates service down")
        return {"EUR": 1.0, "USD": 1.1}

    async with Runtime([rates], state=state, clock=clock, stages=[ResolveStage(), ValidateStage(), cache]) as rt:
        fresh = await call(rt, "rates", base="EUR")
        clock.advance(6)
        stale = await call(rt, "rates", base="EUR")
        assert await cache.invalidate("rates") == 1
        gone = await call(rt, "rates", base="EUR")
    await state.aclose()
    assert stale.ok and stale.meta["stale"] is True and stale.structured == fresh.structured
    assert not gone.ok and gone.error is not None and gone.error.kind is ErrorKind.EXECUTION_ERROR


async def test_quotas_and_per_user_limits_on_redis(redis_url: str, prefix: str) -> None:
    state = RedisState(redis_url, prefix=prefix)
    stages = [ResolveStage(), ValidateStage(), RateLimitStage(per_user="3/minute", quotas={"alice": "2/day"})]

    @tool
    def ping(n: int) -> str:
        """Ping."""
        return "pong"

    async with Runtime([ping], state=state, stages=stages) as rt:
        alice = [await call(rt, "ping", user="alice", n=i) for i in range(3)]
        bob = [await call(rt, "ping", user="bob", n=i) for i in range(4)]
    await state.aclose()
    assert [o.ok for o in alice] == [True, True, False] and alice[2].error.details["scope"] == "quota"
    assert [o.ok for o in bob] == [True, True, True, False] and bob[3].error.details["scope"] == "user"


async def test_loop_guard_counts_across_runtimes_on_redis(redis_url: str, prefix: str) -> None:
    states = [RedisState(redis_url, prefix=prefix) for _ in range(3)]
    guards = [LoopGuardStage(warn_after=2, block_after=3) for _ in range(3)]
    rts = [Runtime([fragile], state=s, stages=[ResolveStage(), ValidateStage(), g])
           for s, g in zip(states, guards, strict=True)]
    outcomes = [await call(rt, "fragile", fail=False) for rt in rts]
    for rt, state in zip(rts, states, strict=True):
        await rt.aclose()
        await state.aclose()
    assert "loop_warning" not in outcomes[0].meta and outcomes[1].meta["loop_warning"]["count"] == 2
    assert outcomes[2].error is not None and outcomes[2].error.kind is ErrorKind.LOOP_DETECTED


WORKER = textwrap.dedent('''
    import json, sys
    import anyio
    from toolrig import CallContext, ToolCall, tool
    from toolrig.runtime import BreakerStage, Runtime, default_stages, replace_stage
    from toolrig.state import RedisState

    mode, url, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    runs = 0

    @tool(rate_limit="5/minute")
    def limited(i: int) -> int:
        """Limited to 5 a minute across every process."""
        global runs
        runs += 1
        return i

    @tool
    def fragile(fail: bool) -> str:
        """Fails on request."""
        global runs
        runs += 1
        if fail:
            raise RuntimeError("backend down")
        return "ok"

    async def main() -> None:
        stages = replace_stage(default_stages(audit=False), "breaker", BreakerStage(failure_threshold=3))
        state = RedisState(url, prefix=prefix)
        kinds = []
        async with Runtime([limited, fragile], state=state, stages=stages) as rt:
            for i in range(count):
                call = ToolCall(name="limited", arguments={"i": i}) if mode == "limit" else \\
                    ToolCall(name="fragile", arguments={"fail": mode == "fail"})
                outcome = await rt.call(call, CallContext(user=f"{mode}-{i}"))
                kinds.append("ok" if outcome.ok else outcome.error.kind.value)
        await state.aclose()
        print(json.dumps({"kinds": kinds, "runs": runs}))

    anyio.run(main)
''')


def run_workers(tmp_path: Path, *argsets: tuple[str, ...]) -> list[dict[str, Any]]:
    """Start one worker process per argument set, all at once; their JSON reports, in order."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for args in argsets]
    reports = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def test_two_processes_share_one_rate_limit(redis_url: str, prefix: str, tmp_path: Path) -> None:
    first, second = run_workers(tmp_path, ("limit", redis_url, prefix, "4"), ("limit", redis_url, prefix, "4"))
    kinds = first["kinds"] + second["kinds"]
    assert kinds.count("ok") == 5 and kinds.count("rate_limited") == 3  # exactly 5 through, together
    assert first["runs"] + second["runs"] == 5


def test_failures_in_one_process_open_the_breaker_for_another(redis_url: str, prefix: str, tmp_path: Path) -> None:
    (failing,) = run_workers(tmp_path, ("fail", redis_url, prefix, "3"))
    (healthy,) = run_workers(tmp_path, ("succeed", redis_url, prefix, "2"))
    assert failing["kinds"] == ["execution_error"] * 3 and failing["runs"] == 3
    assert healthy["kinds"] == ["circuit_open"] * 2
    assert healthy["runs"] == 0  # process B never ran the tool: the circuit A opened held
