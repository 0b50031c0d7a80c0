"""Stage: human approval for calls that need it.

A call needs approval when a hook or policy answered ``Decision.ask``, when the tool declares
``requires_approval=True``, or — secure by default — when its permission is ``destructive`` or
``system``. The runtime's approval handler (``Runtime(approval=...)``) is asked with the call (its
``context.tool_version`` names the version that would run); without one the call ends with
``approval_required``.

Only an explicit yes approves: ``True`` or ``Decision.allow``. Anything else — ``False``, ``"no"``,
``Decision.deny``, ``None``, an exception, no answer within the timeout — ends with
``approval_denied``, logged with the handler's name. A sync handler runs off the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from toolrig._calls import ToolCall
from toolrig._decision import approves
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import Permission
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._hooks import _NoAnswer, call_hook, hook_name

__all__ = ["ApprovalStage"]

log = logging.getLogger("toolrig.approval")

_GRACE = 5.0


class ApprovalStage(Stage):
    """Asks the approval handler before calls that need a human yes.

    Args:
        permissions: permission levels that always need approval (default: destructive, system);
            pass ``()`` to rely only on ``requires_approval`` and ask decisions.
        timeout: seconds to wait for the handler's answer; no answer in time denies. A handler that has a
            ``timeout`` attribute waits that long itself (e.g. a queue that marks requests expired): the
            stage then waits that long plus a few seconds' grace, as a backstop.
    """

    name = "approval"

    def __init__(self, *, permissions: Iterable[Permission | str] = (Permission.DESTRUCTIVE, Permission.SYSTEM),
                 timeout: float = 600.0) -> None:
        if not timeout > 0:
            raise ValueError("the approval timeout must be a positive number of seconds")
        self.permissions = frozenset(Permission(p) for p in permissions)
        self.timeout = timeout

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

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """When the tool may need approval: by its declaration, its permission, or a decision of another stage.

        Any stage that may decide (:attr:`Stage.decides`, true unless a stage says otherwise) keeps it.
        """
        spec = tool.spec
        return (spec.requires_approval or spec.permission in self.permissions
                or any(s.decides for s in stages if s is not self))

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        reason = self._reason(inv)
        if reason is None:
            return await call_next(inv)
        handler = inv.context.approver or inv.services.approval  # a call's own approver first
        if handler is None:
            return ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.APPROVAL_REQUIRED,
                f"this call needs human approval ({reason}); no approver is configured, so it did not run",
                reason=reason), repairs=inv.repairs)
        if not await self._ask(inv, handler, reason):
            return ToolOutcome.failure(inv.call.id, inv.name, ToolError.of(
                ErrorKind.APPROVAL_DENIED, f"a human declined this call to {inv.name}; do not retry it as is",
                reason=reason), repairs=inv.repairs)
        outcome = await call_next(inv.derive(context=inv.context.derive(approved=True)))
        return outcome.derive(meta={**outcome.meta, "approval": {"approved": True, "reason": reason}})

    async def _ask(self, inv: Invocation, handler: Callable[..., Any], reason: str) -> bool:
        call = ToolCall(id=inv.call.id, name=inv.name, arguments=dict(inv.arguments or {}))
        name = hook_name(handler)
        own = getattr(handler, "timeout", None)
        timeout = (float(own) + _GRACE if isinstance(own, int | float) and not isinstance(own, bool) and own > 0
                   else self.timeout)
        try:
            answer = await call_hook(inv, handler, (call, inv.context, reason), timeout)
        except _NoAnswer:
            log.warning("approval handler %s gave no answer for %s within %g s: denied", name, inv.name, timeout)
            return False
        except Exception:
            log.exception("approval handler %s failed for %s: denied", name, inv.name)
            return False
        if not approves(answer):
            if answer is not False:
                log.warning("approval handler %s answered %s for %s, which is not an explicit yes: denied", name,
                            type(answer).__name__, inv.name)
            return False
        return True
