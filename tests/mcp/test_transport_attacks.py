"""Attacks on toolrig's streamable HTTP server, sent as raw HTTP to a real server on 127.0.0.1.

Each test names the attack; every one got through before its fix (see the commit that added it).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from toolrig import tool
from toolrig.mcp import BearerAuth, StaticTokens, serve_async
from toolrig.mcp.server._answers import JSON_WINDOW

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
JSON_SSE = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]


SSE_ANSWER = JSON_WINDOW * 3
"""A call that takes this long is answered on a resumable SSE stream (a quicker one may get a JSON body)."""


@tool(permission="readonly")
def echo(text: str, seconds: float = 0.0) -> str:
    """Echo a text, after a while.

    Args:
        text: the text.
        seconds: how long to wait first.
    """
    time.sleep(seconds)
    return text


@asynccontextmanager
async def served(tools: list[Any] | None = None, **options: Any) -> AsyncIterator[int]:
    """toolrig's HTTP server of ``tools`` (default: ``echo``) on a free loopback port, in this event loop; yields
    the port once it listens."""
    ready: list[str] = []
    up = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        up.set()

    options.setdefault("audit", False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async(tools or [echo], transport="http", port=0, on_ready=on_ready, **options))
        with anyio.fail_after(30):
            await up.wait()
        yield int(urlsplit(ready[0]).port or 0)
        tg.cancel_scope.cancel()


def _exchange(port: int, head: bytes, body: bytes, timeout: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head)
        with contextlib.suppress(OSError):  # a server refusing the body may close before it is all sent
            s.sendall(body)
        out = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := s.recv(65536):
                out += chunk
    return out


async def request(port: int, headers: list[tuple[str, str]], body: bytes | Any = b"", *, method: str = "POST",
                  timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 request (headers sent exactly as given, duplicates too): status, headers, body."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers)
    length = f"content-length: {len(data)}\r\n" if method == "POST" else ""
    head = f"{method} /mcp HTTP/1.1\r\n{lines}{length}connection: close\r\n\r\n".encode()
    raw = await anyio.to_thread.run_sync(_exchange, port, head, data, timeout)
    top, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = top.decode("latin-1").split("\r\n")
    found = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), found, rest


def host(port: int) -> list[tuple[str, str]]:
    return [*JSON_SSE, ("host", f"127.0.0.1:{port}")]


async def open_session(port: int, extra: list[tuple[str, str]] = ()) -> list[tuple[str, str]]:  # type: ignore[assignment]
    status, headers, _ = await request(port, [*host(port), *extra], INIT)
    assert status == 200
    session = [*host(port), *extra, ("mcp-session-id", headers["mcp-session-id"]),
               ("mcp-protocol-version", "2025-11-25")]
    status, _, _ = await request(port, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202
    return session


def event_ids(body: bytes) -> list[str]:
    return re.findall(r"^id: (\S+)", body.decode(), flags=re.M)


# -- SSE resumption ------------------------------------------------------------------------------------
async def test_resuming_a_stream_never_replays_another_sessions_messages() -> None:
    """Before: one event store for all sessions, streams named by request id: B's resume replayed A's results."""
    async with served() as port:
        alice, bob = await open_session(port), await open_session(port)
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
        call["params"]["arguments"] = {"text": "bob-public", "seconds": SSE_ANSWER}
        _, _, bobs = await request(port, bob, call)
        priming = event_ids(bobs)[0]
        call["params"]["arguments"] = {"text": "ALICE-SECRET", "seconds": SSE_ANSWER}
        _, _, alices = await request(port, alice, call)
        assert b"ALICE-SECRET" in alices
        resume = [h for h in bob if h[0] != "content-type"] + [("last-event-id", priming)]
        _, _, replay = await request(port, [(k, "text/event-stream" if k == "accept" else v) for k, v in resume],
                                     method="GET", timeout=3)
        assert b"ALICE-SECRET" not in replay
        assert b"bob-public" in replay  # its own stream is still resumable
        # an event id of Alice's stream, leaked to Bob, replays nothing either
        leaked = event_ids(alices)[0]
        resume = [(k, v) for k, v in resume if k != "last-event-id"] + [("last-event-id", leaked)]
        _, _, replay = await request(port, [(k, "text/event-stream" if k == "accept" else v) for k, v in resume],
                                     method="GET", timeout=3)
        assert b"ALICE-SECRET" not in replay


async def test_another_users_token_cannot_resume_a_stream_of_a_session() -> None:
    audience = "http://127.0.0.1/mcp"
    auth = BearerAuth(verifier=StaticTokens({"tok-a": "alice", "tok-b": "bob"}, audience=audience), audience=audience)
    async with served(auth=auth) as port:
        alice = await open_session(port, [("authorization", "Bearer tok-a")])
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo",
                                                                               "arguments": {"text": "ALICE-SECRET",
                                                                                             "seconds": SSE_ANSWER}}}
        _, _, alices = await request(port, alice, call)
        as_bob = [(k, "Bearer tok-b" if k == "authorization" else v) for k, v in alice if k != "content-type"]
        status, _, replay = await request(port, [*as_bob, ("last-event-id", event_ids(alices)[0])], method="GET",
                                          timeout=3)
        assert status == 404 and b"ALICE-SECRET" not in replay


# -- DNS rebinding: Host and Origin --------------------------------------------------------------------
@pytest.mark.parametrize(("name", "headers", "expected"), [
    ("host with a junk port", [("host", "127.0.0.1:1234.attacker.invalid")], 421),
    ("host with an empty port and user-info", [("host", "localhost:@attacker.invalid")], 421),
    ("host with another port", [("host", "127.0.0.1:1")], 421),
    ("ipv6 host with another port", [("host", "[::1]:1")], 421),
    ("host with spaces inside", [("host", "127.0.0.1 :{port}")], 421),
    ("host with a trailing dot", [("host", "localhost.:{port}")], 421),
    ("host with user-info", [("host", "u@127.0.0.1:{port}")], 421),
    ("ipv4-mapped ipv6 host", [("host", "[::ffff:127.0.0.1]:{port}")], 421),
    ("two Host headers", [("host", "127.0.0.1:{port}"), ("host", "attacker.invalid")], (400, 421)),
    ("origin with a junk port", [("host", "127.0.0.1:{port}"), ("origin", "http://localhost:{port}.attacker.invalid")],
     403),
    ("origin of another local port", [("host", "127.0.0.1:{port}"), ("origin", "http://localhost:3000")], 403),
    ("origin with a path", [("host", "127.0.0.1:{port}"), ("origin", "http://127.0.0.1:{port}/x")], 403),
    ("origin null", [("host", "127.0.0.1:{port}"), ("origin", "null")], 403),
    ("two Origin headers, good one first", [("host", "127.0.0.1:{port}"), ("origin", "http://127.0.0.1:{port}"),
                                            ("origin", "http://attacker.invalid")], 403),
    ("two Origin headers, good one last", [("host", "127.0.0.1:{port}"), ("origin", "http://attacker.invalid"),
                                           ("origin", "http://127.0.0.1:{port}")], 403),
])
async def test_rebinding_host_and_origin_variants_are_refused(name: str, headers: list[tuple[str, str]],
                                                              expected: int | tuple[int, ...]) -> None:
    async with served() as port:
        sent = [(k, v.replace("{port}", str(port))) for k, v in headers]
        status, _, _ = await request(port, [*JSON_SSE, *sent], INIT)
        assert status in (expected if isinstance(expected, tuple) else (expected,)), name
        ok, _, _ = await request(port, host(port), INIT)  # and the server still serves
        assert ok == 200


async def test_the_servers_own_host_and_origin_in_any_spelling_are_accepted() -> None:
    async with served() as port:
        for sent in ([("host", f"localhost:{port}")], [("host", f"[::1]:{port}")], [("host", "127.0.0.1")],
                     [("host", f"127.0.0.1:{port}"), ("origin", f"http://localhost:{port}")],
                     [("host", f"127.0.0.1:{port}"), ("origin", f"http://127.0.0.1:{port}")]):
            status, _, _ = await request(port, [*JSON_SSE, *sent], INIT)
            assert status == 200, sent


# -- bodies and envelopes ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "body", "status", "code"), [
    ("object id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', 400, -32600),
    ("float id", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 400, -32600),
    ("boolean id", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', 400, -32600),
    ("null id", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', 400, -32600),
    ("list id", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', 400, -32600),
    ("batch", b'[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]', 400, -32600),
    ("empty batch", b"[]", 400, -32600),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', 400, -32600),
    ("numeric method", b'{"jsonrpc":"2.0","id":1,"method":7}', 400, -32600),
    ("a string", b'"ping"', 400, -32600),
    ("NaN", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":NaN}}}',
     400, -32700),
    ("Infinity", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":-Infinity}}}', 400, -32700),
    ("partial", b'{"jsonrpc":"2.0","id":1,"meth', 400, -32700),
    ("invalid utf-8", b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff\xfe"}', 400, -32700),
    ("deep nesting", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":' + b"[" * 100_000
     + b"]" * 100_000 + b"}}}", 400, -32700),
])
async def test_malformed_envelopes_get_a_json_rpc_error(name: str, body: bytes, status: int, code: int) -> None:
    """Before: odd ids were taken for notifications (202, no answer); NaN and Infinity parsed."""
    async with served() as port:
        session = await open_session(port)
        got, _, answer = await request(port, session, body)
        assert got == status, name
        error = json.loads(answer)["error"]
        assert error["code"] == code and "Traceback" not in error["message"]
        after, _, _ = await request(port, session, {"jsonrpc": "2.0", "id": 99, "method": "ping"})
        assert after == 200


async def test_an_oversized_body_is_refused_before_it_is_read_whole() -> None:
    """Before: a 20 MB body was read and answered (no size limit)."""
    async with served(max_body=64 * 1024) as port:
        session = await open_session(port)
        declared = [*session, ("content-length", str(10**9))]  # refused on its Content-Length alone
        head = "".join(f"{k}: {v}\r\n" for k, v in declared)
        raw = await anyio.to_thread.run_sync(_exchange, port, f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode(), b"", 10.0)
        assert raw.startswith(b"HTTP/1.1 413")
        assert json.loads(raw.partition(b"\r\n\r\n")[2])["error"]["code"] == -32600
        chunked = [*session, ("transfer-encoding", "chunked")]  # no Content-Length: counted as it arrives
        head = "".join(f"{k}: {v}\r\n" for k, v in chunked)
        piece = b"a" * 32768
        body = b'{"x":"' + piece * 4 + b'"}'
        data = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in (body[i:i + 32768]
                                                                        for i in range(0, len(body), 32768)))
        raw = await anyio.to_thread.run_sync(_exchange, port, f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode(),
                                             data + b"0\r\n\r\n", 10.0)
        assert raw.startswith(b"HTTP/1.1 413")
        lying = [*session, ("content-length", "5")]  # two Content-Length headers: refused by the HTTP parser
        status, _, _ = await request(port, lying, b"{}")
        assert status == 400
        ok, _, _ = await request(port, session, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert ok == 200


def _slow_body(port: int, session: list[tuple[str, str]], done: anyio.Event | None = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode()
    lines = "".join(f"{k}: {v}\r\n" for k, v in session)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"POST /mcp HTTP/1.1\r\n{lines}content-length: {len(body)}\r\n\r\n".encode() + body[:5])
        out = b""
        while chunk := s.recv(65536):  # the server answers (408) and closes without the rest of the body
            out += chunk
            if b"\r\n\r\n" in out and b"}" in out.partition(b"\r\n\r\n")[2]:
                break
    return out


async def test_a_slow_body_times_out_and_others_are_served_meanwhile() -> None:
    async with served(body_timeout=1.0) as port:
        session = await open_session(port)
        async with anyio.create_task_group() as tg:
            answers: list[bytes] = []

            async def slow() -> None:
                answers.append(await anyio.to_thread.run_sync(_slow_body, port, session))

            tg.start_soon(slow)
            ok, _, _ = await request(port, session, {"jsonrpc": "2.0", "id": 5, "method": "ping"})
            assert ok == 200
        assert answers[0].startswith(b"HTTP/1.1 408")


@pytest.mark.anyio
async def test_event_ids_are_random_and_distinct() -> None:
    """Event ids come from random bytes drawn ahead in bulk: still 144 unguessable bits each, never repeated."""
    from toolrig.mcp.server._events import MemoryEventStore

    store = MemoryEventStore(max_events=100_000)
    ids = [await store.store_event("s", None) for _ in range(2_000)]  # several bulk draws
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{24}", i) for i in ids)
    other = MemoryEventStore()
    assert not set(ids) & {await other.store_event("s", None) for _ in range(2_000)}
