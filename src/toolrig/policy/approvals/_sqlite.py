"""The SQLite approval store: one file shared by every process on the machine (the default)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import anyio

from toolrig.policy.approvals._request import ApprovalRequest, Status

__all__ = ["SQLiteApprovalStore"]

T = TypeVar("T")

_COLUMNS = tuple(f.name for f in fields(ApprovalRequest))
_SCHEMA = """CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, version TEXT NOT NULL, arguments TEXT NOT NULL,
    binding TEXT NOT NULL, reason TEXT NOT NULL, user TEXT, agent TEXT, session TEXT,
    status TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL, decided REAL, decided_by TEXT,
    ttl REAL NOT NULL)"""
_GRANTS = """CREATE TABLE IF NOT EXISTS grants (
    key TEXT PRIMARY KEY, until REAL NOT NULL, request TEXT NOT NULL, decided_by TEXT)"""


class SQLiteApprovalStore:
    """Requests in a SQLite file; state changes are single conditional UPDATEs (atomic across processes).

    Waiting polls the file (every ``poll`` seconds): a human in another process has no other way to
    wake the waiter.
    """

    def __init__(self, path: str | Path, *, poll: float = 0.1) -> None:
        self.path = Path(path)
        self.poll = poll
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            db.execute(_GRANTS)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def work() -> T:
            with self._connect() as db:
                return fn(db)

        return await anyio.to_thread.run_sync(work)

    async def add(self, request: ApprovalRequest) -> None:
        values = tuple(getattr(request, c) for c in _COLUMNS)
        sql = f"INSERT INTO approvals ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        await self._run(lambda db: db.execute(sql, values))

    async def get(self, request_id: str) -> ApprovalRequest | None:
        rows = await self._run(lambda db: db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM approvals WHERE id = ?", (request_id,)).fetchall())
        return _request(rows[0]) if rows else None

    async def list(self, status: Status | None = None) -> list[ApprovalRequest]:
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        rows = await self._run(lambda db: db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM approvals {where} ORDER BY created", params).fetchall())
        return [_request(r) for r in rows]

    async def _update(self, sql: str, params: tuple[Any, ...]) -> bool:
        count = await self._run(lambda db: db.execute(sql, params).rowcount)
        return bool(count == 1)

    async def decide(self, request_id: str, approve: bool, by: str | None, now: float) -> bool:
        return await self._update(
            "UPDATE approvals SET status = ?, decided = ?, decided_by = ? "
            "WHERE id = ? AND status = 'pending' AND expires >= ?",
            ("approved" if approve else "denied", now, by, request_id, now))

    async def expire(self, request_id: str, now: float) -> bool:
        return await self._update("UPDATE approvals SET status = 'expired', decided = ? "
                                  "WHERE id = ? AND status = 'pending'", (now, request_id))

    async def consume(self, request_id: str, binding: str, now: float) -> bool:
        return await self._update(
            "UPDATE approvals SET status = 'used' WHERE id = ? AND status = 'approved' AND binding = ? "
            "AND decided + ttl >= ?", (request_id, binding, now))

    async def grant(self, key: str, until: float, request_id: str, by: str | None, now: float) -> None:
        await self._run(lambda db: db.execute(
            "INSERT OR REPLACE INTO grants (key, until, request, decided_by) VALUES (?, ?, ?, ?)",
            (key, until, request_id, by)))

    async def granted(self, key: str, now: float) -> str | None:
        rows = await self._run(lambda db: db.execute(
            "SELECT request FROM grants WHERE key = ? AND until >= ?", (key, now)).fetchall())
        return str(rows[0][0]) if rows else None

    async def wait(self, request_id: str, timeout: float) -> Status | None:
        request = await self.get(request_id)
        with anyio.move_on_after(timeout):
            while request is not None and request.status == "pending":
                await anyio.sleep(self.poll)
                request = await self.get(request_id)
        return request.status if request is not None else None

    async def aclose(self) -> None:
        return None


def _request(row: tuple[Any, ...]) -> ApprovalRequest:
    return ApprovalRequest(**dict(zip(_COLUMNS, row, strict=True)))
