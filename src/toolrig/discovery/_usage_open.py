"""Opening a usage store from what ``UsageLog(store)`` was given: :func:`open_usage_store`."""

from __future__ import annotations

from pathlib import Path

from toolrig.discovery._usage_store import SqliteUsageStore, UsageStore

__all__ = ["open_usage_store"]


def open_usage_store(target: str | Path | UsageStore, *, max_events: int = 200_000) -> UsageStore:
    """A store from a path (SQLite), ``sqlite:///path``, a Redis or PostgreSQL URL, or a store object.

    Raises:
        ValueError: a URL of another kind.
    """
    if isinstance(target, UsageStore):
        return target
    text = str(target)
    if text.startswith(("redis://", "rediss://", "unix://")):
        from toolrig.discovery._usage_redis import RedisUsageStore

        return RedisUsageStore(text, max_events=max_events)
    if text.startswith(("postgresql://", "postgres://")):
        from toolrig.discovery._usage_postgres import PostgresUsageStore

        return PostgresUsageStore(text, max_events=max_events)
    if "://" in text and not text.startswith("sqlite:///"):
        scheme = text.split("://", maxsplit=1)[0]
        raise ValueError(f"usage store {scheme}://...: use a file path, sqlite:///, redis:// or postgresql://")
    return SqliteUsageStore(text.removeprefix("sqlite:///"), max_events=max_events)
