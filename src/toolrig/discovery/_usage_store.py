"""Where a :class:`~toolrig.discovery.UsageLog` shares its events across processes (opened by
:func:`~toolrig.discovery.open_usage_store`).

A store is an append-only, bounded sequence of usage events (JSON objects) with a cursor: every process
appends what it records and reads what the others appended since its cursor. SQLite (a file path or
``sqlite:///path``) is the default; ``redis://`` / ``rediss://`` / ``unix://`` (a Redis stream) and
``postgresql://`` / ``postgres://`` (a table; the ``postgres`` extra) when configured. Each keeps at most
``max_events`` events, dropping the oldest.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["SqliteUsageStore", "UsageStore", "decode_event", "encode_event"]


@runtime_checkable
class UsageStore(Protocol):
    """A shared, bounded, append-only log of usage events."""

    max_events: int

    def append(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append events (JSON objects), oldest first."""
        ...

    def read(self, cursor: Any, limit: int) -> tuple[list[Mapping[str, Any]], Any]:
        """Up to ``limit`` events after ``cursor`` (None: the oldest kept), and the cursor after them."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def encode_event(event: Mapping[str, Any]) -> str:
    """One event as compact JSON."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def decode_event(text: str | bytes) -> Mapping[str, Any] | None:
    """One stored event, or None when it is not a well-formed event (a bad row is skipped, never fatal)."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("t"), str):
        return None
    return value


_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolrig_usage (id INTEGER PRIMARY KEY AUTOINCREMENT, event TEXT NOT NULL);
"""


class SqliteUsageStore:
    """Usage events in a SQLite file (WAL mode, created owner-only: queries may be private).

    Args:
        path: the database file (created, with its folders, on first use).
        max_events: events kept; older ones are deleted as new ones come.
    """

    def __init__(self, path: str | Path, *, max_events: int = 200_000) -> None:
        self.path = Path(path).expanduser()
        self.max_events = max_events
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._appended = 0

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def append(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append events; every 1,000 appended, drop what is past ``max_events``."""
        if not events:
            return
        with self._lock:
            conn = self._connection()
            conn.executemany("INSERT INTO toolrig_usage (event) VALUES (?)", [(encode_event(e),) for e in events])
            self._appended += len(events)
            if self._appended >= 1_000:
                self._appended = 0
                conn.execute("DELETE FROM toolrig_usage WHERE id <= (SELECT MAX(id) FROM toolrig_usage) - ?",
                             (self.max_events,))

    def read(self, cursor: Any, limit: int) -> tuple[list[Mapping[str, Any]], Any]:
        """Events after the row id ``cursor`` (None: the newest ``max_events``)."""
        with self._lock:
            conn = self._connection()
            if cursor is None:
                newest = conn.execute("SELECT COALESCE(MAX(id), 0) FROM toolrig_usage").fetchone()[0]
                cursor = max(0, int(newest) - self.max_events)
            rows = conn.execute("SELECT id, event FROM toolrig_usage WHERE id > ? ORDER BY id LIMIT ?",
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
        return f"SqliteUsageStore({str(self.path)!r})"
