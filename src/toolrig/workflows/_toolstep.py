"""One tool step: its arguments resolved, its call made through the runtime, its start and outcome journaled.

A step that finished before a resume is not called again: its journaled outcome stands. A step that started
but has no outcome (the process died, or the call was cancelled) runs again only if its tool is idempotent;
otherwise it waits for a person's approval (see :mod:`toolrig.workflows._gate`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from jmespath.exceptions import JMESPathError

from toolrig._calls import ToolCall
from toolrig._outcome import ToolOutcome
from toolrig.redact import DEFAULT_REDACTOR
from toolrig.workflows._journal import StepRecord
from toolrig.workflows._model import ToolStep
from toolrig.workflows._refs import render
from toolrig.workflows._run import StepRun, StepStatus
from toolrig.workflows._scope import Scope

if TYPE_CHECKING:
    from toolrig.workflows._engine import Execution

__all__ = ["output_of", "run_tool_step", "status_of"]

_DENIED = frozenset({"denied", "approval_denied"})
_WAITING = frozenset({"approval_required", "approval_timeout"})


def status_of(outcome: ToolOutcome) -> StepStatus:
    """A call's outcome as a step status: ok, denied (a policy or a person said no), waiting_approval, error."""
    if outcome.ok:
        return "ok"
    kind = outcome.error.kind.value if outcome.error is not None else "execution_error"
    return "denied" if kind in _DENIED else "waiting_approval" if kind in _WAITING else "error"


def output_of(outcome: ToolOutcome) -> Any:
    """A successful call's output: its structured result, else its text (None for a failure)."""
    if not outcome.ok:
        return None
    structured = outcome.structured
    if structured is not None:
        return structured
    return outcome.result.text if outcome.result is not None else outcome.content


def _kind(outcome: ToolOutcome) -> str | None:
    if outcome.ok:
        return None
    return outcome.error.kind.value if outcome.error is not None else "execution_error"


def _from_record(step: ToolStep, record: StepRecord) -> StepRun:
    outcome = None
    if record.outcome is not None:
        try:
            outcome = ToolOutcome.from_dict(record.outcome)
        except (ValueError, TypeError):
            outcome = None
    return StepRun(id=record.key, step=step.id, status=record.status or "error",  # type: ignore[arg-type]
                   output=record.output, outcome=outcome, kind=record.kind, message=record.message,
                   approval=record.approval, recovered_by=record.recovered_by, from_journal=True)


async def run_tool_step(ex: Execution, step: ToolStep, scope: Scope) -> StepRun:
    """Run (or take from the journal) the tool step ``step`` in ``scope``."""
    key = scope.key(step.id)
    prior = ex.previous.get(key)
    if prior is not None and prior.state == "finished":
        return _from_record(step, prior)
    try:
        arguments = render(step.parsed, ex.data(scope))
    except (JMESPathError, ValueError, TypeError) as exc:
        return StepRun(id=key, step=step.id, status="error", kind="reference_error",
                       message=f"the arguments of step {key!r} cannot be resolved: {' '.join(str(exc).split())}")
    approver: Any = None
    if prior is not None:
        decided = await _decide(ex, step, key, prior, arguments)
        if isinstance(decided, StepRun):
            return decided
        approver = decided
    return await _call(ex, step, key, arguments, approver)


async def _decide(ex: Execution, step: ToolStep, key: str, prior: StepRecord, arguments: Mapping[str, Any]
                  ) -> StepRun | Any:
    """For a step the journal holds unfinished: the approver to run it with (None: just run it), or the StepRun
    it ends as now (waiting, denied)."""
    if prior.state == "started":
        if ex.idempotent(step.tool):
            return None
        return await _wait(ex, step, key, arguments, reason="in_doubt",
                           why=f"step {key!r} started before the run stopped and may have run; {step.tool!r} is not "
                           "idempotent, so it runs again only once a person approves")
    status = await ex.gate.status(prior.approval) if prior.approval else None
    if status == "pending":
        return StepRun(id=key, step=step.id, status="waiting_approval", kind=prior.kind, message=prior.message,
                       approval=prior.approval, from_journal=True)
    if status == "denied":
        run = StepRun(id=key, step=step.id, status="denied", kind="approval_denied",
                      message=f"a person declined step {key!r} in the approval queue (request {prior.approval})")
        await ex.journal_step(_record(key, step, "finished", arguments, run))
        return run
    if status == "approved" and prior.approval is not None:
        if prior.reason != "in_doubt":
            return ex.gate.approver(prior.approval)
        if await ex.gate.consume(prior.approval, step.tool, arguments):
            return ex.gate.approved_call(step.tool, arguments)
    why = str(prior.extra.get("why") or f"step {key!r} needs approval")  # filed again: expired, used, or lost
    return await _wait(ex, step, key, arguments, reason=prior.reason or "approval", why=why)


async def _wait(ex: Execution, step: ToolStep, key: str, arguments: Mapping[str, Any], *, reason: str, why: str
                ) -> StepRun:
    """The step waits for a person: filed in the queue when the run is journaled (else it cannot be resumed)."""
    request = None
    if ex.journal is not None:
        request = await ex.gate.file(step.tool, arguments, ex.step_context(key), why)
        message = (f"{why}. Approve it with `toolrig approvals approve {request}`, then resume the run with "
                   f"`toolrig workflow resume {ex.run_id}`")
    else:
        message = f"{why}. The run has no journal, so it cannot be resumed: run it with journal=... to resume it"
    kind = "in_doubt" if reason == "in_doubt" else "approval_required"
    run = StepRun(id=key, step=step.id, status="waiting_approval", kind=kind, message=message, approval=request)
    await ex.journal_step(_record(key, step, "waiting", arguments, run, reason=reason, why=why))
    return run


async def _call(ex: Execution, step: ToolStep, key: str, arguments: Mapping[str, Any], approver: Any) -> StepRun:
    call = ToolCall(id=f"{ex.run_id}:{key}", name=step.tool, arguments=dict(arguments))
    context = ex.step_context(key).derive(approver=approver)
    if step.description:  # what the step is for: the query a usage recorder learns from
        context = context.derive(metadata=MappingProxyType({**context.metadata, "query": step.description}))
    await ex.journal_step(StepRecord(key=key, state="started", tool=step.tool, call_id=call.id,
                                     arguments=DEFAULT_REDACTOR.value(dict(arguments)), time=time.time()))
    ex.notify(key, step.tool, None)
    outcome = await ex.runtime.call(call, context)
    status = status_of(outcome)
    kind = _kind(outcome)
    message = None if outcome.ok else (outcome.error.message if outcome.error is not None else outcome.content)
    run = StepRun(id=key, step=step.id, status=status, output=output_of(outcome), outcome=outcome, kind=kind,
                  message=message)
    if kind == "cancelled":  # the call may have run: the journal keeps it started (in doubt on resume)
        return run
    if status == "waiting_approval":
        waiting = await _wait(ex, step, key, arguments, reason="approval",
                              why=f"step {key!r} needs a person's approval ({message})")
        return StepRun(**{**_fields(run), "message": waiting.message, "approval": waiting.approval})
    await ex.journal_step(_record(key, step, "finished", arguments, run))
    return run


def _fields(run: StepRun) -> dict[str, Any]:
    return {name: getattr(run, name) for name in StepRun.__dataclass_fields__}


def _record(key: str, step: ToolStep, state: str, arguments: Mapping[str, Any], run: StepRun, *,
            reason: str | None = None, why: str | None = None) -> StepRecord:
    return StepRecord(key=key, state=state, tool=step.tool, call_id=run.outcome.call_id if run.outcome else "",
                      arguments=DEFAULT_REDACTOR.value(dict(arguments)), status=run.status, output=run.output,
                      outcome=None if run.outcome is None else run.outcome.to_dict(), kind=run.kind,
                      message=run.message, approval=run.approval, reason=reason, time=time.time(),
                      extra={} if why is None else {"why": why})
