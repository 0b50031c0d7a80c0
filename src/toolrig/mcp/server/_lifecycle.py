"""A served toolset's life: its resources opened, the state ``/healthz`` reports, and running until stopped.

:func:`run_http` and :func:`run_stdio` serve until cancelled or (``watch_signals``) until SIGINT / SIGTERM,
then drain (:mod:`toolrig.mcp.server._drain`) and return the signal that stopped them (None: cancelled, or the
client closed stdio). uvicorn's own signal handling is left out: it would stop at once, not drain, and
re-raise the signal afterwards (Ctrl-C then ends in a ``KeyboardInterrupt`` traceback).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, NoReturn

import anyio

from toolrig.mcp.client import probe_on_reconnect, upstream_servers
from toolrig.mcp.server._drain import ANSWER_TIME, StopSignals, drain_calls
from toolrig.mcp.server._server import CallerIdentity, ToolServer, caller_identity
from toolrig.runtime import AuditStage

__all__ = ["GRACEFUL_SHUTDOWN", "SHUTDOWN_GRACE", "exit_stopped", "opened", "run_http", "run_stdio", "serving_status",
           "with_status"]

SHUTDOWN_GRACE = 10.0
"""Default seconds calls in flight get to finish when the server is stopped."""

GRACEFUL_SHUTDOWN = 5
"""Seconds uvicorn gives connections still open after the drain (then they are closed)."""

STDIO_SETTLE = 0.2
"""Seconds the answers of drained calls get to reach stdout before the stdio server stops."""


def _follow_changes(server: ToolServer) -> None:
    """Tell clients when a toolset that reports changes (an MCP toolset) changes."""
    toolset = server.runtime.toolset
    on_change = getattr(toolset, "on_change", None)
    if callable(on_change):
        on_change(lambda _changed: server.notify_tools_changed())


@contextlib.asynccontextmanager
async def opened(server: ToolServer) -> AsyncIterator[None]:
    """Open the toolset's resources (MCP connections) for as long as the server runs."""
    toolset = server.runtime.toolset
    async with contextlib.AsyncExitStack() as stack:
        if hasattr(toolset, "__aenter__"):
            await stack.enter_async_context(toolset)
        _follow_changes(server)
        probe_on_reconnect(server.runtime, upstream_servers(toolset))
        stack.push_async_callback(server.runtime.aclose)
        yield


def serving_status(server: ToolServer) -> dict[str, Any]:
    """What ``/healthz`` says about the server itself: ``status``, ``calls`` in flight, the audit log's state.

    ``status`` is ``stopping`` while the server drains, ``degraded`` while audit rows cannot reach their store
    (then calls are refused or journaled, as ``audit`` says), else ``ok``.
    """
    out: dict[str, Any] = {"status": "ok", "calls": server.calls.running}
    for stage in server.runtime.stages:
        if isinstance(stage, AuditStage) and (health := stage.health()) is not None:
            out["audit"] = health.to_dict()
            if health.degraded:
                out["status"] = "degraded"
    if server.calls.closing:
        out["status"] = "stopping"
    return out


def with_status(server: ToolServer, extra: Callable[[], Mapping[str, Any]] | None) -> Callable[[], Mapping[str, Any]]:
    """A ``/healthz`` body function: ``extra()``'s fields, then :func:`serving_status` (its ``status`` wins)."""
    def health() -> Mapping[str, Any]:
        return {**(extra() if extra is not None else {}), **serving_status(server)}

    return health


def _uvicorn(app: Any, log_level: str) -> Any:
    """uvicorn's server without its signal handlers: SIGINT / SIGTERM start a drain instead (see the module)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    # access lines are logged at INFO: below that level, uvicorn would still format their parts for every request
    access = log_level.lower() in ("trace", "debug", "info")
    return Server(uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=access,
                                 timeout_graceful_shutdown=GRACEFUL_SHUTDOWN))


async def _started(httpd: Any) -> bool:
    while not httpd.started:
        if httpd.should_exit:
            return False
        await anyio.sleep(0.02)
    return True


async def run_http(app: Any, server: ToolServer, listener: socket.socket, *, url: str, log_level: str = "warning",
                   grace: float = SHUTDOWN_GRACE, watch_signals: bool = False,
                   on_ready: Callable[[str], Any] | None = None) -> int | None:
    """Serve ``app`` (from :func:`~toolrig.mcp.http_app`) on ``listener`` until stopped, then drain."""
    httpd = _uvicorn(app, log_level)
    manager = app.state.session_manager
    stop = StopSignals()

    async def run() -> None:
        # Shielded: cancelling us asks uvicorn to stop (below) instead of tearing it down mid-flight, so its
        # lifespan closes the toolset (and stops launched upstream servers) before we return.
        with anyio.CancelScope(shield=True), listener:
            await httpd.serve(sockets=[listener])

    async with stop.watching(watch_signals), anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            if not await _started(httpd):
                return None
            if on_ready is not None:
                on_ready(url)
            return await stop.first()
        finally:
            with anyio.CancelScope(shield=True):
                manager.close()
                await drain_calls(server.calls, grace, stop)
                await manager.wait_answered(ANSWER_TIME)
                await manager.end_sessions()
            httpd.should_exit = True
    return None  # not reached: the task group only ends through the returns above


async def run_stdio(server: ToolServer, *, grace: float = SHUTDOWN_GRACE, watch_signals: bool = False) -> int | None:
    """Serve one client over this process's stdin / stdout until it closes them or the server is stopped."""
    from toolrig.mcp.server._stdio import checked_stdio

    identity = CallerIdentity(session_id=f"stdio-{secrets.token_urlsafe(16)}", transport="stdio")
    token = caller_identity.set(identity)
    stop = StopSignals()
    stopped_by: list[int] = []
    try:
        async with stop.watching(watch_signals), opened(server):
            # The SDK's stdio server ends at EOF; a signal ends it by cancelling this scope, after the drain.
            with anyio.CancelScope() as serving:
                async with checked_stdio() as (read, write), anyio.create_task_group() as tg:
                    async def serve() -> None:
                        await server.server.run(read, write, server.initialization_options())
                        serving.cancel()  # the client closed stdin: done

                    tg.start_soon(serve)
                    try:
                        stopped_by.append(await stop.first())
                    finally:
                        with anyio.CancelScope(shield=True):
                            busy = server.calls.running
                            await drain_calls(server.calls, grace, stop)
                            if busy:  # the last answers go from the SDK's queue to stdout
                                await anyio.sleep(STDIO_SETTLE)
                        serving.cancel()
    finally:
        caller_identity.reset(token)
    return stopped_by[0] if stopped_by else None


def exit_stopped(code: int, *, stdio: bool) -> NoReturn:
    """End the process with ``code`` once a signal has drained the server.

    Over stdio the thread reading stdin is still blocked in a read that nothing can interrupt (the client keeps
    its end open), and the interpreter would wait for that thread forever at exit. The drain has closed the
    runtime (the audit log is flushed) and the upstream servers, so the process ends at once (``os._exit``)
    after flushing the logs and the standard streams. Over HTTP it is an ordinary ``SystemExit``.
    """
    if stdio:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    raise SystemExit(code)
