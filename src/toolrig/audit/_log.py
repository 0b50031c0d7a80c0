"""Reading the audit log: :class:`AuditLog` (any process may read what a runtime wrote, SQLite or PostgreSQL)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from toolrig.audit._pgread import is_postgres_url, need_psycopg, query_table, shown_url, split_url
from toolrig.audit._postgres import PostgresSink
from toolrig.audit._record import AuditRecord
from toolrig.audit._sinks import AUDIT_ENV, configured_audit_path, default_audit_path
from toolrig.audit._sqlite import Since, SqliteSink, connect, query_records

__all__ = ["AuditLog"]


class AuditLog:
    """Read access to an audit log written by :class:`SqliteSink` or :class:`PostgresSink` (any process may read it).

    Args:
        path: the SQLite file (default: the file a default runtime writes to, ``TOOLRIG_AUDIT`` included), or a
            ``postgresql://`` URL as ``Runtime(audit=...)`` and ``TOOLRIG_AUDIT`` take it (``?table=NAME``
            included). Reading PostgreSQL runs no DDL, so a role that may only ``SELECT`` the table can read it;
            needs the ``postgres`` extra.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.url: str | None = None
        """The PostgreSQL URL read (None: a SQLite file)."""
        self.table = "audit"
        if path is None and is_postgres_url(env := os.environ.get(AUDIT_ENV)):
            path = env  # what a default runtime writes to
        if is_postgres_url(path):
            assert isinstance(path, str)
            self.url, self.table = split_url(path)
            self.path: Path | None = None
            return
        if path is None:
            path = configured_audit_path() or default_audit_path()
        self.path = Path(path).expanduser()

    @classmethod
    def of_sink(cls, sink: Any) -> AuditLog | None:
        """The log ``sink`` writes, for reading (None: a sink of another kind, or SQLite in memory)."""
        if isinstance(sink, PostgresSink):
            return cls(f"{sink.url}{'&' if '?' in sink.url else '?'}table={sink.table}")
        if isinstance(sink, SqliteSink) and str(sink.path) != ":memory:":
            return cls(sink.path)
        return None

    @property
    def location(self) -> str:
        """Where the log is, for people: the file, or the URL (password as ``***``) and table."""
        if self.url is not None:
            return f"{shown_url(self.url)} (table {self.table})"
        return str(self.path)

    def exists(self) -> bool:
        """A SQLite log's file exists (a PostgreSQL log: True; reaching it is the query's to report)."""
        return self.url is not None or (self.path is not None and self.path.is_file())

    def query(self, *, tool: str | None = None, user: str | None = None, kind: str | None = None,
              since: Since | None = None, limit: int | None = 100, agent: str | None = None,
              session: str | None = None, call_id: str | None = None,
              status: str | None = None, run_id: str | None = None, until: Since | None = None,
              text: str | None = None, offset: int = 0, summary: bool = False) -> list[AuditRecord]:
        """Rows matching every given filter, newest first.

        Args:
            tool: tool name.
            user: the call context's user.
            kind: ``"ok"`` or an error kind such as ``"timeout"``.
            since: only calls at or after this time (epoch seconds, datetime, or timedelta back from now).
            limit: at most this many rows (None: all).
            agent: the call context's agent.
            session: the call context's session.
            call_id: the tool call id.
            status: ``"started"`` or ``"completed"``.
            run_id: the workflow run (:mod:`toolrig.workflows`) the calls were steps of.
            until: only calls before this time (as ``since``).
            text: only rows holding this text (a substring, case-insensitive for ASCII letters) in their tool,
                arguments, error, user, agent, session, call id, kind or run id.
            offset: skip this many rows first (paging, with ``limit``).
            summary: read only the id, call id, time, tool, status, ok, kind and duration of each row (the rest
                left empty): enough for counts, error rates and latencies, many times faster on large logs.

        Raises:
            FileNotFoundError: there is no audit database at ``path``.
            psycopg.Error: the PostgreSQL server cannot be reached, or refuses.
        """
        filters: dict[str, Any] = {"tool": tool, "user": user, "kind": kind, "since": since, "limit": limit,
                                   "agent": agent, "session": session, "call_id": call_id, "status": status,
                                   "run_id": run_id, "until": until, "text": text, "offset": offset,
                                   "summary": summary}
        if self.url is not None:
            need_psycopg()
            import psycopg

            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                return query_table(conn, self.table, **filters)
        assert self.path is not None
        if not self.path.is_file():
            raise FileNotFoundError(f"no audit log at {self.path}")
        db = connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return query_records(db, **filters)
        finally:
            db.close()

    def __repr__(self) -> str:
        if self.url is not None:
            return f"AuditLog({shown_url(self.url)!r}, table={self.table!r})"
        return f"AuditLog({str(self.path)!r})"
