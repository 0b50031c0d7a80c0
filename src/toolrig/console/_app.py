"""The console as an ASGI application: :func:`console_app` (routes, templates, static files, the guard)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from toolrig.console._approvals import ApprovalViews
from toolrig.console._audit import AuditViews
from toolrig.console._backend import ConsoleBackend
from toolrig.console._render import Pages
from toolrig.console._security import ConsoleGuard, Sessions
from toolrig.console._tools import ToolViews
from toolrig.console._workflows import WorkflowViews

__all__ = ["console_app"]

log = logging.getLogger("toolrig.console")


class _Tasks:
    """Background work that outlives a request (workflow runs), in the app's task group; a failure is logged."""

    def __init__(self) -> None:
        self.group: Any = None

    def spawn(self, fn: Callable[[], Awaitable[Any]]) -> None:
        if self.group is None:
            raise RuntimeError("the console is not running (its lifespan has not started)")

        async def guarded() -> None:
            try:
                await fn()
            except Exception:
                log.exception("a background task of the console failed")

        self.group.start_soon(guarded)


def console_app(backend: ConsoleBackend, sessions: Sessions, *, hosts: set[str], origins: set[str]) -> Any:
    """The console for ``backend``, behind :class:`~toolrig.console._security.ConsoleGuard`.

    Args:
        backend: what it shows and acts on.
        sessions: the run's token and sessions.
        hosts: the ``Host`` values it answers (``127.0.0.1:PORT`` ...).
        origins: the origins its POSTs must come from (``http://127.0.0.1:PORT`` ...).
    """
    pages = Pages()
    tasks = _Tasks()
    tools, approvals = ToolViews(backend, pages), ApprovalViews(backend, pages)
    audit, workflows = AuditViews(backend, pages), WorkflowViews(backend, pages, tasks.spawn)

    async def home(request: Request) -> Response:
        return RedirectResponse("/tools", status_code=303)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            tasks.group = group
            yield
            group.cancel_scope.cancel()

    routes = [
        Route("/", home),
        Route("/tools", tools.index),
        Route("/tools/{name}", tools.detail),
        Route("/tools/{name}/run", tools.run, methods=["POST"]),
        Route("/approvals", approvals.index),
        Route("/approvals/events", approvals.events),
        Route("/approvals/{id}", approvals.card),
        Route("/approvals/{id}/{action:str}", approvals.decide, methods=["POST"]),
        Route("/workflows", workflows.index),
        Route("/workflows/runs/{id}", workflows.run),
        Route("/workflows/runs/{id}/events", workflows.events),
        Route("/workflows/runs/{id}/resume", workflows.resume, methods=["POST"]),
        Route("/workflows/{name}", workflows.detail),
        Route("/workflows/{name}/run", workflows.start, methods=["POST"]),
        Route("/audit", audit.index),
        Route("/audit/export.jsonl", audit.export),
        Route("/audit/call/{row}", audit.detail),
        Mount("/static", StaticFiles(directory=str(Path(__file__).parent / "static")), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    return ConsoleGuard(app, sessions, hosts=hosts, origins=origins)
