"""In-process shared state: :class:`MemoryState` (the default backend)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import TLRUCache
from limits.aio.storage import MemoryStorage

from toolrig.state._admission import AdmissionAnswer, AdmissionStep, admit_each
from toolrig.state._base import (
    BreakerConfig,
    BreakerPermit,
    BreakerResult,
    CircuitState,
    KeyValueStore,
)
from toolrig.state._limiting import LimitRequest, LimitVerdict, WindowLimiter

__all__ = ["MemoryKeyValueStore", "MemoryState"]

_CLOSED = BreakerPermit(allowed=True, state=CircuitState.CLOSED)


@dataclass
class _Circuit:
    state: CircuitState = CircuitState.CLOSED
    failures: int = 0
    opened_at: float = 0.0
    probe: str | None = None
    probe_at: float = 0.0


def _expires(_key: str, value: tuple[Any, float], now: float) -> float:
    return now + value[1]


class MemoryKeyValueStore:
    """An LRU- and time-bounded dict (cachetools ``TLRUCache``), safe across threads.

    Args:
        max_entries: the LRU bound; the least recently used entry goes first.
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._data: TLRUCache[str, tuple[Any, float]] = TLRUCache(maxsize=max_entries, ttu=_expires,
                                                                   timer=time.monotonic)
        self._lock = threading.Lock()

    async def get(self, key: str) -> Any:
        with self._lock:
            found = self._data.get(key)
        return None if found is None else found[0]

    async def set(self, key: str, value: Any, *, ttl: float) -> None:
        with self._lock:
            self._data[key] = (value, ttl)

    async def delete_prefix(self, prefix: str) -> int:
        with self._lock:
            doomed = [k for k in self._data if k.startswith(prefix)]
            for k in doomed:
                del self._data[k]
        return len(doomed)

    async def size(self) -> int:
        with self._lock:
            self._data.expire()
            return len(self._data)


class MemoryState:
    """Shared state for the calls of one process (rate limits, breakers, cache, loop counters).

    Pass one instance to several :class:`~toolrig.Runtime` objects to make them share it.

    Args:
        max_windows: LRU bound on the loop-guard counters kept.
    """

    batches = False
    """In process, one call's checks cost nothing to send: the stages ask one by one (:meth:`admit` still works)."""

    def __init__(self, *, max_windows: int = 10_000) -> None:
        self._limiter = WindowLimiter(MemoryStorage())
        self._stores: dict[str, MemoryKeyValueStore] = {}
        self._circuits: dict[str, _Circuit] = {}
        self._windows: OrderedDict[str, float | deque[float]] = OrderedDict()  # one event: bare
        self._max_windows = max_windows
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "MemoryState()"

    # -- rate limits -------------------------------------------------------------------------------
    async def acquire_limits(self, requests: Sequence[LimitRequest]) -> LimitVerdict:
        return await self._limiter.acquire(requests)

    async def admit(self, steps: Sequence[AdmissionStep]) -> list[AdmissionAnswer | None]:
        """Run one call's checks in order, in this process, stopping after the first that refuses."""
        return await admit_each(self, steps)

    # -- key-value stores ----------------------------------------------------------------------------
    def kv(self, namespace: str, *, max_entries: int) -> KeyValueStore:
        store = self._stores.get(namespace)
        if store is None:
            with self._lock:
                store = self._stores.setdefault(namespace, MemoryKeyValueStore(max_entries))
        return store

    # -- breakers ------------------------------------------------------------------------------------
    async def breaker_acquire(self, key: str, config: BreakerConfig, now: float) -> BreakerPermit:
        circuit = self._circuits.get(key)
        if circuit is None:
            return _CLOSED
        with self._lock:
            return _acquire(circuit, config, now)

    async def breaker_record(self, key: str, config: BreakerConfig, now: float, result: BreakerResult,
                             probe: str | None = None) -> CircuitState:
        return self.breaker_record_now(key, config, now, result, probe)

    def breaker_record_now(self, key: str, config: BreakerConfig, now: float, result: BreakerResult,
                           probe: str | None = None) -> CircuitState:
        """:meth:`breaker_record` answered in place (in process, nothing to await)."""
        circuit = self._circuits.get(key)
        if circuit is None:
            if result is not BreakerResult.FAILURE:
                return CircuitState.CLOSED
            with self._lock:
                circuit = self._circuits.setdefault(key, _Circuit())
        with self._lock:
            _record(circuit, config, now, result, probe)
            state = circuit.state
            if state is CircuitState.CLOSED and circuit.failures == 0:
                self._circuits.pop(key, None)
        return state

    def breaker_untouched(self, key: str) -> bool:
        """True while no circuit is kept for ``key``: closed, no failure counted (an acquire then gives a closed
        permit with no trial lease and changes nothing)."""
        return key not in self._circuits

    async def breaker_state(self, key: str, config: BreakerConfig, now: float) -> BreakerPermit:
        circuit = self._circuits.get(key)
        if circuit is None:
            return _CLOSED
        with self._lock:
            return _peek(circuit, config, now)

    async def breaker_reset(self, key: str) -> None:
        with self._lock:
            self._circuits.pop(key, None)

    # -- loop-guard windows ---------------------------------------------------------------------------
    async def window_hit(self, key: str, now: float, window: float) -> int:
        return self.window_hit_now(key, now, window)

    def window_hit_now(self, key: str, now: float, window: float) -> int:
        """:meth:`window_hit` answered in place (in process, nothing to await).

        A window holding one event (most do: a call is rarely repeated) keeps it as the bare number, not a
        ``deque`` (760 bytes each, and up to ``max_windows`` of them live); a second event makes it a deque.
        The count is the same either way: the events after ``now - window``, this one included.
        """
        with self._lock:
            windows = self._windows
            events = windows.get(key)
            cutoff = now - window
            if events is None:
                windows[key] = now
                if len(windows) > self._max_windows:
                    windows.popitem(last=False)
                return 1
            windows.move_to_end(key)
            if not isinstance(events, deque):  # one event, kept bare
                if events <= cutoff:
                    windows[key] = now
                    return 1
                windows[key] = deque((events, now))
                return 2
            while events and events[0] <= cutoff:
                events.popleft()
            events.append(now)
            return len(events)

    async def aclose(self) -> None:
        """Nothing to release; kept for the backend contract."""
        return None


def _peek(c: _Circuit, config: BreakerConfig, now: float) -> BreakerPermit:
    if c.state is CircuitState.OPEN:
        wait = c.opened_at + config.recovery_time - now
        if wait > 0:
            return BreakerPermit(allowed=False, state=c.state, retry_after=wait, failures=c.failures)
        return BreakerPermit(allowed=True, state=CircuitState.HALF_OPEN, failures=c.failures)
    if c.state is CircuitState.HALF_OPEN and c.probe is not None and c.probe_at + config.lease > now:
        return BreakerPermit(allowed=False, state=c.state, retry_after=c.probe_at + config.lease - now,
                             failures=c.failures)
    return BreakerPermit(allowed=True, state=c.state, failures=c.failures)


def _acquire(c: _Circuit, config: BreakerConfig, now: float) -> BreakerPermit:
    seen = _peek(c, config, now)
    if not seen.allowed or seen.state is CircuitState.CLOSED:
        return seen
    c.state, c.probe, c.probe_at = CircuitState.HALF_OPEN, uuid.uuid4().hex, now
    return BreakerPermit(allowed=True, state=c.state, probe=c.probe, failures=c.failures)


def _record(c: _Circuit, config: BreakerConfig, now: float, result: BreakerResult, probe: str | None) -> None:
    is_probe = probe is not None and probe == c.probe and c.state is CircuitState.HALF_OPEN
    if result is BreakerResult.NEUTRAL:
        if is_probe:
            c.probe = None  # the trial proved nothing: let the next call try
        return
    if c.state is CircuitState.CLOSED:
        if result is BreakerResult.SUCCESS:
            c.failures = 0
            return
        c.failures += 1
        if c.failures >= config.failure_threshold:
            c.state, c.opened_at = CircuitState.OPEN, now
        return
    if not is_probe:
        return  # a late answer from before the circuit opened: it says nothing new
    if result is BreakerResult.SUCCESS:
        c.state, c.failures, c.probe = CircuitState.CLOSED, 0, None
    else:
        c.state, c.opened_at, c.probe = CircuitState.OPEN, now, None
        c.failures += 1
