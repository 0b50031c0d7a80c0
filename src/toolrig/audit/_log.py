"""Reading the audit log: :class:`AuditLog` (any process may read what a runtime wrote)."""

from __future__ import annotations

from pathlib import Path

from toolrig.audit._record import AuditRecord
from toolrig.audit._sinks import configured_audit_path, default_audit_path
from toolrig.audit._sqlite import Since, connect, query_records

__all__ = ["AuditLog"]


class AuditLog:
    """Read access to an audit database written by :class:`SqliteSink` (any process may read it).

    Args:
        path: the database file (default: the file a default runtime writes to, ``TOOLRIG_AUDIT`` included).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = configured_audit_path() or default_audit_path()
        self.path = Path(path).expanduser()

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
        """
        if not self.path.is_file():
            raise FileNotFoundError(f"no audit log at {self.path}")
        conn = connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return query_records(conn, tool=tool, user=user, kind=kind, since=since, limit=limit, agent=agent,
                                 session=session, call_id=call_id, status=status, run_id=run_id, until=until,
                                 text=text, offset=offset, summary=summary)
        finally:
            conn.close()

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"
