"""Live status and call statistics of a tool, kept beside its frozen spec."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from toolrig._spec import ToolStatus

__all__ = ["ToolState", "ToolStats", "ToolVitals"]


@dataclass
class ToolStats:
    """Live call statistics of one tool (mutable, thread-safe through :class:`ToolVitals`)."""

    calls: int = 0
    errors: int = 0
    total_latency_ms: float = 0.0
    max_latency_ms: float = 0.0

    @property
    def mean_latency_ms(self) -> float:
        """Average latency over all calls."""
        return self.total_latency_ms / self.calls if self.calls else 0.0

    def to_dict(self) -> dict[str, float | int]:
        """Plain dictionary form."""
        return {
            "calls": self.calls,
            "errors": self.errors,
            "mean_latency_ms": round(self.mean_latency_ms, 3),
            "max_latency_ms": round(self.max_latency_ms, 3),
        }


class ToolVitals:
    """Status and stats kept beside a frozen spec (``tool.vitals``).

    Its older name, :data:`ToolState` (and ``tool.state``), is kept as an alias: "state" means the shared-state
    backends of :mod:`toolrig.state`.
    """

    __slots__ = ("_lock", "error", "stats", "status")

    def __init__(self) -> None:
        self.status = ToolStatus.ACTIVE
        self.error: str | None = None
        self.stats = ToolStats()
        self._lock = threading.Lock()

    def record(self, latency_ms: float, *, ok: bool) -> None:
        """Count one finished call."""
        with self._lock:
            s = self.stats
            s.calls += 1
            s.errors += 0 if ok else 1
            s.total_latency_ms += latency_ms
            s.max_latency_ms = max(s.max_latency_ms, latency_ms)

    def set_status(self, status: ToolStatus | str, error: str | None = None) -> None:
        """Change the status (``error`` explains an ``error`` status)."""
        with self._lock:
            self.status = ToolStatus(status)
            self.error = error


ToolState = ToolVitals
"""The older name of :class:`ToolVitals` (kept as an alias)."""
