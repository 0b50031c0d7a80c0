"""Shared state for the protective stages: rate limits, breakers, cache and loop counters.

Use :func:`make_state` to turn a runtime's ``state=`` argument into a backend::

    make_state("memory")                   # this process only (the default)
    make_state("redis://localhost:6379/0")  # shared by every process using that Redis
    make_state(RedisState(url, prefix="team-a"))  # a backend object is used as is
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolrig.state._access import StateAccess, StateFailure, StateHealth, backend_label, check_state_failure
from toolrig.state._admission import (
    Admission,
    AdmissionAnswer,
    AdmissionStep,
    BreakerPeek,
    LimitStep,
    WindowStep,
    admit,
    answer_for,
    bound,
    current_admission,
    gather,
)
from toolrig.state._base import (
    BreakerConfig,
    BreakerPermit,
    BreakerResult,
    CircuitState,
    KeyValueStore,
    StateBackend,
    StateUnavailable,
)
from toolrig.state._keys import canonical_arguments, digest
from toolrig.state._limiting import LimitRequest, LimitVerdict, WindowLimiter, describe_limit, parse_limits
from toolrig.state._memory import MemoryKeyValueStore, MemoryState

if TYPE_CHECKING:
    from toolrig.state._redis import RedisKeyValueStore, RedisState

__all__ = [
    "Admission",
    "AdmissionAnswer",
    "AdmissionStep",
    "BreakerConfig",
    "BreakerPeek",
    "BreakerPermit",
    "BreakerResult",
    "CircuitState",
    "KeyValueStore",
    "LimitRequest",
    "LimitStep",
    "LimitVerdict",
    "MemoryKeyValueStore",
    "MemoryState",
    "RedisKeyValueStore",
    "RedisState",
    "StateAccess",
    "StateBackend",
    "StateFailure",
    "StateHealth",
    "StateUnavailable",
    "WindowLimiter",
    "WindowStep",
    "admit",
    "answer_for",
    "backend_label",
    "bound",
    "canonical_arguments",
    "check_state_failure",
    "current_admission",
    "describe_limit",
    "digest",
    "gather",
    "make_state",
    "parse_limits",
]

_REDIS_SCHEMES = ("redis://", "rediss://")


def make_state(spec: Any = "memory", *, prefix: str = "toolrig") -> StateBackend:
    """Turn ``"memory"``, a ``redis://`` / ``rediss://`` URL, or a backend object into a backend.

    Args:
        spec: ``"memory"`` (or None), a Redis URL, or an object implementing :class:`StateBackend`.
        prefix: key namespace for a Redis URL.

    Raises:
        ValueError: ``spec`` is a string that names no backend.
        TypeError: ``spec`` is an object that is not a backend.
    """
    if spec is None or spec == "memory":
        return MemoryState()
    if isinstance(spec, str):
        if spec.startswith(_REDIS_SCHEMES):
            from toolrig.state._redis import RedisState

            return RedisState(spec, prefix=prefix)
        raise ValueError(f"unknown state backend {spec!r}: use 'memory' or a 'redis://host:port/db' URL")
    if isinstance(spec, StateBackend):
        return spec
    raise TypeError(f"{spec!r} is not a state backend: pass 'memory', a redis:// URL, or a StateBackend")


def __getattr__(name: str) -> Any:
    if name in ("RedisState", "RedisKeyValueStore"):
        from toolrig.state import _redis as redis_module

        return getattr(redis_module, name)
    raise AttributeError(f"module 'toolrig.state' has no attribute {name!r}")
