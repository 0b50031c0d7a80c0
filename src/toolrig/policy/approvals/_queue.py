"""A persisted approval queue: a call waits while a human decides in another process.

``ApprovalQueue()`` keeps requests in SQLite (``TOOLRIG_APPROVALS`` or the user data folder);
``ApprovalQueue("redis://...")`` in Redis. The queue itself is the handler for
``Runtime(approval=...)``: it files a request, tells the caller its id and the command that approves it
(``context.report_progress``: an MCP client gets it as a progress notification), waits up to ``timeout``
seconds for ``toolrig approvals approve ID`` (or :meth:`approve`), then uses the approval once, checking it
is bound to exactly this call.

Approved with ``remember=True`` (``toolrig approvals approve ID --remember``, the console's "Approve for this
session"), the approval also holds for the same exact call (tool, version, arguments) by the same user and agent
in the same session, for ``remember_for`` seconds: such a call is approved without a new request (an allow
:class:`~toolrig.Decision` naming the request that granted it). A request without a session cannot be remembered.

How a wait ends: approved (``True``); denied by a person (a deny :class:`~toolrig.Decision` naming who);
nobody decided in time (:class:`~toolrig.runtime.ApprovalTimeout`, with the request id and the command:
never taken for a refusal). A store that fails while the call waits (a Redis read that times out) is asked
again until the deadline; a request that cannot be filed at all raises (the approval stage ends the call
``approval_required``: the approver failed, nobody refused).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import secrets
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig._decision import Decision
from toolrig.policy._rules import canonical_json
from toolrig.policy.approvals._binding import binding_hash, version_of
from toolrig.policy.approvals._request import ApprovalRequest, ApprovalStore, Status
from toolrig.runtime import ApprovalTimeout

__all__ = ["APPROVALS_ENV", "REMEMBER_FOR", "ApprovalQueue", "default_queue_path", "grant_key", "open_store"]

APPROVALS_ENV = "TOOLRIG_APPROVALS"

log = logging.getLogger("toolrig.approval")

_SLICE = 10.0
"""Seconds of one wait on the store (a read that failed is retried between two)."""
REMEMBER_FOR = 8 * 3600.0
"""Seconds an approval given with ``remember=True`` holds for the same call in the same session (default)."""


def grant_key(binding: str, user: str | None, agent: str | None, session: str) -> str:
    """The key a remembered approval is kept under: the exact call and who made it, in which session."""
    return hashlib.sha256(json.dumps([binding, user or "", agent or "", session]).encode()).hexdigest()


def _remembers(store: object) -> bool:
    return callable(getattr(store, "grant", None)) and callable(getattr(store, "granted", None))


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
        remember_for: seconds an approval given with ``remember=True`` holds for the same call in its session.
    """

    def __init__(self, location: str | Path | ApprovalStore | None = None, *, timeout: float = 300.0,
                 ttl: float = 60.0, tools: Any = None, clock: Callable[[], float] = time.time,
                 notify: Callable[[ApprovalRequest], Any] | None = None,
                 remember_for: float = REMEMBER_FOR) -> None:
        self.store = open_store(location)
        self.remember_for = remember_for
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

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool | Decision | ApprovalTimeout:
        """The approval handler: file, wait, then use the approval once (see the module docstring).

        Raises:
            Exception: the request could not be filed (the store is unreachable); nothing waits.
        """
        version = version_of(self.tools, call.name)
        remembered = await self._remembered(call, context, version)
        if remembered is not None:
            return remembered
        request = await self.submit(call, context, reason, version)
        how = f"toolrig approvals approve {request.id}{self._where()}"
        log.warning("approval %s pending for %s: run '%s'", request.id, call.name, how)
        await _tell(context, 0, f"{call.name} waits for a person's approval (request {request.id}): run `{how}`")
        status, trouble = await self._wait(request.id)
        if status == "approved":
            if await self.consume(request.id, call, version):
                return True
            return Decision.deny(f"the approval of request {request.id} does not fit this call any more (another "
                                 "version, other arguments, or it lapsed)", source="approval queue")
        if status == "denied":
            decided = await self._get(request.id)
            who = decided.decided_by if decided is not None and decided.decided_by else "a person"
            return Decision.deny(f"{who} denied approval request {request.id}", source="approval queue")
        with anyio.CancelScope(shield=True):
            try:
                await self.store.expire(request.id, self.clock())
            except Exception:
                log.exception("could not mark approval request %s expired", request.id)
        waited = f"nobody approved request {request.id} within {self.timeout:g} s"
        if trouble:
            waited += f" (the approval queue could not be read meanwhile: {trouble})"
        return ApprovalTimeout(reason=waited, how=f"Approve it while it waits with `{how}` (call again for a new "
                                                  "request; `toolrig approvals list` shows those waiting).",
                               details={"request_id": request.id})

    async def _remembered(self, call: ToolCall, context: CallContext, version: str | None) -> Decision | None:
        """An allow when a remembered approval covers this exact call in its session; None: ask (also when the
        store cannot be read: that is no approval)."""
        if not context.session or not _remembers(self.store):
            return None
        key = grant_key(binding_hash(call.name, version, call.arguments), context.user, context.agent,
                        context.session)
        try:
            request_id = await self.store.granted(key, self.clock())  # type: ignore[attr-defined]
        except Exception:
            log.exception("could not read remembered approvals: asking about %s", call.name)
            return None
        if request_id is None:
            return None
        log.info("%s approved without asking: request %s was approved for this session", call.name, request_id)
        return Decision.allow(f"approved for this session with request {request_id}",
                              source="approval queue (remembered)")

    def _where(self) -> str:
        """`` --queue LOCATION`` when this is not the default queue (never a password of the store's URL)."""
        url = getattr(self.store, "url", None)
        if isinstance(url, str):
            if "@" in url.split("://", 1)[-1].split("/", 1)[0]:
                return " --queue <this queue's redis:// URL>"
            prefix = getattr(self.store, "prefix", "toolrig:approvals")
            joiner = "&" if "?" in url else "?"
            return f" --queue {url}" + (f"{joiner}prefix={prefix}" if prefix != "toolrig:approvals" else "")
        path = getattr(self.store, "path", None)
        if path is None or str(path) == str(default_queue_path()):
            return ""
        return f" --queue {shlex.quote(str(path))}"

    async def _get(self, request_id: str) -> ApprovalRequest | None:
        try:
            return await self.store.get(request_id)
        except Exception:
            log.exception("could not read approval request %s", request_id)
            return None

    async def _wait(self, request_id: str) -> tuple[Status | None, str]:
        """Wait in slices until the request is decided or the deadline passes; a failed read is tried again.

        Returns the status (None when it could not be read at the end) and the last store error ('' if none).
        """
        deadline = anyio.current_time() + self.timeout
        trouble = ""
        status: Status | None = "pending"
        while True:
            left = deadline - anyio.current_time()
            if left <= 0:
                return status, trouble
            try:
                status = await self.store.wait(request_id, min(left, _SLICE))
            except Exception as exc:  # e.g. a Redis read timed out: not an answer; ask again
                trouble = f"{type(exc).__name__}: {exc}"[:200]
                log.warning("approval queue read failed while request %s waits (%s); trying again", request_id,
                            trouble)
                await anyio.sleep(min(1.0, max(deadline - anyio.current_time(), 0)))
                continue
            if status != "pending":
                return status, trouble

    async def consume(self, request_id: str, call: ToolCall, version: str | None) -> bool:
        """Use approval ``request_id`` for ``call``: True once, only for the exact call it was given for."""
        return await self.store.consume(request_id, binding_hash(call.name, version, call.arguments), self.clock())

    async def approve(self, request_id: str, by: str | None = None, *, remember: bool = False) -> bool:
        """Approve a pending request (False when it is unknown, decided or expired).

        ``remember``: the approval also holds for the same call by the same user and agent in the same session,
        for :attr:`remember_for` seconds.

        Raises:
            ValueError: ``remember`` for a request without a session.
            TypeError: ``remember`` with a store that cannot remember (no ``grant`` / ``granted``).
        """
        request = None
        if remember:
            if not _remembers(self.store):
                raise TypeError(f"{type(self.store).__name__} cannot remember approvals (it has no grant/granted)")
            request = await self.store.get(request_id)
            if request is None:
                return False
            if not request.session:
                raise ValueError(f"request {request_id} has no session: only an approval within a session can be "
                                 "remembered")
        if not await self.store.decide(request_id, True, by, self.clock()):
            return False
        if request is not None and request.session:
            now = self.clock()
            key = grant_key(request.binding, request.user, request.agent, request.session)
            await self.store.grant(key, now + self.remember_for, request.id, by, now)  # type: ignore[attr-defined]
        return True

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


async def _tell(context: CallContext, progress: float, message: str) -> None:
    """One progress report for the caller (an MCP client gets a progress notification; progress 0, before the
    tool's own reports, which must increase); never fails the wait."""
    try:
        await context.report_progress(progress, None, message)
    except Exception as exc:
        log.debug("could not report approval progress: %s", exc)
