"""Opening the SDK transport a :class:`~toolrig.mcp.shared._target.Target` asks for (one place for all four)."""

from __future__ import annotations

import ipaddress
import sys
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from toolrig.mcp.client._listing import ListingScreen
from toolrig.mcp.shared import ReceiveStream, Target

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox

__all__ = ["DEFAULT_HTTP_TIMEOUT", "DEFAULT_MAX_MESSAGE_BYTES", "SDK_SSE_EVENT_LIMIT", "open_transport"]

DEFAULT_HTTP_TIMEOUT = 30.0
"""Seconds for connecting and for each plain HTTP operation (SSE streams may stay open longer)."""

SSE_READ_TIMEOUT = 300.0

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message read from an MCP server by default (a server's ``max_message_bytes`` changes it).

It leaves room for the largest result the output stage accepts: 2,000,000 characters
(``OutputLimits.hard_limit``) take at most 8,000,000 bytes as UTF-8, twice that when a server sends them as
text and again as structured content, plus the JSON-RPC envelope."""

SDK_SSE_EVENT_LIMIT = 1024 * 1024
"""The SDK's SSE client (the legacy SSE transport) reads events of at most 1 MiB, and offers no way to change
it: over that transport a message is capped at the smaller of this and ``max_message_bytes``."""


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


def _timeout(seconds: float) -> Any:
    import httpx2

    return httpx2.Timeout(seconds, read=SSE_READ_TIMEOUT)


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, lower case too,
    as ``urllib.request.getproxies`` reads them), or None: none is set, or ``NO_PROXY`` covers the URL."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or _bypassed(parts, proxies.get("no", "")):
        return None
    return proxy


def _bypassed(parts: urllib.parse.SplitResult, no_proxy: str) -> bool:
    """``NO_PROXY`` covers the URL: ``*``, its host, a domain it is in (``example.com``, ``.example.com``), each
    optionally with a port (``host:8080``, ``[::1]:8080``). A loopback host is never proxied (as in Go's
    ``net/http``): no proxy elsewhere can reach this machine's loopback."""
    host = (parts.hostname or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost") or _loopback(host):
        return True
    port = parts.port or (443 if parts.scheme == "https" else 80)
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        name, wanted = entry, None
        if entry.startswith("["):  # [v6] or [v6]:port
            name, _, rest = entry[1:].partition("]")
            wanted = rest[1:] if rest.startswith(":") else None
        elif entry.count(":") == 1:
            name, wanted = entry.split(":")
        name = name.strip(".")
        if not name or (wanted is not None and wanted != str(port)):
            continue
        if host == name or host.endswith("." + name):
            return True
    return False


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _inner_transport(url: str) -> Any:
    """What carries HTTP to ``url``: httpx2's transport through the environment's proxy if one applies, else
    toolrig's lean keep-alive pool for plain HTTP (httpx2's transport for the rest)."""
    import httpx2

    from toolrig.mcp.client._lean_http import LeanTransport

    proxy = proxy_for(url)
    return httpx2.AsyncHTTPTransport(proxy=proxy) if proxy is not None else LeanTransport()


def _bounded_client(limit: int, server: str, url: str) -> Callable[..., Any]:
    """A factory of ``httpx2.AsyncClient`` for ``url`` whose bodies are read through a :class:`BoundedTransport`
    (over the environment's proxy, if one applies)."""
    import httpx2

    from toolrig.mcp.client._http_bounds import BoundedTransport

    proxy = proxy_for(url)

    def make(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
        inner = httpx2.AsyncHTTPTransport(proxy=proxy) if proxy is not None else None
        return httpx2.AsyncClient(headers=headers, timeout=timeout if timeout is not None else _timeout(30.0),
                                  auth=auth, transport=BoundedTransport(inner, limit=limit, server=server))

    return make


class _WatchedReadStream(ReceiveStream):
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

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. ``last_context`` of the SDK's context streams
        return getattr(self._stream, name)


def message_limit(target: Target) -> int:
    """The most bytes of one message read from ``target``'s server."""
    limit = target.max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES
    return min(limit, SDK_SSE_EVENT_LIMIT) if target.kind == "sse" else limit


@asynccontextmanager
async def open_transport(target: Target, *, errlog: TextIO | None = None,
                         http_timeout: float = DEFAULT_HTTP_TIMEOUT, auth: Any = None,
                         on_end: Callable[[], None] | None = None, sandbox: Sandbox | None = None,
                         name: str = "", on_calls: Callable[[Any], None] | None = None) -> AsyncIterator[Any]:
    """Yield the (read, write) streams of a connection to ``target``; ``on_end()`` runs when the server hangs up.

    No message of more than :func:`message_limit` bytes is read: stdio lines through
    :mod:`toolrig.mcp.client._stdio_client`, HTTP and SSE bodies through
    :mod:`toolrig.mcp.client._http_bounds`, WebSocket frames by the ``websockets`` library's own bound (an
    oversized frame closes that connection).

    A stdio server is started with a minimal environment (the SDK's: ``HOME``, ``LOGNAME``, ``PATH``,
    ``SHELL``, ``TERM``, ``USER``) plus ``target.env`` — or, given a ``sandbox``, inside it with the sandbox's
    minimal environment plus ``target.env`` (see :mod:`toolrig.mcp.client._sandboxed`); its stderr goes to
    ``errlog`` (default: ours). ``auth`` (an ``httpx2.Auth``, e.g. the SDK's ``OAuthClientProvider``) signs
    HTTP and SSE requests. The answers to ``tools/list`` are screened: an entry that cannot be read is taken out
    of its page and named in the page's ``_meta`` (:mod:`toolrig.mcp.client._listing`). ``on_calls`` gets an
    ``http`` transport's :class:`~toolrig.mcp.client._direct_call.DirectCalls` (``tools/call`` sent without the
    SDK's session).

    Raises:
        OSError: the process cannot be started or the endpoint cannot be reached.
        SandboxUnavailable: a sandbox was asked for and there is no adequate one (nothing was started).
        SandboxError, ConfigError: the sandboxed server's executable or paths are not on the host.
    """
    limit = message_limit(target)
    server = name or target.describe()
    async with AsyncExitStack() as stack:
        if target.kind == "stdio":
            from toolrig.mcp.client._stdio_client import stdio_client

            assert target.command is not None
            argv, env = (target.command, *target.args), dict(target.env)
            if sandbox is not None:
                from toolrig.mcp.client._sandboxed import wrap_server

                wrapped = await wrap_server(target, sandbox, name=name)
                stack.push_async_callback(wrapped.aclose)  # after the server stopped: its cgroup goes
                argv, env = tuple(wrapped.argv), dict(wrapped.env)
            streams: Any = await stack.enter_async_context(stdio_client(
                argv[0], argv[1:], env=env, cwd=target.cwd if sandbox is None else None,
                errlog=_file_or_stderr(errlog), max_message=limit, server=server))
        elif target.kind == "sse":
            from mcp.client.sse import sse_client

            assert target.url is not None
            streams = await stack.enter_async_context(sse_client(
                target.url, headers=dict(target.headers) or None, timeout=http_timeout,
                sse_read_timeout=SSE_READ_TIMEOUT, auth=auth,
                httpx_client_factory=_bounded_client(limit, server, target.url)))
        elif target.kind == "http":
            from toolrig.mcp.client._streamable import streamable_http

            assert target.url is not None
            import httpx2

            from toolrig.mcp.client._http_bounds import BoundedTransport

            # plain HTTP on toolrig's lean keep-alive pool (or the environment's proxy), the rest on httpx2's; the
            # POSTs straight to the bounds
            bounded = BoundedTransport(_inner_transport(target.url), limit=limit, server=server)
            client = await stack.enter_async_context(httpx2.AsyncClient(
                headers=dict(target.headers), timeout=_timeout(http_timeout), auth=auth, transport=bounded))
            streams = await stack.enter_async_context(streamable_http(target.url, client, server=server,
                                                                      direct=bounded, on_calls=on_calls))
        else:
            from toolrig.mcp.client._websocket import websocket_client

            assert target.url is not None
            streams = await stack.enter_async_context(websocket_client(
                target.url, headers=target.headers, open_timeout=http_timeout, max_message=limit))
        read, write = ListingScreen().streams(*streams)  # one unreadable tool entry is left out, not the listing
        yield (read if on_end is None else _WatchedReadStream(read, on_end)), write
