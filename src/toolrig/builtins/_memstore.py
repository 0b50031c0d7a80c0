"""Where the memory tools keep memories: :class:`MemoryStore`, SQLite by default, Redis or PostgreSQL by URL.

Every memory belongs to a *scope* (the owner: a user and, by default, an agent; see
:mod:`toolrig.builtins._memory`). A store never returns one scope's memories for another: every read and
delete names the scope, and ids are random (a guessed id of someone else's memory finds nothing).
``add`` checks the scope's count and stores in one atomic step, so concurrent writers cannot overfill it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio
import platformdirs

from toolrig.errors import ToolFailure

__all__ = ["MemoryRecord", "MemoryStore", "SqliteMemoryStore", "default_memory_path"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryRecord:
    """One memory.

    Attributes:
        id: random, unique.
        text: what was remembered (secrets already redacted).
        tags: short labels given when it was remembered.
        created: Unix time it was stored.
    """

    id: str
    text: str
    tags: tuple[str, ...] = field(default_factory=tuple)
    created: float = 0.0

    def to_json(self) -> str:
        """The record as a JSON document (what the stores keep)."""
        return json.dumps({"id": self.id, "text": self.text, "tags": list(self.tags), "created": self.created},
                          ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes | dict[str, Any]) -> MemoryRecord:
        """A record from :meth:`to_json`'s document."""
        data = text if isinstance(text, dict) else json.loads(text)
        return cls(id=str(data["id"]), text=str(data["text"]), tags=tuple(map(str, data.get("tags") or ())),
                   created=float(data.get("created") or 0.0))


@runtime_checkable
class MemoryStore(Protocol):
    """Memories by scope. Failures raise :class:`toolrig.ToolFailure` (the call fails; nothing half-stored)."""

    async def add(self, scope: str, record: MemoryRecord, *, max_count: int) -> bool:
        """Store ``record`` unless ``scope`` holds ``max_count`` memories already (then False)."""
        ...

    async def all(self, scope: str) -> list[MemoryRecord]:
        """Every memory of ``scope``, oldest first."""
        ...

    async def delete(self, scope: str, memory_id: str) -> bool:
        """Delete one memory of ``scope``; False when ``scope`` has none with that id."""
        ...

    async def aclose(self) -> None:
        """Release connections (idempotent)."""
        ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    scope TEXT NOT NULL, id TEXT NOT NULL, created REAL NOT NULL, document TEXT NOT NULL, PRIMARY KEY (scope, id)
);
"""


class SqliteMemoryStore:
    """Memories in a SQLite file (WAL mode, created owner-only with its folders on first use).

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
            if not self.path.exists():  # owner-only from the start: memories are personal
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def work() -> T:
            with self._lock:
                try:
                    return fn(self._connection())
                except (sqlite3.Error, OSError) as exc:
                    raise ToolFailure(f"the memory store {self.path} failed: {exc}") from None

        return await anyio.to_thread.run_sync(work)

    async def add(self, scope: str, record: MemoryRecord, *, max_count: int) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            conn.execute("BEGIN IMMEDIATE")  # the count and the insert in one write transaction
            try:
                (count,) = conn.execute("SELECT count(*) FROM memories WHERE scope = ?", (scope,)).fetchone()
                if count >= max_count:
                    return False
                conn.execute("INSERT INTO memories VALUES (?, ?, ?, ?)",
                             (scope, record.id, record.created, record.to_json()))
                return True
            finally:
                conn.execute("COMMIT")

        return await self._run(write)

    async def all(self, scope: str) -> list[MemoryRecord]:
        rows = await self._run(lambda conn: conn.execute(
            "SELECT document FROM memories WHERE scope = ? ORDER BY created, id", (scope,)).fetchall())
        return [MemoryRecord.from_json(r[0]) for r in rows]

    async def delete(self, scope: str, memory_id: str) -> bool:
        count = await self._run(lambda conn: conn.execute(
            "DELETE FROM memories WHERE scope = ? AND id = ?", (scope, memory_id)).rowcount)
        return bool(count)

    async def aclose(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SqliteMemoryStore({str(self.path)!r})"


def default_memory_path() -> Path:
    """The default SQLite file: ``memory.sqlite3`` in the user's data folder for toolrig."""
    return Path(platformdirs.user_data_dir("toolrig")) / "memory.sqlite3"
