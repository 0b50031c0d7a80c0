"""MemoryState specifics: bounded stores, sharing between runtimes."""

from __future__ import annotations

import pytest

from toolrig.state import MemoryState

pytestmark = pytest.mark.anyio


async def test_key_value_store_is_lru_bounded() -> None:
    store = MemoryState().kv("cache", max_entries=2)
    await store.set("a", 1, ttl=60)
    await store.set("b", 2, ttl=60)
    assert await store.get("a") == 1  # a is now the most recently used
    await store.set("c", 3, ttl=60)
    assert await store.get("b") is None
    assert await store.get("a") == 1 and await store.get("c") == 3


async def test_window_counters_are_lru_bounded() -> None:
    state = MemoryState(max_windows=2)
    await state.window_hit("a", 0.0, 60)
    await state.window_hit("b", 1.0, 60)
    await state.window_hit("a", 2.0, 60)
    await state.window_hit("c", 3.0, 60)  # evicts b, the least recently used
    assert await state.window_hit("a", 4.0, 60) == 3
    assert await state.window_hit("b", 5.0, 60) == 1


async def test_closed_circuits_with_no_failures_take_no_memory() -> None:
    from toolrig.state import BreakerConfig, BreakerResult

    state = MemoryState()
    config = BreakerConfig(failure_threshold=2)
    await state.breaker_record("t", config, 0.0, BreakerResult.FAILURE)
    await state.breaker_record("t", config, 0.0, BreakerResult.SUCCESS)
    await state.breaker_record("u", config, 0.0, BreakerResult.SUCCESS)
    assert state._circuits == {}
