"""Stage: human approval for calls that need it.

A call needs approval when a hook or policy answered ``Decision.ask``, when the tool declares
``requires_approval=True``, or — secure by default — when its permission is ``destructive`` or
``system``. The runtime's approval handler (``Runtime(approval=...)``) is asked with the call (its
``context.tool_version`` names the version that would run); without one the call ends with
``approval_required``.

Only an explicit yes approves: ``True`` or ``Decision.allow``. What else a handler answers decides how the
call ends — never with a run:

* ``False`` (a person said no), ``Decision.deny(reason)`` (the handler refused, e.g. a request too large to
  show; its reason is passed on), or anything that is not an answer (``"no"``, ``None``) → ``approval_denied``;
* :class:`ApprovalTimeout` (nobody decided in time; it says how to approve, e.g. the queue's request id and
  command), or no answer within the stage's own deadline → ``approval_timeout``: not a refusal;
* an exception (an approver that failed, e.g. an unreachable queue) → ``approval_required``, saying the
  approver failed: nobody refused the call.

A handler that makes the caller wait tells it how to approve (the queue reports its request id and command
through ``context.report_progress``). A sync handler runs off the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolrig._calls import ToolCall
from toolrig._decision import Decision, approves
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._spec import Permission
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.runtime.stages._hooks import _NoAnswer, call_hook, hook_name

__all__ = ["ApprovalStage", "ApprovalTimeout"]

log = logging.getLogger("toolrig.approval")

_GRACE = 5.0


@dataclass(frozen=True, kw_only=True)
class ApprovalTimeout:
    """An approval handler's answer when nobody decided in time: the call ends ``approval_timeout``, not denied.

    Attributes:
        reason: what happened, e.g. ``"nobody approved request 3f2a9c within 300 s"``.
        how: how a person approves such a call, e.g. ``"toolrig approvals approve 3f2a9c"``.
        details: more for code and the audit log (``request_id`` ...).
    """

    reason: str
    how: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


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

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """A call that needs no approval passes synchronously; one that does is asked in the async form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        return (inv, None) if self._reason(inv) is None else None

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
        answer = await self._ask(inv, handler, reason)
        if not approves(answer):
            return ToolOutcome.failure(inv.call.id, inv.name, _refusal(inv.name, reason, answer),
                                       repairs=inv.repairs)
        outcome = await call_next(inv.derive(context=inv.context.derive(approved=True)))
        approval: dict[str, Any] = {"approved": True, "reason": reason}
        if isinstance(answer, Decision) and answer.reason:  # how the approver approved (e.g. a remembered approval)
            approval.update(by=answer.source, note=answer.reason)
        return outcome.derive(meta={**outcome.meta, "approval": approval})

    async def _ask(self, inv: Invocation, handler: Callable[..., Any], reason: str
                   ) -> bool | Decision | ApprovalTimeout | Exception:
        """True or an allow Decision with a reason (approved), False, a deny Decision, an ApprovalTimeout or the
        handler's exception."""
        call = ToolCall(id=inv.call.id, name=inv.name, arguments=dict(inv.arguments or {}))
        name = hook_name(handler)
        own = getattr(handler, "timeout", None)
        timeout = (float(own) + _GRACE if isinstance(own, int | float) and not isinstance(own, bool) and own > 0
                   else self.timeout)
        try:
            answer = await call_hook(inv, handler, (call, inv.context, reason), timeout)
        except _NoAnswer:
            log.warning("approval handler %s gave no answer for %s within %g s", name, inv.name, timeout)
            return ApprovalTimeout(reason=f"the approver ({name}) gave no answer within {timeout:g} s")
        except Exception as exc:
            log.exception("approval handler %s failed for %s: not run", name, inv.name)
            return exc
        if approves(answer):
            return answer if isinstance(answer, Decision) and answer.reason else True
        if isinstance(answer, ApprovalTimeout) or (isinstance(answer, Decision) and answer.denied):
            return answer
        if answer is not False:
            log.warning("approval handler %s answered %s for %s, which is not an explicit yes: denied", name,
                        type(answer).__name__, inv.name)
        return False


def _refusal(name: str, reason: str, answer: bool | Decision | ApprovalTimeout | Exception) -> ToolError:
    """The error of a call that was not approved, by what the approval handler answered."""
    if isinstance(answer, ApprovalTimeout):
        how = f" {answer.how}" if answer.how else ""
        return ToolError.of(ErrorKind.APPROVAL_TIMEOUT,
                            f"this call to {name} did not run: it needs a person's approval ({reason}) and "
                            f"{answer.reason}; nobody refused it.{how}",
                            reason=reason, waited=answer.reason, how=answer.how, **dict(answer.details))
    if isinstance(answer, Exception):
        return ToolError.of(ErrorKind.APPROVAL_REQUIRED,
                            f"this call to {name} needs a person's approval ({reason}), and the approver failed "
                            f"({type(answer).__name__}), so it did not run; nobody refused it",
                            reason=reason, approver_error=f"{type(answer).__name__}: {answer}"[:500])
    if isinstance(answer, Decision) and answer.reason:
        return ToolError.of(ErrorKind.APPROVAL_DENIED,
                            f"this call to {name} was not approved: {answer.reason}; do not retry it as is",
                            reason=reason, denied_by=answer.source, why=answer.reason)
    return ToolError.of(ErrorKind.APPROVAL_DENIED, f"a human declined this call to {name}; do not retry it as is",
                        reason=reason)
