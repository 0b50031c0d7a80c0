"""Where audit rows go: the :class:`AuditSink` protocol and :func:`open_sink`, which reads ``Runtime(audit=...)``.

Accepted forms of ``audit``:

* ``None``: the ``TOOLRIG_AUDIT`` environment variable when set (a path, a ``sqlite:///`` URL, or
  ``off``), else ``platformdirs.user_data_dir("toolrig")/audit.db``;
* ``False`` (or ``"off"``): no audit;
* a path (``str`` or :class:`~pathlib.Path`) or a ``sqlite:///path`` URL (``sqlite:////abs/path`` for an
  absolute path, as in SQLAlchemy; ``sqlite:///:memory:`` for an in-memory database);
* a ``postgresql://user@host:port/db`` URL (``?table=NAME``; needs the ``postgres`` extra): one log shared by
  several processes;
* an object with ``write(records)`` (and optionally ``close()``): used as is;
* any other callable: called with each :class:`~toolrig.audit._record.AuditRecord`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, Union, cast, runtime_checkable

from toolrig.audit._record import AuditRecord
from toolrig.audit._sqlite import SqliteSink

__all__ = ["AUDIT_ENV", "AuditSink", "AuditTarget", "CallableSink", "configured_audit_path", "default_audit_path",
           "default_journal_path", "open_sink"]

AUDIT_ENV = "TOOLRIG_AUDIT"
"""Environment variable read when ``audit`` is None: a path, a ``sqlite:///`` URL, or ``off``."""

_OFF = frozenset({"off", "false", "0", "no", "none", "disabled"})


@runtime_checkable
class AuditSink(Protocol):
    """Receives batches of audit rows, from the writer thread (or a worker thread in strict mode)."""

    def write(self, records: Sequence[AuditRecord]) -> None:
        """Store ``records`` durably; a row with a known ``id`` completes the earlier row."""
        ...


AuditTarget = Union[None, bool, str, "os.PathLike[str]", AuditSink, Callable[[AuditRecord], object]]
"""What ``Runtime(audit=...)`` accepts (see the module docstring)."""


class CallableSink:
    """Adapts a function ``fn(record)`` to the :class:`AuditSink` protocol."""

    def __init__(self, fn: Callable[[AuditRecord], Any]) -> None:
        self.fn = fn

    def write(self, records: Sequence[AuditRecord]) -> None:
        for record in records:
            self.fn(record)

    def __repr__(self) -> str:
        return f"CallableSink({self.fn!r})"


def default_audit_path() -> Path:
    """``platformdirs.user_data_dir("toolrig")/audit.db``."""
    import platformdirs

    return Path(platformdirs.user_data_dir("toolrig", appauthor=False)) / "audit.db"


def configured_audit_path() -> Path | None:
    """The audit file a default runtime writes to: from ``TOOLRIG_AUDIT`` if set, else the default.

    None when ``TOOLRIG_AUDIT`` turns audit off or names no file (an in-memory database).
    """
    sink = open_sink(None)
    if isinstance(sink, SqliteSink) and sink.path != ":memory:":
        return Path(sink.path)
    return None


def default_journal_path(sink: AuditSink | None) -> Path | None:
    """Where rows wait while ``sink`` cannot be written, unless configured otherwise.

    A SQLite file's journal is beside it (``audit.db`` -> ``audit.db.spill.jsonl``); a PostgreSQL table's is
    in the user data folder (``audit-<table>.spill.jsonl``); other sinks (and ``:memory:``) have none.
    """
    from toolrig.audit._postgres import PostgresSink

    if isinstance(sink, SqliteSink):
        return None if sink.path == ":memory:" else Path(f"{sink.path}.spill.jsonl")
    if isinstance(sink, PostgresSink):
        return default_audit_path().parent / f"audit-{sink.table}.spill.jsonl"
    return None


def _from_string(target: str) -> AuditSink | None:
    text = target.strip()
    if text.lower() in _OFF:
        return None
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme.lower() in ("postgresql", "postgres"):
            from toolrig.audit._postgres import PostgresSink

            return PostgresSink(text)
        if scheme.lower() != "sqlite":
            raise ValueError(f"unsupported audit URL {target!r}: use a file path, sqlite:///path or postgresql://...")
        if not rest.startswith("/") or rest == "/":
            raise ValueError(f"audit URL {target!r} has no path: use sqlite:///relative.db or sqlite:////abs.db")
        return SqliteSink(rest[1:])
    if not text:
        raise ValueError("empty audit path")
    return SqliteSink(text)


def open_sink(audit: AuditTarget | Any) -> AuditSink | None:
    """The sink for a ``Runtime(audit=...)`` value (see the module docstring); None when audit is off.

    Raises:
        ValueError: an unsupported URL or an empty path.
        TypeError: a value of no accepted form.
    """
    if audit is False:
        return None
    if audit is None:
        env = os.environ.get(AUDIT_ENV)
        return _from_string(env) if env else SqliteSink(default_audit_path())
    if isinstance(audit, str):
        return _from_string(audit)
    if isinstance(audit, os.PathLike):
        return SqliteSink(os.fspath(audit))
    if callable(getattr(audit, "write", None)):
        return cast(AuditSink, audit)
    if callable(audit):
        return CallableSink(audit)
    raise TypeError(f"audit must be None, False, a path, a sqlite:/// URL, a sink or a callable; "
                    f"got {type(audit).__name__}")
