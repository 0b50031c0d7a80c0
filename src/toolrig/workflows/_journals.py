"""Opening a journal from what ``journal=`` was given: :func:`open_journal`."""

from __future__ import annotations

from pathlib import Path

from toolrig.errors import WorkflowError
from toolrig.workflows._journal import Journal

__all__ = ["open_journal"]


def open_journal(target: str | Path | Journal | None) -> Journal | None:
    """A journal from a path (SQLite), ``sqlite:///path``, ``redis://`` / ``rediss://``, ``postgresql://`` /
    ``postgres://`` URL, a :class:`Journal`, or None (no journal).

    Raises:
        WorkflowError: a URL of another kind, or a journal that cannot be opened.
    """
    if target is None or isinstance(target, Journal):
        return target
    text = str(target)
    if text.startswith(("redis://", "rediss://", "unix://")):
        from toolrig.workflows._journal_redis import RedisJournal

        return RedisJournal(text)
    if text.startswith(("postgresql://", "postgres://")):
        from toolrig.workflows._journal_postgres import PostgresJournal

        return PostgresJournal(text)
    if "://" in text and not text.startswith("sqlite:///"):
        scheme = text.split("://", maxsplit=1)[0]
        raise WorkflowError(f"journal {scheme}://...: use a file path, sqlite:///, redis:// or postgresql://")
    from toolrig.workflows._journal_sqlite import SqliteJournal

    return SqliteJournal(text.removeprefix("sqlite:///"))
