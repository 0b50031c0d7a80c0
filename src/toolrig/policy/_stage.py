"""The runtime stage that applies a :class:`~toolrig.policy.Policy` to every call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from toolrig._context import CallContext
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import ToolSpec
from toolrig.policy._explain import Explanation
from toolrig.runtime import CallNext, Invocation, fold_decisions
from toolrig.runtime.stages._hooks import decision_meta

__all__ = ["Evaluates", "PolicyStage"]


class Evaluates(Protocol):
    """What the stage needs of a policy (a :class:`~toolrig.Policy` has it)."""

    def evaluate(self, name: str, arguments: Mapping[str, Any] | None, context: CallContext | None = None, *,
                 spec: ToolSpec | None = None, toolset: Any = None) -> Explanation: ...


class PolicyStage:
    """Decides each call with the policy and folds that decision with the hooks' (deny wins).

    A deny ends the call with error kind ``denied``; an ask is left for the approval stage, which
    must come after this one (``Runtime(policy=...)`` places it just before ``approval``).
    """

    name = "policy"

    def __init__(self, policy: Evaluates) -> None:
        self.policy = policy

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        spec = inv.tool.spec if inv.tool is not None else None
        explanation = self.policy.evaluate(inv.name, inv.arguments, inv.context, spec=spec,
                                           toolset=inv.services.toolset)
        decision = fold_decisions([inv.decision, explanation.to_decision()])
        assert decision is not None
        meta = {"policy": explanation.to_dict(), "decision": decision_meta(decision)}
        if decision.denied:
            out = ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.DENIED, f"{inv.name} was denied: {decision.reason or 'a policy refused this call'}",
                source=decision.source), repairs=inv.repairs)
            return out.derive(meta={**out.meta, **meta})
        outcome = await call_next(inv.derive(decision=decision))
        return outcome.derive(meta={**outcome.meta, **meta})
