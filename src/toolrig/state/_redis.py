"""Shared state on Redis: :class:`RedisState`, for limits, breakers and cache across processes.

Every key lives under ``{prefix}:``; rate limits keep the ``limits`` library's moving-window lists (so its
tools read them), breakers are hashes moved by Lua scripts, loop-guard windows are sorted sets, cache values
are JSON strings with an expiry. One call's checks (loop guard, rate limits, breaker) run as one Lua script:
one round trip (:meth:`RedisState.admit`). Redis errors surface as
:class:`~toolrig.state._base.StateUnavailable`.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from toolrig.state._admission import AdmissionAnswer, AdmissionStep, BreakerPeek, LimitStep, WindowStep
from toolrig.state._base import (
    BreakerConfig,
    BreakerPermit,
    BreakerResult,
    CircuitState,
    KeyValueStore,
    StateUnavailable,
)
from toolrig.state._keys import digest
from toolrig.state._limiting import ALLOWED, LimitRequest, LimitVerdict
from toolrig.state._scripts import ADMIT, BREAKER_ACQUIRE, BREAKER_RECORD

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

    batches = True
    """One call's checks go to Redis as one request (:meth:`admit`)."""

    def __init__(self, url: str, *, prefix: str = "toolrig", socket_timeout: float = 2.0,
                 client: Redis | None = None) -> None:
        try:
            from redis.asyncio import Redis as AsyncRedis
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("Redis state needs the redis package: pip install 'toolrig[redis]'") from exc
        self.url = url
        self.prefix = prefix
        self._owns_client = client is None
        self.client: Redis = client if client is not None else AsyncRedis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout)
        self._acquire_script = self.client.register_script(BREAKER_ACQUIRE)
        self._record_script = self.client.register_script(BREAKER_RECORD)
        self._admit_script = self.client.register_script(ADMIT)
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
        if not requests:
            return ALLOWED
        verdict = (await self._admit([LimitStep(tuple(requests))], "rate limit"))[0]
        assert isinstance(verdict, LimitVerdict)
        return verdict

    # -- one call's checks, one round trip ---------------------------------------------------------------
    async def admit(self, steps: Sequence[AdmissionStep]) -> list[AdmissionAnswer | None]:
        """Run ``steps`` in one Lua script, stopping after the first that refuses (None for those not run).

        Rate limits are all or nothing atomically (no competitor slips in between test and hit).
        """
        return await self._admit(steps, "admission")

    async def _admit(self, steps: Sequence[AdmissionStep], what: str) -> list[AdmissionAnswer | None]:
        keys: list[str] = []
        args: list[str | int | float] = [repr(time.time())]
        for step in steps:
            if isinstance(step, WindowStep):
                keys.append(self._window_key(step.key))
                args += ["W", repr(step.now), repr(step.now - step.window), _member(step.now),
                         math.ceil(step.window) + 1, step.stop_at]
            elif isinstance(step, LimitStep):
                requests = _distinct(step.requests)
                keys += [f"{self.prefix}:limits:{r.item.key_for(*r.identifiers)}" for r in requests]
                args += ["L", len(requests)]
                for r in requests:
                    args += [r.item.amount, r.item.get_expiry()]
            else:
                keys.append(self._breaker_key(step.key))
                args += ["B", repr(step.now), repr(step.config.recovery_time), repr(step.config.lease)]
        async with self._translated(what):
            raw = await self._admit_script(keys=keys, args=args)
        answers: list[AdmissionAnswer | None] = [None] * len(steps)
        for i, (step, got) in enumerate(zip(steps, raw, strict=False)):
            answers[i] = _decode(step, got)
        return answers

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
    def _window_key(self, key: str) -> str:
        return f"{self.prefix}:window:{digest(key)}"  # call arguments never appear in key names

    async def window_hit(self, key: str, now: float, window: float) -> int:
        full_key = self._window_key(key)
        member = _member(now)
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


def _member(now: float) -> str:
    """A loop-guard window entry: unique, so two calls at the same instant count twice."""
    return f"{now!r}:{uuid.uuid4().hex[:12]}"


def _distinct(requests: Sequence[LimitRequest]) -> list[LimitRequest]:
    """``requests`` without repeats of the same limit for the same identifiers (one hit each)."""
    if len(requests) == 1:
        return list(requests)
    seen: set[str] = set()
    out: list[LimitRequest] = []
    for r in requests:
        mark = r.item.key_for(*r.identifiers)
        if mark not in seen:
            seen.add(mark)
            out.append(r)
    return out


def _decode(step: AdmissionStep, got: Any) -> AdmissionAnswer:
    """One step's answer from the admission script's reply."""
    if isinstance(step, WindowStep):
        return int(got)
    if isinstance(step, LimitStep):
        if not got:
            return ALLOWED
        requests = _distinct(step.requests)
        worst, wait, now = requests[0], -1.0, time.time()
        for index, oldest in zip(got[::2], got[1::2], strict=True):
            request = requests[int(_text(index))]
            # limits keeps its windows in wall time (time.time()), so retry_after is measured in it too
            seconds = max(0.0, float(_text(oldest)) + request.item.get_expiry() - now)
            if seconds > wait:
                worst, wait = request, seconds
        return LimitVerdict(allowed=False, denied=worst, retry_after=math.ceil(wait * 10) / 10)
    assert isinstance(step, BreakerPeek)
    state, allowed, wait, failures = got
    return BreakerPermit(allowed=int(allowed) == 1, state=CircuitState(_text(state)), retry_after=float(_text(wait)),
                         failures=int(failures))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return str(value)
