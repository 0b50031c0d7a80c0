"""What every stage may use: the toolset, hooks, clock, state backend and approval handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolrig.runtime._clock import Clock, SystemClock
from toolrig.runtime._deprecation import DeprecationNotices
from toolrig.runtime.executors import Executors
from toolrig.state import StateFailure, StateHealth

if TYPE_CHECKING:
    from toolrig._calls import ToolCall
    from toolrig._context import CallContext
    from toolrig._define import BaseTool
    from toolrig.runtime._hook import Hook
    from toolrig.state import StateBackend
    from toolrig.toolsets import Toolset

__all__ = ["ApprovalHandler", "Services"]

ApprovalHandler = Callable[["ToolCall", "CallContext", str], "Awaitable[Any] | Any"]
"""``(call, context, reason) -> answer``; may be sync or async. ``True`` approves; ``False`` (a person said no),
``Decision.deny(reason)`` or :class:`~toolrig.runtime.ApprovalTimeout` (nobody decided in time) do not
(see :mod:`toolrig.runtime.stages._approval`)."""


@dataclass(frozen=True, kw_only=True)
class Services:
    """Shared, long-lived collaborators of the stages (one instance per Runtime).

    Attributes:
        toolset: where tools are looked up (a Registry, a Toolset, or a list turned into one).
        hooks: user hook objects (``before_call`` / ``after_call`` / ``on_error``).
        clock: time source; a FakeClock in tests.
        state: shared-state backend (memory or Redis) for limits, breakers and cache (a Runtime always sets
            one; None only for services made by hand, whose stages then use a private in-memory backend).
        state_failure: while ``state`` cannot be reached, calls that need it run unprotected (``"open"``)
            or are refused with ``unavailable`` (``"closed"``); see :mod:`toolrig.state._access`.
        state_health: whether ``state`` answers, as the stages have seen (one warning per outage).
        approval: handler asked when a call needs approval; None means "approval_required".
        executors: where tool bodies run, by ``spec.isolation`` (each runtime has its own).
        allow_selectors: calls may name a version (``tool@1.2``); off by default (see the resolve stage).
        deprecations: which deprecated tool versions this runtime has already warned about.
        extras: anything a custom stage needs.
    """

    toolset: Toolset
    hooks: tuple[Hook, ...] = ()
    clock: Clock = field(default_factory=SystemClock)
    state: StateBackend | None = None
    state_failure: StateFailure = "open"
    state_health: StateHealth = field(default_factory=StateHealth)
    approval: ApprovalHandler | None = None
    executors: Executors = field(default_factory=Executors)
    allow_selectors: bool = False
    deprecations: DeprecationNotices = field(default_factory=DeprecationNotices)
    extras: dict[str, Any] = field(default_factory=dict)
    offered: Toolset | None = None
    """The toolset as the runtime offers it (less what ``ALLOWED_TOOLS`` hides); None: the whole ``toolset``."""

    def lookup(self, name: str) -> BaseTool | None:
        """The tool called ``name`` in the toolset, or None."""
        tool: BaseTool | None = self.toolset.get(name)
        return tool

    def tool_names(self) -> list[str]:
        """Names of every tool the runtime offers (what suggestions and case repairs may name: a hidden tool's
        name is never disclosed)."""
        return [t.spec.name for t in (self.offered if self.offered is not None else self.toolset).list()]
