"""Opening the SDK transport a :class:`~toolrig.mcp._target.Target` asks for (one place for all four)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from toolrig.mcp._target import Target

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox

__all__ = ["DEFAULT_HTTP_TIMEOUT", "open_transport"]

DEFAULT_HTTP_TIMEOUT = 30.0
"""Seconds for connecting and for each plain HTTP operation (SSE streams may stay open longer)."""

SSE_READ_TIMEOUT = 300.0


def _file_or_stderr(errlog: TextIO | None) -> TextIO:
    """``errlog`` if it is a real file (a subprocess needs a descriptor), else this process's own stderr."""
    for candidate in (errlog, sys.stderr, sys.__stderr__):
        if candidate is None:
            continue
        try:
            candidate.fileno()
        except (OSError, ValueError, AttributeError):
            continue
        return candidate
    raise OSError("no stderr to give the MCP server")


class _WatchedReadStream:
    """A read stream that calls ``on_end()`` when the server side ends (EOF or closed), then passes it on."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. ``last_context`` of the SDK's context streams
        return getattr(self._stream, name)


@asynccontextmanager
async def open_transport(target: Target, *, errlog: TextIO | None = None,
                         http_timeout: float = DEFAULT_HTTP_TIMEOUT, auth: Any = None,
                         on_end: Callable[[], None] | None = None, sandbox: Sandbox | None = None,
                         name: str = "") -> AsyncIterator[Any]:
    """Yield the (read, write) streams of a connection to ``target``; ``on_end()`` runs when the server hangs up.

    A stdio server is started with a minimal environment (the SDK's: ``HOME``, ``LOGNAME``, ``PATH``,
    ``SHELL``, ``TERM``, ``USER``) plus ``target.env`` — or, given a ``sandbox``, inside it with the sandbox's
    minimal environment plus ``target.env`` (see :mod:`toolrig.mcp._sandboxed`); its stderr goes to
    ``errlog`` (default: ours). ``auth`` (an ``httpx2.Auth``, e.g. the SDK's ``OAuthClientProvider``) signs
    HTTP and SSE requests.

    Raises:
        OSError: the process cannot be started or the endpoint cannot be reached.
        SandboxUnavailable: a sandbox was asked for and there is no adequate one (nothing was started).
        SandboxError, ConfigError: the sandboxed server's executable or paths are not on the host.
    """
    async with AsyncExitStack() as stack:
        if target.kind == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            assert target.command is not None
            if sandbox is None:
                params = StdioServerParameters(command=target.command, args=list(target.args),
                                               env=dict(target.env) or None, cwd=target.cwd)
            else:
                from toolrig.mcp._sandboxed import wrap_server

                wrapped = await wrap_server(target, sandbox, name=name)
                stack.push_async_callback(wrapped.aclose)  # after the server stopped: its cgroup goes
                params = StdioServerParameters(command=wrapped.argv[0], args=list(wrapped.argv[1:]),
                                               env=dict(wrapped.env))
            streams = await stack.enter_async_context(stdio_client(params, errlog=_file_or_stderr(errlog)))
        elif target.kind == "sse":
            from mcp.client.sse import sse_client

            assert target.url is not None
            streams = await stack.enter_async_context(sse_client(
                target.url, headers=dict(target.headers) or None, timeout=http_timeout,
                sse_read_timeout=SSE_READ_TIMEOUT, auth=auth))
        elif target.kind == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            assert target.url is not None
            client = await stack.enter_async_context(httpx2.AsyncClient(
                headers=dict(target.headers), timeout=httpx2.Timeout(http_timeout, read=SSE_READ_TIMEOUT), auth=auth))
            streams = await stack.enter_async_context(streamable_http_client(target.url, http_client=client))
        else:
            from toolrig.mcp._websocket import websocket_client

            assert target.url is not None
            streams = await stack.enter_async_context(websocket_client(
                target.url, headers=target.headers, open_timeout=http_timeout))
        read, write = streams
        yield (read if on_end is None else _WatchedReadStream(read, on_end)), write
