"""Stage: run the tool body where its ``spec.isolation`` says, under its per-attempt timeout.

The innermost stage. Where a body runs:

``inline``
    An async tool is awaited in the event loop (through ``call_next``, the terminal). A sync
    tool never blocks the loop: it makes a cheap hop to a persistent worker thread
    (:class:`~toolrig.runtime.executors._thread_hop.ThreadHop`, about half the cost of
    ``anyio.to_thread.run_sync``). A sync tool listed in ``in_loop`` runs in the loop thread
    itself: an explicit opt-in for trivially fast tools (no hop, but also no timeout and no
    cancellation while it runs).
``thread``
    A worker thread from ``anyio.to_thread`` behind this stage's
    :class:`anyio.CapacityLimiter` (for heavy blocking work whose concurrency should be bounded).
    An async tool gets its own event loop in that thread.
``process``
    A warm worker process in its own process group (:class:`~toolrig.runtime.executors._process_pool.ProcessPool`);
    the only mode that can stop a running body.

Timeouts (``spec.timeout``, else ``default_timeout``) apply per attempt. An async body is
cancelled at the deadline (it sees ``CancelledError``); a process is killed with its whole group;
a thread cannot be killed, so the caller gets ``timeout`` at the deadline while the body finishes
in the background and its result is dropped. Cancelling the call (``Runtime.cancel`` or the
caller's task) reaches the body the same way. The outcome of a timeout carries a
:class:`CallTimeoutError`, which the retry stage retries by type.

For ``thread`` and ``process`` tools, and sync ``inline`` tools, this stage runs the body itself
and builds the outcome with the terminal's converters: stages placed inside it only see async
``inline`` calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import anyio.to_thread

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import Isolation
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._terminal import outcome_from_exception, outcome_from_value
from toolrig.runtime.executors._process_pool import ProcessPool
from toolrig.runtime.executors._thread_hop import ThreadHop, default_hop

__all__ = ["CallTimeoutError", "IsolationStage", "timeout_outcome"]

Runner = Callable[[Invocation], Awaitable[Any]]


class CallTimeoutError(TimeoutError):
    """The runtime's deadline for one attempt of a call passed (carried by ``timeout`` outcomes).

    Attributes:
        seconds: the timeout that applied.
    """

    def __init__(self, tool: str, seconds: float) -> None:
        super().__init__(f"{tool} did not finish within {seconds:g} s")
        self.seconds = seconds


def timeout_outcome(inv: Invocation, seconds: float, aftermath: str) -> ToolOutcome:
    """A ``timeout`` outcome for ``inv``; ``aftermath`` says what became of the body."""
    exc = CallTimeoutError(inv.name, seconds)
    return ToolOutcome.failure(
        inv.call.id, inv.name,
        ToolError.of(ErrorKind.TIMEOUT, f"{exc}; {aftermath}.", timeout=seconds),
        attempts=inv.attempt, repairs=inv.repairs, exception=exc)


def _converted(inv: Invocation, raw: Any) -> ToolOutcome:
    try:
        return outcome_from_value(inv, raw)
    except Exception as exc:  # a formatter or conversion failure is the tool's failure
        return outcome_from_exception(inv, exc)


def _invoke_sync(tool: BaseTool, inv: Invocation) -> Any:
    assert inv.values is not None
    return tool.invoke_sync(inv.values, inv.context)


class IsolationStage:
    """Runs each call inline, in a thread or in a process, under its timeout.

    Args:
        default_timeout: seconds per attempt for tools without ``spec.timeout`` (None: no limit).
        in_loop: names of sync tools that run in the event-loop thread (trivially fast ones).
        thread_limit: most ``thread`` tools running at once.
        processes: the worker pool for ``process`` tools (created on first use; closed by
            :meth:`aclose` when this stage created it).
        hop: the thread hop for sync ``inline`` tools (default: one shared per process).
    """

    name = "isolation"

    def __init__(self, *, default_timeout: float | None = None, in_loop: Iterable[str] = (),
                 thread_limit: int = 16, processes: ProcessPool | None = None,
                 hop: ThreadHop | None = None) -> None:
        if default_timeout is not None and not default_timeout > 0:
            raise ValueError("default_timeout must be a positive number of seconds")
        self.default_timeout = default_timeout
        self.in_loop = frozenset(in_loop)
        self.thread_limit = thread_limit
        self._limiter: anyio.CapacityLimiter | None = None
        self._own_pool = processes is None
        self._processes = processes
        self._hop = hop or default_hop()

    @property
    def processes(self) -> ProcessPool:
        """The worker pool for ``process`` tools."""
        if self._processes is None:
            self._processes = ProcessPool()
        return self._processes

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        tool = inv.tool
        assert tool is not None
        spec = tool.spec
        timeout = spec.timeout or self.default_timeout
        isolation = spec.isolation
        if isolation is Isolation.INLINE:
            if tool.is_async or spec.name in self.in_loop:
                if timeout is None:
                    return await call_next(inv)
                return await self._in_loop(inv, call_next, timeout)
            return await self._off_loop(inv, self._hop_run, timeout)
        if isolation is Isolation.THREAD:
            return await self._off_loop(inv, self._thread_run, timeout)
        return await self._in_process(inv, timeout)

    async def _in_loop(self, inv: Invocation, call_next: CallNext, timeout: float) -> ToolOutcome:
        with anyio.move_on_after(timeout):
            return await call_next(inv)
        return timeout_outcome(inv, timeout, "it was cancelled")

    async def _off_loop(self, inv: Invocation, run: Runner, timeout: float | None) -> ToolOutcome:
        if timeout is None:
            return await self._outcome_of(inv, run)
        with anyio.move_on_after(timeout):
            return await self._outcome_of(inv, run)
        return timeout_outcome(inv, timeout, "it runs in a thread that cannot be stopped and may still finish")

    @staticmethod
    async def _outcome_of(inv: Invocation, run: Runner) -> ToolOutcome:
        try:
            raw = await run(inv)
        except Exception as exc:
            return outcome_from_exception(inv, exc)
        return _converted(inv, raw)

    async def _hop_run(self, inv: Invocation) -> Any:
        assert inv.tool is not None
        return await self._hop.run(_invoke_sync, inv.tool, inv)

    async def _thread_run(self, inv: Invocation) -> Any:
        assert inv.tool is not None
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.thread_limit)
        return await anyio.to_thread.run_sync(_invoke_sync, inv.tool, inv, limiter=self._limiter,
                                              abandon_on_cancel=True)

    async def _in_process(self, inv: Invocation, timeout: float | None) -> ToolOutcome:
        assert inv.tool is not None and inv.values is not None
        try:
            run = await self.processes.run(inv.tool, inv.values, inv.context, timeout=timeout)
        except Exception as exc:
            return outcome_from_exception(inv, exc)
        if run.timed_out:
            assert timeout is not None
            outcome = timeout_outcome(inv, timeout, "its process was stopped")
        elif run.error is not None:
            outcome = outcome_from_exception(inv, run.error)
        else:
            outcome = _converted(inv, run.value)
        return outcome.derive(meta={**outcome.meta, "worker_pid": run.pid})

    async def aclose(self) -> None:
        """Stop the worker processes this stage started."""
        if self._own_pool and self._processes is not None:
            await self._processes.aclose()
