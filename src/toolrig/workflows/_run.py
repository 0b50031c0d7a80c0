"""What a run gives back: :class:`WorkflowRun`, with one :class:`StepRun` per step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolrig._outcome import ToolOutcome

__all__ = ["FINAL", "RunStatus", "StepRun", "StepStatus", "WorkflowRun"]

StepStatus = Literal["ok", "error", "skipped", "denied", "waiting_approval"]
RunStatus = Literal["ok", "error", "denied", "waiting_approval", "cancelled"]

FINAL: frozenset[str] = frozenset({"ok", "error", "denied"})
"""Run statuses that are the end: resuming such a run runs nothing. ``waiting_approval``, ``cancelled`` and a
run that stopped mid-way (a crash) can be resumed."""


@dataclass(frozen=True, kw_only=True)
class StepRun:
    """One step of a run.

    Attributes:
        id: the step's key in the run: its id, or ``<foreach id>[<index>]/<id>`` for each item of a foreach.
        step: the step's id in the workflow.
        status: ``"ok"``, ``"error"``, ``"skipped"``, ``"denied"`` or ``"waiting_approval"``.
        output: the structured result (else the text) of a tool step; a sequence's or branch's last step's; a
            parallel's ``{branch id: output}``; a foreach's list of outputs. None when the step did not succeed.
        outcome: the tool call's :class:`~toolrig.ToolOutcome` (tool steps that ran).
        kind: the error kind (``"denied"``, ``"timeout"``, ...) when the step did not succeed.
        message: why the step did not succeed, or what it waits for.
        approval: the approval queue's request id a waiting step waits for (``toolrig approvals approve ID``).
        recovered_by: the fallback step whose output stands in for this failed step's.
        from_journal: the step finished before the run was resumed (its outcome comes from the journal).
    """

    id: str
    step: str
    status: StepStatus
    output: Any = None
    outcome: ToolOutcome | None = None
    kind: str | None = None
    message: str | None = None
    approval: str | None = None
    recovered_by: str | None = None
    from_journal: bool = False

    def view(self) -> dict[str, Any]:
        """What references read as ``steps.<id>``: ``{"status", "output", "error": {"kind", "message"} | None}``."""
        error = None if self.status == "ok" or self.kind is None else {"kind": self.kind, "message": self.message}
        return {"status": self.status, "output": self.output, "error": error}

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"id": self.id, "step": self.step, "status": self.status, "output": self.output, "kind": self.kind,
                "message": self.message, "approval": self.approval, "recovered_by": self.recovered_by,
                "from_journal": self.from_journal,
                "outcome": None if self.outcome is None else self.outcome.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepRun:
        """The step run :meth:`to_dict` gave ``data`` for.

        Raises:
            ValueError: ``data`` is not that form.
        """
        outcome = data.get("outcome")
        return cls(id=str(data["id"]), step=str(data["step"]), status=data["status"], output=data.get("output"),
                   outcome=None if outcome is None else ToolOutcome.from_dict(outcome), kind=data.get("kind"),
                   message=data.get("message"), approval=data.get("approval"),
                   recovered_by=data.get("recovered_by"), from_journal=bool(data.get("from_journal")))


@dataclass(frozen=True, kw_only=True)
class WorkflowRun:
    """The result of running (or resuming) a workflow.

    Attributes:
        run_id: the run's id (audit rows of its steps carry it; ``resume`` takes it).
        workflow: the workflow's name.
        status: ``"ok"``, ``"error"``, ``"denied"``, ``"waiting_approval"`` or ``"cancelled"``.
        steps: every step by its key (see :attr:`StepRun.id`), steps that never ran as ``"skipped"``.
        output: the last step's output (None unless the run ended ``"ok"``).
        inputs: the inputs it ran with.
        stopped_at: the step that ended the run early (None when it ran to the end).
        message: why it stopped, or what it waits for (and how to go on).
        journaled: whether a journal holds the run (so it can be resumed).
    """

    run_id: str
    workflow: str
    status: RunStatus
    steps: Mapping[str, StepRun] = field(default_factory=dict)
    output: Any = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    stopped_at: str | None = None
    message: str | None = None
    journaled: bool = False

    @property
    def ok(self) -> bool:
        """The run ended ``"ok"``."""
        return self.status == "ok"

    @property
    def waiting(self) -> dict[str, str]:
        """Steps waiting for approval: step key → approval request id (or ``""`` when none could be filed)."""
        return {k: s.approval or "" for k, s in self.steps.items()
                if s.status == "waiting_approval" and (s.outcome is not None or s.approval is not None)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"run_id": self.run_id, "workflow": self.workflow, "status": self.status, "output": self.output,
                "stopped_at": self.stopped_at, "message": self.message, "journaled": self.journaled,
                "inputs": dict(self.inputs), "steps": {k: s.to_dict() for k, s in self.steps.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowRun:
        """The run :meth:`to_dict` gave ``data`` for.

        Raises:
            ValueError, KeyError: ``data`` is not that form.
        """
        steps = {str(k): StepRun.from_dict(v) for k, v in dict(data.get("steps") or {}).items()}
        return cls(run_id=str(data["run_id"]), workflow=str(data["workflow"]), status=data["status"], steps=steps,
                   output=data.get("output"), inputs=dict(data.get("inputs") or {}), stopped_at=data.get("stopped_at"),
                   message=data.get("message"), journaled=bool(data.get("journaled")))
