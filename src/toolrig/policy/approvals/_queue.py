"""A persisted approval queue: a call waits while a human decides in another process.

``ApprovalQueue()`` keeps requests in SQLite (``TOOLRIG_APPROVALS`` or the user data folder);
``ApprovalQueue("redis://...")`` in Redis. The queue itself is the handler for
``Runtime(approval=...)``: it files a request, waits up to ``timeout`` seconds for
``toolrig approvals approve ID`` (or :meth:`approve`), then uses the approval once, checking it is
bound to exactly this call. No answer in time, a denial, or any error denies.
"""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig.policy._rules import canonical_json
from toolrig.policy.approvals._binding import binding_hash, version_of
from toolrig.policy.approvals._request import ApprovalRequest, ApprovalStore, Status

__all__ = ["APPROVALS_ENV", "ApprovalQueue", "default_queue_path", "open_store"]

APPROVALS_ENV = "TOOLRIG_APPROVALS"

log = logging.getLogger("toolrig.approval")


def default_queue_path() -> Path:
    """``TOOLRIG_APPROVALS`` if it names a file, else ``platformdirs.user_data_dir("toolrig")/approvals.db``."""
    env = os.environ.get(APPROVALS_ENV)
    if env and not env.startswith(("redis://", "rediss://")):
        return Path(env.removeprefix("sqlite:///"))
    import platformdirs

    return Path(platformdirs.user_data_dir("toolrig", appauthor=False)) / "approvals.db"


def open_store(location: str | Path | ApprovalStore | None = None) -> ApprovalStore:
    """A store from a ``redis://`` URL, a SQLite path (or ``sqlite:///path``), a store, or None (default)."""
    if location is None:
        location = os.environ.get(APPROVALS_ENV) or default_queue_path()
    if isinstance(location, str) and location.startswith(("redis://", "rediss://")):
        from toolrig.policy.approvals._redis import RedisApprovalStore

        return RedisApprovalStore(location)
    if isinstance(location, str | Path):
        from toolrig.policy.approvals._sqlite import SQLiteApprovalStore

        return SQLiteApprovalStore(str(location).removeprefix("sqlite:///"))
    return location


class ApprovalQueue:
    """A persisted queue of approval requests, usable as ``Runtime(approval=queue)``.

    Args:
        location: see :func:`open_store` (default: SQLite in the user data folder).
        timeout: seconds a call waits for a human before it is denied.
        ttl: seconds an approval stays usable once given (it is used at once by the waiting call).
        tools: a Registry / Toolset the tool version is read from (part of what an approval binds to).
        clock: epoch-seconds time source (``time.time``); tests pass a fake one.
        notify: called (sync or async) with each new request, e.g. to page a human; its failure is logged
            and the request still waits.
    """

    def __init__(self, location: str | Path | ApprovalStore | None = None, *, timeout: float = 300.0,
                 ttl: float = 60.0, tools: Any = None, clock: Callable[[], float] = time.time,
                 notify: Callable[[ApprovalRequest], Any] | None = None) -> None:
        self.store = open_store(location)
        self.timeout = timeout
        self.ttl = ttl
        self.tools = tools
        self.clock = clock
        self.notify = notify

    async def submit(self, call: ToolCall, context: CallContext, reason: str,
                     version: str | None = None) -> ApprovalRequest:
        """File a pending request for ``call`` and return it."""
        arguments = call.arguments if isinstance(call.arguments, Mapping) else {"<raw>": call.arguments}
        now = self.clock()
        request = ApprovalRequest(
            id=secrets.token_hex(5), tool=call.name, version=version or "", arguments=canonical_json(dict(arguments)),
            binding=binding_hash(call.name, version, call.arguments), reason=reason, user=context.user,
            agent=context.agent, session=context.session, created=now, expires=now + self.timeout, ttl=self.ttl)
        await self.store.add(request)
        if self.notify is not None:
            try:
                result = self.notify(request)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("approval notify callback failed for request %s", request.id)
        return request

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool:
        """The approval handler: file, wait, then use the approval once. Any failure denies."""
        request_id = None
        try:
            version = version_of(self.tools, call.name)
            request = await self.submit(call, context, reason, version)
            request_id = request.id
            log.warning("approval %s pending for %s: run 'toolrig approvals approve %s'", request_id, call.name,
                        request_id)
            status = await self.store.wait(request_id, self.timeout)
            if status != "approved":
                await self.store.expire(request_id, self.clock())
                return False
            return await self.consume(request_id, call, version)
        except Exception:
            log.exception("approval queue failed for %s (request %s): denied", call.name, request_id)
            return False

    async def consume(self, request_id: str, call: ToolCall, version: str | None) -> bool:
        """Use approval ``request_id`` for ``call``: True once, only for the exact call it was given for."""
        return await self.store.consume(request_id, binding_hash(call.name, version, call.arguments), self.clock())

    async def approve(self, request_id: str, by: str | None = None) -> bool:
        """Approve a pending request (False when it is unknown, decided or expired)."""
        return await self.store.decide(request_id, True, by, self.clock())

    async def deny(self, request_id: str, by: str | None = None) -> bool:
        """Deny a pending request (False when it is unknown, decided or expired)."""
        return await self.store.decide(request_id, False, by, self.clock())

    async def get(self, request_id: str) -> ApprovalRequest | None:
        """One request."""
        return await self.store.get(request_id)

    async def list(self, status: Status | None = "pending") -> list[ApprovalRequest]:
        """Requests with ``status`` (default pending; None for all), oldest first."""
        return await self.store.list(status)

    async def aclose(self) -> None:
        """Close the store's connections."""
        await self.store.aclose()
