"""``isolation="inline"``: async bodies in the event loop, sync bodies on the runtime's worker threads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig.errors import CallTimeoutError
from toolrig.runtime.executors._thread_hop import ThreadHop

__all__ = ["InlineExecutor"]


class InlineExecutor:
    """Runs async bodies in the event loop and sync bodies on a :class:`ThreadHop` of its own.

    An async body is cancelled at its deadline (it sees ``CancelledError``). A sync body never
    blocks the loop: it hops to a worker thread; at the deadline the caller gets a timeout while
    the thread finishes in the background (threads cannot be killed) and counts as stuck. A sync
    tool named in ``in_loop`` runs in the loop thread itself: an explicit opt-in for trivially fast
    tools (no hop, but also no timeout and no cancellation while it runs).

    Args:
        max_threads: capacity of the worker threads for sync bodies (per executor, so per runtime).
        in_loop: names of sync tools run in the event-loop thread.
        hop: bring your own thread hop (then ``max_threads`` is ignored and the hop is not closed).
    """

    name = "inline"

    def __init__(self, *, max_threads: int = 32, in_loop: Iterable[str] = (), hop: ThreadHop | None = None) -> None:
        self.in_loop = frozenset(in_loop)
        self._own_hop = hop is None
        self.hop = hop or ThreadHop(max_threads)

    async def execute(self, tool: BaseTool, values: Mapping[str, Any], context: CallContext, *,
                      timeout: float | None, meta: dict[str, Any]) -> Any:
        if tool.is_async:
            if timeout is None:
                return await tool.invoke(values, context)
            with anyio.move_on_after(timeout):
                return await tool.invoke(values, context)
            raise CallTimeoutError(tool.name, timeout, "it was cancelled")
        if tool.name in self.in_loop:
            return tool.invoke_sync(values, context)
        if timeout is None:
            return await self.hop.run(tool.invoke_sync, values, context)
        with anyio.move_on_after(timeout):
            return await self.hop.run(tool.invoke_sync, values, context)
        raise CallTimeoutError(tool.name, timeout, "it runs in a thread that cannot be stopped and may still finish")

    def stats(self) -> dict[str, Any]:
        return {"threads": self.hop.stats()}

    async def aclose(self) -> None:
        if self._own_hop:
            self.hop.close()
