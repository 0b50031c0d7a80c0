"""DNS pinning: an httpx transport whose connections go only to addresses checked for this request.

Built on public APIs only: an :class:`httpcore.AsyncNetworkBackend` (``network_backend=`` of
:class:`httpcore.AsyncConnectionPool`) that maps ``(host, port)`` to the checked addresses of the
current request (a ContextVar set by the fetch client), and an :class:`httpx.AsyncBaseTransport`
over that pool. httpcore still sends TLS SNI and certificate checks for the original host name,
and the Host header is untouched; only the TCP connect goes to the pinned IP. A host with no pin
is never connected to, and the socket's peer address is checked again after connecting.
"""

from __future__ import annotations

import contextlib
import ipaddress
import ssl
import typing
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextvars import ContextVar

import httpcore
import httpx

from toolrig.guards._urls import URLRules

__all__ = ["PinnedTransport", "pinned"]

Pins = Mapping[tuple[str, int], tuple[str, ...]]

_PINS: ContextVar[Pins | None] = ContextVar("toolrig_guards_pins", default=None)

_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def pinned(host: str, port: int, addresses: Iterable[str]) -> Iterator[None]:
    """Within this block, connections to ``host:port`` go to ``addresses`` (and nowhere else)."""
    token = _PINS.set({(host.lower(), port): tuple(addresses)})
    try:
        yield
    finally:
        _PINS.reset(token)


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """httpcore's exceptions as httpx's (the one place they are translated)."""
    try:
        yield
    except Exception as exc:
        for source, target in _EXCEPTIONS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects ``(host, port)`` only to the addresses pinned for the current request."""

    def __init__(self, rules: URLRules) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._rules = rules

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
                          ) -> httpcore.AsyncNetworkStream:
        pins = _PINS.get() or {}
        addresses = pins.get((host.lower(), port))
        if not addresses:
            raise httpcore.ConnectError(f"refusing to connect to {host}:{port}: it was not checked for this request")
        last: Exception | None = None
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                       socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            await self._verify_peer(stream, address, host, port)
            return stream
        assert last is not None
        raise last

    async def _verify_peer(self, stream: httpcore.AsyncNetworkStream, address: str, host: str, port: int) -> None:
        peer = stream.get_extra_info("server_addr")
        try:
            ip = ipaddress.ip_address(peer[0] if isinstance(peer, tuple) else str(peer))
        except (ValueError, IndexError, TypeError):
            ip = None
        if ip is None or ip != ipaddress.ip_address(address) or self._rules.category(ip, port) is not None:
            await stream.aclose()
            raise httpcore.ConnectError(f"the connection for {host} reached {peer!r}, not the checked {address}")

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
                                  ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are never connected to")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _translated():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        closer = getattr(self._stream, "aclose", None)
        if closer is not None:
            await closer()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that connects only to addresses pinned with :func:`pinned`.

    HTTP/1.1 only; no proxies; connections are pooled per origin (a pooled connection was made to
    an address checked when it was opened).
    """

    def __init__(self, rules: URLRules, *, ssl_context: ssl.SSLContext | None = None,
                 max_connections: int = 10) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(trust_env=False),
            max_connections=max_connections, http1=True, http2=False, retries=0,
            network_backend=_PinnedBackend(rules))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        stream = request.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                             target=request.url.raw_path),
            headers=request.headers.raw, content=stream, extensions=request.extensions)
        with _translated():
            response = await self._pool.handle_async_request(core_request)
        assert isinstance(response.stream, typing.AsyncIterable)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_ResponseStream(response.stream), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()
