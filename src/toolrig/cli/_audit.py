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
from rich.markup import escape
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


def _tail(text: str, width: int) -> str:
    text = _clip(text, 200)
    return text if len(text) <= width else "…" + text[-(width - 1):]


def _table(records: Sequence[AuditRecord], db: Path) -> Table:
    table = Table(title=escape(f"audit log {db} ({len(records)} rows, newest first)"), title_justify="left")
    widths = {"time": 19, "tool": 8, "user": 4, "kind": 9, "ms": 3, "tries": 5, "call id": 14}
    for column, width in widths.items():
        table.add_column(column, no_wrap=True, min_width=width,
                         justify="right" if column in ("ms", "tries") else "left")
    table.add_column("error / arguments", overflow="fold", min_width=20)
    for r in records:
        when = datetime.fromtimestamp(r.time).isoformat(sep=" ", timespec="seconds")
        tool = r.tool if r.version is None else f"{r.tool}@{r.version}"
        kind = r.kind or r.status
        style = "green" if kind == "ok" else "yellow" if kind == "started" else "red"
        detail = r.error if r.error else _arguments_text(r)
        table.add_row(when, Text(_clip(tool, 48)), Text(_clip(r.user or "-", 24)), Text(kind, style=style),
                      "-" if r.duration_ms is None else f"{r.duration_ms:.1f}",
                      "-" if r.attempts is None else str(r.attempts), Text(_tail(r.call_id, 14)),
                      Text(_clip(detail, 160)))
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
                                       since=since_value, limit=limit)
    except FileNotFoundError:
        fail(f"no audit log at {path} (calls are recorded there once a Runtime with audit on has run)")
    except Exception as exc:  # a locked, corrupt or foreign database
        fail(f"cannot read the audit log at {path}: {type(exc).__name__}: {exc}")
    if as_json:  # ASCII-only JSON: no control or bidi character reaches the terminal raw
        typer.echo(json.dumps([r.to_dict() for r in records], indent=2, ensure_ascii=True, default=str))
        return
    stdout().print(_table(records, path))


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""
    app.command("audit")(audit_command)
