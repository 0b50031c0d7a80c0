"""The SQLite journal (the default): a file in WAL mode, ``synchronous=FULL``, created owner-only.

A step's record is committed before the next step starts, so a process killed with SIGKILL loses nothing it
journaled. Writes run in a worker thread; one connection per journal, under a lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio

from toolrig.errors import WorkflowError
from toolrig.workflows._journal import Journal

__all__ = ["SqliteJournal"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workflow_runs (
    run_id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, document TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS workflow_runs_created ON workflow_runs (created);
CREATE TABLE IF NOT EXISTS workflow_steps (
    run_id TEXT NOT NULL, key TEXT NOT NULL, updated REAL NOT NULL, document TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
"""


def _encode(document: Mapping[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, default=str)


class SqliteJournal(Journal):
    """Runs journaled in a SQLite file (created, with its folders, on first use).

    Args:
        path: the database file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():  # owner-only from the start: it holds inputs and outputs
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def work() -> T:
            with self._lock:
                try:
                    return fn(self._connection())
                except (sqlite3.Error, OSError) as exc:
                    raise WorkflowError(f"the workflow journal {self.path} failed: {exc}") from None

        return await anyio.to_thread.run_sync(work)

    async def put_run(self, run_id: str, document: Mapping[str, Any], *, create: bool = False) -> None:
        text, now = _encode(document), time.time()

        def write(conn: sqlite3.Connection) -> None:
            if create:
                try:
                    conn.execute("INSERT INTO workflow_runs VALUES (?, ?, ?, ?)", (run_id, now, now, text))
                except sqlite3.IntegrityError:
                    raise WorkflowError(f"a run {run_id!r} is journaled already") from None
                return
            conn.execute("UPDATE workflow_runs SET updated = ?, document = ? WHERE run_id = ?", (now, text, run_id))

        await self._run(write)

    async def put_step(self, run_id: str, key: str, document: Mapping[str, Any]) -> None:
        text, now = _encode(document), time.time()
        await self._run(lambda conn: conn.execute(
            "INSERT INTO workflow_steps VALUES (?, ?, ?, ?) ON CONFLICT (run_id, key) DO UPDATE SET "
            "updated = excluded.updated, document = excluded.document", (run_id, key, now, text)))

    async def get(self, run_id: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        def read(conn: sqlite3.Connection) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
            row = conn.execute("SELECT document FROM workflow_runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            steps = conn.execute("SELECT key, document FROM workflow_steps WHERE run_id = ? ORDER BY updated",
                                 (run_id,)).fetchall()
            return json.loads(row[0]), {key: json.loads(doc) for key, doc in steps}

        return await self._run(read)

    async def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = await self._run(lambda conn: conn.execute(
            "SELECT document FROM workflow_runs ORDER BY created DESC LIMIT ?", (max(0, limit),)).fetchall())
        return [json.loads(r[0]) for r in rows]

    async def aclose(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SqliteJournal({str(self.path)!r})"
