"""``toolrig audit``: show the audit log, newest calls first, as a table or JSON.

Text from the log (arguments, error messages) comes from models and tools: it is shown through
:func:`toolrig.fencing.sanitize`, so control characters and ANSI/OSC escape sequences never reach
the terminal raw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from toolrig.audit import AuditLog, AuditRecord, configured_audit_path, default_audit_path
from toolrig.cli._common import fail, stdout
from toolrig.fencing import sanitize

__all__ = ["audit_command", "parse_since", "register"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str) -> datetime | timedelta:
    """``"15m"``, ``"2h"``, ``"7d"`` (back from now) or an ISO date/time.

    Raises:
        ValueError: neither form.
    """
    m = _DURATION.match(text)
    if m:
        return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2).lower()])
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text!r}: use a duration such as 30m, 2h, 7d or an ISO date/time") from None


def _clip(text: str, width: int) -> str:
    text = " ".join(sanitize(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(records: Sequence[AuditRecord]) -> Table:
    """The rows as a table that fits 80 columns (time, tool, user, kind, ms, detail); ``--json`` has everything."""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("time", no_wrap=True, min_width=8)
    table.add_column("tool", no_wrap=True, overflow="ellipsis", min_width=8, max_width=22)
    table.add_column("user", no_wrap=True, overflow="ellipsis", min_width=4, max_width=10)
    table.add_column("kind", no_wrap=True, overflow="ellipsis", min_width=9, max_width=17)
    table.add_column("ms", no_wrap=True, justify="right", min_width=5)
    table.add_column("error / arguments", overflow="ellipsis", no_wrap=True)
    today = datetime.now().date()
    for r in records:
        stamp = datetime.fromtimestamp(r.time)
        when = stamp.strftime("%H:%M:%S" if stamp.date() == today else "%m-%d %H:%M")
        tool = r.tool if r.version is None else f"{r.tool}@{r.version}"
        kind = r.kind or r.status
        style = "green" if kind == "ok" else "yellow" if kind == "started" else "red"
        detail = r.error if r.error else _arguments_text(r)
        detail = f"run {r.run_id} step {r.step_id}: {detail}" if r.run_id else detail
        table.add_row(when, Text(_clip(tool, 48)), Text(_clip(r.user or "-", 24)), Text(kind, style=style),
                      "-" if r.duration_ms is None else f"{r.duration_ms:.1f}", Text(_clip(detail, 300)))
    return table


def _arguments_text(record: AuditRecord) -> str:
    args = record.arguments
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


def audit_command(
    *,
    db: Annotated[Path | None, typer.Option(
        "--db", metavar="PATH", help="Audit database (default: TOOLRIG_AUDIT or the user data folder).")] = None,
    tool: Annotated[str | None, typer.Option("--tool", "-t", help="Only calls of this tool.")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only calls made for this user.")] = None,
    kind: Annotated[str | None, typer.Option(
        "--kind", "-k", help="Only this outcome: ok, or an error kind such as timeout or denied.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only calls made by this agent.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Only calls of this session.")] = None,
    run: Annotated[str | None, typer.Option("--run", help="Only the steps of this workflow run (its run id).")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Only calls since a duration back (30m, 2h, 7d) or an ISO date/time.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show at most N rows.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Show recorded tool calls, newest first."""
    path = db if db is not None else (configured_audit_path() or default_audit_path())
    try:
        since_value = None if since is None else parse_since(since)
    except ValueError as exc:
        fail(str(exc), code=2)
    try:
        records = AuditLog(path).query(tool=tool, user=user, kind=kind, agent=agent, session=session,
                                       since=since_value, limit=limit, run_id=run)
    except FileNotFoundError:
        fail(f"no audit log at {path} (calls are recorded there once a Runtime with audit on has run)")
    except Exception as exc:  # a locked, corrupt or foreign database
        fail(f"cannot read the audit log at {path}: {type(exc).__name__}: {exc}")
    if as_json:  # ASCII-only JSON: no control or bidi character reaches the terminal raw
        typer.echo(json.dumps([r.to_dict() for r in records], indent=2, ensure_ascii=True, default=str))
        return
    console = stdout()
    console.print(Text(f"audit log {path} ({len(records)} rows, newest first)"), overflow="fold")
    console.print(_table(records))


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""
    app.command("audit")(audit_command)
