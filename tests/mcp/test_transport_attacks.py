"""Attacks on toolrig's streamable HTTP server, sent as raw HTTP to a real server on 127.0.0.1.

Each test names the attack; every one got through before its fix (see the commit that added it).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from toolrig import tool
from toolrig.mcp import BearerAuth, StaticTokens, serve_async

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
JSON_SSE = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]


@tool(permission="readonly")
def echo(text: str) -> str:
    """Echo a text.

    Args:
        text: the text.
    """
    return text


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[int]:
    """toolrig's HTTP server on a free loopback port, in this event loop; yields the port."""
    ready: list[str] = []
    options.setdefault("audit", False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async([echo], transport="http", port=0, on_ready=ready.append, **options))
        with anyio.fail_after(30):
            while not ready:
                await anyio.sleep(0.01)
        yield int(urlsplit(ready[0]).port or 0)
        tg.cancel_scope.cancel()


def _exchange(port: int, head: bytes, body: bytes, timeout: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + body)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            pass
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
        call["params"]["arguments"] = {"text": "bob-public"}
        _, _, bobs = await request(port, bob, call)
        priming = event_ids(bobs)[0]
        call["params"]["arguments"] = {"text": "ALICE-SECRET"}
        _, _, alices = await request(port, alice, call)
        assert b"ALICE-SECRET" in alices
        resume = [h for h in bob if h[0] != "content-type"] + [("last-event-id", priming)]
        status, _, replay = await request(port, [(k, "text/event-stream" if k == "accept" else v) for k, v in resume],
                                          method="GET", timeout=3)
        assert b"ALICE-SECRET" not in replay
        assert b"bob-public" in replay  # its own stream is still resumable
        # an event id of Alice's stream, leaked to Bob, replays nothing either
        leaked = event_ids(alices)[0]
        resume = [(k, v) for k, v in resume if k != "last-event-id"] + [("last-event-id", leaked)]
        status, _, replay = await request(port, [(k, "text/event-stream" if k == "accept" else v) for k, v in resume],
                                          method="GET", timeout=3)
        assert b"ALICE-SECRET" not in replay


async def test_another_users_token_cannot_resume_a_stream_of_a_session() -> None:
    audience = "http://127.0.0.1/mcp"
    auth = BearerAuth(verifier=StaticTokens({"tok-a": "alice", "tok-b": "bob"}, audience=audience), audience=audience)
    async with served(auth=auth) as port:
        alice = await open_session(port, [("authorization", "Bearer tok-a")])
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo",
                                                                               "arguments": {"text": "ALICE-SECRET"}}}
        _, _, alices = await request(port, alice, call)
        as_bob = [(k, "Bearer tok-b" if k == "authorization" else v) for k, v in alice if k != "content-type"]
        status, _, replay = await request(port, [*as_bob, ("last-event-id", event_ids(alices)[0])], method="GET",
                                          timeout=3)
        assert status == 404 and b"ALICE-SECRET" not in replay
