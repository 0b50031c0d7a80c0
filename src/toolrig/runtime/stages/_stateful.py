"""The base of the stages that check shared state before a call: one request for all of them per call.

The loop guard, the rate limits and the breaker each make one :data:`~toolrig.state.AdmissionStep`. The first of
them a call reaches asks for its own step and for the steps of those after it in the tool's chain, in one
request (one Redis round trip), and binds the answers for the rest of the call (:mod:`toolrig.state._admission`).
A step that changes state (a count, a hit) is asked ahead only across other stateful stages: a stage between
(the cache) could end the call before it. The breaker's step only looks, so it is asked ahead across anything.

Which stages follow is learnt from the tool's chain (:meth:`Stage.applies` is given it). Where no chain was
compiled per tool (a runtime with hooks), or a stage has a backend of its own, each stage asks for itself; so
does every stage on a backend that does not say ``batches = True`` (in process, a batch saves nothing).
"""

from __future__ import annotations

import weakref
from abc import abstractmethod
from collections.abc import Awaitable, Sequence
from typing import ClassVar

from toolrig._define import BaseTool
from toolrig._outcome import ToolOutcome
from toolrig._spec import ToolSpec
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.state import (
    Admission,
    AdmissionAnswer,
    AdmissionStep,
    StateAccess,
    StateBackend,
    StateUnavailable,
    answer_for,
    bound,
    current_admission,
    gather,
)

__all__ = ["StatefulStage"]

_Plan = tuple["weakref.ref[Services]", ToolSpec, tuple["StatefulStage", ...]]
_PRUNE_AT = 1024


class StatefulStage(Stage):
    """A stage that checks shared state before a call (see the module docstring).

    Args:
        state: a backend for this stage only (default: the runtime's).
    """

    peeks: ClassVar[bool] = False
    """Whether this stage's step only looks (changes nothing), so it may be asked ahead across other stages."""

    def __init__(self, state: StateBackend | None) -> None:
        self._access = StateAccess(state, stage=self.name)
        self._plans: dict[tuple[int, str], _Plan] = {}

    @abstractmethod
    def admission_step(self, inv: Invocation) -> AdmissionStep | None:
        """What this stage asks of the shared state before ``inv`` runs (None: nothing), without side effects."""

    def _note_chain(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> None:
        """Remember which stateful stages after this one in ``tool``'s chain may be asked ahead (from ``applies``)."""
        at = next((i for i, s in enumerate(stages) if s is self), None)
        if at is None:
            return
        followers: list[StatefulStage] = []
        adjacent = True
        for stage in stages[at + 1:]:
            if not isinstance(stage, StatefulStage):
                adjacent = False
            elif adjacent or stage.peeks:
                followers.append(stage)
        if len(self._plans) >= _PRUNE_AT:  # a stage shared by many runtimes: forget those that are gone
            self._plans = {k: v for k, v in self._plans.items() if v[0]() is not None}
        self._plans[(id(services), tool.spec.name)] = (weakref.ref(services), tool.spec, tuple(followers))

    def _followers(self, inv: Invocation) -> tuple[StatefulStage, ...]:
        assert inv.tool is not None
        plan = self._plans.get((id(inv.services), inv.tool.spec.name))
        if plan is None or plan[0]() is not inv.services or plan[1] is not inv.tool.spec:
            return ()
        return plan[2]

    async def _ask(self, inv: Invocation, step: AdmissionStep
                   ) -> tuple[bool, AdmissionAnswer | StateUnavailable | None, Admission | None]:
        """``(found, answer, admission)`` for this stage's ``step`` (called when the backend ``batches``).

        ``found`` False: no batch answers it; the stage asks its backend itself. Otherwise ``answer`` is its
        answer (or the backend's failure), and ``admission``, when not None, is to be bound around the rest of
        the call (this stage asked for those after it too).
        """
        backend = self._access.backend(inv.services)
        owner = inv.trail
        found, answer = answer_for(owner, self)
        if found:
            return True, answer, None
        followers = self._followers(inv)
        if not followers:
            return False, None, None
        asks: list[tuple[object, AdmissionStep]] = [(self, step)]
        earlier = current_admission(owner)
        for stage in followers:
            if stage._access.backend(inv.services) is not backend or (earlier and stage in earlier.answers):
                continue
            ahead = stage.admission_step(inv)
            if ahead is not None:
                asks.append((stage, ahead))
        if len(asks) == 1:
            return False, None, None
        first, admission = await gather(owner, backend, asks)
        return True, first, admission

    @staticmethod
    def _next(call_next: CallNext, inv: Invocation, admission: Admission | None) -> Awaitable[ToolOutcome]:
        """The rest of the call, with ``admission`` bound when this stage asked for those after it."""
        if admission is None:
            return call_next(inv)
        return _bound_next(call_next, inv, admission)


async def _bound_next(call_next: CallNext, inv: Invocation, admission: Admission) -> ToolOutcome:
    with bound(admission):
        return await call_next(inv)
