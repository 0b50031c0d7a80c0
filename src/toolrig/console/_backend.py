"""What the console shows and acts on: :class:`ConsoleBackend` (one runtime, its approval queue, audit log and
workflows), built from the :class:`~toolrig.mcp.Gateway` ``toolrig serve`` runs (:meth:`ConsoleBackend.of`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolrig._context import CallContext
from toolrig.audit import AuditLog
from toolrig.policy import ApprovalQueue
from toolrig.runtime import AuditStage, Runtime

if TYPE_CHECKING:
    from toolrig._define import BaseTool
    from toolrig.mcp import Gateway
    from toolrig.workflows import WorkflowTool

__all__ = ["ConsoleBackend"]


@dataclass(frozen=True, kw_only=True)
class ConsoleBackend:
    """The parts the console works with.

    Attributes:
        runtime: every call the console makes goes through it (policy, approval, limits, audit).
        approvals: the approval queue pending calls wait in (None: the runtime asks nobody through a queue).
        audit: the audit log it reads (None: audit is off, or kept neither in SQLite nor in PostgreSQL).
        workflows: the workflows it draws, runs and resumes (their runs journaled where each says).
        sources: where a tool comes from, by name (``built-in``, ``local`` or an MCP server's name).
        blocked: what the gateway's review refused (scan findings, changed pins), as plain dicts.
        pins: the pinned upstream definitions (server, tool, hash, when, by; pending ones with ``pending``).
        user: who the console acts as (kept in the audit log and the approval queue).
    """

    runtime: Runtime
    approvals: ApprovalQueue | None = None
    audit: AuditLog | None = None
    workflows: Sequence[WorkflowTool] = ()
    sources: Callable[[], Mapping[str, str]] = dict
    blocked: Callable[[], list[dict[str, Any]]] = list
    pins: Callable[[], list[dict[str, Any]]] = list
    user: str = field(default_factory=lambda: os.environ.get("USER") or "console")

    def context(self) -> CallContext:
        """The call context of a call made from the console."""
        return CallContext(user=self.user, agent="toolrig-console", session="console")

    def tools(self) -> list[BaseTool]:
        """The tools the runtime offers."""
        return list(self.runtime.tools())

    def tool(self, name: str) -> BaseTool | None:
        """One offered tool by name."""
        return next((t for t in self.tools() if t.name == name), None)

    def workflow(self, name: str) -> WorkflowTool | None:
        """One workflow by name."""
        return next((w for w in self.workflows if w.name == name), None)

    @classmethod
    def of(cls, gateway: Gateway) -> ConsoleBackend:
        """The backend of ``gateway``: its runtime, its approval queue, its audit log, its workflows."""
        runtime = gateway.runtime
        approval = runtime.services.approval
        queue = approval if isinstance(approval, ApprovalQueue) else getattr(approval, "fallback", None)
        audit = next((s for s in runtime.stages if isinstance(s, AuditStage)), None)
        log = AuditLog.of_sink(audit.sink) if audit is not None else None
        toolset = gateway.toolset

        def sources() -> dict[str, str]:
            out: dict[str, str] = {}
            for tool in toolset.local_tools():
                out[tool.name] = "built-in" if "builtin" in tool.spec.tags else (
                    "workflow" if "workflow" in tool.spec.tags else "local")
            for server in toolset.servers():
                for tool in server.list():
                    out[tool.name] = server.name
            return out

        def pins() -> list[dict[str, Any]]:
            found = [*gateway.pins.pins(), *gateway.pins.pending()]
            return [{k: v for k, v in p.to_dict().items() if k != "definition"} for p in found]

        return cls(runtime=runtime, approvals=queue if isinstance(queue, ApprovalQueue) else None, audit=log,
                   workflows=tuple(gateway.workflows), sources=sources, pins=pins,
                   blocked=lambda: [b.to_dict() for b in toolset.blocked()])
