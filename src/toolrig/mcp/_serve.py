"""Serving a toolset: :func:`serve`, :func:`serve_async`, :func:`http_app` and :func:`build_server`.

The blocking entry points (:func:`serve`, ``toolrig serve``) run on uvloop where it is installed (the ``mcp``
extra brings it, with httptools, which uvicorn then parses HTTP with): the same asyncio semantics, a cheaper
event loop. ``serve_async`` runs on whatever loop its caller has.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Literal

import anyio

from toolrig.mcp._auth import BearerAuth
from toolrig.mcp._content import PromptSource, ResourceSource
from toolrig.mcp._http import build_app
from toolrig.mcp._limits import BODY_TIMEOUT, MAX_BODY_BYTES
from toolrig.mcp._server import CallerIdentity, ToolServer, caller_identity
from toolrig.mcp._stages import served_stages

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


def _follow_changes(server: ToolServer) -> None:
    """Tell clients when a toolset that reports changes (an MCP toolset) changes."""
    toolset = server.runtime.toolset
    on_change = getattr(toolset, "on_change", None)
    if callable(on_change):
        on_change(lambda _changed: server.notify_tools_changed())


@contextlib.asynccontextmanager
async def _opened(server: ToolServer) -> AsyncIterator[None]:
    """Open the toolset's resources (MCP connections) for as long as the server runs."""
    toolset = server.runtime.toolset
    async with contextlib.AsyncExitStack() as stack:
        if hasattr(toolset, "__aenter__"):
            await stack.enter_async_context(toolset)
        _follow_changes(server)
        stack.push_async_callback(server.runtime.aclose)
        yield


def http_app(tools: Any, *, path: str = "/mcp", host: str = "127.0.0.1", auth: BearerAuth | None = None,
             stateless: bool = False, allowed_hosts: tuple[str, ...] = (), allowed_origins: tuple[str, ...] = (),
             json_response: bool = False, health: Callable[[], Mapping[str, Any]] | None = None,
             retry_interval: int | None = None, server: ToolServer | None = None, port: int | None = None,
             max_body: int = MAX_BODY_BYTES, body_timeout: float = BODY_TIMEOUT, **options: Any) -> Any:
    """An ASGI app serving ``tools`` over streamable HTTP (run it with uvicorn, or test it in process).

    ``port``: the port it is served on (loopback Host / Origin values must then name it); ``max_body`` /
    ``body_timeout``: the largest POST body and the seconds to send it. ``**options`` go to
    :func:`build_server`. The app's lifespan opens the toolset and closes the runtime.
    """
    server = server or build_server(tools, **options)
    app = build_app(server, path=path, host=host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins,
                    auth=auth, stateless=stateless, json_response=json_response, health=health,
                    retry_interval=retry_interval, port=port, max_body=max_body, body_timeout=body_timeout)
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[None]:
        async with _opened(server), inner(application):
            yield

    app.router.lifespan_context = lifespan
    return app


async def _run_stdio(server: ToolServer) -> None:
    from toolrig.mcp._stdio import checked_stdio

    identity = CallerIdentity(session_id=f"stdio-{secrets.token_urlsafe(16)}", transport="stdio")
    token = caller_identity.set(identity)
    try:
        async with _opened(server), checked_stdio() as (read, write):
            await server.server.run(read, write, server.initialization_options())
    finally:
        caller_identity.reset(token)


async def serve_async(tools: Any = None, *, transport: Transport = "stdio", host: str = "127.0.0.1",
                      port: int = 8000, server: ToolServer | None = None, log_level: str = "warning",
                      on_ready: Callable[[str], Any] | None = None, **options: Any) -> None:
    """Serve ``tools`` until cancelled: over stdio (one client, this process's stdin/stdout) or streamable HTTP.

    Args:
        transport: ``"stdio"`` or ``"http"``.
        host, port: where HTTP listens (loopback by default; port 0 picks a free one).
        on_ready: called with the URL (HTTP) or ``"stdio"`` once serving.
        **options: for :func:`http_app` (``path``, ``auth``, ``stateless``, ``allowed_hosts`` ...) and
            :func:`build_server` (``runtime``, ``name``, ``resources``, ``prompts``, runtime options).
    """
    if server is None:
        server = build_server(tools, **{k: v for k, v in options.items() if k not in _HTTP_OPTIONS})
    if transport == "stdio":
        if on_ready is not None:
            on_ready("stdio")
        await _run_stdio(server)
        return
    if transport != "http":
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
    import uvicorn

    listener = _listen(host, port)  # bound first, so the app knows its port (Host / Origin must name it)
    bound_port = int(listener.getsockname()[1])
    app = http_app(None, host=host, server=server, port=bound_port,
                   **{k: v for k, v in options.items() if k in _HTTP_OPTIONS})
    config = uvicorn.Config(app, host=host, port=bound_port, log_level=log_level, lifespan="on",
                            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN)
    httpd = uvicorn.Server(config)

    async def run() -> None:
        # Shielded: cancelling us asks uvicorn to stop (below) instead of tearing it down mid-flight, so its
        # lifespan closes the toolset (and stops launched upstream servers) before we return.
        with anyio.CancelScope(shield=True), listener:
            await httpd.serve(sockets=[listener])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            while not httpd.started:
                if httpd.should_exit:
                    return
                await anyio.sleep(0.02)
            if on_ready is not None:
                on_ready(f"http://{_url_host(host)}:{bound_port}{options.get('path', '/mcp')}")
            await anyio.sleep_forever()
        finally:
            httpd.should_exit = True


_GRACEFUL_SHUTDOWN = 5
"""Seconds open connections get to finish when the server is stopped (then they are closed)."""

_HTTP_OPTIONS = frozenset({"path", "auth", "stateless", "allowed_hosts", "allowed_origins", "json_response",
                           "health", "retry_interval", "max_body", "body_timeout"})


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
    """Blocking :func:`serve_async` (Ctrl-C stops it)."""
    run_blocking(partial(serve_async, tools, transport=transport, host=host, port=port, **options))


def run_blocking(main: Callable[[], Awaitable[Any]]) -> Any:
    """``anyio.run(main)`` on uvloop when it is installed (else asyncio's own loop)."""
    return anyio.run(main, backend="asyncio", backend_options=loop_options())


def loop_options() -> dict[str, Any]:
    """anyio's asyncio backend options: uvloop when it can be imported."""
    return {"use_uvloop": True} if importlib.util.find_spec("uvloop") is not None else {}
