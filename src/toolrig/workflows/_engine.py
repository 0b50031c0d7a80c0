"""Running a workflow: the steps in order, groups at once, each tool step one ``Runtime.call``.

:func:`run_workflow` starts a run, :func:`resume_workflow` continues one from its journal. Both drive an
:class:`Execution`, which walks the steps: a sequence in order (stopping at a step whose failure stops the
run), a parallel's branches as tasks (``fail_fast`` cancels the others at the first stopping failure;
``settled`` lets each finish), a branch's first true case, a foreach's items (at most ``max_concurrency`` at a
time). A failed step's ``on_error`` decides what follows: stop, continue, or its fallback step.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from jmespath.exceptions import JMESPathError

from toolrig._context import CallContext
from toolrig.workflows._gate import Gate
from toolrig.workflows._journal import Journal, RunRecord, StepRecord
from toolrig.workflows._model import BranchStep, ForeachStep, ParallelStep, SequenceStep, Step, ToolStep, walk
from toolrig.workflows._refs import Template, render, truthy
from toolrig.workflows._run import RunStatus, StepRun, WorkflowRun
from toolrig.workflows._scope import Result, Scope, namespace, worst
from toolrig.workflows._toolstep import run_tool_step

if TYPE_CHECKING:
    from toolrig.runtime import Runtime
    from toolrig.workflows._workflow import Workflow

__all__ = ["Execution", "Watcher", "new_run_id"]

Watcher = Callable[[str, str | None, StepRun | None], Any]
"""Told of each step: ``(key, tool, None)`` when a tool step's call starts, ``(key, tool or None, run)`` when a
step ends (e.g. a live progress view)."""

log = logging.getLogger("toolrig.workflows")

_STOPS = {"error": "error", "denied": "denied", "waiting_approval": "waiting_approval"}


def new_run_id() -> str:
    """A new run id: 16 random hex digits."""
    return secrets.token_hex(8)


class Execution:
    """One pass over a workflow's steps for one run (a first run, or a resume)."""

    def __init__(self, flow: Workflow, runtime: Runtime, *, record: RunRecord, context: CallContext,
                 journal: Journal | None, gate: Gate, previous: Mapping[str, StepRecord] | None = None,
                 watch: Watcher | None = None) -> None:
        self.flow = flow
        self.runtime = runtime
        self.record = record
        self.run_id = record.run_id
        self.inputs: Mapping[str, Any] = record.inputs
        self.context = context.derive(run_id=record.run_id)
        self.journal = journal
        self.gate = gate
        self.previous: Mapping[str, StepRecord] = previous or {}
        self.records: dict[str, StepRun] = {}
        self.watch = watch

    # -- what steps use ---------------------------------------------------------------------------------
    def data(self, scope: Scope) -> dict[str, Any]:
        """What references read in ``scope``."""
        return namespace(self.records, scope, self.inputs, {"id": self.run_id, "workflow": self.flow.name})

    def step_context(self, key: str) -> CallContext:
        """The call context of the step keyed ``key``."""
        return self.context.derive(step_id=key)

    def idempotent(self, tool: str) -> bool:
        """Whether ``tool`` says calling it twice does no more than once (``spec.idempotent``)."""
        found = self.runtime.toolset.get(tool)
        return bool(found is not None and found.spec.idempotent)

    async def journal_step(self, record: StepRecord) -> None:
        """Journal a step's start or outcome (nothing without a journal); never interrupted halfway."""
        if self.journal is not None:
            with anyio.CancelScope(shield=True):
                await self.journal.put_step_record(self.run_id, record)

    async def journal_run(self, **changes: Any) -> None:
        """Journal the run's new status."""
        self.record = replace(self.record, updated=time.time(), **changes)
        if self.journal is not None:
            with anyio.CancelScope(shield=True):
                await self.journal.update_run(self.record)

    # -- the run ----------------------------------------------------------------------------------------
    async def go(self) -> WorkflowRun:
        """Run every step (from the journal where they finished before), and journal how the run ended."""
        await self.journal_run(status="running", message=None, stopped_at=None)
        try:
            last, stop = await self._sequence(self.flow.steps, Scope())
        except anyio.get_cancelled_exc_class():
            await self.journal_run(status="cancelled", message="the run was cancelled")
            raise
        status: RunStatus = stop.halt if stop is not None and stop.halt is not None else "ok"
        output = last.run.output if status == "ok" and last is not None else None
        origin = stop.origin if stop is not None else None
        message = self.records[origin].message if origin in self.records else None
        self._skipped()
        run = WorkflowRun(run_id=self.run_id, workflow=self.flow.name, status=status, steps=self._ordered(),
                          output=output, inputs=self.inputs, stopped_at=origin, message=message,
                          journaled=self.journal is not None)
        summary = {k: v for k, v in run.to_dict().items() if k != "inputs"}
        await self.journal_run(status=status, output=output, message=message, stopped_at=origin, result=summary)
        return run

    def _skipped(self) -> None:
        """Steps that never ran (outside foreach items) are recorded as skipped."""
        for step in walk(self.flow.steps):
            if step.id not in self.records and self.flow.foreach_of(step.id) is None:
                self.records[step.id] = StepRun(id=step.id, step=step.id, status="skipped")

    def _ordered(self) -> dict[str, StepRun]:
        """The step runs in definition order (each foreach's items after it, in item order)."""
        position = {step_id: i for i, step_id in enumerate(self.flow.step_ids())}

        def order(key: str) -> list[tuple[int, int]]:
            out = []
            for part in key.split("/"):
                step_id, _, index = part.partition("[")
                out.append((position.get(step_id, len(position)), int(index[:-1]) if index[:-1].isdigit() else -1))
            return out

        return {key: self.records[key] for key in sorted(self.records, key=order)}

    def _keep(self, run: StepRun) -> StepRun:
        self.records[run.id] = run
        step = self.flow.step(run.step)
        self.notify(run.id, step.tool if isinstance(step, ToolStep) else None, run)
        return run

    def notify(self, key: str, tool: str | None, run: StepRun | None) -> None:
        """Tell the watcher (its failure is logged, never the run's)."""
        if self.watch is not None:
            try:
                self.watch(key, tool, run)
            except Exception:
                log.exception("the workflow watcher failed on step %s", key)

    # -- steps ------------------------------------------------------------------------------------------
    async def node(self, step: Step, scope: Scope, default: str = "stop") -> Result:
        """Run ``step``, then apply its ``on_error`` (``default`` when it has none) to a failure."""
        result = await self._kind(step, scope)
        if result.halt not in ("error", "denied"):
            return result
        policy = step.on_error if step.on_error is not None else default
        if policy == "continue":
            return Result(result.run)
        if isinstance(policy, str):
            return result
        fallback = await self.node(policy, scope)
        if fallback.run.status != "ok":
            return fallback
        recovered = self._keep(replace(result.run, output=fallback.run.output, recovered_by=fallback.run.id))
        return Result(recovered)

    async def _kind(self, step: Step, scope: Scope) -> Result:
        if isinstance(step, ToolStep):
            run = self._keep(await run_tool_step(self, step, scope))
            halt: RunStatus | None = "cancelled" if run.kind == "cancelled" else _STOPS.get(run.status)  # type: ignore[assignment]
            return Result(run, halt, run.id if halt else None)
        if isinstance(step, SequenceStep):
            last, stop = await self._sequence(step.steps, scope)
            return self._group(step, scope, stop, last.run.output if last is not None else None)
        if isinstance(step, ParallelStep):
            return await self._parallel(step, scope)
        if isinstance(step, BranchStep):
            return await self._branch(step, scope)
        return await self._foreach(step, scope)

    def _group(self, step: Step, scope: Scope, stop: Result | None, output: Any) -> Result:
        """The result of a group step from how its steps ended."""
        key = scope.key(step.id)
        if stop is None:
            return Result(self._keep(StepRun(id=key, step=step.id, status="ok", output=output)))
        status = "waiting_approval" if stop.halt == "waiting_approval" else (
            "denied" if stop.halt == "denied" else "error")
        message = stop.run.message or f"step {stop.origin!r} stopped it"
        run = self._keep(StepRun(id=key, step=step.id, status=status, kind=stop.run.kind, message=message))  # type: ignore[arg-type]
        return Result(run, stop.halt, stop.origin)

    def _failed(self, step: Step, scope: Scope, kind: str, message: str) -> Result:
        key = scope.key(step.id)
        return Result(self._keep(StepRun(id=key, step=step.id, status="error", kind=kind, message=message)),
                      "error", key)

    async def _sequence(self, steps: tuple[Step, ...], scope: Scope) -> tuple[Result | None, Result | None]:
        """Run steps in order: the last result, and the result that stopped them (None: none did)."""
        last = None
        for step in steps:
            last = await self.node(step, scope)
            if last.halt is not None:
                return last, last
        return last, None

    async def _parallel(self, step: ParallelStep, scope: Scope) -> Result:
        results: dict[str, Result] = {}
        default = "continue" if step.mode == "settled" else "stop"
        jobs = [(child.id, partial(self.node, child, scope, default)) for child in step.steps]
        await self._at_once(jobs, step.max_concurrency, results, fail_fast=step.mode == "fail_fast")
        for child in step.steps:
            if child.id not in results:  # cancelled by a failing sibling before it finished
                results[child.id] = Result(self._keep(StepRun(
                    id=scope.key(child.id), step=child.id, status="error", kind="cancelled",
                    message=f"cancelled: a sibling in parallel step {step.id!r} failed first")))
        output = {child.id: results[child.id].run.output for child in step.steps}
        return self._group(step, scope, worst(list(results.values())), output)

    async def _at_once(self, jobs: Sequence[tuple[str, Callable[[], Awaitable[Result]]]], limit: int | None,
                       results: dict[str, Result], *, fail_fast: bool) -> None:
        """Run jobs as tasks (at most ``limit`` at a time); with ``fail_fast`` the first that halts cancels the rest
        (a step waiting for approval does not: it is not a failure)."""
        gate = anyio.Semaphore(limit) if limit is not None else None
        async with anyio.create_task_group() as tg:
            async def job(name: str, work: Callable[[], Awaitable[Result]]) -> None:
                async with gate if gate is not None else contextlib.nullcontext():
                    result = await work()
                results[name] = result
                if fail_fast and result.halt in ("error", "denied", "cancelled"):
                    tg.cancel_scope.cancel()

            for name, work in jobs:
                tg.start_soon(job, name, work)

    async def _branch(self, step: BranchStep, scope: Scope) -> Result:
        data = self.data(scope)
        chosen: tuple[Step, ...] | None = None
        try:
            for case in step.cases:
                if truthy(case.condition.evaluate(data)):
                    chosen = case.steps
                    break
        except JMESPathError as exc:
            return self._failed(step, scope, "condition_error",
                                f"a condition of branch {step.id!r} failed: {' '.join(str(exc).split())}")
        taken = chosen if chosen is not None else step.otherwise
        last, stop = await self._sequence(taken, scope) if taken else (None, None)
        return self._group(step, scope, stop, last.run.output if last is not None else None)

    async def _foreach(self, step: ForeachStep, scope: Scope) -> Result:
        key = scope.key(step.id)
        try:
            source = step.source
            items = source.render(self.data(scope)) if isinstance(source, Template) else render(
                source, self.data(scope))
        except JMESPathError as exc:
            return self._failed(step, scope, "reference_error", f"the items of {key!r}: {' '.join(str(exc).split())}")
        if not isinstance(items, list):
            return self._failed(step, scope, "invalid_items",
                                f"the items of foreach {key!r} are {type(items).__name__}, not a list")
        if len(items) > step.max_items:
            return self._failed(step, scope, "too_many_items", f"foreach {key!r} got {len(items):,} items; "
                                f"its max_items is {step.max_items:,}")
        results: dict[str, Result] = {}
        jobs = [(str(i), partial(self.node, step.step, scope.inner(key, i, item))) for i, item in enumerate(items)]
        await self._at_once(jobs, step.max_concurrency, results, fail_fast=True)
        done = [results[str(i)] for i in range(len(items)) if str(i) in results]
        output = [results[str(i)].run.output if str(i) in results else None for i in range(len(items))]
        return self._group(step, scope, worst(done), output)
