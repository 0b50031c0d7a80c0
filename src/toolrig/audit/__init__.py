"""The audit log: one row per tool call, written off the call path, queryable afterwards.

* :class:`AuditRecord`: one row.
* :class:`SqliteSink` / :class:`AuditLog`: write / query a SQLite file (WAL mode).
* :class:`AuditWriter`: the background thread that builds and writes rows in batches.
* :class:`AuditHealth`: whether rows reach the store; while they cannot, they wait (memory or the spill
  :class:`AuditJournal`) and calls are refused or go on, as ``on_failure`` says.
* :func:`open_sink`: reads ``Runtime(audit=...)`` (path, ``sqlite:///`` URL, sink, callable, False).

The pipeline stage is :class:`toolrig.runtime.stages._audit.AuditStage`.
"""

from __future__ import annotations

from toolrig.audit._health import ON_FAILURE, AuditHealth, OnFailure
from toolrig.audit._journal import AuditJournal
from toolrig.audit._log import AuditLog
from toolrig.audit._postgres import PostgresSink
from toolrig.audit._record import (
    COMPLETED,
    STARTED,
    AuditRecord,
    CallEntry,
    call_entry,
    fallback_record,
    new_row_id,
    started_record,
)
from toolrig.audit._sinks import (
    AUDIT_ENV,
    AuditSink,
    AuditTarget,
    CallableSink,
    configured_audit_path,
    default_audit_path,
    default_journal_path,
    open_sink,
)
from toolrig.audit._sqlite import Since, SqliteSink
from toolrig.audit._writer import AuditWriter

__all__ = [
    "AUDIT_ENV",
    "COMPLETED",
    "ON_FAILURE",
    "STARTED",
    "AuditHealth",
    "AuditJournal",
    "AuditLog",
    "AuditRecord",
    "AuditSink",
    "AuditTarget",
    "AuditWriter",
    "CallEntry",
    "CallableSink",
    "OnFailure",
    "PostgresSink",
    "Since",
    "SqliteSink",
    "call_entry",
    "configured_audit_path",
    "default_audit_path",
    "default_journal_path",
    "fallback_record",
    "new_row_id",
    "open_sink",
    "started_record",
]
