"""make_state: strings and objects into backends."""

from __future__ import annotations

import pytest

from toolrig.state import MemoryState, RedisState, StateBackend, make_state

pytestmark = pytest.mark.anyio


def test_memory_is_the_default() -> None:
    assert isinstance(make_state(), MemoryState)
    assert isinstance(make_state("memory"), MemoryState)
    assert isinstance(make_state(None), MemoryState)


async def test_redis_url_makes_a_redis_backend_with_the_prefix() -> None:
    state = make_state("redis://127.0.0.1:6399/2", prefix="team-a")
    assert isinstance(state, RedisState)
    assert state.prefix == "team-a" and state.url == "redis://127.0.0.1:6399/2"
    await state.aclose()  # never connected: closing is still clean


def test_a_backend_object_is_used_as_is() -> None:
    mine = MemoryState()
    assert make_state(mine) is mine
    assert isinstance(mine, StateBackend)


def test_unknown_strings_and_objects_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown state backend 'postgres://x'"):
        make_state("postgres://x")
    with pytest.raises(TypeError, match="not a state backend"):
        make_state(42)
