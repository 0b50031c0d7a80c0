"""Memories in Redis: ``redis://host:6379/0`` (``?prefix=`` names the key namespace, default ``toolrig:memory``).

A scope is one hash ``{prefix}:{sha256(scope)}`` (field: memory id, value: its JSON document); ``add`` checks
the count and stores in one Lua script, so concurrent writers cannot overfill a scope. Needs the ``redis`` extra.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from toolrig.builtins._memstore import MemoryRecord
from toolrig.errors import TransientError

__all__ = ["RedisMemoryStore"]

T = TypeVar("T")

_ADD = """
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


class RedisMemoryStore:
    """Memories in Redis (see the module docstring).

    Args:
        url: a ``redis://`` / ``rediss://`` / ``unix://`` URL; ``?prefix=NAME`` picks the key namespace.
    """

    def __init__(self, url: str) -> None:
        import redis.asyncio as aioredis

        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        self.prefix = next((v for k, v in query if k == "prefix"), None) or "toolrig:memory"
        self.url = urlunsplit((parts.scheme, parts.netloc, parts.path,
                               urlencode([(k, v) for k, v in query if k != "prefix"]), parts.fragment))
        self.redis: Any = aioredis.from_url(self.url, decode_responses=True)
        self._add = self.redis.register_script(_ADD)

    def _key(self, scope: str) -> str:
        return f"{self.prefix}:{hashlib.sha256(scope.encode()).hexdigest()}"

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        from redis.exceptions import RedisError

        try:
            return await fn()
        except (RedisError, OSError) as exc:
            raise TransientError(f"the memory store at Redis failed: {type(exc).__name__}: {exc}") from None

    async def add(self, scope: str, record: MemoryRecord, *, max_count: int) -> bool:
        added = await self._call(lambda: self._add(keys=[self._key(scope)],
                                                   args=[record.id, record.to_json(), max_count]))
        return bool(added)

    async def all(self, scope: str) -> list[MemoryRecord]:
        values = await self._call(lambda: self.redis.hvals(self._key(scope)))
        return sorted((MemoryRecord.from_json(v) for v in values), key=lambda r: (r.created, r.id))

    async def delete(self, scope: str, memory_id: str) -> bool:
        return bool(await self._call(lambda: self.redis.hdel(self._key(scope), memory_id)))

    async def aclose(self) -> None:
        await self.redis.aclose()

    def __repr__(self) -> str:
        return f"RedisMemoryStore(prefix={self.prefix!r})"
