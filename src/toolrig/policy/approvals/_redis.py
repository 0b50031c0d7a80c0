"""The Redis approval store: requests shared by every process that reaches the same Redis."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from toolrig.policy.approvals._request import ApprovalRequest, Status

__all__ = ["RedisApprovalStore"]

# KEYS[1] request key, KEYS[2] notify list; ARGV: new status, now, decided_by
_DECIDE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r['status'] ~= 'pending' or r['expires'] < tonumber(ARGV[2]) then return 0 end
r['status'] = ARGV[1]
r['decided'] = tonumber(ARGV[2])
if ARGV[3] ~= '' then r['decided_by'] = ARGV[3] end
redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], 3600)
return 1
"""

# KEYS[1] request key; ARGV: binding, now
_CONSUME = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r['status'] ~= 'approved' or r['binding'] ~= ARGV[1] then return 0 end
if r['decided'] + r['ttl'] < tonumber(ARGV[2]) then return 0 end
r['status'] = 'used'
redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')
return 1
"""

# KEYS[1] request key, KEYS[2] notify list; ARGV: now
_EXPIRE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r['status'] ~= 'pending' then return 0 end
r['status'] = 'expired'
r['decided'] = tonumber(ARGV[1])
redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')
redis.call('RPUSH', KEYS[2], 'expired')
redis.call('EXPIRE', KEYS[2], 3600)
return 1
"""

_KEEP_SECONDS = 7 * 24 * 3600


def _split_prefix(url: str) -> tuple[str, str | None]:
    """``redis://host/0?prefix=NAME`` -> (URL without it, NAME): one string names one queue."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((v for k, v in query if k == "prefix"), None)
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), prefix


class RedisApprovalStore:
    """Requests as JSON under ``{prefix}:req:{id}`` (prefix from ``?prefix=`` in the URL, default
    ``toolrig:approvals``); decisions and uses are Lua scripts (atomic).

    A waiter blocks on a per-request list that :meth:`decide` pushes to, so it wakes at once.
    """

    def __init__(self, url: str, *, prefix: str | None = None) -> None:
        import redis.asyncio as aioredis

        url, query_prefix = _split_prefix(url)
        self.url = url
        self.prefix = prefix or query_prefix or "toolrig:approvals"
        self.redis: Any = aioredis.from_url(url, decode_responses=True)
        self._decide = self.redis.register_script(_DECIDE)
        self._consume = self.redis.register_script(_CONSUME)
        self._expire = self.redis.register_script(_EXPIRE)

    def _key(self, request_id: str) -> str:
        return f"{self.prefix}:req:{request_id}"

    def _notify(self, request_id: str) -> str:
        return f"{self.prefix}:notify:{request_id}"

    async def add(self, request: ApprovalRequest) -> None:
        created = await self.redis.set(self._key(request.id), json.dumps(asdict(request)), nx=True,
                                       ex=_KEEP_SECONDS)
        if not created:
            raise KeyError(f"approval request {request.id!r} already exists")
        await self.redis.zadd(f"{self.prefix}:index", {request.id: request.created})

    async def get(self, request_id: str) -> ApprovalRequest | None:
        raw = await self.redis.get(self._key(request_id))
        return ApprovalRequest(**json.loads(raw)) if raw else None

    async def list(self, status: Status | None = None) -> list[ApprovalRequest]:
        ids = await self.redis.zrange(f"{self.prefix}:index", 0, -1)
        out = []
        for request_id in ids:
            request = await self.get(request_id)
            if request is None:
                await self.redis.zrem(f"{self.prefix}:index", request_id)
            elif status is None or request.status == status:
                out.append(request)
        return out

    async def decide(self, request_id: str, approve: bool, by: str | None, now: float) -> bool:
        status = "approved" if approve else "denied"
        done = await self._decide(keys=[self._key(request_id), self._notify(request_id)],
                                  args=[status, repr(now), by or ""])
        return bool(done)

    async def expire(self, request_id: str, now: float) -> bool:
        done = await self._expire(keys=[self._key(request_id), self._notify(request_id)], args=[repr(now)])
        return bool(done)

    async def consume(self, request_id: str, binding: str, now: float) -> bool:
        return bool(await self._consume(keys=[self._key(request_id)], args=[binding, repr(now)]))

    async def grant(self, key: str, until: float, request_id: str, by: str | None, now: float) -> None:
        seconds = max(1, math.ceil(until - now))  # Redis drops it then; ``until`` is checked on read as well
        await self.redis.set(f"{self.prefix}:grant:{key}", json.dumps({"until": until, "request": request_id,
                                                                       "decided_by": by}), ex=seconds)

    async def granted(self, key: str, now: float) -> str | None:
        raw = await self.redis.get(f"{self.prefix}:grant:{key}")
        if not raw:
            return None
        found = json.loads(raw)
        return str(found["request"]) if float(found["until"]) >= now else None

    async def wait(self, request_id: str, timeout: float) -> Status | None:
        request = await self.get(request_id)
        if request is not None and request.status == "pending" and timeout > 0:
            await self.redis.blpop([self._notify(request_id)], timeout=timeout)
            request = await self.get(request_id)
        return request.status if request is not None else None

    async def aclose(self) -> None:
        await self.redis.aclose()
