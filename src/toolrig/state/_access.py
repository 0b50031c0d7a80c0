"""How a stage reaches its backend, and how it fails open when the backend is down."""

from __future__ import annotations

import logging
import time
from typing import Any

from toolrig.state._base import StateBackend, StateUnavailable

__all__ = ["StateAccess"]


class StateAccess:
    """The backend a stage uses, plus rate-limited warnings when that backend is unavailable.

    The backend is the one given to the stage, else the runtime's (``inv.services.state``), else
    a private in-memory one (a stage used outside a Runtime).

    Args:
        state: a backend for this stage only, or None to use the runtime's.
        stage: the stage name, for log messages.
        interval: minimum seconds between two warnings about an unavailable backend.
    """

    def __init__(self, state: StateBackend | None, *, stage: str, interval: float = 30.0) -> None:
        self.state = state
        self.stage = stage
        self.interval = interval
        self.failures = 0
        self._fallback: StateBackend | None = None
        self._last_warning = -float("inf")
        self._log = logging.getLogger(f"toolrig.runtime.{stage}")

    def backend(self, services: Any) -> StateBackend:
        """The backend to use for a call run with ``services``."""
        if self.state is not None:
            return self.state
        shared: StateBackend | None = getattr(services, "state", None)
        if shared is not None:
            return shared
        if self._fallback is None:
            from toolrig.state._memory import MemoryState

            self._fallback = MemoryState()
        return self._fallback

    def unavailable(self, exc: StateUnavailable, tool: str) -> None:
        """Note a backend failure: the call goes on unprotected, with a warning (at most every ``interval``)."""
        self.failures += 1
        now = time.monotonic()
        if now - self._last_warning >= self.interval:
            self._last_warning = now
            self._log.warning("%s stage: shared state unavailable while calling %s (%s); the call runs without "
                              "this protection (%d failure(s) so far)", self.stage, tool, exc, self.failures)
