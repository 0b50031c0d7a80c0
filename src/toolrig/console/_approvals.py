"""The Approvals section: pending calls, live (server-sent events), approved or denied with a reason.

Each pending request is shown whole: every argument (strings through :func:`~toolrig.policy.visible`), who asked
and why (the rule that asked). Deciding posts the request's binding (the hash of tool, version and exact
arguments) shown on the page: a request whose binding is not the one seen is refused (409), as is one decided
elsewhere meanwhile. The queue makes the approval single-use and bound to that exact call.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from toolrig.console._backend import ConsoleBackend
from toolrig.console._render import Pages
from toolrig.policy import ApprovalRequest
from toolrig.policy.approvals import render_value

__all__ = ["ApprovalViews"]

POLL = 0.25
"""Seconds between two looks at the queue while a page listens (another process may file requests)."""
MAX_REASON = 500


def _card(request: ApprovalRequest) -> dict[str, Any]:
    try:
        arguments = json.loads(request.arguments)
    except ValueError:
        arguments = request.arguments
    items = list(arguments.items()) if isinstance(arguments, dict) else [("<arguments>", arguments)]
    return {"r": request, "arguments": [(k, render_value(v)) for k, v in items]}


class ApprovalViews:
    """Routes of the Approvals section."""

    def __init__(self, backend: ConsoleBackend, pages: Pages) -> None:
        self.backend = backend
        self.pages = pages

    async def _pending(self) -> list[ApprovalRequest]:
        queue = self.backend.approvals
        return [] if queue is None else list(await queue.list("pending"))

    async def index(self, request: Request) -> Response:
        """``GET /approvals``: the pending requests (the page then follows ``/approvals/events``)."""
        pending = await self._pending()
        decided = [] if self.backend.approvals is None else [
            r for r in await self.backend.approvals.list(None) if r.status != "pending"][-20:]
        return self.pages.html(request, "approvals.html", section="Approvals", cards=[_card(r) for r in pending],
                               decided=list(reversed(decided)), queue=self.backend.approvals is not None)

    async def card(self, request: Request) -> Response:
        """``GET /approvals/{id}``: one request's card (fetched when the event stream names a new one)."""
        queue = self.backend.approvals
        found = None if queue is None else await queue.get(request.path_params["id"])
        if found is None:
            return self.pages.html(request, "missing.html", status=404, section="Approvals", what="approval request")
        return self.pages.html(request, "approval_card.html", c=_card(found))

    async def events(self, request: Request) -> Response:
        """``GET /approvals/events``: a ``pending`` event (the ids, JSON) whenever the pending set changes."""

        async def stream() -> AsyncIterator[dict[str, str]]:
            last: list[str] | None = None
            while True:
                ids = [r.id for r in await self._pending()]
                if ids != last:
                    last = ids
                    yield {"event": "pending", "data": json.dumps(ids)}
                await anyio.sleep(POLL)

        return EventSourceResponse(stream(), ping=15)

    async def decide(self, request: Request) -> Response:
        """``POST /approvals/{id}/approve``, ``/remember`` (approve, and the same call again in its session) or
        ``/deny``: decide, bound to the binding shown (409 when the request is no longer pending or is not the one
        shown)."""
        queue = self.backend.approvals
        request_id = request.path_params["id"]
        action = request.path_params["action"]
        if action not in ("approve", "remember", "deny"):
            return self.pages.html(request, "missing.html", status=404, section="Approvals", what="action")
        form = await request.form()
        reason = " ".join(str(form.get("reason") or "").split())[:MAX_REASON]
        found = None if queue is None else await queue.get(request_id)
        if queue is None or found is None:
            return self.pages.html(request, "decision.html", status=404, request_id=request_id,
                                   message="no such approval request")
        if str(form.get("binding") or "") != found.binding:
            return self.pages.html(request, "decision.html", status=409, request_id=request_id,
                                   message="this is not the call you saw (its arguments or version differ): reload")
        by = f"{self.backend.user} (console)" + (f": {reason}" if reason else "")
        if action == "deny":
            done = await queue.deny(request_id, by)
        else:
            try:
                done = await queue.approve(request_id, by, remember=action == "remember")
            except (ValueError, TypeError) as exc:  # no session, or a store that cannot remember: nothing decided
                return self.pages.html(request, "decision.html", status=409, request_id=request_id, message=str(exc))
        if not done:
            now = await queue.get(request_id)
            state = now.status if now is not None else "gone"
            return self.pages.html(request, "decision.html", status=409, request_id=request_id,
                                   message=f"already decided elsewhere: it is {state}")
        verb = {"approve": "approved", "remember": "approved for this session", "deny": "denied"}[action]
        return self.pages.html(request, "decision.html", request_id=request_id, message=f"{verb}",
                               ok=True)
