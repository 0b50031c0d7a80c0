"""The Workflows section: each workflow's graph, its runs, a run's view live, start and resume.

Runs are read from the workflows' journals (``[workflows] journal``, else the default journal of ``toolrig
workflow``), so a run started by an MCP client through ``toolrig serve`` shows as well as one started here. A
run's page follows ``/workflows/runs/{id}/events``, which names every change of the journaled run; runs started
or resumed here run in the console's task group, on the same runtime and approval queue.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from toolrig.console._backend import ConsoleBackend
from toolrig.console._forms import FilledForm, field_errors, form_arguments, form_fields
from toolrig.console._graph import render_graph
from toolrig.console._render import Pages
from toolrig.errors import ArgumentsError, WorkflowError
from toolrig.workflows import Journal, Workflow, default_journal, open_journal, resume_workflow, run_workflow

if TYPE_CHECKING:
    from toolrig.workflows import WorkflowTool

__all__ = ["WorkflowViews"]

POLL = 0.25
FINAL = ("ok", "error", "denied")


def _status(record: Any) -> str:
    if record.state == "started":
        return "running"
    return str(record.status or "")


class WorkflowViews:
    """Routes of the Workflows section.

    Args:
        spawn: starts a background task that outlives the request (the console's task group).
    """

    def __init__(self, backend: ConsoleBackend, pages: Pages, spawn: Callable[[Any], None]) -> None:
        self.backend = backend
        self.pages = pages
        self.spawn = spawn
        self.active: set[str] = set()
        """Runs this console is running now (never offered for resuming)."""

    def _spawn_run(self, run_id: str, run: Callable[[], Any]) -> None:
        async def tracked() -> None:
            self.active.add(run_id)
            try:
                await run()
            finally:
                self.active.discard(run_id)

        self.spawn(tracked)

    def _journal_of(self, flow: WorkflowTool) -> Any:
        return flow.journal if flow.journal is not None else default_journal()

    def _journals(self) -> list[Any]:
        seen: list[Any] = []
        for flow in self.backend.workflows:
            target = self._journal_of(flow)
            if target not in seen:
                seen.append(target)
        return seen

    async def _runs(self, workflow: str | None = None, limit: int = 50) -> list[tuple[Any, Any]]:
        out: list[tuple[Any, Any]] = []
        for target in self._journals():
            journal = open_journal(target)
            assert journal is not None
            try:
                out += [(r, target) for r in await journal.runs(limit * 4)
                        if workflow is None or r.workflow == workflow]
            except WorkflowError:
                continue
            finally:
                await journal.aclose()
        return sorted(out, key=lambda pair: -pair[0].created)[:limit]

    async def _load(self, run_id: str) -> tuple[Any, dict[str, Any], Any] | None:
        for target in self._journals():
            journal: Journal | None = open_journal(target)
            assert journal is not None
            try:
                found = await journal.load(run_id)
            finally:
                await journal.aclose()
            if found is not None:
                return found[0], found[1], target
        return None

    async def index(self, request: Request) -> Response:
        """``GET /workflows``: every workflow with its graph, and the newest runs."""
        flows = [{"tool": f, "graph": render_graph(f.flow.steps, name=f.name)} for f in self.backend.workflows]
        return self.pages.html(request, "workflows.html", section="Workflows", flows=flows,
                               runs=[r for r, _ in await self._runs()])

    async def detail(self, request: Request) -> Response:
        """``GET /workflows/{name}``: the graph, a form for its inputs, its runs."""
        flow = self.backend.workflow(request.path_params["name"])
        if flow is None:
            return self.pages.html(request, "missing.html", status=404, section="Workflows", what="workflow")
        form = FilledForm(fields=form_fields(flow.spec.input_schema))
        return self.pages.html(request, "workflow.html", section="Workflows", flow=flow, form=form,
                               graph=render_graph(flow.flow.steps, name=flow.name),
                               runs=[r for r, _ in await self._runs(flow.name)])

    async def start(self, request: Request) -> Response:
        """``POST /workflows/{name}/run``: check the inputs, start a run in the background, go to its view."""
        flow = self.backend.workflow(request.path_params["name"])
        if flow is None:
            return self.pages.html(request, "missing.html", status=404, section="Workflows", what="workflow")
        values = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        fields = form_fields(flow.spec.input_schema)
        form = FilledForm(fields=fields, values=values)
        inputs, problem = form_arguments(fields, values)
        if problem is None:
            try:
                inputs = flow.validate(inputs)
            except ArgumentsError as exc:
                form.errors, form.loose = field_errors(exc.errors, fields)
                form.loose = form.loose or ([] if form.errors else [str(exc)])
        else:
            form.loose = [problem]
        if form.errors or form.loose:
            return self.pages.html(request, "workflow_form.html", status=_invalid(request), flow=flow, form=form)
        run_id = secrets.token_hex(8)
        journal = self._journal_of(flow)
        started = anyio.Event()

        async def go() -> None:
            await run_workflow(flow.flow, self.backend.runtime, inputs, context=self.backend.context(),
                               journal=journal, approvals=self.backend.approvals, run_id=run_id,
                               watch=lambda *_: started.set())

        self._spawn_run(run_id, go)
        with anyio.move_on_after(5):  # the run is journaled before its first step starts
            await started.wait()
        return Response(status_code=204, headers={"HX-Redirect": f"/workflows/runs/{run_id}"})

    async def _view(self, run_id: str) -> dict[str, Any] | None:
        found = await self._load(run_id)
        if found is None:
            return None
        record, steps, _ = found
        flow = Workflow.from_dict(record.definition, f"run {run_id}")
        statuses = {key: _status(step) for key, step in steps.items()}
        return {"record": record, "steps": steps, "statuses": statuses,
                "graph": render_graph(flow.steps, statuses, name=record.workflow),
                "resumable": record.status not in FINAL and run_id not in self.active}

    async def run(self, request: Request) -> Response:
        """``GET /workflows/runs/{id}``: the run's graph lit by step status, each step's arguments and output."""
        view = await self._view(request.path_params["id"])
        if view is None:
            return self.pages.html(request, "missing.html", status=404, section="Workflows", what="workflow run")
        fragment = request.headers.get("hx-request") and not request.headers.get("hx-history-restore-request")
        template = "run_view.html" if fragment else "run.html"
        return self.pages.html(request, template, section="Workflows", **view)

    async def events(self, request: Request) -> Response:
        """``GET /workflows/runs/{id}/events``: a ``changed`` event whenever the journaled run changes."""
        run_id = request.path_params["id"]

        async def stream() -> AsyncIterator[dict[str, str]]:
            last = None
            while True:
                found = await self._load(run_id)
                state = None if found is None else json.dumps(
                    [found[0].to_dict(), {k: v.to_dict() for k, v in found[1].items()}], default=str, sort_keys=True)
                if state != last:
                    last = state
                    yield {"event": "changed", "data": run_id}
                await anyio.sleep(POLL)

        return EventSourceResponse(stream(), ping=15)

    async def resume(self, request: Request) -> Response:
        """``POST /workflows/runs/{id}/resume``: go on with a run that waits (for approval) or stopped."""
        run_id = request.path_params["id"]
        found = await self._load(run_id)
        if found is None:
            return self.pages.html(request, "missing.html", status=404, section="Workflows", what="workflow run")
        record, _, target = found
        flow = self.backend.workflow(record.workflow)

        async def go() -> None:
            await resume_workflow(self.backend.runtime, run_id, workflow=None if flow is None else flow.flow,
                                  journal=target, approvals=self.backend.approvals)

        if run_id in self.active:
            return Response(status_code=204, headers={"HX-Redirect": f"/workflows/runs/{run_id}"})
        self._spawn_run(run_id, go)
        return Response(status_code=204, headers={"HX-Redirect": f"/workflows/runs/{run_id}"})



def _invalid(request: Request) -> int:
    """422 for a form that does not validate; 200 for htmx, which shows the form with its errors (a browser logs
    every 4xx answer to a script as an error)."""
    return 200 if request.headers.get("hx-request") else 422
