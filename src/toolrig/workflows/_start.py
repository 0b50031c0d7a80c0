"""Starting a run and resuming one: :func:`run_workflow`, :func:`resume_workflow`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from toolrig._context import CallContext
from toolrig._frozen import thaw
from toolrig.errors import ArgumentsError
from toolrig.workflows._engine import Execution, Watcher, new_run_id
from toolrig.workflows._gate import Gate
from toolrig.workflows._journal import Journal, JournalTarget, RunRecord
from toolrig.workflows._journals import open_journal
from toolrig.workflows._run import WorkflowRun

if TYPE_CHECKING:
    from toolrig.runtime import Runtime
    from toolrig.workflows._workflow import Workflow

__all__ = ["checked_inputs", "closing", "context_from", "run_workflow"]


def checked_inputs(flow: Workflow, inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    values = dict(inputs or {})
    if flow.inputs is None:
        return values
    import jsonschema_rs

    validator = jsonschema_rs.validator_for(thaw(flow.inputs))
    try:
        errors = [{"loc": list(e.instance_path), "msg": e.message, "type": "inputs"}
                  for e in validator.iter_errors(values)]
    except (ValueError, TypeError) as exc:
        raise ArgumentsError(f"the inputs of workflow {flow.name!r} are not JSON data: {exc}") from None
    if errors:
        lines = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(inputs)'}: {e['msg']}" for e in errors)
        raise ArgumentsError(f"the inputs of workflow {flow.name!r} do not match its schema: {lines}", errors)
    return values


def _context_document(context: CallContext) -> dict[str, Any]:
    """Who ran it, as journaled (a resume without a context runs as them): identity, roles, JSON metadata."""
    metadata = {k: v for k, v in context.metadata.items() if isinstance(v, str | int | float | bool) or v is None}
    return {"user": context.user, "agent": context.agent, "session": context.session,
            "roles": sorted(context.roles), "metadata": metadata}


def context_from(document: Mapping[str, Any]) -> CallContext:
    return CallContext(user=document.get("user"), agent=document.get("agent"), session=document.get("session"),
                       roles=frozenset(document.get("roles") or ()), metadata=dict(document.get("metadata") or {}))


async def closing(journal: Journal | None, owned: bool, gate: Gate) -> None:
    with anyio.CancelScope(shield=True):
        await gate.aclose()
        if journal is not None and owned:
            await journal.aclose()


async def run_workflow(flow: Workflow, runtime: Runtime, inputs: Mapping[str, Any] | None = None, *,
                       context: CallContext | None = None, journal: JournalTarget = None, approvals: Any = None,
                       run_id: str | None = None, watch: Watcher | None = None,
                       labels: Mapping[str, str] | None = None) -> WorkflowRun:
    """Run ``flow`` on ``runtime``.

    Args:
        flow: the workflow.
        runtime: runs each tool step (``runtime.call``) through its whole pipeline.
        inputs: the inputs, checked against ``flow.inputs``.
        context: who runs it (each step's call context; it gains the run id and the step id).
        journal: where the run is journaled so it can be resumed: a SQLite path, a ``redis://`` or
            ``postgresql://`` URL, a :class:`~toolrig.workflows.Journal`; None: not journaled.
        approvals: the approval queue steps that wait for a person are filed in (a location, a store or an
            :class:`~toolrig.policy.ApprovalQueue`; default: ``TOOLRIG_APPROVALS`` or the user data folder).
        run_id: the run's id (default: a new random one).
        watch: told of each step as it starts and ends (see :data:`~toolrig.workflows.Watcher`).
        labels: strings kept with the run in its journal (e.g. where its tools come from, for a resume).

    Raises:
        ArgumentsError: the inputs do not match the workflow's input schema.
        WorkflowError: the journal cannot be opened or written, or holds a run with this id already.
    """
    values = checked_inputs(flow, inputs)
    context = context or CallContext()
    opened = open_journal(journal)
    now = time.time()
    record = RunRecord(run_id=run_id or new_run_id(), workflow=flow.name, definition=flow.to_dict(),
                       digest=flow.digest, inputs=values, context=_context_document(context), created=now, updated=now,
                       labels={str(k): str(v) for k, v in (labels or {}).items()})
    gate = Gate(approvals, runtime.toolset)
    try:
        if opened is not None:
            await opened.start_run(record)
        return await Execution(flow, runtime, record=record, context=context, journal=opened, gate=gate,
                               watch=watch).go()
    finally:
        await closing(opened, not isinstance(journal, Journal), gate)
