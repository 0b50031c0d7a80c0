"""The shared-state contract: what the protective stages need from a backend.

A backend keeps the state that must be shared by every process serving the same tools:
rate-limit windows, circuit breakers, cached results and loop-guard counters. Two backends ship
with toolrig: :class:`~toolrig.state._memory.MemoryState` (one process) and
:class:`~toolrig.state._redis.RedisState` (many processes, one Redis).

Times passed in (``now``) come from the runtime's clock, so tests drive them with a FakeClock.
A backend that cannot reach its store raises :class:`StateUnavailable`; stages then never crash the
call: by the runtime's ``state_failure`` they let it run unprotected (``"open"``) or refuse it with
``unavailable`` (``"closed"``), and log one warning per outage (:mod:`toolrig.state._access`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from toolrig.errors import StateUnavailable
from toolrig.state._limiting import LimitRequest, LimitVerdict

__all__ = [
    "BreakerConfig",
    "BreakerPermit",
    "BreakerResult",
    "CircuitState",
    "KeyValueStore",
    "LimitRequest",
    "LimitVerdict",
    "StateBackend",
    "StateUnavailable",
]


class CircuitState(StrEnum):
    """The three states of a circuit breaker."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class BreakerResult(StrEnum):
    """How a finished call counts for its breaker."""

    SUCCESS = "success"
    FAILURE = "failure"
    NEUTRAL = "neutral"
    """Says nothing about the tool's health (bad arguments, cancellation, ...)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class BreakerConfig:
    """Thresholds of one breaker.

    Attributes:
        failure_threshold: consecutive counted failures that open the circuit.
        recovery_time: seconds the circuit stays open before one trial (half-open) call.
        probe_timeout: seconds a trial call holds its lease; after that another call may probe
            (guards against a prober that died). Defaults to ``recovery_time``.
    """

    failure_threshold: int = 5
    recovery_time: float = 30.0
    probe_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.failure_threshold < 1:
            raise ValueError("failure_threshold must be >= 1")
        if not self.recovery_time > 0:
            raise ValueError("recovery_time must be positive seconds")
        if self.probe_timeout is not None and not self.probe_timeout > 0:
            raise ValueError("probe_timeout must be positive seconds")

    @property
    def lease(self) -> float:
        """Seconds a half-open probe may run before another call may probe instead."""
        return self.recovery_time if self.probe_timeout is None else self.probe_timeout


@dataclass(frozen=True, kw_only=True, slots=True)
class BreakerPermit:
    """The breaker's answer before a call.

    Attributes:
        allowed: the call may run.
        state: the circuit state the call saw (``half_open`` for the trial call).
        probe: a token when this call is the half-open trial; pass it back to ``breaker_record``.
        retry_after: when refused, seconds until a trial call may run.
        failures: consecutive failures counted so far.
    """

    allowed: bool
    state: CircuitState
    probe: str | None = None
    retry_after: float = 0.0
    failures: int = 0


@runtime_checkable
class KeyValueStore(Protocol):
    """A namespaced store of JSON-compatible values with expiry (used by the result cache).

    Memory stores keep values as given (callers must not mutate them) and bound their size by
    LRU; Redis stores serialise to JSON and rely on the expiry (and Redis' memory policy).
    """

    async def get(self, key: str) -> Any:
        """The value under ``key``, or None."""
        ...

    async def set(self, key: str, value: Any, *, ttl: float) -> None:
        """Store ``value`` for ``ttl`` seconds (garbage collection; callers check freshness)."""
        ...

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every key starting with ``prefix`` (``""``: all); return how many."""
        ...

    async def size(self) -> int:
        """How many keys the store holds now."""
        ...


@runtime_checkable
class StateBackend(Protocol):
    """Everything the rate-limit, cache, breaker and loop-guard stages share across calls.

    Optional, outside the protocol (so existing backends still conform): ``batches = True`` and
    ``admit(steps)`` to answer one call's checks in one request (see :mod:`toolrig.state._admission`).
    """

    async def acquire_limits(self, requests: Sequence[LimitRequest]) -> LimitVerdict:
        """Check every limit first, then consume one hit of each; nothing is consumed when one denies."""
        ...

    def kv(self, namespace: str, *, max_entries: int) -> KeyValueStore:
        """The key-value store called ``namespace`` (the same object for the same name)."""
        ...

    async def breaker_acquire(self, key: str, config: BreakerConfig, now: float) -> BreakerPermit:
        """May a call to the circuit ``key`` run now? Opens the half-open trial when it is due."""
        ...

    async def breaker_record(self, key: str, config: BreakerConfig, now: float, result: BreakerResult,
                             probe: str | None = None) -> CircuitState:
        """Count a finished call; return the circuit state after it."""
        ...

    async def breaker_state(self, key: str, config: BreakerConfig, now: float) -> BreakerPermit:
        """The circuit's state without changing it (for inspection)."""
        ...

    async def breaker_reset(self, key: str) -> None:
        """Close the circuit ``key`` and forget its failures."""
        ...

    async def window_hit(self, key: str, now: float, window: float) -> int:
        """Record one event under ``key``; return how many happened in the last ``window`` seconds."""
        ...

    async def aclose(self) -> None:
        """Release connections (idempotent)."""
        ...
