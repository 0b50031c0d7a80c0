"""Time as a dependency, so breaker, retry, cache and rate-limit tests never sleep."""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Wall time (shared across processes), monotonic time, and sleeping."""

    def time(self) -> float:
        """Seconds since the epoch (comparable across processes, for shared state)."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds (for local durations)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to; ``sleep`` advances it instantly and records the delay."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self._now += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self._now += seconds
        await anyio.lowlevel.checkpoint()
