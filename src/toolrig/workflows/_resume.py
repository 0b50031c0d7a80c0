"""Resuming a journaled run: :func:`resume_workflow`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolrig._context import CallContext
from toolrig.errors import WorkflowError
from toolrig.workflows._engine import Execution, Watcher
from toolrig.workflows._gate import Gate
from toolrig.workflows._journal import Journal, JournalTarget, default_journal
from toolrig.workflows._journals import open_journal
from toolrig.workflows._run import FINAL, WorkflowRun
from toolrig.workflows._start import closing, context_from
from toolrig.workflows._workflow import Workflow

if TYPE_CHECKING:
    from toolrig.runtime import Runtime

__all__ = ["resume_workflow"]


async def resume_workflow(runtime: Runtime, run_id: str, *, workflow: Workflow | None = None,
                          journal: JournalTarget = None, context: CallContext | None = None,
                          approvals: Any = None, watch: Watcher | None = None) -> WorkflowRun:
    """Continue run ``run_id`` from its journal: no step that finished runs again.

    A step that started but has no outcome runs again only when its tool is idempotent; otherwise it waits for
    a person's approval. A step that waited for approval runs once approved in the queue, ends ``denied`` if it
    was declined, and keeps waiting otherwise. A run that had ended (ok, error, denied) is returned as it ended.

    Args:
        runtime: runs the remaining steps.
        run_id: the run.
        workflow: the workflow it runs (default: the definition the journal kept); it must be the same one.
        journal: the run's journal (default: ``TOOLRIG_JOURNAL`` or the default file of ``toolrig workflow``).
        context: who runs the rest (default: who started the run, as journaled).
        approvals: the approval queue (as for :func:`run_workflow`).
        watch: told of each step as it starts and ends.

    Raises:
        WorkflowError: no such run in the journal, a workflow other than the run's, or a journal that fails.
    """
    opened = open_journal(journal if journal is not None else default_journal())
    assert opened is not None
    gate = Gate(approvals, runtime.toolset)
    try:
        loaded = await opened.load(run_id)
        if loaded is None:
            raise WorkflowError(f"no run {run_id!r} in the journal {opened!r}")
        record, steps = loaded
        flow = workflow if workflow is not None else Workflow.from_dict(record.definition, f"run {run_id}")
        if flow.digest != record.digest:
            raise WorkflowError(f"run {run_id!r} was started with another definition of workflow "
                                f"{record.workflow!r} (digest {record.digest[:12]}, given {flow.digest[:12]}): resume "
                                "it with the same one")
        if record.status in FINAL and record.result is not None:
            return WorkflowRun.from_dict({**record.result, "inputs": record.inputs})
        execution = Execution(flow, runtime, record=record, context=context or context_from(record.context),
                              journal=opened, gate=gate, previous=steps, watch=watch)
        return await execution.go()
    finally:
        await closing(opened, not isinstance(journal, Journal), gate)
