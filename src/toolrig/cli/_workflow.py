"""``toolrig workflow check | run | resume | runs``: workflows from YAML / JSON files, run through the pipeline.

``run`` shows each step live (a table that fills in as steps start and end) and journals the run (default:
``TOOLRIG_JOURNAL`` or ``workflows.db`` in the user data folder), so a run that stopped — waiting for an
approval, interrupted, crashed — goes on with ``toolrig workflow resume RUN_ID``. Exit codes: 0 the run ended
ok, 1 it ended with an error, denied or cancelled, 3 it waits for an approval (``toolrig approvals``).
Text that comes from tools is shown through :func:`toolrig.fencing.sanitize`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.table import Table
from rich.text import Text

from toolrig.cli._common import fail, load_tools, print_json, stdout
from toolrig.fencing import sanitize

if TYPE_CHECKING:
    from toolrig.workflows import StepRun, WorkflowRun

__all__ = ["register"]

WAITING_EXIT = 3
"""Exit code of a run that waits for a person's approval."""

workflow_app = typer.Typer(name="workflow", help="Check, run and resume workflows (YAML or JSON files).",
                           no_args_is_help=True)

FromOpt = Annotated[str, typer.Option("--from", metavar="SOURCE",
                                      help="Where the tools are: a file, directory, module or module:attribute.")]
JournalOpt = Annotated[str | None, typer.Option(
    "--journal", metavar="PATH", help="The run journal: a SQLite path, redis:// or postgresql:// URL (default: "
                                      "TOOLRIG_JOURNAL or workflows.db in the user data folder).")]
QueueOpt = Annotated[str | None, typer.Option(
    "--queue", metavar="LOCATION", help="The approval queue waiting steps are filed in (default: TOOLRIG_APPROVALS "
                                        "or the user data folder).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
_STYLES = {"ok": "green", "error": "red", "denied": "red", "waiting_approval": "yellow", "skipped": "dim",
           "running": "cyan", "cancelled": "red"}


def _load(file: Path) -> Any:
    from toolrig.errors import DefinitionError
    from toolrig.workflows import load

    try:
        return load(file)
    except DefinitionError as exc:
        fail(str(exc))


def _registry(source: str) -> Any:
    from toolrig.registry import Registry

    registry = Registry()
    for tool in load_tools(source):
        registry.register(tool, replace=True)
    return registry


@workflow_app.command("check")
def check_command(file: Annotated[Path, typer.Argument(help="The workflow file (YAML or JSON).")],
                  source: FromOpt, as_json: JsonOpt = False) -> None:
    """Check a workflow against the tools before running it (exit 1 when there are problems)."""
    flow = _load(file)
    problems = flow.check(_registry(source))
    if as_json:
        print_json([{"step": p.step, "kind": p.kind, "message": p.message} for p in problems])
    elif problems:
        for problem in problems:
            typer.echo(sanitize(str(problem)))
    else:
        stdout().print(Text(f"{flow.name}: {len(flow.step_ids())} steps, no problems"))
    raise typer.Exit(1 if problems else 0)


class _Progress:
    """The live table of steps: each row filled in as its step starts and ends."""

    def __init__(self) -> None:
        self.rows: dict[str, list[str]] = {}
        self.started: dict[str, float] = {}
        self.live: Live | None = None

    def table(self) -> Table:
        table = Table(show_edge=False, pad_edge=False)
        for column in ("step", "tool", "status", "ms"):  # whole; the output or message gets what is left
            table.add_column(column, no_wrap=True, justify="right" if column == "ms" else "left")
        table.add_column("output / message", overflow="ellipsis")
        for key, (tool, status, ms, detail) in self.rows.items():
            table.add_row(Text(sanitize(key)), Text(sanitize(tool)), Text(status, style=_STYLES.get(status, "")),
                          ms, Text(" ".join(sanitize(detail)[:300].split()), no_wrap=True, overflow="ellipsis"))
        return table

    def __call__(self, key: str, tool: str | None, run: StepRun | None) -> None:
        if run is None:
            self.started[key] = time.perf_counter()
            self.rows[key] = [tool or "", "running", "", ""]
        elif tool is not None or key in self.rows:
            began = self.started.get(key)
            ms = "" if began is None or run.from_journal else f"{(time.perf_counter() - began) * 1000:.0f}"
            detail = run.message if run.status != "ok" else json.dumps(run.output, ensure_ascii=False, default=str)
            status = f"{run.status} (journal)" if run.from_journal else run.status
            self.rows[key] = [tool or "", status, ms, detail or ""]
        if self.live is not None:
            self.live.update(self.table(), refresh=True)


def _show(run: WorkflowRun, as_json: bool, progress: _Progress) -> None:
    if as_json:
        print_json(run.to_dict())
    else:
        console = stdout()
        console.print(progress.table())
        line = f"run {run.run_id} ({run.workflow}): {run.status}"
        if run.message:
            line += f" — {run.message}"
        console.print(Text(sanitize(line), style=_STYLES.get(run.status, "")))
        if run.status == "ok":
            console.print(Text(sanitize(json.dumps(run.output, ensure_ascii=False, default=str))))
    raise typer.Exit(0 if run.status == "ok" else WAITING_EXIT if run.status == "waiting_approval" else 1)


def _where(source: str) -> str:
    """``--from`` as a resume in another folder finds it: an existing path made absolute, a module name as is."""
    path = Path(source).expanduser()
    return str(path.resolve()) if path.exists() else source


def _journaled_source(run_id: str, journal: str | None) -> str:
    """The ``--from`` a run was started with, as its journal keeps it."""
    import anyio

    from toolrig.workflows import default_journal, open_journal

    async def read() -> str | None:
        opened = open_journal(journal or default_journal())
        assert opened is not None
        try:
            loaded = await opened.load(run_id)
        finally:
            await opened.aclose()
        return None if loaded is None else loaded[0].labels.get("tools")

    found = anyio.run(read)
    if not found:
        fail(f"run {run_id!r}: its journal does not say where its tools are; give --from SOURCE")
    return found


def _runtime(source: str, *, yes: bool, audit: Path | None, no_audit: bool) -> Any:
    from toolrig.runtime import Runtime

    approval = (lambda call, ctx, reason: True) if yes else None  # without --yes, asked steps wait in the queue
    try:
        return Runtime(_registry(source), audit=False if no_audit else audit, approval=approval)
    except (ValueError, OSError) as exc:
        fail(f"cannot start the runtime: {exc}")


async def _drive(work: Any, as_json: bool, progress: _Progress) -> Any:
    if as_json or not stdout().is_terminal:
        return await work(progress)
    with Live(progress.table(), console=stdout(), auto_refresh=False, transient=True) as live:
        progress.live = live
        return await work(progress)


@workflow_app.command("run")
def run_command(  # noqa: PLR0917 - typer maps each parameter to an option
    file: Annotated[Path, typer.Argument(help="The workflow file (YAML or JSON).")],
    source: FromOpt,
    inputs: Annotated[str, typer.Option("--inputs", metavar="JSON", help="The inputs, a JSON object.")] = "{}",
    journal: JournalOpt = None,
    queue: QueueOpt = None,
    user: Annotated[str | None, typer.Option("--user", help="User on whose behalf the steps run.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every step that needs approval.")] = False,
    audit: Annotated[Path | None, typer.Option("--audit", help="Audit database (default: the user data dir).")]
    = None,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="Do not write audit rows.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a workflow with a live view of its steps (exit 0 ok, 1 failed, 3 waiting for an approval)."""
    import anyio

    from toolrig import CallContext
    from toolrig.errors import ArgumentsError, WorkflowError
    from toolrig.workflows import default_journal

    flow = _load(file)
    try:
        values = json.loads(inputs)
    except json.JSONDecodeError as exc:
        fail(f"--inputs is not JSON: {exc}", code=2)
    if not isinstance(values, dict):
        fail("--inputs must be a JSON object", code=2)
    runtime = _runtime(source, yes=yes, audit=audit, no_audit=no_audit)
    progress = _Progress()

    async def work(watch: _Progress) -> Any:
        async with runtime:
            return await flow.run(runtime, values, context=CallContext(user=user, agent="toolrig-cli"),
                                  journal=journal or default_journal(), approvals=queue, watch=watch,
                                  labels={"tools": _where(source)})

    try:
        run = anyio.run(_drive, work, as_json, progress)
    except (ArgumentsError, WorkflowError) as exc:
        fail(str(exc))
    _show(run, as_json, progress)


@workflow_app.command("resume")
def resume_command(  # noqa: PLR0917 - typer maps each parameter to an option
    run_id: Annotated[str, typer.Argument(help="The run's id (printed by `toolrig workflow run`).")],
    source: Annotated[str | None, typer.Option(
        "--from", metavar="SOURCE", help="Where the tools are (default: what the run was started with).")] = None,
    journal: JournalOpt = None,
    queue: QueueOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every step that needs approval.")] = False,
    audit: Annotated[Path | None, typer.Option("--audit", help="Audit database (default: the user data dir).")]
    = None,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="Do not write audit rows.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Continue a journaled run: finished steps are not run again (exit codes as for run)."""
    import anyio

    from toolrig.errors import DefinitionError, WorkflowError
    from toolrig.workflows import resume

    try:
        tools = source or _journaled_source(run_id, journal)
    except WorkflowError as exc:
        fail(str(exc))
    runtime = _runtime(tools, yes=yes, audit=audit, no_audit=no_audit)
    progress = _Progress()

    async def work(watch: _Progress) -> Any:
        async with runtime:
            return await resume(runtime, run_id, journal=journal, approvals=queue, watch=watch)

    try:
        run = anyio.run(_drive, work, as_json, progress)
    except (WorkflowError, DefinitionError) as exc:
        fail(str(exc))
    _show(run, as_json, progress)


@workflow_app.command("runs")
def runs_command(journal: JournalOpt = None,
                 limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show at most N runs.")] = 20,
                 as_json: JsonOpt = False) -> None:
    """List the journal's runs, newest first."""
    import anyio

    from toolrig.errors import WorkflowError
    from toolrig.workflows import default_journal, open_journal

    async def read() -> list[Any]:
        opened = open_journal(journal or default_journal())
        assert opened is not None
        try:
            return await opened.runs(limit)
        finally:
            await opened.aclose()

    try:
        runs = anyio.run(read)
    except WorkflowError as exc:
        fail(str(exc))
    if as_json:
        print_json([{"run_id": r.run_id, "workflow": r.workflow, "status": r.status, "created": r.created,
                     "stopped_at": r.stopped_at, "message": r.message} for r in runs])
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("run", "workflow", "status", "started", "stopped at"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    for r in runs:
        table.add_row(r.run_id, Text(sanitize(r.workflow)), Text(r.status, style=_STYLES.get(r.status, "")),
                      time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created)), Text(sanitize(r.stopped_at or "")))
    stdout().print(table)


def register(app: typer.Typer) -> None:
    """Add the ``workflow`` command group."""
    app.add_typer(workflow_app)
