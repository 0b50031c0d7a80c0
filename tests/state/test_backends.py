"""Both backends (memory and a real Redis) behave the same for every primitive the stages use."""

from __future__ import annotations

import anyio
import pytest
from limits import parse

from toolrig.state import (
    BreakerConfig,
    BreakerResult,
    CircuitState,
    LimitRequest,
    StateBackend,
)

pytestmark = pytest.mark.anyio

CONFIG = BreakerConfig(failure_threshold=3, recovery_time=10.0)
T0 = 1_000_000.0


async def test_limit_lets_exactly_its_amount_through(backend: StateBackend) -> None:
    request = LimitRequest(parse("3/minute"), ("tool", "search"))
    verdicts = [await backend.acquire_limits([request]) for _ in range(5)]
    assert [v.allowed for v in verdicts] == [True, True, True, False, False]
    assert verdicts[3].denied == request
    assert 0 < verdicts[3].retry_after <= 60


async def test_limits_are_all_or_nothing(backend: StateBackend) -> None:
    tool = LimitRequest(parse("10/minute"), ("tool", "t"))
    user = LimitRequest(parse("2/minute"), ("user", "alice"), "user")
    assert [(await backend.acquire_limits([tool, user])).allowed for _ in range(4)] == [True, True, False, False]
    # the two refused calls consumed nothing from the tool's limit: 8 of 10 are left
    alone = [(await backend.acquire_limits([tool])).allowed for _ in range(9)]
    assert alone == [True] * 8 + [False]


async def test_limits_are_separate_per_identifier(backend: StateBackend) -> None:
    item = parse("1/minute")
    assert (await backend.acquire_limits([LimitRequest(item, ("user", "a"))])).allowed
    assert (await backend.acquire_limits([LimitRequest(item, ("user", "b"))])).allowed
    assert not (await backend.acquire_limits([LimitRequest(item, ("user", "a"))])).allowed


async def test_breaker_closed_open_half_open_closed(backend: StateBackend) -> None:
    assert (await backend.breaker_acquire("t", CONFIG, T0)).state is CircuitState.CLOSED
    for _ in range(2):
        assert await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE) is CircuitState.CLOSED
    assert await backend.breaker_record("t", CONFIG, T0 + 1, BreakerResult.FAILURE) is CircuitState.OPEN
    refused = await backend.breaker_acquire("t", CONFIG, T0 + 5)
    assert not refused.allowed and refused.state is CircuitState.OPEN
    assert refused.retry_after == pytest.approx(6.0) and refused.failures == 3
    probe = await backend.breaker_acquire("t", CONFIG, T0 + 11)
    assert probe.allowed and probe.state is CircuitState.HALF_OPEN and probe.probe
    during = await backend.breaker_acquire("t", CONFIG, T0 + 12)
    assert not during.allowed and during.state is CircuitState.HALF_OPEN
    assert await backend.breaker_record("t", CONFIG, T0 + 12, BreakerResult.SUCCESS, probe.probe) \
        is CircuitState.CLOSED
    after = await backend.breaker_acquire("t", CONFIG, T0 + 12)
    assert after.allowed and after.state is CircuitState.CLOSED and after.failures == 0


async def test_breaker_failed_probe_opens_again(backend: StateBackend) -> None:
    for _ in range(3):
        await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE)
    probe = await backend.breaker_acquire("t", CONFIG, T0 + 10)
    assert await backend.breaker_record("t", CONFIG, T0 + 10.5, BreakerResult.FAILURE, probe.probe) \
        is CircuitState.OPEN
    refused = await backend.breaker_acquire("t", CONFIG, T0 + 11)
    assert not refused.allowed and refused.retry_after == pytest.approx(9.5)


async def test_breaker_success_resets_consecutive_failures(backend: StateBackend) -> None:
    for _ in range(2):
        await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE)
    await backend.breaker_record("t", CONFIG, T0, BreakerResult.SUCCESS)
    for _ in range(2):
        assert await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE) is CircuitState.CLOSED
    assert (await backend.breaker_state("t", CONFIG, T0)).failures == 2


async def test_breaker_neutral_probe_frees_the_lease(backend: StateBackend) -> None:
    for _ in range(3):
        await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE)
    first = await backend.breaker_acquire("t", CONFIG, T0 + 10)
    assert await backend.breaker_record("t", CONFIG, T0 + 10, BreakerResult.NEUTRAL, first.probe) \
        is CircuitState.HALF_OPEN
    second = await backend.breaker_acquire("t", CONFIG, T0 + 10)
    assert second.allowed and second.probe and second.probe != first.probe


async def test_breaker_stale_probe_lease_expires(backend: StateBackend) -> None:
    config = BreakerConfig(failure_threshold=1, recovery_time=10.0, probe_timeout=5.0)
    await backend.breaker_record("t", config, T0, BreakerResult.FAILURE)
    lost = await backend.breaker_acquire("t", config, T0 + 10)
    assert not (await backend.breaker_acquire("t", config, T0 + 14)).allowed
    taken_over = await backend.breaker_acquire("t", config, T0 + 15)
    assert taken_over.allowed and taken_over.probe != lost.probe
    # the lost prober's late answer no longer decides anything
    assert await backend.breaker_record("t", config, T0 + 16, BreakerResult.SUCCESS, lost.probe) \
        is CircuitState.HALF_OPEN
    assert await backend.breaker_record("t", config, T0 + 16, BreakerResult.SUCCESS, taken_over.probe) \
        is CircuitState.CLOSED


async def test_breaker_late_failure_while_open_is_ignored(backend: StateBackend) -> None:
    for _ in range(3):
        await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE)
    await backend.breaker_record("t", CONFIG, T0 + 9, BreakerResult.FAILURE)  # a call that started before
    assert (await backend.breaker_acquire("t", CONFIG, T0 + 10)).allowed  # opened_at did not move


async def test_breaker_peek_and_reset(backend: StateBackend) -> None:
    for _ in range(3):
        await backend.breaker_record("t", CONFIG, T0, BreakerResult.FAILURE)
    due = await backend.breaker_state("t", CONFIG, T0 + 10)
    assert due.allowed and due.state is CircuitState.HALF_OPEN and due.probe is None
    assert (await backend.breaker_state("t", CONFIG, T0 + 10)).probe is None  # peeking took no lease
    await backend.breaker_reset("t")
    assert (await backend.breaker_acquire("t", CONFIG, T0)).state is CircuitState.CLOSED


async def test_breakers_are_separate_per_key(backend: StateBackend) -> None:
    for _ in range(3):
        await backend.breaker_record("a", CONFIG, T0, BreakerResult.FAILURE)
    assert not (await backend.breaker_acquire("a", CONFIG, T0)).allowed
    assert (await backend.breaker_acquire("b", CONFIG, T0)).allowed


async def test_window_counts_events_within_the_window(backend: StateBackend) -> None:
    counts = [await backend.window_hit("k", T0 + i, 3.0) for i in range(6)]
    assert counts == [1, 2, 3, 3, 3, 3]
    assert await backend.window_hit("k", T0 + 100, 3.0) == 1
    assert await backend.window_hit("other", T0 + 100, 3.0) == 1


async def test_key_value_store_roundtrip_and_prefix_delete(backend: StateBackend) -> None:
    store = backend.kv("cache", max_entries=100)
    assert backend.kv("cache", max_entries=100) is store
    await store.set("a@1:x", {"n": 1, "s": "é"}, ttl=60)
    await store.set("a@1:y", [1, 2], ttl=60)
    await store.set("b@1:x", None, ttl=60)
    assert await store.get("a@1:x") == {"n": 1, "s": "é"}
    assert await store.get("missing") is None
    assert await store.size() == 3
    assert await store.delete_prefix("a@") == 2
    assert await store.get("a@1:y") is None
    assert await store.size() == 1
    assert await store.delete_prefix("") == 1
    assert await store.size() == 0


async def test_key_value_namespaces_are_separate(backend: StateBackend) -> None:
    await backend.kv("one", max_entries=10).set("k", 1, ttl=60)
    assert await backend.kv("two", max_entries=10).get("k") is None


async def test_concurrent_acquires_never_exceed_the_limit(backend: StateBackend) -> None:
    tool = LimitRequest(parse("7/minute"), ("tool", "t"))
    user = LimitRequest(parse("100/minute"), ("user", "u"), "user")
    allowed: list[bool] = []

    async def one() -> None:
        allowed.append((await backend.acquire_limits([tool, user])).allowed)

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
    assert allowed.count(True) == 7
