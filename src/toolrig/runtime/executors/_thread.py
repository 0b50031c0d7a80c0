"""``isolation="thread"``: a bounded set of threads for heavy blocking work."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig.errors import CallTimeoutError, ExecutorBusyError

__all__ = ["ThreadExecutor"]


class ThreadExecutor:
    """Runs each body in a thread from ``anyio.to_thread``, at most ``limit`` at once.

    An async body gets its own event loop in that thread. At the deadline the caller gets a timeout
    while the thread finishes in the background and counts as stuck; when every slot is held by a
    stuck body, calls fail at once with :class:`~toolrig.errors.ExecutorBusyError`.

    Args:
        limit: most bodies running at once (per executor, so per runtime).
    """

    name = "thread"

    def __init__(self, *, limit: int = 16) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self._limiter: anyio.CapacityLimiter | None = None
        self._lock = threading.Lock()
        self._running = 0
        self._stuck = 0

    async def execute(self, tool: BaseTool, values: Mapping[str, Any], context: CallContext, *,
                      timeout: float | None, meta: dict[str, Any]) -> Any:
        if self._stuck >= self.limit:
            raise ExecutorBusyError(f"all {self.limit} threads of this runtime are still busy with calls that "
                                    "timed out or were cancelled; try again later")
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.limit)
        state = {"abandoned": False, "running": False}

        def body() -> Any:
            with self._lock:
                self._running += 1
                state["running"] = True
            try:
                return tool.invoke_sync(values, context)
            finally:
                with self._lock:
                    self._running -= 1
                    state["running"] = False
                    if state["abandoned"]:
                        self._stuck -= 1

        try:
            with anyio.move_on_after(timeout):
                return await anyio.to_thread.run_sync(body, limiter=self._limiter, abandon_on_cancel=True)
        except BaseException:
            self._abandon(state)
            raise
        self._abandon(state)
        assert timeout is not None
        raise CallTimeoutError(tool.name, timeout, "it runs in a thread that cannot be stopped and may still finish")

    def _abandon(self, state: dict[str, bool]) -> None:
        with self._lock:
            if state["running"] and not state["abandoned"]:
                state["abandoned"] = True
                self._stuck += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"capacity": self.limit, "busy": self._running, "stuck": self._stuck}

    async def aclose(self) -> None:
        return None
