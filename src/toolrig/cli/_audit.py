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
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from toolrig import ErrorKind
from toolrig.audit import AuditLog, AuditRecord
from toolrig.cli._common import fail, stdout
from toolrig.errors import ConfigError
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


_GAP = 2
"""Columns are separated by two spaces (one of padding each side)."""


def _row(record: AuditRecord, today: object) -> dict[str, Text]:
    stamp = datetime.fromtimestamp(record.time)
    when = stamp.strftime("%H:%M:%S" if stamp.date() == today else "%m-%d %H:%M")
    tool = record.tool if record.version is None else f"{record.tool}@{record.version}"
    kind = record.kind or record.status
    style = "green" if kind == "ok" else "yellow" if kind == "started" else "red"
    detail = record.error if record.error else _arguments_text(record)
    detail = f"run {record.run_id} step {record.step_id}: {detail}" if record.run_id else detail
    return {"time": Text(when), "tool": Text(" ".join(sanitize(tool).split())), "kind": Text(kind, style=style),
            "user": Text(_clip(record.user or "-", 24)),
            "ms": Text("-" if record.duration_ms is None else f"{record.duration_ms:.1f}"),
            "error / arguments": Text(_clip(detail, 300))}


_OPTIONAL = ("time", "ms", "user")
"""Shown when there is room, in this order; the tool and the outcome kind always, whole; the detail gets the rest."""
_ORDER = ("time", "tool", "user", "kind", "ms", "error / arguments")


def _table(records: Sequence[AuditRecord], width: int) -> Table:
    """The rows as a table of ``width`` columns: the tool (with its version) and the outcome kind whole, then as
    many of time, duration and user as fit, then the error or arguments cut to what is left. ``--json`` has all."""
    today = datetime.now().date()
    rows = [_row(r, today) for r in records]

    def need(name: str) -> int:
        return max([len(name), *(row[name].cell_len for row in rows)])

    chosen = {"tool": need("tool"), "kind": need("kind")}
    used = sum(chosen.values()) + _GAP
    for name in _OPTIONAL:
        wanted = min(need(name), 16) if name == "user" else need(name)
        if used + _GAP + wanted + _GAP + 20 <= width or (name == "time" and used + _GAP + wanted <= width):
            chosen[name] = wanted
            used += _GAP + wanted
    detail = width - used - _GAP
    if detail >= 8:
        chosen["error / arguments"] = detail
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=False)
    columns = [n for n in _ORDER if n in chosen]
    for name in columns:
        whole = name in ("tool", "kind")
        table.add_column(name, no_wrap=not whole, overflow="fold" if whole else "ellipsis",
                         justify="right" if name == "ms" else "left", min_width=chosen[name] if whole else None,
                         max_width=chosen[name])
    for row in rows:
        table.add_row(*(row[name] for name in columns))
    return table


def _arguments_text(record: AuditRecord) -> str:
    args = record.arguments
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


def audit_command(
    *,
    db: Annotated[str | None, typer.Option(
        "--db", metavar="PATH|URL",
        help="Audit database: a SQLite file or a postgresql:// URL (default: TOOLRIG_AUDIT or the user data "
             "folder).")] = None,
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
    audit_log = AuditLog(db)  # None: what a default runtime writes to (TOOLRIG_AUDIT, else the user data folder)
    shown = audit_log.location  # a URL's password is not shown
    try:
        since_value = None if since is None else parse_since(since)
    except ValueError as exc:
        fail(str(exc), code=2)
    kinds = ["ok", *(k.value for k in ErrorKind)]
    if kind is not None and kind not in kinds:  # a typo would show an empty table, as if nothing had failed
        fail(f"--kind {kind!r}: not an outcome; choose one of: {', '.join(kinds)}", code=2)
    try:
        records = audit_log.query(tool=tool, user=user, kind=kind, agent=agent, session=session,
                                  since=since_value, limit=limit, run_id=run)
    except FileNotFoundError:
        fail(f"no audit log at {shown} (calls are recorded there once a Runtime with audit on has run)")
    except ConfigError as exc:  # e.g. a postgresql:// log without the postgres extra
        fail(str(exc))
    except Exception as exc:  # a locked, corrupt or foreign database; a server that cannot be reached
        fail(f"cannot read the audit log at {shown}: {type(exc).__name__}: {' '.join(str(exc).split())}")
    if as_json:  # ASCII-only JSON: no control or bidi character reaches the terminal raw
        typer.echo(json.dumps([r.to_dict() for r in records], indent=2, ensure_ascii=True, default=str))
        return
    console = stdout()
    console.print(Text(f"audit log {shown} ({len(records)} rows, newest first)"), overflow="fold")
    console.print(_table(records, console.width))


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""
    app.command("audit")(audit_command)
