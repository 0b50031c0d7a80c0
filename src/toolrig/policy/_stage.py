"""The runtime stage that applies a :class:`~toolrig.policy.Policy` to every call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolrig._decision import decision_meta
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.runtime import CallNext, Invocation, Stage, fold_decisions
from toolrig.toolsets import Toolset

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolrig.policy._policy import Policy

__all__ = ["PolicyStage"]


class PolicyStage(Stage):
    """Decides each call with the policy and folds that decision with the hooks' (deny wins).

    A deny ends the call with error kind ``denied``; an ask is left for the approval stage, which
    must come after this one (``Runtime(policy=...)`` places it just before ``approval``). The tools that
    the policy's ``ALLOWED_TOOLS`` leaves out are not offered at all (:meth:`offer_filter`).
    """

    name = "policy"
    decides = True

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def offer_filter(self, toolset: Toolset) -> Callable[[BaseTool], bool] | None:
        """The tools ``ALLOWED_TOOLS`` names (None without an allowlist: every tool)."""
        policy = self.policy
        if policy.allowed_tools is None:
            return None
        return lambda tool: policy.offers(tool.spec.name, toolset)

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
