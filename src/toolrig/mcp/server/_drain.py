"""Stopping a server without cutting calls: :class:`CallTracker`, :class:`StopSignals` and :func:`drain_calls`.

On SIGTERM or SIGINT (or when :func:`~toolrig.mcp.serve_async` is cancelled) a server drains:

1. it stops accepting: new sessions get HTTP 503, new ``tools/call`` requests a JSON-RPC error saying the
   server is shutting down (they never run; each is recorded like any refused call — one audit row per call,
   always — with kind ``unavailable`` and ``cause`` ``shutdown``, see :meth:`toolrig.Runtime.refuse`); then the
   listener closes;
2. calls in flight get ``shutdown_grace`` seconds to finish, and their answers are delivered;
3. calls still running then are stopped: each client gets an error result (kind ``cancelled``) and the audit
   row says the same (kind ``cancelled``, with the policy decision that let the call run);
4. the sessions end, the runtime closes (the audit log is flushed), and the process exits with 128 + the signal
   (130 for SIGINT, 143 for SIGTERM) — no traceback.

A second signal during the drain skips what is left of the grace period.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import anyio.abc
import mcp_types
from mcp import MCPError

from toolrig import CallContext, ErrorKind, ToolCall, ToolError, ToolOutcome
from toolrig._shown import shown_name

__all__ = ["ANSWER_TIME", "STOP_SIGNALS", "CallTracker", "StopSignals", "drain_calls"]

log = logging.getLogger("toolrig.mcp.server")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
ANSWER_TIME = 5.0
"""Seconds stopped calls (and finished ones) get to have their answers written before the sessions end."""
SHUTTING_DOWN = "the server is shutting down: the call was not run; try again later or on another instance"

Refuse = Callable[[ToolCall, ToolError, CallContext | None], Awaitable[ToolOutcome]]
"""Records a call refused at the door (:meth:`toolrig.Runtime.refuse`)."""


class CallTracker:
    """The tool calls a server is running: a shutdown waits for them, then stops the rest.

    Args:
        refuse: records each call refused because a shutdown began (its audit row); a server passes its runtime's
            :meth:`~toolrig.Runtime.refuse`.
    """

    def __init__(self, refuse: Refuse | None = None) -> None:
        self.refuse = refuse
        self._running: set[anyio.CancelScope] = set()
        self._changed: anyio.Event | None = None
        self.closing = False
        """True once a shutdown began: new calls are refused."""

    @property
    def running(self) -> int:
        """Calls running now."""
        return len(self._running)

    @contextlib.contextmanager
    def track(self) -> Iterator[anyio.CancelScope]:
        """Run one call inside; the yielded scope is cancelled if a shutdown stops the call."""
        scope = anyio.CancelScope()
        self._running.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._running.discard(scope)
            if self._changed is not None:
                self._changed.set()

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no call runs (at most ``timeout`` seconds); whether none runs."""
        with anyio.move_on_after(timeout):
            while self._running:
                self._changed = anyio.Event()
                await self._changed.wait()
        return not self._running

    async def run(self, call: ToolCall, runs: Callable[[], Awaitable[ToolOutcome]],
                  context: CallContext | None = None) -> ToolOutcome:
        """``await runs()`` tracked; a call stopped by a shutdown ends ``cancelled`` (so does its audit row).

        Raises:
            MCPError: the server is shutting down (the call is not run, but recorded by ``refuse`` with ``context``;
                the client gets a JSON-RPC error).
        """
        if self.closing:
            await self._refused(call, context)
            raise MCPError(code=mcp_types.INTERNAL_ERROR, message=SHUTTING_DOWN)
        outcome: ToolOutcome | None = None
        scope = anyio.CancelScope()  # what track() does, without a generator-based context manager per call
        self._running.add(scope)
        try:
            with scope:
                outcome = await runs()
        finally:
            self._running.discard(scope)
            if self._changed is not None:
                self._changed.set()
        if outcome is None:
            outcome = ToolOutcome.failure(call.id, shown_name(call.name), ToolError.of(
                ErrorKind.CANCELLED, f"the call to {shown_name(call.name)!r} was stopped: the server is shutting "
                "down and the call did not finish within its grace period"))
        return outcome

    async def _refused(self, call: ToolCall, context: CallContext | None) -> None:
        if self.refuse is None:
            return
        error = ToolError.of(ErrorKind.UNAVAILABLE, f"the call to {shown_name(call.name)!r} was not run: "
                             f"{SHUTTING_DOWN}", retryable=True, cause="shutdown")
        try:
            with anyio.CancelScope(shield=True):  # the row is written even if the client's request is cancelled
                await self.refuse(call, error, context)
        except Exception:
            log.exception("could not record a call refused during shutdown")

    def stop_all(self) -> int:
        """Stop every running call (each ends with a ``cancelled`` error); how many."""
        scopes = list(self._running)
        for scope in scopes:
            scope.cancel()
        return len(scopes)


class StopSignals:
    """SIGINT / SIGTERM as events for a server's drain (only where signals can be caught: the main thread).

    Attributes:
        received: the signals received so far, in order.
    """

    def __init__(self) -> None:
        self.received: list[int] = []
        self._again = anyio.Event()

    @contextlib.asynccontextmanager
    async def watching(self, enabled: bool) -> AsyncIterator[StopSignals]:
        """Catch the stop signals while inside (when ``enabled`` and on the main thread); else wait forever."""
        if not enabled or threading.current_thread() is not threading.main_thread():
            yield self
            return
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._receive, signals)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()

    async def _receive(self, signals: Any) -> None:
        async for signum in signals:
            self.received.append(int(signum))
            arrived, self._again = self._again, anyio.Event()
            arrived.set()

    async def _count(self, count: int) -> None:
        while len(self.received) < count:
            await self._again.wait()

    async def first(self) -> int:
        """Wait for the first stop signal (forever when none is watched)."""
        await self._count(1)
        return self.received[0]

    async def second(self) -> None:
        """Wait for a stop signal after the first."""
        await self._count(2)


async def drain_calls(tracker: CallTracker, grace: float, signals: StopSignals | None = None) -> None:
    """Refuse new calls, give running ones ``grace`` seconds (less if a second signal comes), then stop the rest."""
    tracker.closing = True
    if tracker.running:
        log.info("shutting down: waiting up to %g s for %d calls in flight", grace, tracker.running)
    async with anyio.create_task_group() as tg:
        if signals is not None:
            async def hurry() -> None:
                await signals.second()
                log.warning("shutting down now: a second signal ended the grace period")
                tracker.stop_all()

            tg.start_soon(hurry)
        finished = await tracker.wait_idle(grace)
        tg.cancel_scope.cancel()
    if not finished:
        stopped = tracker.stop_all()
        log.warning("shutdown: %d calls still running after %g s were stopped; their clients got an error", stopped,
                    grace)
        await tracker.wait_idle(ANSWER_TIME)
