"""Serving a toolset: :func:`serve`, :func:`serve_async`, :func:`http_app` and :func:`build_server`.

The blocking entry points (:func:`serve`, ``toolrig serve``) run on uvloop where it is installed (the ``mcp``
extra brings it, with httptools, which uvicorn then parses HTTP with): the same asyncio semantics, a cheaper
event loop. ``serve_async`` runs on whatever loop its caller has.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolrig.mcp.server._auth import BearerAuth
from toolrig.mcp.server._http import build_app
from toolrig.mcp.server._lifecycle import SHUTDOWN_GRACE, exit_stopped, opened, run_http, run_stdio, with_status
from toolrig.mcp.server._limits import BODY_TIMEOUT, MAX_BODY_BYTES
from toolrig.mcp.server._server import ToolServer
from toolrig.mcp.server._stages import served_stages
from toolrig.mcp.shared import PromptSource, ResourceSource

if TYPE_CHECKING:
    from mcp.server.streamable_http import EventStore

__all__ = ["build_server", "http_app", "run_blocking", "serve", "serve_async"]

log = logging.getLogger("toolrig.mcp.server")

Transport = Literal["stdio", "http"]


def build_server(tools: Any, *, runtime: Any = None, name: str = "toolrig", version: str | None = None,
                 instructions: str | None = None, resources: ResourceSource | None = None,
                 prompts: PromptSource | None = None, **runtime_options: Any) -> ToolServer:
    """A :class:`ToolServer` for ``tools`` (a toolset, a registry or a list of tools).

    Without ``runtime``, one is built: ``Runtime(tools, stages=served_stages(...), **runtime_options)``
    (the default pipeline with a per-caller cache; ``audit=``, ``policy=``, ``approval=``, ``state=`` ...).
    """
    if runtime is None:
        from toolrig.runtime import Runtime

        stage_options = {k: runtime_options.pop(k) for k in ("audit", "audit_mode") if k in runtime_options}
        if "stages" not in runtime_options:
            runtime_options["stages"] = served_stages(policy=runtime_options.get("policy") is not None,
                                                      **stage_options)
        runtime = Runtime(tools, **runtime_options)
    elif runtime_options:
        raise TypeError(f"runtime options {sorted(runtime_options)} given with a runtime")
    return ToolServer(runtime, name=name, version=version, instructions=instructions, resources=resources,
                      prompts=prompts)


def http_app(tools: Any, *, path: str = "/mcp", host: str = "127.0.0.1", auth: BearerAuth | None = None,
             stateless: bool = False, allowed_hosts: tuple[str, ...] = (), allowed_origins: tuple[str, ...] = (),
             json_response: bool = False, health: Callable[[], Mapping[str, Any]] | None = None,
             retry_interval: int | None = None, server: ToolServer | None = None, port: int | None = None,
             max_body: int = MAX_BODY_BYTES, body_timeout: float = BODY_TIMEOUT, idle_timeout: float | None = 1800.0,
             max_sessions: int | None = 10_000, openapi: bool = False, event_store: EventStore | None = None,
             **options: Any) -> Any:
    """An ASGI app serving ``tools`` over streamable HTTP (run it with uvicorn, or test it in process).

    ``port``: the port it is served on (loopback Host / Origin values must then name it); ``max_body`` /
    ``body_timeout``: the largest POST body and the seconds to send it; ``idle_timeout``: seconds a session
    may go without a request in flight before it ends (a client gone without closing it); ``max_sessions``:
    most sessions at once (503 beyond); ``event_store``: where SSE events are kept for resumption (default: in
    memory; a custom ``EventStore`` that raises is answered, not fatal); ``openapi``: also ``POST /tools/{name}``
    and ``GET /openapi.json`` (plain HTTP, same pipeline and auth). ``/healthz`` says ``status``: ``ok``,
    ``degraded`` (the audit log cannot be written) or ``stopping``. ``**options`` go to :func:`build_server`.
    The app's lifespan opens the toolset and closes the runtime.
    """
    server = server or build_server(tools, **options)
    app = build_app(server, path=path, host=host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins,
                    auth=auth, stateless=stateless, json_response=json_response, health=with_status(server, health),
                    retry_interval=retry_interval, port=port, max_body=max_body, body_timeout=body_timeout,
                    idle_timeout=idle_timeout, max_sessions=max_sessions, openapi=openapi, event_store=event_store)
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[None]:
        async with opened(server), inner(application):
            yield

    app.router.lifespan_context = lifespan
    return app


async def serve_async(tools: Any = None, *, transport: Transport = "stdio", host: str = "127.0.0.1",
                      port: int = 8000, server: ToolServer | None = None, log_level: str = "warning",
                      on_ready: Callable[[str], Any] | None = None, shutdown_grace: float = SHUTDOWN_GRACE,
                      stop_signals: bool = False, **options: Any) -> int | None:
    """Serve ``tools`` until stopped: over stdio (one client, this process's stdin/stdout) or streamable HTTP.

    Stopping drains (:mod:`toolrig.mcp.server._drain`): new calls are refused, calls in flight get ``shutdown_grace``
    seconds to finish, the rest end with an error their clients receive; then the runtime closes.

    Args:
        transport: ``"stdio"`` or ``"http"``.
        host, port: where HTTP listens (loopback by default; port 0 picks a free one).
        on_ready: called with the URL (HTTP) or ``"stdio"`` once serving.
        shutdown_grace: seconds calls in flight get to finish when the server is stopped.
        stop_signals: stop (and drain) on SIGINT / SIGTERM (main thread only); else only cancellation stops it.
        **options: for :func:`http_app` (``path``, ``auth``, ``stateless``, ``allowed_hosts`` ...) and
            :func:`build_server` (``runtime``, ``name``, ``resources``, ``prompts``, runtime options).

    Returns:
        The signal that stopped the server (None: cancelled, or the stdio client went away).
    """
    if server is None:
        server = build_server(tools, **{k: v for k, v in options.items() if k not in _HTTP_OPTIONS})
    if transport == "stdio":
        if on_ready is not None:
            on_ready("stdio")
        return await run_stdio(server, grace=shutdown_grace, watch_signals=stop_signals)
    if transport != "http":
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
    listener = _listen(host, port)  # bound first, so the app knows its port (Host / Origin must name it)
    bound_port = int(listener.getsockname()[1])
    app = http_app(None, host=host, server=server, port=bound_port,
                   **{k: v for k, v in options.items() if k in _HTTP_OPTIONS})
    url = f"http://{_url_host(host)}:{bound_port}{options.get('path', '/mcp')}"
    return await run_http(app, server, listener, url=url, log_level=log_level, grace=shutdown_grace,
                          watch_signals=stop_signals, on_ready=on_ready)


_HTTP_OPTIONS = frozenset({"path", "auth", "stateless", "allowed_hosts", "allowed_origins", "json_response",
                           "health", "retry_interval", "event_store", "max_body", "body_timeout", "idle_timeout",
                           "max_sessions", "openapi"})


def _listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one), for uvicorn to listen on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def serve(tools: Any = None, *, transport: Transport = "stdio", host: str = "127.0.0.1", port: int = 8000,
          **options: Any) -> None:
    """Blocking :func:`serve_async` until stdio closes, or Ctrl-C / SIGTERM: then it drains and exits (130 / 143).

    Raises:
        SystemExit: with 128 + the signal, once a SIGINT / SIGTERM has drained the server.
    """
    options.setdefault("stop_signals", True)
    stopped_by = run_blocking(partial(serve_async, tools, transport=transport, host=host, port=port, **options))
    if stopped_by is not None:
        exit_stopped(128 + stopped_by, stdio=transport == "stdio")


def run_blocking(main: Callable[[], Awaitable[Any]]) -> Any:
    """``anyio.run(main)`` on uvloop when it is installed (else asyncio's own loop)."""
    return anyio.run(main, backend="asyncio", backend_options=loop_options())


def loop_options() -> dict[str, Any]:
    """anyio's asyncio backend options: uvloop when it can be imported."""
    return {"use_uvloop": True} if importlib.util.find_spec("uvloop") is not None else {}
