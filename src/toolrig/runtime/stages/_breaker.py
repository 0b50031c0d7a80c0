"""Stage: a circuit breaker per tool, so a failing dependency is given a rest.

closed → (``failure_threshold`` consecutive failures) → open → (``recovery_time`` later) one
half-open trial call, while concurrent calls are refused → closed on success, open again on
failure. A success resets the count of consecutive failures (a success of a call that began
with no failures counted writes nothing). Only failures of the tool itself count (execution
errors, timeouts, an upstream "rate limited"); bad arguments, policy refusals, our own rate limits, missing tools and
cancellations never do. Refused calls end ``circuit_open`` (retryable, with ``retry_after``: the rest left, or
at most a second while a trial runs).

Thresholds per tool: ``overrides={"tool": {"failure_threshold": 2}}`` on the stage, or
``metadata={"breaker": {...}}`` on the tool (``False`` disables the breaker for it); the stage's
overrides win. Times come from the runtime's clock.

When the caller knows a dependency came back (an MCP upstream reconnected), :meth:`BreakerStage.probe_now`
ends the rest early: the next call of each named tool is the half-open trial at once, instead of waiting out
``recovery_time``. The trial decides as usual (closed on success, open again on failure).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import anyio

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import ToolSpec
from toolrig.errors import ArgumentsError, ModelRetry, RateLimitedError
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._stateful import StatefulStage
from toolrig.state import (
    BreakerConfig,
    BreakerPeek,
    BreakerPermit,
    BreakerResult,
    CircuitState,
    MemoryState,
    StateBackend,
    StateUnavailable,
)

__all__ = ["BreakerStage", "BreakerTuning", "classify_outcome"]

log = logging.getLogger("toolrig.runtime.stages._breaker")

BreakerTuning = Mapping[str, Any] | BreakerConfig | bool
"""Per-tool settings: a BreakerConfig, a mapping of its fields, True (defaults) or False (off)."""

_NEUTRAL_KINDS = frozenset({
    ErrorKind.INVALID_ARGUMENTS, ErrorKind.DENIED, ErrorKind.APPROVAL_REQUIRED, ErrorKind.APPROVAL_DENIED,
    ErrorKind.APPROVAL_TIMEOUT,
    ErrorKind.NOT_FOUND, ErrorKind.CANCELLED, ErrorKind.LOOP_DETECTED, ErrorKind.CIRCUIT_OPEN,
    ErrorKind.OUTPUT_TOO_LARGE, ErrorKind.RETRY_REQUESTED,
    ErrorKind.REPLAY_MISS,
})
_FIELDS = frozenset(f.name for f in dataclasses.fields(BreakerConfig))
_TRIAL_HINT = 1.0
"""Seconds a call refused while a half-open trial runs is told to wait (not the trial's whole lease)."""



def classify_outcome(outcome: ToolOutcome) -> BreakerResult:
    """How an outcome counts for the breaker: success, failure, or neutral (says nothing)."""
    if outcome.ok:
        return BreakerResult.SUCCESS
    error = outcome.error
    if error is None:  # the tool answered with an error result: it is up and talking
        return BreakerResult.NEUTRAL
    if error.kind is ErrorKind.RATE_LIMITED:  # only an upstream's "slow down" counts, never our limiter
        return BreakerResult.FAILURE if isinstance(outcome.exception, RateLimitedError) else BreakerResult.NEUTRAL
    if error.kind in _NEUTRAL_KINDS or isinstance(outcome.exception, ModelRetry | ArgumentsError):
        return BreakerResult.NEUTRAL
    return BreakerResult.FAILURE


def tuned(base: BreakerConfig, tuning: BreakerTuning) -> BreakerConfig | None:
    """``base`` adjusted by ``tuning``; None when the tuning turns the breaker off.

    Raises:
        ValueError: unknown fields or bad values.
    """
    if tuning is False:
        return None
    if tuning is True:
        return base
    if isinstance(tuning, BreakerConfig):
        return tuning
    if not isinstance(tuning, Mapping):
        raise ValueError(f"breaker settings must be a mapping, a BreakerConfig or a bool, not {tuning!r}")
    changes = dict(tuning)
    if changes.pop("enabled", True) is False:
        return None
    unknown = set(changes) - _FIELDS
    if unknown:
        raise ValueError(f"unknown breaker setting(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    return dataclasses.replace(base, **changes)


class BreakerStage(StatefulStage):
    """Stops calling a tool that keeps failing, and tries it again after a rest.

    Args:
        failure_threshold: consecutive counted failures that open a circuit.
        recovery_time: seconds a circuit stays open before one trial call.
        probe_timeout: seconds a trial call may take before another call may try (default: recovery_time).
        overrides: per-tool settings by tool name (see :data:`BreakerTuning`).
        state: a backend for this stage only (default: the runtime's).
    """

    name = "breaker"

    def __init__(self, *, failure_threshold: int = 5, recovery_time: float = 30.0, probe_timeout: float | None = None,
                 overrides: Mapping[str, BreakerTuning] | None = None, state: StateBackend | None = None) -> None:
        self.config = BreakerConfig(failure_threshold=failure_threshold, recovery_time=recovery_time,
                                    probe_timeout=probe_timeout)
        self.overrides = {name: tuned(self.config, t) for name, t in (overrides or {}).items()}
        self._configs: dict[str, tuple[ToolSpec, BreakerConfig | None]] = {}
        self._probe_due: set[str] = set()
        super().__init__(state)

    decides = False
    peeks = True

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Unless the breaker is turned off for the tool."""
        if self.config_for(tool.spec) is None:
            return False
        self._note_chain(tool, services, stages)
        return True

    def admission_step(self, inv: Invocation) -> BreakerPeek | None:
        """A look at the tool's circuit (None: no breaker, or a trial is due by :meth:`probe_now`)."""
        assert inv.tool is not None
        spec = inv.tool.spec
        config = self.config_for(spec)
        if config is None or (self._probe_due and spec.name in self._probe_due):
            return None
        return BreakerPeek(spec.name, config, inv.services.clock.time())

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """On the in-process backend (:class:`~toolrig.state.MemoryState`), a closed circuit with no failure
        counted (the usual case) needs no ``await``: no trial lease to release if the call ends by an exception.
        Any other circuit takes the async form."""
        return self._step if type(self._access.backend(services)) is MemoryState else None

    def _step(self, inv: Invocation) -> StepResult:
        assert inv.tool is not None
        spec = inv.tool.spec
        config = self.config_for(spec)
        if config is None:
            return inv, None
        backend = self._access.backend(inv.services)
        if (type(backend) is not MemoryState or (self._probe_due and spec.name in self._probe_due)
                or not backend.breaker_untouched(spec.name)):
            return None
        self._access.answered(inv.services)  # an acquire would have given a closed permit, changing nothing
        return inv, partial(self._settled, backend, config)

    def _settled(self, backend: MemoryState, config: BreakerConfig, inv: Invocation,
                 outcome: ToolOutcome) -> ToolOutcome:
        """What the async form does after a call that began on a closed circuit with no failure counted."""
        result = classify_outcome(outcome)
        if result is BreakerResult.SUCCESS:
            return outcome  # nothing to reset
        assert inv.tool is not None
        after = backend.breaker_record_now(inv.tool.spec.name, config, inv.services.clock.time(), result)
        if after is CircuitState.CLOSED:
            return outcome
        return outcome.derive(meta={**outcome.meta, "circuit": after.value})

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        assert inv.tool is not None
        spec = inv.tool.spec
        config = self.config_for(spec)
        if config is None:
            return await call_next(inv)
        backend = self._access.backend(inv.services)
        clock = inv.services.clock
        found, answer, admission = False, None, None
        if getattr(backend, "batches", False) and (step := self.admission_step(inv)) is not None:
            found, answer, admission = await self._ask(inv, step)
        try:
            if isinstance(answer, StateUnavailable):
                raise answer
            if isinstance(answer, BreakerPermit) and answer.allowed and answer.state is not CircuitState.CLOSED:
                found = False  # a trial is due: take its lease (a second request, once per recovery)
            permit = answer if found else await backend.breaker_acquire(
                spec.name, *self._due(spec.name, config, clock.time()))
        except StateUnavailable as exc:
            error = self._access.refusal(exc, inv.services, tool=spec.name)
            if error is not None:  # state_failure="closed"
                return ToolOutcome.failure(inv.call.id, inv.name, error, repairs=inv.repairs)
            return await self._next(call_next, inv, admission)
        self._access.answered(inv.services)
        assert isinstance(permit, BreakerPermit)
        if not permit.allowed:
            return refusal(inv, permit, config)
        try:
            outcome = await self._next(call_next, inv, admission)
        except BaseException:
            if permit.probe is not None:  # cancelled mid-trial: free the lease for the next caller
                with anyio.CancelScope(shield=True):
                    await self._record(backend, spec.name, config, BreakerResult.NEUTRAL, permit=permit,
                                       now=clock.time())
            raise
        result = classify_outcome(outcome)
        if result is BreakerResult.SUCCESS and permit.state is CircuitState.CLOSED and permit.failures == 0:
            return outcome  # nothing to reset: skip the write (a Redis round trip)
        after = await self._record(backend, spec.name, config, result, permit=permit, now=clock.time(),
                                   services=inv.services)
        if after is CircuitState.CLOSED and permit.state is CircuitState.CLOSED:
            return outcome
        return outcome.derive(meta={**outcome.meta, "circuit": (after or permit.state).value})

    def probe_now(self, tool_names: Iterable[str]) -> None:
        """The next call of each tool is the half-open trial at once (its dependency is back; see the module).

        A tool whose circuit is closed is unaffected; the trial's outcome then closes or reopens the circuit.
        """
        self._probe_due.update(tool_names)

    def _due(self, name: str, config: BreakerConfig, now: float) -> tuple[BreakerConfig, float]:
        """``(config, now)`` for an acquire; when a trial is due (once), with no rest left at that moment.

        The acquire then sees the circuit a moment after a tiny recovery time: the smallest step that still
        moves ``now`` (epoch seconds are coarse floats), a microsecond or so.
        """
        if not self._probe_due or name not in self._probe_due:
            return config, now
        self._probe_due.discard(name)
        step = max(1e-6, math.ulp(now) * 4)
        return dataclasses.replace(config, recovery_time=step / 2, probe_timeout=config.lease), now + step

    async def _record(self, backend: StateBackend, key: str, config: BreakerConfig, result: BreakerResult, *,
                      permit: BreakerPermit, now: float, services: Any = None) -> CircuitState | None:
        try:
            return await backend.breaker_record(key, config, now, result, permit.probe)
        except StateUnavailable as exc:
            self._access.unavailable(exc, key, services)
            return None

    def config_for(self, spec: ToolSpec) -> BreakerConfig | None:
        """The breaker settings for ``spec``'s tool (None: no breaker)."""
        cached = self._configs.get(spec.name)
        if cached is not None and cached[0] is spec:
            return cached[1]
        config: BreakerConfig | None = self.config
        if spec.name in self.overrides:
            config = self.overrides[spec.name]
        elif "breaker" in spec.metadata:
            try:
                config = tuned(self.config, spec.metadata["breaker"])
            except (ValueError, TypeError) as exc:
                log.warning("tool %s: ignoring metadata['breaker'] (%s); using the stage's settings", spec.name, exc)
        self._configs[spec.name] = (spec, config)
        return config

    async def state(self, tool_name: str, services: Any) -> BreakerPermit:
        """The circuit of ``tool_name`` as a call would see it now, without changing it.

        Args:
            tool_name: the tool.
            services: the runtime's services (``runtime.services``): its state backend and clock.
        """
        cached = self._configs.get(tool_name)
        config = cached[1] if cached is not None else self.overrides.get(tool_name, self.config)
        backend = self._access.backend(services)
        return await backend.breaker_state(tool_name, config or self.config, services.clock.time())

    async def reset(self, tool_name: str, services: Any) -> None:
        """Close the circuit of ``tool_name`` and forget its failures."""
        await self._access.backend(services).breaker_reset(tool_name)


def refusal(inv: Invocation, permit: BreakerPermit, config: BreakerConfig) -> ToolOutcome:
    """The ``circuit_open`` outcome for a call refused by the breaker."""
    retry_after = permit.retry_after
    if permit.state is CircuitState.HALF_OPEN:  # a trial runs: it usually settles the circuit within a second
        retry_after = min(retry_after, _TRIAL_HINT)
    wait = max(1, math.ceil(retry_after))
    plural = "s" if wait != 1 else ""
    if permit.state is CircuitState.HALF_OPEN:
        why = f"{inv.name} is recovering from failures and a trial call is in progress"
    else:
        why = f"{inv.name} is paused after {permit.failures} consecutive failures (circuit open)"
    message = f"{why}. Try again in {wait} second{plural}, or use another tool meanwhile."
    error = ToolError.of(ErrorKind.CIRCUIT_OPEN, message, retry_after=retry_after,
                         state=permit.state.value, failures=permit.failures)
    return ToolOutcome.failure(inv.call.id, inv.name, error, repairs=inv.repairs)
