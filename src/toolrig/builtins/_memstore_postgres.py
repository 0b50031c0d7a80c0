"""Memories in PostgreSQL: ``postgresql://user@host/db`` (``?table=NAME``, default ``toolrig_memories``).

One table of JSONB documents keyed by (scope, id). ``add`` takes a transaction-scoped advisory lock on the
scope, counts and inserts, so concurrent writers (other replicas included) cannot overfill a scope. Needs the
``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from toolrig.builtins._memstore import MemoryRecord
from toolrig.errors import ConfigError, TransientError

__all__ = ["PostgresMemoryStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table} (
    scope TEXT NOT NULL, id TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, document JSONB NOT NULL,
    PRIMARY KEY (scope, id)
);
"""


class PostgresMemoryStore:
    """Memories in PostgreSQL (see the module docstring).

    Args:
        url: a ``postgresql://`` URL (libpq syntax); ``?table=NAME`` picks the table.

    Raises:
        ConfigError: a table name other than letters, digits and ``_``.
    """

    def __init__(self, url: str) -> None:
        base, _, query = url.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        self.table = params.pop("table", "toolrig_memories")
        if not self.table.replace("_", "").isalnum():
            raise ConfigError(f"memory table name {self.table!r}: use letters, digits and '_'")
        rest = "&".join(f"{k}={v}" for k, v in params.items())
        self.url = base + (f"?{rest}" if rest else "")
        self._conn: Any = None
        self._lock = threading.Lock()

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            conn.execute(_SCHEMA.format(table=self.table))
            self._conn = conn
        return self._conn

    async def _run(self, fn: Callable[[Any], T]) -> T:
        import psycopg

        def work() -> T:
            with self._lock:
                for attempt in (1, 2):  # a broken connection is reopened once
                    try:
                        return fn(self._connection())
                    except psycopg.OperationalError as exc:
                        self._conn = None
                        if attempt == 2:
                            raise TransientError(f"the PostgreSQL memory store failed: {exc}") from None
                    except psycopg.Error as exc:
                        raise TransientError(f"the PostgreSQL memory store failed: {exc}") from None
                raise AssertionError("unreachable")

        return await anyio.to_thread.run_sync(work)

    async def add(self, scope: str, record: MemoryRecord, *, max_count: int) -> bool:
        def write(conn: Any) -> bool:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.table}:{scope}",))
                (count,) = conn.execute(f"SELECT count(*) FROM {self.table} WHERE scope = %s", (scope,)).fetchone()
                if count >= max_count:
                    return False
                conn.execute(f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s)",
                             (scope, record.id, record.created, record.to_json()))
                return True

        return await self._run(write)

    async def all(self, scope: str) -> list[MemoryRecord]:
        rows = await self._run(lambda conn: conn.execute(
            f"SELECT document FROM {self.table} WHERE scope = %s ORDER BY created, id", (scope,)).fetchall())
        return [MemoryRecord.from_json(dict(r[0])) for r in rows]

    async def delete(self, scope: str, memory_id: str) -> bool:
        count = await self._run(lambda conn: conn.execute(
            f"DELETE FROM {self.table} WHERE scope = %s AND id = %s", (scope, memory_id)).rowcount)
        return bool(count)

    async def aclose(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"PostgresMemoryStore(table={self.table!r})"
