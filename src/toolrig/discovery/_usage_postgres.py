"""The PostgreSQL usage store: ``usage="postgresql://user@host/db"`` (``?table=NAME``, default ``toolrig_usage``).

One table of ``(id BIGSERIAL, event JSONB)``; a reader's cursor is the last id it read, and every 1,000
appends the rows past ``max_events`` are deleted. Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from toolrig.discovery._usage_store import decode_event, encode_event

__all__ = ["PostgresUsageStore"]


class PostgresUsageStore:
    """Usage events in a PostgreSQL table (see the module docstring).

    Args:
        url: a ``postgresql://`` URL (libpq syntax); ``?table=NAME`` picks the table.
        max_events: events kept.

    Raises:
        ValueError: a table name other than letters, digits and ``_``.
    """

    def __init__(self, url: str, *, max_events: int = 200_000) -> None:
        base, _, query = url.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        self.table = params.pop("table", "toolrig_usage")
        if not self.table.replace("_", "").isalnum():
            raise ValueError(f"usage table name {self.table!r}: use letters, digits and '_'")
        rest = "&".join(f"{k}={v}" for k, v in params.items())
        self.url = base + (f"?{rest}" if rest else "")
        self.max_events = max_events
        self._conn: Any = None
        self._lock = threading.Lock()
        self._appended = 0

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (id BIGSERIAL PRIMARY KEY, event JSONB NOT NULL)")
            self._conn = conn
        return self._conn

    def append(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append events in one statement."""
        if not events:
            return
        with self._lock:
            conn = self._connection()
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {self.table} (event) VALUES (%s::jsonb)",
                                [(encode_event(e),) for e in events])
            self._appended += len(events)
            if self._appended >= 1_000:
                self._appended = 0
                conn.execute(f"DELETE FROM {self.table} WHERE id <= (SELECT MAX(id) FROM {self.table}) - %s",
                             (self.max_events,))

    def read(self, cursor: Any, limit: int) -> tuple[list[Mapping[str, Any]], Any]:
        """Rows after the id ``cursor`` (None: the newest ``max_events``)."""
        with self._lock:
            conn = self._connection()
            if cursor is None:
                newest = conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {self.table}").fetchone()[0]
                cursor = max(0, int(newest) - self.max_events)
            rows = conn.execute(f"SELECT id, event::text FROM {self.table} WHERE id > %s ORDER BY id LIMIT %s",
                                (int(cursor), limit)).fetchall()
        out = [e for _, text in rows if (e := decode_event(text)) is not None]
        return out, (rows[-1][0] if rows else cursor)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"PostgresUsageStore(table={self.table!r})"


