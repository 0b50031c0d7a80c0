"""What a policy decided about one call, which layer and rule decided it, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from toolrig.runtime import Decision, Verdict

__all__ = ["Explanation", "VerdictName"]

VerdictName = Literal["allow", "ask", "deny"]

_NAMES: dict[Verdict, VerdictName] = {Verdict.ALLOW: "allow", Verdict.ASK: "ask", Verdict.DENY: "deny"}


@dataclass(frozen=True, kw_only=True)
class Explanation:
    """The policy's answer for one call.

    Attributes:
        decision: ``"allow"``, ``"ask"`` or ``"deny"``.
        layer: the layer that decided (``"preset"``, ``"global"``, ``"user:alice"``, ``"ALLOWED_TOOLS"``, ...).
        rule: the rule text that decided, or None when the preset did.
        reason: one sentence a human (and the model) can read.
        tool: the tool name the call asked for.
    """

    decision: VerdictName
    layer: str
    rule: str | None
    reason: str
    tool: str

    @classmethod
    def of(cls, verdict: Verdict, *, layer: str, rule: str | None, reason: str, tool: str) -> Explanation:
        """Build from a runtime :class:`~toolrig.runtime.Verdict`."""
        return cls(decision=_NAMES[verdict], layer=layer, rule=rule, reason=reason, tool=tool)

    @property
    def verdict(self) -> Verdict:
        """The decision as a runtime :class:`~toolrig.runtime.Verdict`."""
        return Verdict[self.decision.upper()]

    def to_decision(self) -> Decision:
        """The runtime :class:`~toolrig.runtime.Decision` (source ``policy:<layer>``)."""
        return Decision(self.verdict, self.reason, f"policy:{self.layer}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``outcome.meta["policy"]``, ``toolrig policy explain``)."""
        return {"decision": self.decision, "layer": self.layer, "rule": self.rule, "reason": self.reason,
                "tool": self.tool}
