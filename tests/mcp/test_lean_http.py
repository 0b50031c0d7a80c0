"""The lean HTTP/1.1 transport (:mod:`toolrig.mcp.client._lean_http`) against a real socket server on 127.0.0.1.

Each test scripts what the server writes for each request it reads; every hostile answer (bad chunking, huge
headers, a truncated body, a wrong ``Content-Length``, a reset mid-answer, bytes after the answer, bytes sent while
the connection is idle) must fail that one request with httpx2's error, or pass its answer and close its
connection, and the next request must get its own answer on a clean connection.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import anyio
import anyio.abc
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.mcp.client._http_bounds import BoundedTransport
from toolrig.mcp.client._lean_http import MAX_HEADER_BYTES, LeanTransport

pytestmark = pytest.mark.anyio

Script = Callable[[anyio.abc.SocketStream, bytes], Awaitable[bool]]
"""What the server does with one request (its head and body): True to keep the connection for the next one."""


def ok(body: bytes = b'{"ok":1}', extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body + extra)


def writes(*parts: bytes, keep: bool = True) -> Script:
    async def script(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        for part in parts:
            await stream.send(part)
            await anyio.sleep(0.01)  # so the parts tend to arrive apart; the answer must not depend on it
        return keep
    return script


async def reset(stream: anyio.abc.SocketStream, request: bytes) -> bool:
    await stream.send(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nhalf")
    await anyio.sleep(0.05)  # the head first, then the reset, mostly; either way the request must fail
    sock = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    return False


async def echo(stream: anyio.abc.SocketStream, request: bytes) -> bool:
    body = request.partition(b"\r\n\r\n")[2]
    await stream.send(ok(body))
    return True


@dataclass
class Server:
    scripts: list[Script]
    connections: int = 0
    closed: int = 0
    sent: int = 0
    """Scripts count here what they sent after an answer (the tests wait for it, not for a time)."""
    requests: list[bytes] = field(default_factory=list)

    async def until(self, ready: Callable[[], bool]) -> None:
        with anyio.fail_after(30):  # a hang guard, not a timing
            while not ready():
                await anyio.sleep(0.01)

    def next_script(self) -> Script:
        return self.scripts.pop(0) if self.scripts else echo


async def _read_request(stream: anyio.abc.SocketStream, buffer: bytearray) -> bytes | None:
    while b"\r\n\r\n" not in buffer:
        try:
            buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return None
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += await stream.receive()
    buffer[:] = rest[length:]
    return head + b"\r\n\r\n" + rest[:length]


@asynccontextmanager
async def serving(*scripts: Script) -> AsyncIterator[tuple[str, Server]]:
    server = Server(list(scripts))

    async def handle(stream: anyio.abc.SocketStream) -> None:
        server.connections += 1
        buffer = bytearray()
        try:
            async with stream:
                while (request := await _read_request(stream, buffer)) is not None:
                    server.requests.append(request)
                    try:
                        if not await server.next_script()(stream, request):
                            return
                    except (anyio.BrokenResourceError, OSError):
                        return
        finally:
            server.closed += 1

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield f"http://127.0.0.1:{port}/mcp", server
        finally:
            tg.cancel_scope.cancel()


def client(transport: httpx2.AsyncBaseTransport | None = None, read: float = 10.0) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=transport or LeanTransport(), timeout=httpx2.Timeout(10.0, read=read))


async def post(http: httpx2.AsyncClient, url: str, body: bytes = b'{"n":1}') -> httpx2.Response:
    response = await http.post(url, content=body, headers={"content-type": "application/json"})
    await response.aread()
    return response


async def test_sequential_requests_share_one_keep_alive_connection() -> None:
    async with serving() as (url, server), client() as http:
        for i in range(5):
            body = f'{{"n":{i}}}'.encode()
            response = await post(http, url, body)
            assert response.status_code == 200
            assert response.content == body
        assert server.connections == 1
        head = server.requests[0].split(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"post /mcp http/1.1\r\n")
        assert b"\r\nhost: 127.0.0.1:" in head and b"\r\ncontent-length: 7" in head


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\nabcdefg",
])
async def test_framed_answers_split_anywhere_are_read_whole_and_keep_the_connection(answer: bytes) -> None:
    for cut in range(1, len(answer), 7):
        async with serving(writes(answer[:cut], answer[cut:])) as (url, server), client() as http:
            assert (await post(http, url)).content == b"abcdefg"
            assert (await post(http, url)).content == b'{"n":1}'
            assert server.connections == 1


async def test_an_answer_ended_by_closing_the_connection_is_read_and_not_reused() -> None:
    answer = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end"
    async with serving(writes(answer, keep=False)) as (url, server), client() as http:
        assert (await post(http, url)).content == b"until the end"
        assert (await post(http, url)).content == b'{"n":1}'
        assert server.connections == 2


HOSTILE = {
    "bad chunk size": writes(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n"),
    "chunk cut short": writes(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nabc", keep=False),
    "huge headers": writes(b"HTTP/1.1 200 OK\r\n" + b"x-big: " + b"a" * (MAX_HEADER_BYTES + 10) + b"\r\n\r\n"),
    "endless headers": writes(*[b"HTTP/1.1 200 OK\r\n"] + [b"x-h: " + b"b" * 8000 + b"\r\n"] * 30),
    "truncated body": writes(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort", keep=False),
    "two lengths": writes(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 5\r\n\r\nabcde"),
    "length and chunked": writes(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n"
                                 b"3\r\nabc\r\n0\r\n\r\n"),
    "not http": writes(b"SSH-2.0-OpenSSH_9.6\r\n"),
    "no answer": writes(keep=False),
    "informational": writes(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n" + ok()),
    "switching protocols": writes(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n"),
    "reset mid-answer": reset,
    "endless chunk extension": writes(*[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;x="]
                                       + [b"y" * 16000] * 10),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_a_hostile_answer_fails_its_request_cleanly_and_the_next_gets_its_own(name: str) -> None:
    async with serving(HOSTILE[name]) as (url, server), client() as http:
        with pytest.raises(httpx2.TransportError):
            await post(http, url)
        assert (await post(http, url, b'{"next":1}')).content == b'{"next":1}'
        assert server.connections == 2  # the hostile answer's connection was not used again


@pytest.mark.parametrize("after", [
    ok(b'{"stale":1}'),  # a second answer nobody asked for, in the same write
    b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n",  # the start of one
    b"garbage",
    b"abc",  # a Content-Length shorter than what was sent
])
async def test_bytes_after_an_answer_do_not_become_the_next_answer(after: bytes) -> None:
    async with serving(writes(ok(b'{"first":1}', extra=after))) as (url, server), client() as http:
        assert (await post(http, url)).content == b'{"first":1}'
        assert (await post(http, url, b'{"second":1}')).content == b'{"second":1}'
        assert server.connections == 2


async def test_bytes_sent_while_the_connection_is_idle_retire_it() -> None:
    async def late(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(ok(b'{"first":1}'))
        await anyio.sleep(0.05)  # mostly after the answer was read (stale bytes while idle); read with it, the
        # connection is retired as well: the test's outcome is the same
        await stream.send(ok(b'{"stale":1}'))
        server.sent += 1
        return True

    async with serving(late) as (url, server), client() as http:
        assert (await post(http, url)).content == b'{"first":1}'
        await server.until(lambda: server.sent == 1)  # on loopback, sent is in our socket's buffer
        assert (await post(http, url, b'{"second":1}')).content == b'{"second":1}'
        assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_not_used() -> None:
    async def once(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(ok())
        return False  # keep-alive in the headers, but the server closes it

    async with serving(once) as (url, server), client() as http:
        await post(http, url)
        await server.until(lambda: server.closed == 1)
        assert (await post(http, url, b'{"again":1}')).content == b'{"again":1}'
        assert server.connections == 2


async def test_no_answer_in_time_is_a_read_timeout_and_the_connection_is_dropped() -> None:
    async def silent(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await anyio.sleep_forever()  # never answers (cancelled when the server stops)
        return False

    transport = LeanTransport()
    async with serving(silent) as (url, server), client(transport, read=0.2) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await post(http, url)
        assert (await post(http, url, b'{"next":1}')).content == b'{"next":1}'
        assert server.connections == 2


@pytest.mark.parametrize("header", [("x-evil", "a\r\nx-injected: 1"), ("x-nul", "a\x00b"), ("bad name", "v")])
async def test_a_header_that_would_split_the_request_is_not_sent(header: tuple[str, str]) -> None:
    async with serving() as (url, server), client() as http:
        request = http.build_request("POST", url, content=b"{}")
        request.headers[header[0]] = header[1]
        with pytest.raises(httpx2.LocalProtocolError):
            await http.send(request)
        assert server.requests == []


async def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: refused
        async with client() as http:
            with pytest.raises(httpx2.ConnectError):
                await post(http, f"http://127.0.0.1:{port}/mcp")


async def test_what_it_does_not_do_goes_to_the_fallback_transport_unchanged() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=b"fallback")

    async def chunks() -> AsyncIterator[bytes]:
        yield b"streamed"

    async with serving() as (url, server), client(LeanTransport(httpx2.MockTransport(handler))) as http:
        assert (await post(http, "https://example.invalid/mcp")).content == b"fallback"  # TLS: httpx2's
        assert (await http.request("PUT", url, content=b"x")).content == b"fallback"  # a method it does not do
        assert (await http.post(url, content=chunks())).content == b"fallback"  # a streamed body
        assert (await post(http, url, b'{"here":1}')).content == b'{"here":1}'
    assert [(r.method, r.url.scheme) for r in seen] == [("POST", "https"), ("PUT", "http"), ("POST", "http")]
    assert len(server.requests) == 1


async def test_auth_and_client_headers_reach_the_server() -> None:
    async with serving() as (url, server), httpx2.AsyncClient(
            transport=LeanTransport(), auth=httpx2.BasicAuth("user", "secret"), headers={"x-team": "a"}) as http:
        await post(http, url)
    head = server.requests[0].split(b"\r\n\r\n")[0].lower()
    assert b"\r\nauthorization: basic dxnlcjpzzwnyzxq=" in head and b"\r\nx-team: a" in head


async def test_under_the_bounded_transport_an_oversized_body_fails_one_call_and_the_next_passes() -> None:
    big = b'{"jsonrpc":"2.0","id":1,"result":{"x":"' + b"a" * 300_000 + b'"}}'
    bounded = BoundedTransport(LeanTransport(), limit=1000, server="up")
    message = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}'
    async with serving(writes(ok(big))) as (url, server), client(bounded) as http:
        error = await post(http, url, message)
        assert b"too large" in error.content.lower() or b"-32" in error.content
        assert b"a" * 2000 not in error.content
        second = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}'
        assert (await post(http, url, second)).content == second
        assert server.connections == 2  # the oversized body was not read to its end: its connection closed


async def test_a_request_cancelled_mid_answer_closes_its_connection() -> None:
    async def slow(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nab")
        server.sent += 1
        await anyio.sleep_forever()  # the rest never comes (cancelled when the server stops)
        return False

    transport = LeanTransport()
    async with serving(slow) as (url, server), client(transport) as http:
        async with anyio.create_task_group() as tg:
            tg.start_soon(post, http, url)
            await server.until(lambda: server.sent == 1)  # half the answer is on its way: cancelled mid-answer
            tg.cancel_scope.cancel()
        assert (await post(http, url, b'{"next":1}')).content == b'{"next":1}'
        assert server.connections == 2
    assert "open=0" in repr(transport)


def _framed(body: bytes, sizes: list[int], chunked: bool) -> bytes:
    if not chunked:
        return b"HTTP/1.1 200 OK\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    parts, rest = [], body
    for size in sizes:
        if not rest:
            break
        piece, rest = rest[:size], rest[size:]
        parts.append(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
    if rest:
        parts.append(f"{len(rest):x}\r\n".encode() + rest + b"\r\n")
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"".join(parts) + b"0\r\n\r\n"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.binary(max_size=3000), sizes=st.lists(st.integers(1, 700), max_size=8), chunked=st.booleans(),
       cuts=st.lists(st.integers(0, 4000), max_size=5))
def test_any_framing_cut_anywhere_gives_the_body_and_a_reusable_connection(body: bytes, sizes: list[int],
                                                                           chunked: bool, cuts: list[int]) -> None:
    answer = _framed(body, sizes, chunked)
    points = sorted({c for c in cuts if 0 < c < len(answer)})
    pieces = [answer[a:b] for a, b in zip([0, *points], [*points, len(answer)], strict=True)]

    async def run() -> None:
        async with serving(writes(*pieces)) as (url, server), client() as http:
            assert (await post(http, url)).content == body
            assert (await post(http, url, b'{"next":1}')).content == b'{"next":1}'
            assert server.connections == 1

    anyio.run(run)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(head=st.sampled_from([b"", b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                             b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n"]),
       noise=st.binary(max_size=400))
def test_garbage_fails_cleanly_or_parses_and_never_reaches_the_next_request(head: bytes, noise: bytes) -> None:
    async def run() -> None:
        async with serving(writes(head + noise, keep=False)) as (url, server), client() as http:
            with suppress(httpx2.TransportError):
                await post(http, url)
            assert (await post(http, url, b'{"next":1}')).content == b'{"next":1}'
            assert server.connections == 2

    anyio.run(run)
