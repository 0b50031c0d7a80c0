"""Opening a memory store from what ``store=`` was given: :func:`open_memory_store`.

The Redis and PostgreSQL stores import their client libraries only when they connect, so importing them here
costs nothing and keeps imports out of the first call.
"""

from __future__ import annotations

from pathlib import Path

from toolrig.builtins._memstore import MemoryStore, SqliteMemoryStore, default_memory_path
from toolrig.builtins._memstore_postgres import PostgresMemoryStore
from toolrig.builtins._memstore_redis import RedisMemoryStore
from toolrig.errors import ConfigError

__all__ = ["open_memory_store"]


def open_memory_store(target: str | Path | MemoryStore | None = None) -> MemoryStore:
    """A store from a path (SQLite), ``sqlite:///path``, a ``redis://`` / ``rediss://`` or ``postgresql://`` URL,
    a :class:`MemoryStore`, or None (SQLite at :func:`default_memory_path`).

    Raises:
        ConfigError: a URL of another kind.
    """
    if target is None:
        return SqliteMemoryStore(default_memory_path())
    if isinstance(target, MemoryStore):
        return target
    text = str(target)
    if text.startswith(("redis://", "rediss://", "unix://")):
        return RedisMemoryStore(text)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresMemoryStore(text)
    if "://" in text and not text.startswith("sqlite:///"):
        raise ConfigError(f"memory store {text.split('://', 1)[0]}://...: use a file path, sqlite:///, redis:// "
                          "or postgresql://")
    return SqliteMemoryStore(text.removeprefix("sqlite:///"))
