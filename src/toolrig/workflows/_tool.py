"""A workflow served as one tool (``toolrig serve``'s ``[workflows]``): :class:`WorkflowTool`.

The tool's input schema is the workflow's ``inputs``; calling it runs the workflow on the runtime it is bound
to, with the caller's context, so every step is still decided, approved, limited and audited as a call of its
own (an approval of the workflow call itself is not passed on to its steps). Its permission is the highest of
its steps' tools, its trust external when any step's tool is (or is unknown yet). A run that does not end
``ok`` fails the call, saying at which step and why (and, for a journaled run waiting for approval, how to
approve it and resume it).
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from toolrig._context import CallContext
from toolrig._frozen import thaw
from toolrig._schematool import SchemaTool
from toolrig._spec import Permission, Retry, Trust
from toolrig.errors import DefinitionError, ToolFailure
from toolrig.workflows._model import ToolStep, walk

if TYPE_CHECKING:
    from toolrig.runtime import Runtime
    from toolrig.toolsets import Toolset
    from toolrig.workflows._workflow import Workflow

__all__ = ["WorkflowTool", "WorkflowsTable", "workflow_tools"]

_ORDER = (Permission.READONLY, Permission.WRITE, Permission.DESTRUCTIVE, Permission.SYSTEM)


class WorkflowsTable(BaseModel):
    """``[workflows]`` of ``toolrig.toml``: workflow files served as tools.

    ``files`` are paths or glob patterns relative to the config file; ``journal`` journals served runs (a SQLite
    path relative to the config file, or a ``redis://`` / ``postgresql://`` URL) so they can be resumed.
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    files: list[str] = Field(default_factory=list)
    journal: str | None = None


def _traits(flow: Workflow, tools: Toolset | None) -> tuple[Permission, Trust]:
    """The highest permission of the workflow's tools, and external trust if any is external or unknown."""
    if tools is None:
        return Permission.WRITE, Trust.EXTERNAL
    found = [tools.get(s.tool) for s in walk(flow.steps) if isinstance(s, ToolStep)]
    known = [t for t in found if t is not None]
    permission = max((t.spec.permission for t in known), key=_ORDER.index, default=Permission.WRITE)
    external = len(known) < len(found) or any(t.spec.trust is Trust.EXTERNAL for t in known)
    return permission, Trust.EXTERNAL if external else Trust.INTERNAL


class WorkflowTool(SchemaTool):
    """``flow`` as one tool (see the module docstring).

    Args:
        flow: the workflow.
        runtime: the runtime its steps run on (or :meth:`bind` it later: a server's runtime includes this tool).
        tools: the tools its steps call, for its permission and trust (default: the runtime's).
        journal: where its runs are journaled (see :func:`toolrig.workflows.run_workflow`).
        approvals: the approval queue its waiting steps are filed in.
    """

    def __init__(self, flow: Workflow, runtime: Runtime | None = None, *, tools: Toolset | None = None,
                 journal: Any = None, approvals: Any = None) -> None:
        permission, trust = _traits(flow, tools if tools is not None else (
            runtime.toolset if runtime is not None else None))
        schema = thaw(flow.inputs) if flow.inputs is not None else {"type": "object"}
        super().__init__(name=flow.name, description=flow.description, input_schema=schema, handler=self._run,
                         permission=permission, trust=trust, retry=Retry(max_attempts=1), idempotent=False,
                         tags=frozenset({"workflow"}))
        self.flow = flow
        self.runtime = runtime
        self.journal = journal
        self.approvals = approvals

    def bind(self, runtime: Runtime) -> None:
        """Run the workflow's steps on ``runtime`` from now on."""
        self.runtime = runtime

    async def _run(self, values: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        if self.runtime is None:
            raise ToolFailure(f"workflow {self.flow.name!r} is not bound to a runtime")
        context = ctx.derive(call_id=None, tool_name=None, tool_version=None, approved=False, approver=None,
                             run_id=None, step_id=None)
        run = await self.flow.run(self.runtime, values, context=context, journal=self.journal,
                                  approvals=self.approvals)
        if run.status == "ok":
            return {"run_id": run.run_id, "status": run.status, "output": run.output}
        raise ToolFailure(f"workflow {self.flow.name!r} (run {run.run_id}) ended {run.status}"
                          + (f" at step {run.stopped_at!r}" if run.stopped_at else "")
                          + (f": {run.message}" if run.message else ""))


def workflow_tools(table: WorkflowsTable | Mapping[str, Any], base: Path, tools: Toolset | None = None
                   ) -> list[WorkflowTool]:
    """The tools of a ``[workflows]`` table, paths relative to ``base`` (unbound: :meth:`WorkflowTool.bind`).

    Raises:
        DefinitionError: a pattern that matches no file, a file that is not a valid workflow, two workflows with
            one name.
    """
    from toolrig.workflows._workflow import load

    section = table if isinstance(table, WorkflowsTable) else WorkflowsTable.model_validate(dict(table))
    journal = section.journal
    if journal is not None and "://" not in journal:
        journal = str(Path(journal).expanduser() if Path(journal).expanduser().is_absolute() else base / journal)
    out: list[WorkflowTool] = []
    for pattern in section.files:
        full = Path(pattern).expanduser()
        matches = sorted(glob.glob(str(full if full.is_absolute() else base / pattern)))
        if not matches:
            raise DefinitionError(f"[workflows] files: {pattern!r} matches no file (relative to {base})")
        out.extend(WorkflowTool(load(Path(m)), tools=tools, journal=journal) for m in matches)
    _unique(out)
    return out


def _unique(tools: Iterable[WorkflowTool]) -> None:
    seen: dict[str, str] = {}
    for tool in tools:
        if tool.name in seen:
            raise DefinitionError(f"[workflows]: two workflows are named {tool.name!r}")
        seen[tool.name] = tool.name
