"""How a stage reaches its backend, and what a call does while that backend cannot be reached.

``state_failure`` (``Runtime(state_failure=...)``, ``[runtime] state_failure`` in ``toolrig.toml``) says:

* ``"open"`` (the default): a call that needs shared state runs without that protection (no rate limit,
  quota, loop guard or breaker check) while the backend is down;
* ``"closed"``: such a call is refused with ``unavailable`` (retryable), naming the backend, until the
  backend answers again. The cache is not a protection: without its store a call just runs uncached.

Either way one warning is logged when a backend stops answering (not one per call), and one line when it
answers again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Literal, cast, get_args
from urllib.parse import urlsplit

from toolrig._outcome import ErrorKind, ToolError
from toolrig.state._base import StateBackend, StateUnavailable

__all__ = ["StateAccess", "StateFailure", "StateHealth", "backend_label", "check_state_failure"]

StateFailure = Literal["open", "closed"]
"""What a call that needs shared state does while the backend is unreachable (see the module docstring)."""


def check_state_failure(value: object) -> StateFailure:
    """``value`` when it is ``"open"`` or ``"closed"``.

    Raises:
        ValueError: any other value.
    """
    if value not in get_args(StateFailure):
        raise ValueError(f"state_failure must be 'open' or 'closed', not {value!r}")
    return cast("StateFailure", value)


def backend_label(backend: object) -> tuple[str, str]:
    """``(kind, where)`` of a backend, e.g. ``("redis", "redis://127.0.0.1:6379/0")``; never a password."""
    kind = type(backend).__name__.removesuffix("State").lower() or "state"
    url = getattr(backend, "url", None)
    if not isinstance(url, str):
        return kind, type(backend).__name__
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return kind, f"{kind} (an unreadable URL)"
    return kind, f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


class StateHealth:
    """Whether one backend answers, as the stages using it have seen; warns once per outage (thread-safe)."""

    def __init__(self) -> None:
        self.down = False
        self.failures = 0
        self._lock = threading.Lock()

    def failed(self, exc: StateUnavailable, backend: object, *, stage: str, tool: str, mode: StateFailure) -> None:
        """Note a failure; the first of an outage is logged (on ``toolrig.runtime.{stage}``)."""
        with self._lock:
            first = not self.down
            self.down = True
            self.failures += 1
        if first:
            _, where = backend_label(backend)
            effect = ("calls that need it are refused (state_failure='closed')" if mode == "closed" else
                      "calls run without rate limits, quotas, loop guard and breaker (state_failure='open')")
            logging.getLogger(f"toolrig.runtime.{stage}").warning(
                "%s stage: shared state unavailable (%s) while calling %s: %s; %s until it is reachable again",
                stage, where, tool, exc, effect)

    def answered(self, backend: object, *, stage: str) -> None:
        """Note an answer; the first after an outage is logged."""
        if not self.down:  # the common case: one attribute read
            return
        with self._lock:
            was_down, failures = self.down, self.failures
            self.down = False
            self.failures = 0
        if was_down:
            logging.getLogger(f"toolrig.runtime.{stage}").warning(
                "%s stage: shared state %s answers again (after %d failed request(s))", stage,
                backend_label(backend)[1], failures)


class StateAccess:
    """The backend a stage uses, and its failure handling (see the module docstring).

    The backend is the one given to the stage, else the runtime's (``inv.services.state``), else
    a private in-memory one (a stage used outside a Runtime). The failure mode and the outage record
    are the runtime's (``services.state_failure``, ``services.state_health``) for the runtime's backend.

    Args:
        state: a backend for this stage only, or None to use the runtime's.
        stage: the stage name, for log messages and refusals.
    """

    def __init__(self, state: StateBackend | None, *, stage: str) -> None:
        self.state = state
        self.stage = stage
        self._fallback: StateBackend | None = None
        self._health = StateHealth()

    @property
    def failures(self) -> int:
        """Failed requests in the current outage of this stage's own backend."""
        return self._health.failures

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

    def health(self, services: Any) -> StateHealth:
        """The outage record of the backend used with ``services`` (the runtime's, for the runtime's backend)."""
        if self.state is None:
            shared: StateHealth | None = getattr(services, "state_health", None)
            if shared is not None:
                return shared
        return self._health

    def _current(self, services: Any) -> object:
        """The backend in use, for messages (without making a fallback one)."""
        return self.state or getattr(services, "state", None) or self._fallback

    def answered(self, services: Any) -> None:
        """The backend answered (ends an outage, if one was noted); one attribute read when none was."""
        health = self.health(services)
        if health.down:
            health.answered(self._current(services), stage=self.stage)

    def unavailable(self, exc: StateUnavailable, tool: str, services: Any = None) -> None:
        """Note a failure where the call goes on regardless (a cache read or write, a breaker's record)."""
        self.health(services).failed(exc, self._current(services), stage=self.stage, tool=tool,
                                     mode=_mode(services))

    def refusal(self, exc: StateUnavailable, services: Any, *, tool: str) -> ToolError | None:
        """Note a failure before a decision: None to run the call unprotected (``"open"``), or the
        ``unavailable`` error that refuses it (``"closed"``)."""
        mode = _mode(services)
        backend = self.backend(services)
        self.health(services).failed(exc, backend, stage=self.stage, tool=tool, mode=mode)
        if mode == "open":
            return None
        kind, _ = backend_label(backend)
        return ToolError.of(
            ErrorKind.UNAVAILABLE,
            f"{tool} was not run: the {self.stage} check needs the shared state store ({kind}), which cannot be "
            "reached right now. Try again later.",
            retryable=True, backend=kind, stage=self.stage, state_failure="closed")


def _mode(services: Any) -> StateFailure:
    mode = getattr(services, "state_failure", "open")
    return "closed" if mode == "closed" else "open"
