"""The PostgreSQL journal: ``journal="postgresql://user@host/db"`` (``?table=NAME`` names the tables' prefix).

Two tables, ``{table}_runs`` and ``{table}_steps`` (default ``toolrig_workflow``), of JSONB documents; every
write is one committed statement, awaited before the next step starts, so replicas share one journal and a run
started by one process can be resumed by another. Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import anyio

from toolrig.errors import WorkflowError
from toolrig.workflows._journal import Journal

__all__ = ["PostgresJournal"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table}_runs (
    run_id TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL,
    document JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS {table}_runs_created ON {table}_runs (created);
CREATE TABLE IF NOT EXISTS {table}_steps (
    run_id TEXT NOT NULL, key TEXT NOT NULL, updated DOUBLE PRECISION NOT NULL, document JSONB NOT NULL,
    PRIMARY KEY (run_id, key)
);
"""


class PostgresJournal(Journal):
    """Runs journaled in PostgreSQL (see the module docstring).

    Args:
        url: a ``postgresql://`` URL (libpq syntax); ``?table=NAME`` picks the tables' prefix.

    Raises:
        WorkflowError: a table name other than letters, digits and ``_``.
    """

    def __init__(self, url: str) -> None:
        base, _, query = url.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        self.table = params.pop("table", "toolrig_workflow")
        if not self.table.replace("_", "").isalnum():
            raise WorkflowError(f"journal table name {self.table!r}: use letters, digits and '_'")
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
                            raise WorkflowError(f"the PostgreSQL workflow journal failed: {exc}") from None
                    except psycopg.Error as exc:
                        raise WorkflowError(f"the PostgreSQL workflow journal failed: {exc}") from None
                raise AssertionError("unreachable")

        return await anyio.to_thread.run_sync(work)

    async def put_run(self, run_id: str, document: Mapping[str, Any], *, create: bool = False) -> None:
        text, now = json.dumps(document, ensure_ascii=False, default=str), time.time()
        if create:
            inserted = await self._run(lambda conn: conn.execute(
                f"INSERT INTO {self.table}_runs VALUES (%s, %s, %s, %s) ON CONFLICT (run_id) DO NOTHING",
                (run_id, now, now, text)).rowcount)
            if not inserted:
                raise WorkflowError(f"a run {run_id!r} is journaled already")
            return
        await self._run(lambda conn: conn.execute(
            f"UPDATE {self.table}_runs SET updated = %s, document = %s WHERE run_id = %s", (now, text, run_id)))

    async def put_step(self, run_id: str, key: str, document: Mapping[str, Any]) -> None:
        text, now = json.dumps(document, ensure_ascii=False, default=str), time.time()
        await self._run(lambda conn: conn.execute(
            f"INSERT INTO {self.table}_steps VALUES (%s, %s, %s, %s) ON CONFLICT (run_id, key) DO UPDATE SET "
            "updated = excluded.updated, document = excluded.document", (run_id, key, now, text)))

    async def get(self, run_id: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        def read(conn: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
            row = conn.execute(f"SELECT document FROM {self.table}_runs WHERE run_id = %s", (run_id,)).fetchone()
            if row is None:
                return None
            steps = conn.execute(f"SELECT key, document FROM {self.table}_steps WHERE run_id = %s ORDER BY updated",
                                 (run_id,)).fetchall()
            return dict(row[0]), {key: dict(doc) for key, doc in steps}

        return await self._run(read)

    async def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = await self._run(lambda conn: conn.execute(
            f"SELECT document FROM {self.table}_runs ORDER BY created DESC LIMIT %s", (max(0, limit),)).fetchall())
        return [dict(r[0]) for r in rows]

    async def aclose(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"PostgresJournal(table={self.table!r})"
