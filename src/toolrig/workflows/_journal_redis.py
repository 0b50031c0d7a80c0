"""The Redis journal: ``journal="redis://host:6379/0"`` (``?prefix=`` names the key namespace).

A run is one JSON string ``{prefix}:run:{id}`` (created with ``SET NX``: a run id is never reused), its steps a
hash ``{prefix}:steps:{id}`` (one field per step key), and ``{prefix}:runs`` a sorted set of run ids by start
time. Every write is one atomic command, awaited before the next step starts; how durable it is past the
Redis server's own death is the server's persistence setting (``appendonly yes`` with ``appendfsync always``
for the same guarantee as the SQLite journal).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from toolrig.errors import WorkflowError
from toolrig.workflows._journal import Journal

__all__ = ["RedisJournal"]

T = TypeVar("T")


def _split_prefix(url: str) -> tuple[str, str | None]:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((v for k, v in query if k == "prefix"), None)
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), prefix


class RedisJournal(Journal):
    """Runs journaled in Redis (see the module docstring).

    Args:
        url: a ``redis://`` / ``rediss://`` / ``unix://`` URL; ``?prefix=NAME`` (default ``toolrig:workflows``).
    """

    def __init__(self, url: str) -> None:
        import redis.asyncio as aioredis

        self.url, prefix = _split_prefix(url)
        self.prefix = prefix or "toolrig:workflows"
        self.redis: Any = aioredis.from_url(self.url, decode_responses=True)

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        from redis.exceptions import RedisError

        try:
            return await fn()
        except (RedisError, OSError) as exc:
            raise WorkflowError(f"the workflow journal at Redis failed: {type(exc).__name__}: {exc}") from None

    async def put_run(self, run_id: str, document: Mapping[str, Any], *, create: bool = False) -> None:
        key = f"{self.prefix}:run:{run_id}"
        text = json.dumps(document, ensure_ascii=False, default=str)
        if create:
            created = await self._call(lambda: self.redis.set(key, text, nx=True))
            if not created:
                raise WorkflowError(f"a run {run_id!r} is journaled already")
            await self._call(lambda: self.redis.zadd(f"{self.prefix}:runs", {run_id: time.time()}))
            return
        await self._call(lambda: self.redis.set(key, text))

    async def put_step(self, run_id: str, key: str, document: Mapping[str, Any]) -> None:
        text = json.dumps(document, ensure_ascii=False, default=str)
        await self._call(lambda: self.redis.hset(f"{self.prefix}:steps:{run_id}", key, text))

    async def get(self, run_id: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        raw = await self._call(lambda: self.redis.get(f"{self.prefix}:run:{run_id}"))
        if raw is None:
            return None
        steps = await self._call(lambda: self.redis.hgetall(f"{self.prefix}:steps:{run_id}"))
        return json.loads(raw), {k: json.loads(v) for k, v in steps.items()}

    async def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        ids = await self._call(lambda: self.redis.zrevrange(f"{self.prefix}:runs", 0, max(0, limit) - 1))
        if not ids:
            return []
        keys = [f"{self.prefix}:run:{run_id}" for run_id in ids]
        raws = await self._call(lambda: self.redis.mget(keys))
        return [json.loads(raw) for raw in raws if raw is not None]

    async def aclose(self) -> None:
        await self.redis.aclose()

    def __repr__(self) -> str:
        return f"RedisJournal(prefix={self.prefix!r})"
