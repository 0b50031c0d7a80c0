"""``isolation="process"``: a warm worker process per call; the only executor that can stop a running body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig.errors import CallTimeoutError
from toolrig.runtime.executors._process_pool import ProcessPool
from toolrig.runtime.executors._remote import RemoteResult

__all__ = ["ProcessExecutor"]


class ProcessExecutor:
    """Runs bodies in the worker processes of a :class:`ProcessPool` (see its module for what can happen).

    Args:
        pool: the worker pool (default: a new one, started on first use and closed by :meth:`aclose`).
    """

    name = "process"

    def __init__(self, pool: ProcessPool | None = None) -> None:
        self._own_pool = pool is None
        self._pool = pool

    @property
    def pool(self) -> ProcessPool:
        """The worker pool (created on first use)."""
        if self._pool is None:
            self._pool = ProcessPool()
        return self._pool

    async def execute(self, tool: BaseTool, values: Mapping[str, Any], context: CallContext, *,
                      timeout: float | None, meta: dict[str, Any]) -> Any:
        run = await self.pool.run(tool, values, context, timeout=timeout)
        meta["worker_pid"] = run.pid
        if run.timed_out:
            assert timeout is not None
            raise CallTimeoutError(tool.name, timeout, "its process was stopped")
        if run.error is not None:
            raise run.error
        assert run.result is not None
        return RemoteResult(run.result)

    def stats(self) -> dict[str, Any]:
        pool = self._pool
        if pool is None:
            return {"workers": 0}
        return {"capacity": pool.max_workers, "idle": len(pool.idle_pids)}

    async def aclose(self) -> None:
        if self._own_pool and self._pool is not None:
            await self._pool.aclose()
