"""Stage: retry a failing call with exponential backoff and jitter, deciding by error class.

Deciding is kept apart from sleeping (as in tenacity), so the decision is a pure function::

    delay = next_delay(retry, outcome, attempt, idempotent=..., jitter_sample=0.5)
    # None: stop and return the outcome; a float: sleep that long, then try again

A failed outcome is retried when its ``exception`` is an instance of ``retry.retry_on``
(default ``TimeoutError``, ``ConnectionError``), a :class:`~toolrig.errors.TransientError`, or a
:class:`~toolrig.errors.CallTimeoutError` (this runtime's own per-attempt timeout) or an
:class:`~toolrig.errors.ExecutorBusyError` (no capacity left right now).
Messages are never inspected. A tool that is not idempotent (``spec.idempotent`` false: the
default for ``write`` / ``destructive`` / ``system`` tools) is retried only when its Retry says
``retry_non_idempotent=True``: a write that timed out may well have happened.

There is one retry layer per call: while a retry stage runs its loop, retry stages of nested
calls (a tool that calls another runtime, e.g. a gateway or a workflow step) make a single
attempt each, so ``max_attempts`` is never multiplied. A tool that retries by itself declares
``retry=Retry(max_attempts=1)`` and is not wrapped again.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from contextvars import ContextVar

from toolrig._define import BaseTool
from toolrig._outcome import ToolOutcome
from toolrig._spec import Retry
from toolrig.errors import CallTimeoutError, ExecutorBusyError, RateLimitedError, TransientError
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services

__all__ = ["RetryStage", "backoff_delay", "next_delay", "should_retry"]

_retrying: ContextVar[bool] = ContextVar("toolrig_retry_layer_active", default=False)


def should_retry(retry: Retry, outcome: ToolOutcome, *, idempotent: bool) -> bool:
    """True when ``outcome`` failed with an exception class worth another attempt."""
    exc = outcome.exception
    if outcome.ok or exc is None:
        return False
    if not idempotent and not retry.retry_non_idempotent:
        return False
    return isinstance(exc, (*retry.retry_on, TransientError, CallTimeoutError, ExecutorBusyError))


def backoff_delay(retry: Retry, attempt: int, jitter_sample: float) -> float:
    """Delay after failed attempt ``attempt`` (1-based): exponential, plus jitter, capped.

    ``jitter_sample`` is a number in ``[0, 1)``; the jitter adds up to ``retry.jitter`` times the
    base delay, and the total never exceeds ``retry.max_delay``.
    """
    base = retry.delay(attempt)
    return min(retry.max_delay, base + base * retry.jitter * jitter_sample)


def next_delay(retry: Retry, outcome: ToolOutcome, attempt: int, *, idempotent: bool,
               jitter_sample: float) -> float | None:
    """How long to wait before the next attempt, or None to stop with ``outcome``.

    An upstream :class:`~toolrig.errors.RateLimitedError` with ``retry_after`` is honoured: the
    wait is at least ``retry_after``; when that is longer than ``retry.max_delay`` the call is
    not retried (the outcome tells the model to come back later).
    """
    if attempt >= retry.max_attempts or not should_retry(retry, outcome, idempotent=idempotent):
        return None
    delay = backoff_delay(retry, attempt, jitter_sample)
    exc = outcome.exception
    if isinstance(exc, RateLimitedError) and exc.retry_after is not None:
        if exc.retry_after > retry.max_delay:
            return None
        delay = max(delay, exc.retry_after)
    return delay


class RetryStage(Stage):
    """Retries failed attempts of a call; the outcome's ``attempts`` says how many ran.

    Args:
        default: the Retry for tools without ``spec.retry``. The default is None: such tools are
            not retried. Retrying is opt-in because it multiplies load on whatever failed, and
            many tools (HTTP clients, MCP sessions) already retry inside.
        jitter: returns a number in ``[0, 1)`` per delay (inject a seeded one in tests).

    Each attempt runs ``call_next`` with ``inv.attempt`` set to its number (1-based); the delay
    between attempts is slept through ``inv.services.clock``.
    """

    name = "retry"

    def __init__(self, default: Retry | None = None, *,
                 jitter: Callable[[], float] = random.random) -> None:
        self.default = default
        self.jitter = jitter

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """When retry settings with more than one attempt apply to the tool."""
        retry = tool.spec.retry or self.default
        return retry is not None and retry.max_attempts > 1

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        assert inv.tool is not None
        retry = inv.tool.spec.retry or self.default
        if retry is None or retry.max_attempts <= 1 or _retrying.get():
            return await call_next(inv)
        token = _retrying.set(True)
        try:
            return await self._attempts(inv, call_next, retry)
        finally:
            _retrying.reset(token)

    async def _attempts(self, inv: Invocation, call_next: CallNext, retry: Retry) -> ToolOutcome:
        assert inv.tool is not None
        idempotent = bool(inv.tool.spec.idempotent)
        attempt = inv.attempt
        while True:
            outcome = await call_next(inv if attempt == inv.attempt else inv.derive(attempt=attempt))
            if outcome.ok:
                return outcome if outcome.attempts == attempt else outcome.derive(attempts=attempt)
            delay = next_delay(retry, outcome, attempt, idempotent=idempotent, jitter_sample=self.jitter())
            if delay is None:
                return _final(outcome, attempt, retry, idempotent=idempotent)
            await inv.services.clock.sleep(delay)
            attempt += 1


def _final(outcome: ToolOutcome, attempt: int, retry: Retry, *, idempotent: bool) -> ToolOutcome:
    """The last outcome, with its attempt count and a note when idempotence alone stopped a retry."""
    meta = outcome.meta
    if not idempotent and attempt < retry.max_attempts and should_retry(retry, outcome, idempotent=True):
        meta = {**meta, "retry_skipped": "the tool is not idempotent (set idempotent=True or "
                                          "Retry(retry_non_idempotent=True) to retry it)"}
    if outcome.attempts == attempt and meta is outcome.meta:
        return outcome
    return outcome.derive(attempts=attempt, meta=meta)
