"""Reading a PostgreSQL audit table: the query behind ``AuditLog("postgresql://...")`` and ``PostgresSink.query``.

The same filters and order as the SQLite log (:func:`toolrig.audit._sqlite.query_records`): every filter an exact
match, ``since`` inclusive and ``until`` exclusive, ``text`` a substring of the searched columns (case-insensitive;
``%``, ``_`` and ``\\`` in it are literal), newest first, ``limit`` / ``offset`` for paging, ``summary`` for the
columns counts and latencies need. Reading runs no DDL: a role that may only ``SELECT`` can read the log.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from toolrig.audit._record import AuditRecord
from toolrig.audit._sqlite import Since, _since_epoch
from toolrig.errors import ConfigError

__all__ = ["COLUMNS", "is_postgres_url", "need_psycopg", "query_table", "record", "shown_url", "split_url"]

COLUMNS = ("id", "call_id", "time", "user_name", "agent", "session", "tool", "version", "arguments", "decision",
           "status", "ok", "kind", "error", "duration_ms", "attempts", "repairs", "meta", "run_id", "step_id")
_SUMMARY = ("id", "call_id", "time", "tool", "status", "ok", "kind", "duration_ms")
_FILTERS = {"tool": "tool", "user": "user_name", "kind": "kind", "agent": "agent", "session": "session",
            "call_id": "call_id", "status": "status", "run_id": "run_id"}
_SEARCHED = ("tool", "arguments::text", "error", "user_name", "agent", "session", "call_id", "kind", "run_id")
"""The SQLite log's searched columns, by their PostgreSQL names (``arguments`` is JSONB: searched as its text)."""


def is_postgres_url(target: object) -> bool:
    """``target`` is a ``postgresql://`` (or ``postgres://``) URL."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def split_url(url: str) -> tuple[str, str]:
    """``(libpq URL, table)`` of an audit URL: ``?table=NAME`` picks the table (default ``toolrig_audit``).

    Raises:
        ConfigError: a table name that is not letters, digits and ``_``.
    """
    base, _, query = url.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
    table = params.pop("table", "toolrig_audit")
    if not table or not table.replace("_", "").isalnum():
        raise ConfigError(f"audit table name {table!r}: use letters, digits and '_'")
    rest = "&".join(f"{k}={v}" for k, v in params.items())
    return base + (f"?{rest}" if rest else ""), table


def shown_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and ``repr``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def query_table(conn: Any, table: str, *, tool: str | None = None, user: str | None = None,
                kind: str | None = None, since: Since | None = None, limit: int | None = 100,
                agent: str | None = None, session: str | None = None, call_id: str | None = None,
                status: str | None = None, run_id: str | None = None, until: Since | None = None,
                text: str | None = None, offset: int = 0, summary: bool = False) -> list[AuditRecord]:
    """Rows of ``table`` matching every given filter, newest first (see :meth:`toolrig.audit.AuditLog.query`)."""
    values = {"tool": tool, "user": user, "kind": kind, "agent": agent, "session": session, "call_id": call_id,
              "status": status, "run_id": run_id}
    where = [f"{_FILTERS[k]} = %s" for k, v in values.items() if v is not None]
    params: list[Any] = [v for v in values.values() if v is not None]
    if since is not None:
        where.append("time >= %s")
        params.append(_since_epoch(since))
    if until is not None:
        where.append("time < %s")
        params.append(_since_epoch(until))
    if text:
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join(f"{c} ILIKE %s" for c in _SEARCHED) + ")")
        params.extend([pattern] * len(_SEARCHED))
    columns = _SUMMARY if summary else COLUMNS
    sql = (f"SELECT {', '.join(columns)} FROM {table}" + (f" WHERE {' AND '.join(where)}" if where else "")
           + " ORDER BY time DESC, seq DESC")
    if limit is not None:
        sql += " LIMIT %s"
        params.append(max(0, int(limit)))
    if offset:
        sql += " OFFSET %s"
        params.append(max(0, int(offset)))
    rows = conn.execute(sql, params).fetchall()
    if summary:
        return [AuditRecord(id=r[0], call_id=r[1], time=r[2], tool=r[3], status=r[4], ok=r[5], kind=r[6],
                            duration_ms=r[7]) for r in rows]
    return [record(row) for row in rows]


def record(row: Sequence[Any]) -> AuditRecord:
    """The :class:`AuditRecord` of one row of :data:`COLUMNS`."""
    (rid, call_id, time, user, agent, session, tool, version, arguments, decision, status, ok, kind, error,
     duration_ms, attempts, repairs, meta, run_id, step_id) = row
    return AuditRecord(id=rid, call_id=call_id, time=time, user=user, agent=agent, session=session, tool=tool,
                       version=version, arguments=arguments, decision=decision, status=status, ok=ok, kind=kind,
                       error=error, duration_ms=duration_ms, attempts=attempts, repairs=tuple(repairs or ()),
                       meta=meta or {}, run_id=run_id, step_id=step_id)


def need_psycopg() -> None:
    """Raise unless psycopg (the ``postgres`` extra) can be imported.

    Raises:
        ConfigError: it cannot, with the command that installs it (not a bare ``No module named 'psycopg'``).
    """
    if importlib.util.find_spec("psycopg") is None:
        raise ConfigError("a postgresql:// audit log needs psycopg: pip install 'toolrig[postgres]' "
                          "(or uv sync --extra postgres)")
