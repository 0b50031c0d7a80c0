"""Moving-window rate limits over a ``limits`` async storage, all-or-nothing across several limits."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import anyio
from limits import RateLimitItem, parse_many
from limits.aio.storage import Storage
from limits.aio.strategies import MovingWindowRateLimiter

__all__ = ["LimitRequest", "LimitVerdict", "WindowLimiter", "describe_limit", "parse_limits"]


@dataclass(frozen=True, slots=True)
class LimitRequest:
    """One limit that applies to a call.

    Attributes:
        item: the parsed limit (``limits.parse("10/minute")``).
        identifiers: who the limit counts for, e.g. ``("tool", "search")`` or ``("user", "alice")``.
        scope: what kind of limit it is, for messages: ``"tool"``, ``"user"`` or ``"quota"``.
    """

    item: RateLimitItem
    identifiers: tuple[str, ...]
    scope: str = "tool"


@dataclass(frozen=True, slots=True)
class LimitVerdict:
    """The outcome of :meth:`WindowLimiter.acquire`.

    Attributes:
        allowed: every limit had room; one hit of each was consumed.
        denied: the limit that refused (the one that frees up last, when several refuse).
        retry_after: seconds until the refusing limit has room again.
    """

    allowed: bool
    denied: LimitRequest | None = None
    retry_after: float = 0.0


ALLOWED = LimitVerdict(allowed=True)


@lru_cache(maxsize=256)
def parse_limits(text: str) -> tuple[RateLimitItem, ...]:
    """Parse ``"10/minute; 100/hour"`` into limit items (cached; raises ValueError when malformed)."""
    items = tuple(parse_many(text))
    if not items:
        raise ValueError(f"no rate limit in {text!r}; write e.g. '10/minute'")
    return items


def describe_limit(item: RateLimitItem) -> str:
    """``"10 per 1 minute"``."""
    return f"{item.amount} per {item.multiples} {item.GRANULARITY.name}"


class WindowLimiter:
    """Moving-window limiting (the ``limits`` library) that consumes several limits all or nothing.

    Every limit is tested before any is hit; in this process the test and the hits run under one
    lock. Across processes (Redis) a competitor may slip in between test and hit; a limit that
    then refuses its hit still refuses the call (the hits already taken stay spent), so no limit
    ever lets more than its amount through.

    Args:
        storage: a ``limits.aio`` storage supporting the moving window (memory or Redis).
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._limiter = MovingWindowRateLimiter(storage)
        self._lock = anyio.Lock()

    async def acquire(self, requests: Sequence[LimitRequest]) -> LimitVerdict:
        """Consume one hit of every limit in ``requests``, or none when one has no room."""
        if not requests:
            return ALLOWED
        if len(requests) == 1:  # one atomic hit: no test needed
            only = requests[0]
            if await self._limiter.hit(only.item, *only.identifiers):
                return ALLOWED
            return await self._refusal([only])
        async with self._lock:
            full = [r for r in requests if not await self._limiter.test(r.item, *r.identifiers)]
            if full:
                return await self._refusal(full)
            refused = [r for r in requests if not await self._limiter.hit(r.item, *r.identifiers)]
        return ALLOWED if not refused else await self._refusal(refused)

    async def _refusal(self, full: Sequence[LimitRequest]) -> LimitVerdict:
        worst: LimitRequest = full[0]
        wait = -1.0
        for request in full:
            stats = await self._limiter.get_window_stats(request.item, *request.identifiers)
            # limits keeps its windows in wall time (time.time()), so retry_after is measured in it too
            seconds = max(0.0, stats.reset_time - time.time())
            if seconds > wait:
                worst, wait = request, seconds
        return LimitVerdict(allowed=False, denied=worst, retry_after=math.ceil(wait * 10) / 10)

    async def clear(self, request: LimitRequest) -> None:
        """Forget the hits counted for ``request``."""
        await self._limiter.clear(request.item, *request.identifiers)
