"""The SQLite audit log: :class:`SqliteSink` writes rows; :func:`query_records` reads them back.

The database runs in WAL mode with ``synchronous=NORMAL``: a committed row survives the death of
the process that wrote it (SIGKILL included), and readers never block the writer.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from toolrig.audit._record import AuditRecord
from toolrig.errors import ConfigError

__all__ = ["Since", "SqliteSink", "connect", "migrate", "query_records"]

Since = float | datetime | timedelta
"""A lower bound on the call time: epoch seconds, a datetime, or a timedelta back from now."""

SCHEMA_VERSION = 2
_COLUMNS = ("id", "call_id", "time", "user", "agent", "session", "tool", "version", "arguments", "decision",
            "status", "ok", "kind", "error", "duration_ms", "attempts", "repairs", "meta", "run_id", "step_id")
_ADDED = (("run_id", "TEXT"), ("step_id", "TEXT"))
_SEARCHED = ("tool", "arguments", "error", "user", "agent", "session", "call_id", "kind", "run_id")
"""The columns a full-text ``text`` filter looks in (a case-insensitive substring, for ASCII letters)."""
_SUMMARY = "id, call_id, time, tool, status, ok, kind, duration_ms"
"""The columns a ``summary`` query reads (enough for counts, error rates and latencies)."""
"""Columns added since version 1 (a log written by an older toolrig gains them when opened; old rows keep NULL)."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    call_id TEXT NOT NULL,
    time REAL NOT NULL,
    user TEXT, agent TEXT, session TEXT,
    tool TEXT NOT NULL, version TEXT,
    arguments TEXT, decision TEXT,
    status TEXT NOT NULL,
    ok INTEGER, kind TEXT, error TEXT,
    duration_ms REAL, attempts INTEGER, repairs TEXT, meta TEXT
);
CREATE INDEX IF NOT EXISTS audit_time ON audit (time);
CREATE INDEX IF NOT EXISTS audit_tool_time ON audit (tool, time);
CREATE INDEX IF NOT EXISTS audit_user_time ON audit (user, time);
CREATE INDEX IF NOT EXISTS audit_call_id ON audit (call_id);
"""
_UPDATED = [c for c in _COLUMNS if c not in ("id", "call_id", "time")]
_UPSERT = (f"INSERT INTO audit ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
           f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _UPDATED)}")


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode


def _dumps(value: Any) -> str | None:
    """``json.dumps(value, ensure_ascii=False, default=str)`` (one shared encoder), None for None."""
    return None if value is None else _ENCODE(value)


def _row(r: AuditRecord) -> tuple[Any, ...]:
    arguments = r.arguments_json if r.arguments_json is not None else _dumps(r.arguments)
    return (r.id, r.call_id, r.time, r.user, r.agent, r.session, r.tool, r.version, arguments,
            _dumps(r.decision), r.status, None if r.ok is None else int(r.ok), r.kind, r.error, r.duration_ms,
            r.attempts, _dumps(list(r.repairs)) if r.repairs else None, _dumps(dict(r.meta)) if r.meta else None,
            r.run_id, r.step_id)


def _record(row: sqlite3.Row) -> AuditRecord:
    def load(key: str) -> Any:
        raw = row[key]
        return None if raw is None else json.loads(raw)

    return AuditRecord(
        id=row["id"], call_id=row["call_id"], time=row["time"], user=row["user"], agent=row["agent"],
        session=row["session"], tool=row["tool"], version=row["version"], arguments=load("arguments"),
        decision=load("decision"), status=row["status"], ok=None if row["ok"] is None else bool(row["ok"]),
        kind=row["kind"], error=row["error"], duration_ms=row["duration_ms"], attempts=row["attempts"],
        repairs=tuple(load("repairs") or ()), meta=load("meta") or {},
        **{c: row[c] for c in _added(row)})


def _added(row: sqlite3.Row) -> list[str]:
    """The columns of :data:`_ADDED` a row has (a read-only log written by an older toolrig lacks them)."""
    names = set(row.keys())
    return [c for c, _ in _ADDED if c in names]


def _since_epoch(since: Since) -> float:
    if isinstance(since, timedelta):
        return time.time() - since.total_seconds()
    if isinstance(since, datetime):
        return since.timestamp()
    return float(since)


def query_records(conn: sqlite3.Connection, *, tool: str | None = None, user: str | None = None,
                  kind: str | None = None, since: Since | None = None, limit: int | None = 100,
                  agent: str | None = None, session: str | None = None, call_id: str | None = None,
                  status: str | None = None, run_id: str | None = None, until: Since | None = None,
                  text: str | None = None, offset: int = 0, summary: bool = False) -> list[AuditRecord]:
    """Rows matching every given filter, newest first (see :meth:`AuditLog.query`)."""
    where: list[str] = []
    params: list[Any] = []
    for column, value in (("tool", tool), ("user", user), ("kind", kind), ("agent", agent),
                          ("session", session), ("call_id", call_id), ("status", status), ("run_id", run_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        where.append("time >= ?")
        params.append(_since_epoch(since))
    if until is not None:
        where.append("time < ?")
        params.append(_since_epoch(until))
    if text:
        present = {row[1] for row in conn.execute("PRAGMA table_info(audit)")}
        searched = [c for c in _SEARCHED if c in present]
        where.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in searched) + ")")
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        params.extend([pattern] * len(searched))
    if run_id is not None and "run_id" not in {row[1] for row in conn.execute("PRAGMA table_info(audit)")}:
        return []  # a log no newer toolrig has written to: it holds no workflow steps
    sql = (f"SELECT {_SUMMARY if summary else '*'} FROM audit" + (f" WHERE {' AND '.join(where)}" if where else "")
           + " ORDER BY time DESC, seq DESC")
    if limit is not None or offset:
        sql += " LIMIT ? OFFSET ?"
        params.extend([-1 if limit is None else max(0, int(limit)), max(0, int(offset))])
    if summary:
        conn.row_factory = None
        return [AuditRecord(id=r[0], call_id=r[1], time=r[2], tool=r[3], status=r[4], ok=None if r[5] is None
                            else bool(r[5]), kind=r[6], duration_ms=r[7]) for r in conn.execute(sql, params)]
    conn.row_factory = sqlite3.Row
    return [_record(r) for r in conn.execute(sql, params)]


def migrate(conn: sqlite3.Connection) -> None:
    """Add the columns an older log lacks (:data:`_ADDED`), and their index."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(audit)")}
    for column, kind in _ADDED:
        if column not in present:
            conn.execute(f"ALTER TABLE audit ADD COLUMN {column} {kind}")
    conn.execute("CREATE INDEX IF NOT EXISTS audit_run_id ON audit (run_id)")


def connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(target, uri=uri, check_same_thread=False, isolation_level=None, timeout=10.0)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


class SqliteSink:
    """Writes audit rows to a SQLite file (created with its folders on first write).

    Thread-safe: the background writer and strict-mode writes share one connection under a lock.

    Args:
        path: the database file, or ``":memory:"`` (then query it through :meth:`query`).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = connect(self.path)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(_SCHEMA)
            migrate(conn)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._conn = conn
        return self._conn

    def check(self) -> None:
        """Open (creating) the database now, so a wrong path fails here and not in the writer thread.

        Raises:
            ConfigError: the file cannot be created or opened, saying why.
        """
        with self._lock:
            try:
                self._connection()
            except (OSError, sqlite3.Error) as exc:
                raise ConfigError(f"cannot open the audit log at {self.path}: {exc}") from None

    def write(self, records: Sequence[AuditRecord]) -> None:
        """Insert or complete rows in one transaction."""
        if not records:
            return
        rows = [_row(r) for r in records]
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(_UPSERT, rows)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except BaseException:
                # A full disk can leave the connection mid-transaction (its ROLLBACK or COMMIT failed too):
                # start from a fresh connection next time, so the log recovers when the disk does.
                self._conn = None
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
                raise

    def query(self, **filters: Any) -> list[AuditRecord]:
        """Query through this sink's own connection (the only way for ``":memory:"``)."""
        with self._lock:
            return query_records(self._connection(), **filters)

    def close(self) -> None:
        """Close the connection (reopened by the next write)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SqliteSink({self.path!r})"
