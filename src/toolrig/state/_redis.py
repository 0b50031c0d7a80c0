"""Shared state on Redis: :class:`RedisState`, for limits, breakers and cache across processes.

Every key lives under ``{prefix}:``; rate limits use the ``limits`` library's Redis storage
(moving window, atomic per limit), breakers move by Lua scripts (atomic), loop-guard windows are
sorted sets updated in a MULTI transaction, cache values are JSON strings with an expiry.
Redis errors surface as :class:`~toolrig.state._base.StateUnavailable`.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from toolrig.state._base import (
    BreakerConfig,
    BreakerPermit,
    BreakerResult,
    CircuitState,
    KeyValueStore,
    StateUnavailable,
)
from toolrig.state._keys import digest
from toolrig.state._limiting import LimitRequest, LimitVerdict, WindowLimiter
from toolrig.state._scripts import BREAKER_ACQUIRE, BREAKER_RECORD

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisKeyValueStore", "RedisState"]

T = TypeVar("T")
_GLOB_SPECIAL = str.maketrans({c: "\\" + c for c in "*?[]\\"})


def _errors() -> tuple[type[BaseException], ...]:
    from limits.errors import StorageError
    from redis.exceptions import RedisError

    return (RedisError, OSError, StorageError)


class RedisKeyValueStore:
    """JSON values under ``{prefix}:{namespace}:``, expiring after their ttl."""

    def __init__(self, state: RedisState, namespace: str) -> None:
        self._state = state
        self._prefix = f"{state.prefix}:{namespace}:"

    async def get(self, key: str) -> Any:
        raw = await self._state.run(lambda r: r.get(self._prefix + key))
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:  # not ours, or cut short: treat as absent
            return None

    async def set(self, key: str, value: Any, *, ttl: float) -> None:
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        millis = max(1, math.ceil(ttl * 1000))
        await self._state.run(lambda r: r.set(self._prefix + key, data, px=millis))

    async def delete_prefix(self, prefix: str) -> int:
        return await self._state.delete_matching(self._prefix + prefix)

    async def size(self) -> int:
        return await self._state.count_matching(self._prefix)


class RedisState:
    """Shared state in one Redis server, for every process that uses the same URL and prefix.

    Args:
        url: ``redis://[:password@]host:port/db`` or ``rediss://...``.
        prefix: namespace of every key (use one per deployment, or per test).
        socket_timeout: seconds to wait for Redis before a call goes on unprotected.
        client: an existing ``redis.asyncio.Redis`` to use instead of connecting from ``url``
            (not closed by :meth:`aclose`).
    """

    def __init__(self, url: str, *, prefix: str = "toolrig", socket_timeout: float = 2.0,
                 client: Redis | None = None) -> None:
        try:
            from limits.aio.storage import RedisStorage
            from redis.asyncio import Redis as AsyncRedis
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("Redis state needs the redis package: pip install 'toolrig[redis]'") from exc
        self.url = url
        self.prefix = prefix
        self._owns_client = client is None
        self.client: Redis = client if client is not None else AsyncRedis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout)
        shared: dict[str, Any] = {"connection_pool": self.client.connection_pool}
        storage = RedisStorage(f"async+{url}", implementation="redispy", key_prefix=f"{prefix}:limits",
                               wrap_exceptions=True, **shared)
        self._limiter = WindowLimiter(storage)
        self._acquire_script = self.client.register_script(BREAKER_ACQUIRE)
        self._record_script = self.client.register_script(BREAKER_RECORD)
        self._stores: dict[str, RedisKeyValueStore] = {}
        self._errors = _errors()

    def __repr__(self) -> str:
        return f"RedisState({self.url!r}, prefix={self.prefix!r})"

    @asynccontextmanager
    async def _translated(self, what: str) -> AsyncIterator[None]:
        try:
            yield
        except self._errors as exc:
            raise StateUnavailable(f"redis {what} failed: {type(exc).__name__}: {exc}") from exc

    async def run(self, command: Callable[[Redis], Awaitable[T]]) -> T:
        """Run one client command, Redis errors translated to :class:`StateUnavailable`."""
        async with self._translated("command"):
            return await command(self.client)

    # -- rate limits -------------------------------------------------------------------------------
    async def acquire_limits(self, requests: Sequence[LimitRequest]) -> LimitVerdict:
        async with self._translated("rate limit"):
            return await self._limiter.acquire(requests)

    # -- key-value stores ----------------------------------------------------------------------------
    def kv(self, namespace: str, *, max_entries: int) -> KeyValueStore:
        store = self._stores.get(namespace)
        if store is None:
            store = self._stores.setdefault(namespace, RedisKeyValueStore(self, namespace))
        return store

    async def delete_matching(self, prefix: str) -> int:
        """Delete every key that starts with ``prefix`` (SCAN + UNLINK, in batches)."""
        pattern = prefix.translate(_GLOB_SPECIAL) + "*"
        deleted = 0
        async with self._translated("delete"):
            batch: list[Any] = []
            async for key in self.client.scan_iter(match=pattern, count=500):
                batch.append(key)
                if len(batch) >= 500:
                    deleted += await self.client.unlink(*batch)
                    batch = []
            if batch:
                deleted += await self.client.unlink(*batch)
        return deleted

    async def count_matching(self, prefix: str) -> int:
        """How many keys start with ``prefix``."""
        pattern = prefix.translate(_GLOB_SPECIAL) + "*"
        async with self._translated("scan"):
            return len([k async for k in self.client.scan_iter(match=pattern, count=500)])

    # -- breakers ------------------------------------------------------------------------------------
    def _breaker_key(self, key: str) -> str:
        return f"{self.prefix}:breaker:{key}"

    @staticmethod
    def _ttl(config: BreakerConfig) -> int:
        return math.ceil(max(3600.0, 10 * (config.recovery_time + config.lease)))

    async def _acquire(self, key: str, config: BreakerConfig, now: float, mode: str) -> BreakerPermit:
        args: list[str | int | float] = [repr(now), repr(config.recovery_time), repr(config.lease), uuid.uuid4().hex,
                self._ttl(config), mode]
        async with self._translated("breaker"):
            raw = await self._acquire_script(keys=[self._breaker_key(key)], args=args)
        state, allowed, wait, failures, probe = (_text(v) for v in raw)
        return BreakerPermit(allowed=allowed == "1", state=CircuitState(state), probe=probe or None,
                             retry_after=float(wait), failures=int(failures))

    async def breaker_acquire(self, key: str, config: BreakerConfig, now: float) -> BreakerPermit:
        return await self._acquire(key, config, now, "acquire")

    async def breaker_state(self, key: str, config: BreakerConfig, now: float) -> BreakerPermit:
        return await self._acquire(key, config, now, "peek")

    async def breaker_record(self, key: str, config: BreakerConfig, now: float, result: BreakerResult,
                             probe: str | None = None) -> CircuitState:
        args: list[str | int | float] = [repr(now), config.failure_threshold, result.value, probe or "",
                                         self._ttl(config)]
        async with self._translated("breaker"):
            raw = await self._record_script(keys=[self._breaker_key(key)], args=args)
        return CircuitState(_text(raw))

    async def breaker_reset(self, key: str) -> None:
        await self.run(lambda r: r.delete(self._breaker_key(key)))

    # -- loop-guard windows ---------------------------------------------------------------------------
    async def window_hit(self, key: str, now: float, window: float) -> int:
        full_key = f"{self.prefix}:window:{digest(key)}"  # call arguments never appear in key names
        member = f"{now!r}:{uuid.uuid4().hex[:12]}"
        async with self._translated("window"), self.client.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(full_key, "-inf", now - window)
            pipe.zadd(full_key, {member: now})
            pipe.zcard(full_key)
            pipe.expire(full_key, math.ceil(window) + 1)
            results = await pipe.execute()
        return int(results[2])

    async def aclose(self) -> None:
        """Close the connection pool (only when this object created the client)."""
        if self._owns_client:
            self._owns_client = False
            await self.client.aclose()


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return str(value)
