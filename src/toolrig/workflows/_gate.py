"""Steps that wait for a person: filing approval requests in the queue, and reading their decisions on resume.

A step whose call needs approval while the runtime has no approver (``approval_required``), or a step that
started before its run stopped and may have run although its tool is not idempotent (*in doubt*), is filed
in the approval queue (``toolrig approvals``) when the run is journaled. On resume: an approved request lets
the step run (bound to the exact call: tool, version, arguments; used once), a denied one ends it ``denied``,
a pending one keeps the run waiting, and an expired or already used one is filed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig.policy.approvals import ApprovalQueue, ApprovalStore, binding_hash, version_of

__all__ = ["WAIT_SECONDS", "Gate"]

WAIT_SECONDS = 30 * 24 * 3600.0
"""How long a workflow's approval request may wait for a person, and stay usable once given."""


class Gate:
    """The approval queue of one execution (opened on first use).

    Args:
        approvals: the queue's location (see :func:`toolrig.policy.approvals.open_store`), a store, or a queue.
        tools: where tool versions are read (an approval binds to the version).
    """

    def __init__(self, approvals: str | Path | ApprovalStore | ApprovalQueue | None, tools: Any) -> None:
        self._given = approvals
        self._tools = tools
        self._queue: ApprovalQueue | None = approvals if isinstance(approvals, ApprovalQueue) else None
        self._own = self._queue is None

    def queue(self) -> ApprovalQueue:
        """The queue (opened now if need be)."""
        if self._queue is None:
            self._queue = ApprovalQueue(self._given, timeout=WAIT_SECONDS, ttl=WAIT_SECONDS,  # type: ignore[arg-type]
                                        tools=self._tools)
        return self._queue

    async def file(self, tool: str, arguments: Mapping[str, Any], context: CallContext, reason: str) -> str:
        """File a request for the call, return its id (``toolrig approvals approve ID``)."""
        queue = self.queue()
        call = ToolCall(name=tool, arguments=dict(arguments))
        request = await queue.submit(call, context, reason, version_of(self._tools, tool))
        return request.id

    async def status(self, request_id: str) -> str | None:
        """``"pending"``, ``"approved"``, ``"denied"``, ``"expired"``, ``"used"``, or None (no such request)."""
        request = await self.queue().get(request_id)
        return None if request is None else request.status

    async def consume(self, request_id: str, tool: str, arguments: Mapping[str, Any]) -> bool:
        """Use the approval for exactly this call (True once)."""
        queue = self.queue()
        return await queue.store.consume(request_id, binding_hash(tool, version_of(self._tools, tool),
                                                                  dict(arguments)), queue.clock())

    def approver(self, request_id: str) -> Any:
        """An approval handler for ``context.approver``: yes only for the call the request was filed for, once."""

        async def approve(call: ToolCall, context: CallContext, reason: str) -> bool:
            arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
            return await self.consume(request_id, call.name, arguments)

        return approve

    def approved_call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """An approval handler that says yes once, to this exact call only (its request was used already)."""
        wanted = binding_hash(tool, None, dict(arguments))
        used: list[bool] = []

        def approve(call: ToolCall, context: CallContext, reason: str) -> bool:
            arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
            if used or binding_hash(call.name, None, dict(arguments)) != wanted:
                return False
            used.append(True)
            return True

        return approve

    async def aclose(self) -> None:
        """Close the queue if this gate opened it."""
        if self._queue is not None and self._own:
            await self._queue.aclose()
