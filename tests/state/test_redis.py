"""RedisState specifics: errors become StateUnavailable, prefixes isolate, globs are escaped."""

from __future__ import annotations

import socket
import uuid

import pytest
from limits import parse

from toolrig.state import BreakerConfig, LimitRequest, RedisState, StateUnavailable

pytestmark = pytest.mark.anyio


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once the socket closes


async def test_unreachable_redis_raises_state_unavailable_everywhere() -> None:
    state = RedisState(f"redis://127.0.0.1:{_closed_port()}/0", socket_timeout=1.0)
    try:
        with pytest.raises(StateUnavailable, match="redis rate limit failed"):
            await state.acquire_limits([LimitRequest(parse("1/minute"), ("tool", "t"))])
        with pytest.raises(StateUnavailable, match="redis breaker failed"):
            await state.breaker_acquire("t", BreakerConfig(), 0.0)
        with pytest.raises(StateUnavailable):
            await state.window_hit("k", 0.0, 60)
        with pytest.raises(StateUnavailable):
            await state.kv("cache", max_entries=10).get("k")
    finally:
        await state.aclose()


async def test_prefixes_isolate_deployments(redis_url: str) -> None:
    one = RedisState(redis_url, prefix=f"a-{uuid.uuid4().hex[:8]}")
    two = RedisState(redis_url, prefix=f"b-{uuid.uuid4().hex[:8]}")
    try:
        item = LimitRequest(parse("1/minute"), ("tool", "t"))
        assert (await one.acquire_limits([item])).allowed
        assert (await two.acquire_limits([item])).allowed
        await one.kv("cache", max_entries=1).set("k", 1, ttl=60)
        assert await two.kv("cache", max_entries=1).get("k") is None
    finally:
        for state in (one, two):
            await state.delete_matching(state.prefix + ":")
            await state.aclose()


async def test_prefix_delete_escapes_glob_characters(redis_state: RedisState) -> None:
    store = redis_state.kv("cache", max_entries=10)
    await store.set("a*:1", 1, ttl=60)
    await store.set("ab:1", 2, ttl=60)
    assert await store.delete_prefix("a*") == 1
    assert await store.get("ab:1") == 2


async def test_values_expire_in_redis(redis_state: RedisState) -> None:
    store = redis_state.kv("cache", max_entries=10)
    await store.set("k", {"v": 1}, ttl=30)
    ttl_ms = await redis_state.client.pttl(f"{redis_state.prefix}:cache:k")
    assert 0 < ttl_ms <= 30_000


async def test_corrupt_values_read_as_absent(redis_state: RedisState) -> None:
    await redis_state.client.set(f"{redis_state.prefix}:cache:k", b"{not json")
    assert await redis_state.kv("cache", max_entries=10).get("k") is None


async def test_a_given_client_is_not_closed(redis_url: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url)
    state = RedisState(redis_url, prefix=f"c-{uuid.uuid4().hex[:8]}", client=client)
    await state.aclose()
    assert await client.ping()
    await client.aclose()


async def test_window_keys_never_show_call_arguments(redis_state: RedisState) -> None:
    assert await redis_state.window_hit('loop:{"password":"hunter2"}', 0.0, 60) == 1
    assert await redis_state.window_hit('loop:{"password":"hunter2"}', 1.0, 60) == 2
    keys = [k async for k in redis_state.client.scan_iter(match=f"{redis_state.prefix}:*")]
    assert len(keys) == 1 and b"hunter2" not in keys[0]
