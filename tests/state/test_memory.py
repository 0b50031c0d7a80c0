"""MemoryState specifics: bounded stores, sharing between runtimes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _reference_window_hits(hits: list[tuple[str, float, float]], max_windows: int) -> list[int]:
    """What the loop-guard counters answered when every window was a deque (the model the compact form keeps)."""
    from collections import OrderedDict, deque

    windows: OrderedDict[str, deque[float]] = OrderedDict()
    counts = []
    for key, now, window in hits:
        events = windows.get(key)
        if events is None:
            events = windows[key] = deque()
            if len(windows) > max_windows:
                windows.popitem(last=False)
        else:
            windows.move_to_end(key)
        while events and events[0] <= now - window:
            events.popleft()
        events.append(now)
        counts.append(len(events))
    return counts


_HITS = st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 40).map(float) | st.integers(0, 40),
                           st.sampled_from([1.0, 3.0, 10.0, 0.5])), max_size=60)


@settings(max_examples=300, deadline=None)
@given(hits=_HITS, max_windows=st.integers(1, 5))
def test_window_counts_equal_the_deque_model(hits: list[tuple[str, float, float]], max_windows: int) -> None:
    """A window of one event is kept bare (not a 760-byte deque): the counts stay those of a deque per window,
    for any order of times (also going back), mixed windows per key, int or float times, and LRU eviction."""
    state = MemoryState(max_windows=max_windows)
    assert [state.window_hit_now(k, t, w) for k, t, w in hits] == _reference_window_hits(hits, max_windows)


def test_windows_of_one_event_take_little_memory() -> None:
    import tracemalloc

    state = MemoryState()
    keys = [f"loop:{i:06d}" for i in range(2_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for key in keys:
            state.window_hit_now(key, 1.0, 60.0)
        per_window = (tracemalloc.get_traced_memory()[0] - before) / len(keys)
    finally:
        tracemalloc.stop()
    assert per_window < 300  # a deque per window took 760 bytes more
    assert state.window_hit_now(keys[0], 2.0, 60.0) == 2
