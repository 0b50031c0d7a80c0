"""The seam between the pipeline and where code runs: the :class:`Executor` protocol and a runtime's set of them.

The innermost handler of the chain picks the executor named by the tool's ``spec.isolation``,
hands it the validated values and the per-attempt timeout, and converts what comes back into an
outcome — in one place, whatever the executor. An executor:

* returns the body's raw return value (executors that run the body in this process), or a
  :class:`~toolrig.runtime.executors.RemoteResult` holding the :class:`~toolrig.ToolResult` a worker
  already converted (a worker in another process or a sandbox sends data, never objects);
* raises what the body raised (or a toolrig error standing for it);
* raises :class:`~toolrig.errors.CallTimeoutError` when the timeout passes, after stopping the
  body as far as it can (its ``aftermath`` says how far);
* raises :class:`~toolrig.errors.ExecutorBusyError` at once when it has no capacity left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import anyio.to_thread

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._spec import Isolation
from toolrig.errors import ExecutorUnavailable

__all__ = ["EXECUTOR_ENTRY_POINTS", "Executor", "Executors"]

T = TypeVar("T")


@runtime_checkable
class Executor(Protocol):
    """Runs tool bodies somewhere (see the module docstring for the contract)."""

    name: str

    async def execute(self, tool: BaseTool, values: Mapping[str, Any], context: CallContext, *,
                      timeout: float | None, meta: dict[str, Any]) -> Any:
        """Run ``tool`` on ``values``; return its raw value (or a :class:`~toolrig.runtime.executors.RemoteResult`).

        ``meta`` is this call's: facts put there (a worker's PID, ...) end up in ``outcome.meta``,
        whatever the outcome.
        """
        ...

    def stats(self) -> dict[str, Any]:
        """Live counters (capacity, busy, stuck, ...), for ``Runtime.stats()``."""
        ...

    async def aclose(self) -> None:
        """Release threads, processes and whatever else the executor holds."""
        ...


class Executors:
    """The executors of one runtime, by isolation name; each runtime has its own (its own capacity).

    Args:
        inline: for ``isolation="inline"`` (default: a new :class:`~toolrig.runtime.executors.InlineExecutor`).
        thread: for ``"thread"`` (default: a new :class:`~toolrig.runtime.executors.ThreadExecutor`).
        process: for ``"process"`` (default: a new :class:`~toolrig.runtime.executors.ProcessExecutor`).
        sandbox: for ``"sandbox"`` (default: the sandbox executor registered by :mod:`toolrig.sandbox`, which
            refuses to run anything where no adequate sandbox exists: never unsandboxed).
        others: executors under further names (matched against ``spec.isolation``).

    Executors are created on first use, so a runtime that never runs a process tool starts no process.
    """

    def __init__(self, *, inline: Executor | None = None, thread: Executor | None = None,
                 process: Executor | None = None, sandbox: Executor | None = None,
                 others: Mapping[str, Executor] | None = None) -> None:
        self._given: dict[str, Executor | None] = {
            Isolation.INLINE.value: inline, Isolation.THREAD.value: thread, Isolation.PROCESS.value: process,
            Isolation.SANDBOX.value: sandbox, **dict(others or {})}
        self._made: dict[str, Executor] = {}

    def get(self, isolation: str) -> Executor:
        """The executor for ``isolation``.

        Raises:
            ExecutorUnavailable: none is configured under that name.
        """
        executor = self._given.get(isolation) or self._made.get(isolation)
        if executor is not None:
            return executor
        made = _default(isolation)
        if made is None:
            raise ExecutorUnavailable(_unavailable(isolation))
        self._made[isolation] = made
        return made

    def active(self) -> dict[str, Executor]:
        """The executors given or created so far, by name."""
        out = {name: ex for name, ex in self._given.items() if ex is not None}
        out.update(self._made)
        return out

    async def offload(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Run a blocking function (a sync hook or approval handler) off the event loop.

        Uses the inline executor's worker threads when it has them (cheap), else ``anyio.to_thread``.
        """
        hop = getattr(self.get(Isolation.INLINE.value), "hop", None)
        if hop is not None:
            return cast(T, await hop.run(fn, *args))
        return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Each active executor's counters, by name."""
        return {name: ex.stats() for name, ex in self.active().items()}

    async def aclose(self) -> None:
        """Close the executors this set created (those passed in belong to the caller)."""
        made, self._made = self._made, {}
        for executor in made.values():
            await executor.aclose()


EXECUTOR_ENTRY_POINTS = "toolrig.executors"
"""Entry-point group of executor factories by isolation name (toolrig registers ``sandbox`` there)."""


def _default(isolation: str) -> Executor | None:
    from toolrig.runtime.executors._inline import InlineExecutor
    from toolrig.runtime.executors._process import ProcessExecutor
    from toolrig.runtime.executors._thread import ThreadExecutor

    if isolation == Isolation.INLINE:
        return InlineExecutor()
    if isolation == Isolation.THREAD:
        return ThreadExecutor()
    if isolation == Isolation.PROCESS:
        return ProcessExecutor()
    return _from_entry_point(isolation)


def _from_entry_point(isolation: str) -> Executor | None:
    """An executor made by the factory registered under ``isolation`` in :data:`EXECUTOR_ENTRY_POINTS`."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=EXECUTOR_ENTRY_POINTS, name=isolation):
        factory = ep.load()
        executor = factory()
        if isinstance(executor, Executor):
            return executor
    return None


def _unavailable(isolation: str) -> str:
    if isolation == Isolation.SANDBOX:
        return ("this tool must run in a sandbox and this runtime has no sandbox executor, so it does not run "
                "unsandboxed (pass Runtime(executors=Executors(sandbox=...)))")
    return f"no executor named {isolation!r} is configured in this runtime"
