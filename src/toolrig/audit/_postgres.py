"""The PostgreSQL audit log: :class:`PostgresSink`, for ``Runtime(audit="postgresql://...")``.

One table shared by every process that writes to it (gateway replicas behind a load balancer keep one
audit log). Rows are upserted by their id, as in SQLite: a row written before the call (strict mode) is
completed afterwards. Each batch is one transaction in the writer's thread; a committed row survives the
writer's death. A small batch is one pipelined ``executemany``; from :data:`COPY_FROM` rows on, the batch is
copied into a temporary table (``COPY``) and upserted from it by one statement, which costs the writer's
thread half to a third of the CPU per row. Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from toolrig.audit._pgread import COLUMNS as _COLUMNS
from toolrig.audit._pgread import need_psycopg, query_table, shown_url, split_url
from toolrig.audit._record import AuditRecord
from toolrig.audit._sqlite import Since
from toolrig.errors import ConfigError

__all__ = ["COPY_FROM", "PostgresSink"]

COPY_FROM = 64
"""Batches of this many rows or more are written by ``COPY`` (fewer: ``executemany``; measured in bench/README.md)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table} (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    call_id TEXT NOT NULL,
    time DOUBLE PRECISION NOT NULL,
    user_name TEXT, agent TEXT, session TEXT,
    tool TEXT NOT NULL, version TEXT,
    arguments JSONB, decision JSONB,
    status TEXT NOT NULL,
    ok BOOLEAN, kind TEXT, error TEXT,
    duration_ms DOUBLE PRECISION, attempts INTEGER, repairs JSONB, meta JSONB
);
CREATE INDEX IF NOT EXISTS {table}_time ON {table} (time);
CREATE INDEX IF NOT EXISTS {table}_tool_time ON {table} (tool, time);
CREATE INDEX IF NOT EXISTS {table}_user_time ON {table} (user_name, time);
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS run_id TEXT;
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS step_id TEXT;
CREATE INDEX IF NOT EXISTS {table}_run_id ON {table} (run_id);
"""
# run_id and step_id were added after the first schema: a table made before gains them (old rows keep NULL).


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


def _row(r: AuditRecord) -> tuple[Any, ...]:
    arguments = r.arguments_json if r.arguments_json is not None else _json(r.arguments)
    return (r.id, r.call_id, r.time, r.user, r.agent, r.session, r.tool, r.version, arguments, _json(r.decision),
            r.status, r.ok, r.kind, r.error, r.duration_ms, r.attempts,
            _json(list(r.repairs)) if r.repairs else None, _json(dict(r.meta)) if r.meta else None, r.run_id, r.step_id)


class PostgresSink:
    """Writes (and queries) audit rows in a PostgreSQL table.

    Args:
        url: a ``postgresql://user:password@host:port/database`` URL (libpq syntax); ``?table=NAME`` picks the
            table (default ``toolrig_audit``).
    """

    def __init__(self, url: str) -> None:
        need_psycopg()
        self.url, self.table = split_url(url)
        self._conn: Any = None
        self._lock = threading.Lock()
        columns = ", ".join(_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in ("id", "call_id", "time"))
        self._upsert = (f"INSERT INTO {self.table} ({columns}) VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
                        f"ON CONFLICT (id) DO UPDATE SET {updates}")
        self._copy = f"COPY toolrig_audit_batch ({columns}) FROM STDIN"
        self._merge = (f"INSERT INTO {self.table} ({columns}) SELECT {columns} FROM toolrig_audit_batch "
                       f"ON CONFLICT (id) DO UPDATE SET {updates}")

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            conn.execute(_SCHEMA.format(table=self.table))
            conn.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS toolrig_audit_batch ON COMMIT DELETE ROWS AS "
                         f"SELECT {', '.join(_COLUMNS)} FROM {self.table} WITH NO DATA")
            self._conn = conn
        return self._conn

    def check(self) -> None:
        """Connect (creating the table) now, so a wrong URL fails at start and not in the writer thread.

        Raises:
            ConfigError: the server cannot be reached or refuses, saying why (the password is not shown).
        """
        import psycopg

        with self._lock:
            try:
                self._connection()
            except psycopg.Error as exc:
                raise ConfigError(f"cannot open the PostgreSQL audit log: {exc}") from None

    def write(self, records: Sequence[AuditRecord]) -> None:
        """Insert or complete rows in one transaction (reconnecting once if the connection broke)."""
        if not records:
            return
        import psycopg

        rows = [_row(r) for r in records]
        with self._lock:
            for attempt in (1, 2):
                try:
                    conn = self._connection()
                    with conn.transaction(), conn.cursor() as cur:
                        if len(rows) < COPY_FROM:
                            cur.executemany(self._upsert, rows)
                        else:
                            with cur.copy(self._copy) as copy:
                                for row in _merged(rows):
                                    copy.write_row(row)
                            cur.execute(self._merge)
                    return
                except psycopg.OperationalError:
                    self._conn = None
                    if attempt == 2:
                        raise

    def query(self, *, tool: str | None = None, user: str | None = None, kind: str | None = None,
              since: Since | None = None, limit: int | None = 100, agent: str | None = None,
              session: str | None = None, call_id: str | None = None, status: str | None = None,
              run_id: str | None = None, until: Since | None = None, text: str | None = None, offset: int = 0,
              summary: bool = False) -> list[AuditRecord]:
        """Rows matching every given filter, newest first (the filters of :meth:`toolrig.audit.AuditLog.query`)."""
        with self._lock:
            return query_table(self._connection(), self.table, tool=tool, user=user, kind=kind, since=since,
                               limit=limit, agent=agent, session=session, call_id=call_id, status=status,
                               run_id=run_id, until=until, text=text, offset=offset, summary=summary)

    def close(self) -> None:
        """Close the connection (reopened by the next write)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"PostgresSink({shown_url(self.url)!r}, table={self.table!r})"


def _merged(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """One row per id, as upserting them in turn leaves it: the first's id, call_id and time, the last's rest.

    (One ``INSERT ... ON CONFLICT`` statement may not touch a row twice: a strict-mode row written before its
    call and completed after may both be in one batch.)
    """
    by_id: dict[Any, tuple[Any, ...]] = {}
    for row in rows:
        first = by_id.get(row[0])
        by_id[row[0]] = row if first is None else (*first[:3], *row[3:])
    return list(by_id.values())
