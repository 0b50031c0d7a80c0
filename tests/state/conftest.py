"""Fixtures for the state backends: a real Redis (see redis_server.py) and both backends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from redis_server import redis_server

from toolrig.state import MemoryState, RedisState, StateBackend


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real Redis; skips when there is no REDIS_URL and no redis-server to start."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        if url is None:
            pytest.skip("no REDIS_URL set and no redis-server on PATH")
        yield url


@pytest.fixture
async def redis_state(redis_url: str) -> AsyncIterator[RedisState]:
    """A RedisState with a prefix of its own; its keys are deleted afterwards."""
    state = RedisState(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}")
    yield state
    await state.delete_matching(state.prefix + ":")
    await state.aclose()


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[StateBackend]:
    """Each backend in turn (the Redis one skips when no Redis is available)."""
    if request.param == "memory":
        yield MemoryState()
        return
    url = request.getfixturevalue("redis_url")
    state = RedisState(url, prefix=f"test-{uuid.uuid4().hex[:12]}")
    yield state
    await state.delete_matching(state.prefix + ":")
    await state.aclose()
