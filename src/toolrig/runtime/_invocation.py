"""The frozen record that travels through the pipeline stages: :class:`Invocation`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._records import RecordPlan

if TYPE_CHECKING:
    from toolrig._decision import Decision
    from toolrig.runtime._services import Services

__all__ = ["CallTrail", "Invocation"]


@dataclass(slots=True)
class CallTrail:
    """What the inner stages established about one call, shared by every invocation derived from its first.

    An outer stage reads it when the call ends by an exception rather than an outcome (a cancellation):
    the audit row of a cancelled call still says which policy decision let it run, and which tool it was.
    :meth:`Invocation.derive` fills it; stages never write it themselves.

    Attributes:
        decision: the latest folded decision passed inward (``inv.derive(decision=...)``).
        tool: the latest resolved tool passed inward.
    """

    decision: Decision | None = None
    tool: BaseTool | None = None


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """One call as seen by a stage. Stages never mutate it; they pass ``inv.derive(...)`` inward.

    Attributes:
        call: the tool call (possibly rewritten by a hook or repaired).
        context: who calls, with ``call_id`` and ``tool_name`` filled in.
        services: the runtime's shared services (state backend, clock, approval handler, ...).
        tool: the resolved tool, once the resolve stage ran.
        arguments: the parsed (and repaired) arguments, once parsed.
        values: the validated, coerced values passed to the tool.
        repairs: what argument repair changed, one line each.
        decision: the folded policy decision, once the policy stage ran.
        attempt: the current attempt number (the retry stage increments it).
        timeout: seconds this attempt may take (set by the timeout stage; None: the tool's ``spec.timeout``).
        started: monotonic time the call entered the runtime.
        trail: what inner stages established, for outer stages (see :class:`CallTrail`).
    """

    call: ToolCall
    context: CallContext
    services: Services
    tool: BaseTool | None = None
    arguments: Mapping[str, Any] | None = None
    values: Mapping[str, Any] | None = None
    repairs: tuple[str, ...] = ()
    decision: Decision | None = None
    attempt: int = 1
    timeout: float | None = None
    started: float = field(default_factory=time.perf_counter)
    trail: CallTrail = field(default_factory=CallTrail, repr=False, compare=False)

    @classmethod
    def start(cls, call: ToolCall, context: CallContext, services: Services) -> Invocation:
        """A new invocation of ``call`` (the same as the constructor, without its per-field overhead)."""
        if cls is not Invocation:
            return cls(call=call, context=context, services=services)
        made: Invocation = object.__new__(Invocation)  # every field set below: what _PLAN.make does, unchecked
        made.__dict__.update(_START_DEFAULTS, call=call, context=context, services=services,
                             started=time.perf_counter(), trail=CallTrail())
        return made

    def derive(self, **changes: Any) -> Invocation:
        """A copy with some fields changed (``dataclasses.replace``, cheaply: :mod:`toolrig._records`).

        The copy shares this invocation's :attr:`trail`, which notes a new ``decision`` or ``tool``.
        """
        derived: Invocation = _PLAN.derive(self, changes)
        if "decision" in changes:
            self.trail.decision = changes["decision"]
        if "tool" in changes:
            self.trail.tool = changes["tool"]
        return derived

    @property
    def name(self) -> str:
        """The tool name: the resolved tool's, else the one the model asked for."""
        return self.tool.spec.name if self.tool is not None else self.call.name

    @property
    def elapsed_ms(self) -> float:
        """Milliseconds since the call entered the runtime."""
        return (time.perf_counter() - self.started) * 1000.0


_PLAN = RecordPlan(Invocation, factories={"started": time.perf_counter, "trail": CallTrail})
_START_DEFAULTS = dict(_PLAN.defaults)
"""Every field with a plain default (:meth:`Invocation.start` gives the rest)."""
assert _PLAN.required | _START_DEFAULTS.keys() | _PLAN.factories.keys() == _PLAN.fields
assert _PLAN.required == {"call", "context", "services"}
