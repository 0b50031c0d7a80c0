"""The result cache: hits, TTL (FakeClock), LRU, invalidation, stale fallback (Redis: test_shared_state)."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import BaseModel

from toolrig import CallContext, ErrorKind, ImagePart, Injected, JsonPart, TextPart, ToolCall, ToolResult, tool
from toolrig.errors import ModelRetry
from toolrig.runtime import CacheStage, FakeClock, Runtime, default_stages
from toolrig.runtime.stages._breaker import BreakerStage
from toolrig.runtime.stages._cache import result_from_dict
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage
from toolrig.state import MemoryState

pytestmark = pytest.mark.anyio

runs: Counter[str] = Counter()
failing: set[str] = set()


@tool(cacheable=True, cache_ttl=10)
def weather(city: str, units: str = "C") -> dict[str, object]:
    """Weather."""
    runs[city] += 1
    if city in failing:
        raise ConnectionError("weather service down")
    return {"city": city, "temp": 20 + runs[city], "units": units}


@tool(cacheable=True)
def greet(name: str) -> str:
    """Greet (default TTL)."""
    runs["greet"] += 1
    return f"hello {name}"


@tool
def now_ms() -> int:
    """Not cacheable."""
    runs["now"] += 1
    return runs["now"]


@tool(cacheable=True)
def picky(x: int) -> str:
    """Asks the model to change its arguments."""
    runs["picky"] += 1
    if x < 0:
        raise ModelRetry("x must be positive")
    return "ok"


@tool(cacheable=True)
def soft_error(x: int) -> ToolResult:
    """Answers with an error result."""
    runs["soft"] += 1
    return ToolResult.error("no such thing")


class Box(BaseModel):
    w: int
    h: int


@tool(cacheable=True)
def area(box: Box) -> int:
    """Area."""
    runs["area"] += 1
    return box.w * box.h


@tool(cacheable=True)
def thumbnail(name: str) -> list[object]:
    """Binary result parts."""
    runs["thumb"] += 1
    return [TextPart(f"thumbnail of {name}"), ImagePart(b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "image/png")]


TOOLS = [weather, greet, now_ms, picky, soft_error, area, thumbnail]


@pytest.fixture(autouse=True)
def _reset() -> None:
    runs.clear()
    failing.clear()


def make(stage: CacheStage, clock: FakeClock | None = None, **kw: object) -> Runtime:
    return Runtime(TOOLS, stages=[ResolveStage(), ValidateStage(), stage], clock=clock or FakeClock(), **kw)


async def call(rt: Runtime, tool_name: str, user: str | None = None, /, **args: object):
    return await rt.call(ToolCall(name=tool_name, arguments=args), CallContext(user=user))


async def test_second_identical_call_is_a_hit() -> None:
    stage = CacheStage()
    async with make(stage) as rt:
        first = await call(rt, "weather", city="Paris")
        second = await call(rt, "weather", city="Paris")
        other = await call(rt, "weather", city="Oslo")
    assert runs == {"Paris": 1, "Oslo": 1}
    assert first.meta["cache"] == "miss" and second.meta["cache"] == "hit"
    assert second.structured == first.structured == {"city": "Paris", "temp": 21, "units": "C"}
    assert second.content == first.content and second.ok and second.attempts == 0
    assert other.structured["city"] == "Oslo"
    assert stage.stats() == {"hits": 1, "misses": 2, "stale": 0, "stores": 2, "bypassed": 0, "errors": 0,
                             "hit_rate": pytest.approx(1 / 3)}


async def test_key_is_canonical_json_of_validated_arguments() -> None:
    async with make(CacheStage()) as rt:
        await rt.call(ToolCall(name="weather", arguments='{"units": "C", "city": "Rome"}'))
        await rt.call(ToolCall(name="weather", arguments={"city": "Rome"}))  # default filled in by validation
        await call(rt, "area", box={"w": 2, "h": 3})
        hit = await call(rt, "area", box={"h": "3", "w": 2})  # coerced, reordered: the same validated values
        await call(rt, "weather", city="Rome", units="F")
    assert runs["Rome"] == 2 and runs["area"] == 1
    assert hit.meta["cache"] == "hit" and hit.structured == 6


async def test_entries_expire_after_the_tool_ttl() -> None:
    clock = FakeClock()
    async with make(CacheStage(), clock) as rt:
        await call(rt, "weather", city="Paris")
        clock.advance(9.9)
        assert (await call(rt, "weather", city="Paris")).meta["cache"] == "hit"
        clock.advance(0.2)
        refreshed = await call(rt, "weather", city="Paris")
    assert refreshed.meta["cache"] == "miss" and refreshed.structured["temp"] == 22


async def test_stage_ttl_applies_when_the_tool_sets_none() -> None:
    clock = FakeClock()
    async with make(CacheStage(ttl=60), clock) as rt:
        await call(rt, "greet", name="a")
        clock.advance(59)
        assert (await call(rt, "greet", name="a")).meta["cache"] == "hit"
        clock.advance(2)
        assert (await call(rt, "greet", name="a")).meta["cache"] == "miss"
    assert runs["greet"] == 2


async def test_lru_bound_evicts_the_least_recently_used() -> None:
    async with make(CacheStage(max_entries=2)) as rt:
        await call(rt, "greet", name="a")
        await call(rt, "greet", name="b")
        await call(rt, "greet", name="a")  # a is now the most recent
        await call(rt, "greet", name="c")  # evicts b
        assert (await call(rt, "greet", name="a")).meta["cache"] == "hit"
        assert (await call(rt, "greet", name="b")).meta["cache"] == "miss"
    assert runs["greet"] == 4


async def test_invalidation_per_tool_and_whole() -> None:
    stage = CacheStage()
    async with make(stage) as rt:
        await call(rt, "weather", city="Paris")
        await call(rt, "greet", name="a")
        assert await stage.invalidate("weather") == 1
        assert (await call(rt, "weather", city="Paris")).meta["cache"] == "miss"
        assert (await call(rt, "greet", name="a")).meta["cache"] == "hit"
        assert await stage.invalidate() == 2
        assert (await call(rt, "greet", name="a")).meta["cache"] == "miss"


async def test_only_successes_are_cached() -> None:
    async with make(CacheStage()) as rt:
        failing.add("Paris")
        first = await call(rt, "weather", city="Paris")
        failing.clear()
        second = await call(rt, "weather", city="Paris")
        third = await call(rt, "weather", city="Paris")
        soft = [await call(rt, "soft_error", x=1) for _ in range(2)]
    assert not first.ok and first.error is not None and first.error.kind is ErrorKind.EXECUTION_ERROR
    assert second.ok and second.meta["cache"] == "miss" and third.meta["cache"] == "hit"
    assert runs["soft"] == 2 and not soft[1].ok  # error results are never served from the cache


async def test_tools_not_marked_cacheable_always_run() -> None:
    async with make(CacheStage()) as rt:
        outcomes = [await call(rt, "now_ms") for _ in range(3)]
    assert [o.structured for o in outcomes] == [1, 2, 3]
    assert all("cache" not in o.meta for o in outcomes)


async def test_entries_are_per_user_by_default_and_shared_only_when_asked() -> None:
    async with make(CacheStage()) as rt:
        await call(rt, "greet", "alice", name="x")
        assert (await call(rt, "greet", "alice", name="x")).meta["cache"] == "hit"
        assert (await call(rt, "greet", "bob", name="x")).meta["cache"] == "miss"
    async with make(CacheStage(scope="global")) as rt:
        await call(rt, "greet", "alice", name="y")
        assert (await call(rt, "greet", "bob", name="y")).meta["cache"] == "hit"
    with pytest.raises(ValueError, match="scope"):
        CacheStage(scope="everyone")  # type: ignore[arg-type]


@tool(cacheable=True, metadata={"cache_scope": "global"})
def orders_of(ctx: Injected[CallContext]) -> str:
    """The orders of whoever asks (shared scope, but the context is injected)."""
    runs["orders"] += 1
    return f"orders of {ctx.user} ({sorted(ctx.roles)})"


@tool(cacheable=True, metadata={"cache_scope": "global"})
def in_region(region: Injected[str]) -> str:
    """Depends on an injected value only."""
    return f"data for {region}"


async def test_cache_never_serves_one_users_injected_context_to_another() -> None:
    """Regression: a cacheable tool taking Injected[CallContext] answered bob with alice's orders."""
    async with Runtime([orders_of, in_region], audit=False) as rt:
        alice = await rt.call(ToolCall(name="orders_of"), CallContext(user="alice"))
        bob = await rt.call(ToolCall(name="orders_of"), CallContext(user="bob"))
        admin = await rt.call(ToolCall(name="orders_of"), CallContext(user="bob", roles={"admin"}))
        again = await rt.call(ToolCall(name="orders_of"), CallContext(user="alice"))
        eu = await rt.call(ToolCall(name="in_region"), CallContext(state={"region": "eu"}))
        us = await rt.call(ToolCall(name="in_region"), CallContext(state={"region": "us"}))
    assert (alice.content, bob.content) == ("orders of alice ([])", "orders of bob ([])")
    assert admin.content == "orders of bob (['admin'])" and admin.meta["cache"] == "miss"
    assert again.content == "orders of alice ([])" and again.meta["cache"] == "hit"
    assert (eu.content, us.content) == ("data for eu", "data for us")


async def test_cache_options_are_reachable_from_default_stages() -> None:
    stages = default_stages(audit=False, cache_scope="global", cache_ttl=5.0, cache_max_entries=7)
    (stage,) = [s for s in stages if isinstance(s, CacheStage)]
    assert (stage.scope, stage.ttl, stage.max_entries) == ("global", 5.0, 7)


async def test_stale_result_served_when_the_tool_fails() -> None:
    clock = FakeClock()
    async with make(CacheStage(stale_on_error=True), clock) as rt:
        good = await call(rt, "weather", city="Paris")
        clock.advance(100)  # long expired
        failing.add("Paris")
        stale = await call(rt, "weather", city="Paris")
    assert runs["Paris"] == 2  # the tool was tried first
    assert stale.ok and stale.meta["stale"] is True and stale.meta["cache"] == "stale"
    assert stale.structured == good.structured
    assert stale.content.startswith(good.content)
    assert "[note: weather failed just now (execution_error" in stale.content
    assert "from 100 seconds ago" in stale.content
    assert stale.meta["error"]["kind"] == "execution_error"


async def test_without_stale_on_error_failures_stay_failures() -> None:
    clock = FakeClock()
    async with make(CacheStage(), clock) as rt:
        await call(rt, "weather", city="Paris")
        clock.advance(100)
        failing.add("Paris")
        failed = await call(rt, "weather", city="Paris")
    assert not failed.ok and "stale" not in failed.meta


async def test_no_stale_answer_when_the_model_must_change_its_arguments() -> None:
    async with make(CacheStage(stale_on_error=True)) as rt:
        refused = await call(rt, "picky", x=-1)
    assert not refused.ok and refused.error is not None and "positive" in refused.error.message


async def test_stale_answer_when_the_circuit_is_open() -> None:
    clock = FakeClock()
    stages = [ResolveStage(), ValidateStage(), CacheStage(stale_on_error=True), BreakerStage(failure_threshold=1)]
    async with Runtime(TOOLS, stages=stages, clock=clock) as rt:
        await call(rt, "weather", city="Paris")
        clock.advance(11)
        failing.add("Paris")
        await call(rt, "weather", city="Paris")  # fails (stale answer) and opens the circuit
        served = await call(rt, "weather", city="Paris")
    assert runs["Paris"] == 2  # the open circuit kept the tool from running the third time
    assert served.meta["stale"] is True and "circuit_open" in served.content


async def test_result_parts_round_trip_through_the_stored_form() -> None:
    result = ToolResult(parts=(TextPart("t"), JsonPart({"a": [1, None]}), ImagePart(b"\x00\xff", "image/webp")))
    assert result_from_dict(result.to_dict()) == result
    with pytest.raises(ValueError, match="unknown result part type"):
        result_from_dict({"parts": [{"type": "video"}]})


async def test_cache_in_the_full_default_chain() -> None:
    async with Runtime(TOOLS, clock=FakeClock(), stages=default_stages(audit=False)) as rt:
        first = await call(rt, "greet", name="z")
        second = await call(rt, "greet", name="z")
    assert runs["greet"] == 1
    assert first.meta["cache"] == "miss" and second.meta["cache"] == "hit" and second.content == "hello z"


async def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        CacheStage(ttl=0)
    with pytest.raises(ValueError):
        CacheStage(max_entries=0)


async def test_a_shared_memory_state_shares_the_cache() -> None:
    state = MemoryState()
    async with make(CacheStage(), state=state) as one, make(CacheStage(), state=state) as two:
        await call(one, "greet", name="s")
        assert (await call(two, "greet", name="s")).meta["cache"] == "hit"


async def test_default_chain_takes_stale_on_error() -> None:
    clock = FakeClock()
    async with Runtime(TOOLS, clock=clock, stages=default_stages(audit=False, stale_on_error=True)) as rt:
        await call(rt, "weather", city="Lima")
        clock.advance(60)
        failing.add("Lima")
        stale = await call(rt, "weather", city="Lima")
    assert stale.ok and stale.meta["stale"] is True
