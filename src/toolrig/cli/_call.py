"""``toolrig call``: run one tool call through the full pipeline and show the outcome.

The outcome is what a model would get: content (fenced, truncated, redacted as configured),
or a structured error. Exit code 0 when the call succeeded, 1 when it ended with an error.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from toolrig.cli._common import fail, load_tools, print_json, stdout
from toolrig.fencing import FENCE_TAG, sanitize

__all__ = ["call_command", "register", "shown_content"]


def _approver(yes: bool) -> Any:
    if yes:
        return lambda call, ctx, reason: True
    if not sys.stdin.isatty():
        return None  # no one to ask: the call ends approval_required

    def ask(call: Any, ctx: Any, reason: str) -> bool:
        return typer.confirm(f"Approve {call.name}({json.dumps(call.arguments)})? [{reason}]", default=False)

    return ask


_DELIMITER = re.compile(rf'</?{FENCE_TAG} id="[A-Za-z0-9]{{8,64}}"( tool="[^"]{{1,200}}")?>')


def shown_content(content: str) -> str:
    """``content`` for the terminal as a model reads it: the fence's own delimiter lines as they are (as ``--json``
    shows them), every other line sanitised (a payload's imitation of the fence was neutralised when it was
    fenced: only toolrig's own delimiters match)."""
    return "\n".join(line if _DELIMITER.fullmatch(line) else sanitize(line) for line in content.split("\n"))


def _panel(outcome: Any) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    kind = outcome.error.kind.value if outcome.error else "error"
    status = "[green]ok[/green]" if outcome.ok else f"[red]{kind}[/red]"
    grid.add_row("status", status)
    grid.add_row("call id", escape(outcome.call_id))
    grid.add_row("attempts", str(outcome.attempts))
    grid.add_row("duration", f"{outcome.duration_ms:.2f} ms")
    if outcome.truncated:
        grid.add_row("truncated", "yes")
    for repair in outcome.repairs:
        grid.add_row("repaired", escape(sanitize(repair)))
    if outcome.meta:
        grid.add_row("meta", escape(sanitize(json.dumps(outcome.meta, default=str))))
    grid.add_row("content", escape(shown_content(outcome.content)))
    return Panel(grid, title=escape(f"toolrig call {outcome.name}"), title_align="left",
                 border_style="green" if outcome.ok else "red")


def call_command(  # noqa: PLR0917 - typer maps each parameter to an option
    name: Annotated[str, typer.Argument(metavar="NAME", help="Tool name (name or name@version).")],
    source: Annotated[str, typer.Option(
        "--from", "-f", metavar="SOURCE", help="File, directory, module or module:attribute.")],
    args: Annotated[str, typer.Option(
        "--args", metavar="JSON", help="Arguments as a JSON object (repaired as a model's would be).")] = "{}",
    user: Annotated[str | None, typer.Option(
        "--user", metavar="USER", help="User on whose behalf the call runs.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve calls that need approval.")] = False,
    audit: Annotated[Path | None, typer.Option(
        "--audit", metavar="PATH", help="Audit database (default: the user data dir).")] = None,
    no_audit: Annotated[bool, typer.Option("--no-audit", help="Do not write an audit row.")] = False,
    state: Annotated[str, typer.Option("--state", metavar="STATE", help="'memory' or a redis:// URL.")] = "memory",
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Run NAME from SOURCE through the full pipeline and print the outcome."""
    from toolrig._calls import ToolCall
    from toolrig._context import CallContext
    from toolrig.registry import Registry
    from toolrig.runtime import Runtime

    registry = Registry()
    for tool in load_tools(source):
        registry.register(tool, replace=True)
    audit_target: Any = False if no_audit else audit
    try:
        runtime = Runtime(registry, audit=audit_target, state=state, approval=_approver(yes), allow_selectors=True)
    except (ValueError, OSError) as exc:
        fail(f"cannot start the runtime: {exc}")
    with runtime:
        outcome = runtime.call_sync(ToolCall(name=name, arguments=args), CallContext(user=user, agent="toolrig-cli"))
    if as_json:
        print_json(outcome.to_dict())
    else:
        stdout().print(_panel(outcome))
    raise typer.Exit(0 if outcome.ok else 1)


def register(app: typer.Typer) -> None:
    """Add ``toolrig call`` to ``app``."""
    app.command("call")(call_command)
