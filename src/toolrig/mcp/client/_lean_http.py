"""A lean keep-alive HTTP/1.1 transport for plain ``http://`` MCP endpoints: :class:`LeanTransport`.

The gateway POSTs every forwarded call to its upstream; through ``httpx2.AsyncHTTPTransport`` each POST goes
through httpcore2's connection pool and h11, about a quarter of the gateway's loop thread. This transport sits
where that one did, under :class:`~toolrig.mcp.client._http_bounds.BoundedTransport` (which still reads, and
bounds, every body), and does the plain case itself: the request written in one piece to a pooled anyio TCP
stream, the answer parsed by ``httptools`` (llhttp, in C). What it does not do, it hands to ``fallback``
unchanged (the ``httpx2.AsyncHTTPTransport`` it replaces, with its TLS, verify and proxy settings): ``https``
URLs, methods other than GET, POST and DELETE, bodies not already in memory, and requests beyond
:data:`MAX_CONNECTIONS` open connections. The client above it (headers, auth such as OAuth, redirects, the
timeouts) is the same ``httpx2.AsyncClient``.

Its answers fail as httpx2's do (``ConnectError``, ``ReadError``, ``RemoteProtocolError``, the ``*Timeout`` errors,
``LocalProtocolError`` for a header that would split the request), and a connection goes back to the pool only
when its answer was read to its end, in keep-alive, with nothing after it: an answer cut short, malformed
(framing, chunking, ``Content-Length``), with headers over :data:`MAX_HEADER_BYTES`, followed by bytes nobody asked
for, or not read to its end, closes its connection. An idle connection is not used again after
:data:`KEEPALIVE_SECONDS`, nor when its server closed it or sent anything while it was idle.
"""

from __future__ import annotations

import math
import re
import select
import time
from collections.abc import AsyncIterator
from contextlib import suppress

import anyio
import anyio.abc
import httptools
import httpx2

__all__ = ["LeanTransport"]

MAX_HEADER_BYTES = 100 * 1024
"""The most bytes of an answer's status line and headers (httpcore2's bound for h11)."""
MAX_CONNECTIONS = 100
"""Open connections at most (httpx2's default pool); requests beyond go to the fallback transport."""
MAX_IDLE = 20
"""Idle connections kept per server at most (httpx2's default)."""
KEEPALIVE_SECONDS = 5.0
"""How long an idle connection is kept (httpx2's default)."""
_METHODS = frozenset({"GET", "POST", "DELETE"})
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+").fullmatch
_NO_BODY = frozenset({204, 304})


def _timeouts(request: httpx2.Request) -> tuple[float | None, float | None, float | None]:
    timeout = request.extensions.get("timeout") or {}
    return timeout.get("connect"), timeout.get("read"), timeout.get("write")


def _deadline(timeout: float | None) -> float:
    return math.inf if timeout is None else anyio.current_time() + timeout


def _head(request: httpx2.Request, target: bytes) -> bytes:
    """The request line and headers, refused (``LocalProtocolError``) when a part could split the request: a
    header name that is not a token, a CR, LF or NUL in a value or the target, a space in the target."""
    raw = request.headers.raw
    parts = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in raw:
        if _TOKEN(name) is None:
            raise httpx2.LocalProtocolError(f"the header name {name!r} cannot be sent")
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    head = b"".join(parts)
    lines = len(raw) + 2
    if head.count(b"\n") != lines or head.count(b"\r") != lines or b"\0" in head or b" " in target:
        raise httpx2.LocalProtocolError("a header value or the target contains a separator: not sent")
    return head


class _Connection:
    __slots__ = ("idle_since", "key", "sock", "stream")

    def __init__(self, key: tuple[str, int], stream: anyio.abc.SocketStream) -> None:
        self.key = key
        self.stream = stream
        self.idle_since = 0.0
        self.sock = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        """Looked up once (anyio builds its attribute table at each lookup): polled before each reuse."""

    def usable(self, now: float) -> bool:
        """Whether an idle connection may carry another request: fresh, not closed, nothing unread on it."""
        if now - self.idle_since > KEEPALIVE_SECONDS:
            return False
        if self.sock is None:
            return False
        try:
            poll = select.poll()
            poll.register(self.sock, select.POLLIN)
            readable = poll.poll(0)
        except (OSError, ValueError):
            return False
        return not readable  # readable while idle: the server closed it, or sent what nobody asked for


class _Answer:
    """``httptools``' callbacks for one answer; ``chunks`` collects its body until the reader takes them."""

    __slots__ = (
        "after",
        "body_bytes",
        "chunked",
        "chunks",
        "complete",
        "headers",
        "headers_done",
        "keep_alive",
        "length",
        "parser",
        "status",
    )

    def __init__(self) -> None:
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.after = False
        """Something followed the answer on its connection (the connection is not used again)."""
        self.length = False
        self.chunked = False
        self.body_bytes = 0

    def on_message_begin(self) -> None:
        if self.complete:
            self.after = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.complete or self.headers_done:  # trailers, or a second answer's headers: not this answer's
            self.after = self.after or self.complete
            return
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length":
            self.length = True
        elif lower == b"transfer-encoding":
            self.chunked = True

    def on_headers_complete(self) -> None:
        parser = self.parser
        if not self.complete and parser is not None:  # read here: once the answer is complete the parser has
            self.headers_done = True  # moved on
            self.status = parser.get_status_code()
            self.keep_alive = parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self.complete:
            self.after = True
            return
        self.chunks.append(body)
        self.body_bytes += len(body)

    def on_message_complete(self) -> None:
        if self.complete:
            self.after = True
        self.complete = True


class _Exchange:
    """One request on one connection: its answer's status, headers, and body as an ``httpx2`` byte stream."""

    def __init__(self, owner: LeanTransport, conn: _Connection, read_timeout: float | None) -> None:
        self.owner = owner
        self.conn = conn
        self.read_timeout = read_timeout
        self.answer = _Answer()
        self.received = 0
        self.eof = False
        self.status = 0

    async def _receive(self) -> None:
        """Read once from the connection into the parser; raises httpx2's errors."""
        try:
            with anyio.CancelScope(deadline=_deadline(self.read_timeout)) as scope:  # fail_after, without its
                data = await self.conn.stream.receive()  # generator-based context manager per read
            if scope.cancelled_caught:
                raise TimeoutError
        except TimeoutError as exc:
            raise httpx2.ReadTimeout("timed out reading the answer") from exc
        except anyio.EndOfStream:
            self.eof = True
            return
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpx2.ReadError(f"reading the answer failed: {exc!r}") from exc
        self.received += len(data)
        answer = self.answer
        if answer.parser is None:
            raise httpx2.StreamClosed()
        try:
            answer.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            if not answer.complete:
                raise httpx2.RemoteProtocolError(f"malformed answer: {exc}") from exc
            answer.after = True  # what followed the answer does not parse: the answer stands, its connection goes
        if not answer.headers_done and self.received > MAX_HEADER_BYTES:
            raise httpx2.RemoteProtocolError(f"the answer's headers exceed {MAX_HEADER_BYTES} bytes")
        if self.received - answer.body_bytes > MAX_HEADER_BYTES + 8 * answer.body_bytes:
            raise httpx2.RemoteProtocolError("the answer's framing is out of proportion to its body")

    async def read_head(self) -> None:
        answer = self.answer
        while not answer.headers_done:
            await self._receive()
            if self.eof:
                raise httpx2.RemoteProtocolError("the server closed the connection without an answer")
        self.status = answer.status
        if self.status < 200:  # nothing here asks for one (no ``Expect``, no upgrade): refused, not skipped
            raise httpx2.RemoteProtocolError(f"an informational answer ({self.status}) that was not asked for")

    def ends_at_eof(self) -> bool:
        answer = self.answer
        return not answer.length and not answer.chunked and self.status not in _NO_BODY

    async def body(self) -> AsyncIterator[bytes]:
        answer = self.answer
        while True:
            if answer.chunks:
                chunks, answer.chunks = answer.chunks, []
                for chunk in chunks:
                    yield chunk
            if answer.complete:
                return
            if self.eof:
                if self.ends_at_eof():  # its end is the connection's end
                    answer.complete = True
                    answer.keep_alive = False
                    return
                raise httpx2.RemoteProtocolError("the server closed the connection before the answer's end")
            await self._receive()

    async def close(self) -> None:
        answer = self.answer
        reusable = answer.complete and answer.keep_alive and not answer.after and not self.eof
        answer.parser = None  # the parser holds its callbacks' object: no cycle left for the garbage collector
        await self.owner.release(self.conn, reusable)


class _Body(httpx2.AsyncByteStream):
    def __init__(self, exchange: _Exchange) -> None:
        self.exchange = exchange
        self.closed = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.exchange.body()  # one generator, closed by whoever reads it (the bounded transport)

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self.exchange.close()


class LeanTransport(httpx2.AsyncBaseTransport):
    """Plain-HTTP keep-alive requests done here, the rest by ``fallback`` (see the module docstring)."""

    def __init__(self, fallback: httpx2.AsyncBaseTransport | None = None) -> None:
        self.fallback = fallback if fallback is not None else httpx2.AsyncHTTPTransport()
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._open = 0
        self._closed = False

    def handles(self, request: httpx2.Request) -> bool:
        """Whether ``request`` is done here (plain HTTP, a known method, a body in memory, a connection to spare)."""
        if request.url.scheme != "http" or request.method not in _METHODS or self._closed:
            return False
        if not isinstance(request.stream, httpx2.ByteStream) or "transfer-encoding" in request.headers:
            return False  # a body not in memory, or framing of its own: httpx2 frames it
        key = (request.url.host, request.url.port or 80)
        return bool(self._idle.get(key)) or self._open < MAX_CONNECTIONS

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not self.handles(request):
            return await self.fallback.handle_async_request(request)
        url = request.url
        key = (url.host, url.port or 80)
        connect, read, write = _timeouts(request)
        data = _head(request, url.raw_path) + await request.aread()  # in memory (a ByteStream): at once
        conn = await self._checkout(key, connect)
        exchange = _Exchange(self, conn, read)
        try:
            try:
                with anyio.CancelScope(deadline=_deadline(write)) as scope:
                    await conn.stream.send(data)
                if scope.cancelled_caught:
                    raise TimeoutError
            except TimeoutError as exc:
                raise httpx2.WriteTimeout("timed out sending the request") from exc
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                raise httpx2.WriteError(f"sending the request failed: {exc!r}") from exc
            await exchange.read_head()
        except BaseException:
            await self.release(conn, False)
            raise
        return httpx2.Response(exchange.status, headers=exchange.answer.headers, stream=_Body(exchange),
                               extensions={"http_version": b"HTTP/1.1"})

    async def _checkout(self, key: tuple[str, int], connect: float | None) -> _Connection:
        idle = self._idle.get(key)
        if idle:
            now = time.monotonic()
            while idle:
                conn = idle.pop()
                if conn.usable(now):
                    return conn
                await self._discard(conn)
        self._open += 1
        try:
            with anyio.fail_after(connect):
                stream = await anyio.connect_tcp(key[0], key[1])
        except TimeoutError as exc:
            self._open -= 1
            raise httpx2.ConnectTimeout(f"timed out connecting to {key[0]}:{key[1]}") from exc
        except OSError as exc:
            self._open -= 1
            raise httpx2.ConnectError(f"cannot connect to {key[0]}:{key[1]}: {exc}") from exc
        except BaseException:
            self._open -= 1
            raise
        return _Connection(key, stream)

    async def release(self, conn: _Connection, reusable: bool) -> None:
        """Give ``conn`` back to the pool when ``reusable``, else close it (also when cancelled)."""
        idle = self._idle.setdefault(conn.key, [])
        if reusable and not self._closed and len(idle) < MAX_IDLE:
            conn.idle_since = time.monotonic()
            idle.append(conn)
            return
        await self._discard(conn)

    async def _discard(self, conn: _Connection) -> None:
        self._open -= 1
        with anyio.CancelScope(shield=True), suppress(OSError, anyio.BrokenResourceError):
            await conn.stream.aclose()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        try:
            for conns in idle.values():
                for conn in conns:
                    await self._discard(conn)
        finally:
            await self.fallback.aclose()

    def __repr__(self) -> str:
        return f"LeanTransport(open={self._open}, fallback={self.fallback!r})"


