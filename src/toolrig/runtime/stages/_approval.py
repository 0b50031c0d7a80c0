"""Stage: human approval for calls that need it.

A call needs approval when a hook or policy answered ``Decision.ask``, when the tool declares
``requires_approval=True``, or — secure by default — when its permission is ``destructive`` or
``system``. The runtime's approval handler (``Runtime(approval=...)``) is asked; without one the
call ends with ``approval_required``; a refusal ends with ``approval_denied``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable

from toolrig._calls import ToolCall
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import Permission
from toolrig.runtime._chain import CallNext
from toolrig.runtime._invocation import Invocation

__all__ = ["ApprovalStage"]

log = logging.getLogger("toolrig.approval")


class ApprovalStage:
    """Asks the approval handler before calls that need a human yes.

    Args:
        permissions: permission levels that always need approval (default: destructive, system);
            pass ``()`` to rely only on ``requires_approval`` and ask decisions.
    """

    name = "approval"

    def __init__(self, *, permissions: Iterable[Permission | str] = (Permission.DESTRUCTIVE, Permission.SYSTEM)):
        self.permissions = frozenset(Permission(p) for p in permissions)

    def _reason(self, inv: Invocation) -> str | None:
        assert inv.tool is not None
        spec = inv.tool.spec
        if inv.decision is not None and inv.decision.needs_approval:
            return inv.decision.reason or "a policy asked for approval"
        if spec.requires_approval:
            return f"{spec.name} requires approval"
        if spec.permission in self.permissions:
            return f"{spec.name} is a {spec.permission.value} tool"
        return None

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        reason = self._reason(inv)
        if reason is None:
            return await call_next(inv)
        handler = inv.services.approval
        if handler is None:
            return ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.APPROVAL_REQUIRED,
                f"this call needs human approval ({reason}); no approver is configured, so it did not run",
                reason=reason), repairs=inv.repairs)
        call = ToolCall(id=inv.call.id, name=inv.name, arguments=dict(inv.arguments or {}))
        try:
            answer = handler(call, inv.context, reason)
            approved = bool(await answer if inspect.isawaitable(answer) else answer)
        except Exception:
            log.exception("approval handler failed for %s", inv.name)
            approved = False
        if not approved:
            return ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.APPROVAL_DENIED, f"a human declined this call to {inv.name}; do not retry it as is",
                reason=reason), repairs=inv.repairs)
        outcome = await call_next(inv)
        return outcome.derive(meta={**outcome.meta, "approval": {"approved": True, "reason": reason}})
