"""Workflows: chains of tool calls as data — sequence, parallel, branch, foreach — run through the pipeline.

::

    from toolrig import workflows as wf

    flow = wf.Workflow("brief", steps=[
        wf.step("search", "search_places", query="${inputs.city}"),
        wf.parallel("details",
                    wf.step("weather", "get_weather", city="${inputs.city}"),
                    wf.step("events", "list_events", city="${inputs.city}"),
                    mode="settled"),
        wf.step("summary", "summarize", text="${steps.weather.output}"),
    ], inputs={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    run = await flow.run(runtime, inputs={"city": "Oslo"}, journal="runs.db")

* :class:`Workflow`, :func:`load` (YAML / JSON), and the step builders :func:`step`, :func:`sequence`,
  :func:`parallel`, :func:`branch`, :func:`foreach`.
* :meth:`Workflow.run` / :func:`run_workflow` → :class:`WorkflowRun`; :func:`resume` continues a journaled run.
* :meth:`Workflow.check` → a list of :class:`Problem` before running.
* Journals: :class:`Journal` (SQLite by default, Redis, PostgreSQL; :func:`open_journal`).
* :class:`WorkflowTool`: a workflow served as one tool.

References and conditions are JMESPath (``${steps.search.output.items[0].id}``); nothing in a workflow is
ever executed as code. See ``docs/workflows.md``.
"""

from __future__ import annotations

from toolrig.workflows._build import branch, foreach, parallel, sequence, step
from toolrig.workflows._check import Problem
from toolrig.workflows._engine import Watcher
from toolrig.workflows._journal import (
    JOURNAL_ENV,
    Journal,
    JournalTarget,
    RunRecord,
    StepRecord,
    default_journal,
    default_journal_path,
)
from toolrig.workflows._journals import open_journal
from toolrig.workflows._model import (
    BranchStep,
    Case,
    ForeachStep,
    OnError,
    ParallelMode,
    ParallelStep,
    SequenceStep,
    Step,
    ToolStep,
)
from toolrig.workflows._resume import resume_workflow
from toolrig.workflows._run import RunStatus, StepRun, StepStatus, WorkflowRun
from toolrig.workflows._start import run_workflow
from toolrig.workflows._tool import WorkflowsTable, WorkflowTool, workflow_tools
from toolrig.workflows._workflow import Workflow, load

resume = resume_workflow
"""``await resume(runtime, run_id, workflow=flow, journal=...)``: see :func:`resume_workflow`."""

__all__ = [
    "JOURNAL_ENV",
    "BranchStep",
    "Case",
    "ForeachStep",
    "Journal",
    "JournalTarget",
    "OnError",
    "ParallelMode",
    "ParallelStep",
    "Problem",
    "RunRecord",
    "RunStatus",
    "SequenceStep",
    "Step",
    "StepRecord",
    "StepRun",
    "StepStatus",
    "ToolStep",
    "Watcher",
    "Workflow",
    "WorkflowRun",
    "WorkflowTool",
    "WorkflowsTable",
    "branch",
    "default_journal",
    "default_journal_path",
    "foreach",
    "load",
    "open_journal",
    "parallel",
    "resume",
    "resume_workflow",
    "run_workflow",
    "sequence",
    "step",
    "workflow_tools",
]
