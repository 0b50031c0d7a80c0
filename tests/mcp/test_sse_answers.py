"""Request POSTs answered by toolrig itself (``_answers.py``), seen as raw HTTP from a real server.

An SSE answer must be what the SDK's transport writes (it still writes ``initialize``'s), a broken answer must be
resumable through the SDK's GET path, and a call in flight must hold its session open like any request. A call
answered within ``JSON_WINDOW`` with nothing before its answer gets the SDK's JSON body instead; one that sends
anything first (progress) or takes longer gets the SSE answer.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from toolrig import CallContext, Injected, tool
from toolrig.mcp import serve_async
from toolrig.mcp.server import MemoryEventStore, _answers
from toolrig.mcp.server._answers import JSON_WINDOW

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def host(port: int) -> list[tuple[str, str]]:
    return [("content-type", "application/json"), ("accept", "application/json, text/event-stream"),
            ("host", f"127.0.0.1:{port}")]


def _exchange(port: int, head: bytes, body: bytes, timeout: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + body)
        out = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := s.recv(65536):
                out += chunk
    return out


async def request(port: int, headers: list[tuple[str, str]], body: Any = b"", *, method: str = "POST",
                  timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 request: status, headers, body (as sent: chunked)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers)
    length = f"content-length: {len(data)}\r\n" if method == "POST" else ""
    head = f"{method} /mcp HTTP/1.1\r\n{lines}{length}connection: close\r\n\r\n".encode()
    raw = await anyio.to_thread.run_sync(_exchange, port, head, data, timeout)
    top, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = top.decode("latin-1").split("\r\n")
    found = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), found, rest


def event_ids(body: bytes | str) -> list[str]:
    text = body.decode() if isinstance(body, bytes) else body
    return re.findall(r"^id: (\S+)", text, flags=re.M)


@tool(permission="readonly")
async def slow_echo(text: str, seconds: float = 0.0) -> str:
    """Echo a text after a while.

    Args:
        text: the text.
        seconds: how long to wait first.
    """
    await anyio.sleep(seconds)
    return text


@tool(permission="readonly")
async def progress_echo(text: str, ctx: Injected[CallContext]) -> str:
    """Report progress once, then echo a text.

    Args:
        text: the text.
    """
    await ctx.report_progress(1, 2, "half")
    return text


HELD: dict[str, str] = {}
"""What became of each ``held`` call: "running", then "cancelled" (or "ended")."""
HELD_DONE: dict[str, anyio.Event] = {}
"""Set when a ``held`` call stops running (a test puts the event here before it makes the call)."""


@tool(permission="readonly")
async def held(key: str) -> str:
    """Run until cancelled (at most 10 minutes), recording what became of the call.

    Args:
        key: the call's name in ``HELD``.
    """
    HELD[key] = "running"
    try:
        await anyio.sleep(600)
    except anyio.get_cancelled_exc_class():
        HELD[key] = "cancelled"
        raise
    else:
        HELD[key] = "ended"
    finally:
        if key in HELD_DONE:
            HELD_DONE[key].set()
    return key


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[int]:
    ready: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async([slow_echo, progress_echo, held], transport="http", port=0,
                                          on_ready=ready.append,
                                          audit=False, **options))
        with anyio.fail_after(30):
            while not ready:
                await anyio.sleep(0.01)
        yield int(urlsplit(ready[0]).port or 0)
        tg.cancel_scope.cancel()


def dechunked(raw: bytes) -> bytes:
    out = b""
    while raw:
        size, _, raw = raw.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out, raw = out + raw[:n], raw[n + 2:]
    return out


def shape(body: bytes) -> str:
    """An SSE body with its event ids, JSON-RPC ids and results blanked: what the framing is."""
    text = re.sub(r"^id: \S+", "id: ID", body.decode(), flags=re.M)
    return re.sub(r"^data: \{.*\}\r?$", "data: JSON", text, flags=re.M)


async def session(port: int) -> tuple[list[tuple[str, str]], dict[str, str], bytes]:
    status, headers, body = await request(port, host(port), INIT)
    assert status == 200
    s = [*host(port), ("mcp-session-id", headers["mcp-session-id"]), ("mcp-protocol-version", "2025-11-25")]
    assert (await request(port, s, {"jsonrpc": "2.0", "method": "notifications/initialized"}))[0] == 202
    return s, headers, body


def call(n: int, seconds: float = 0.0) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "slow_echo", "arguments": {"text": f"answer {n}", "seconds": seconds}}}


@pytest.mark.parametrize("retry", [None, 750])
async def test_a_calls_answer_is_framed_as_the_sdk_frames_initializes(retry: int | None) -> None:
    async with served(retry_interval=retry) as port:
        s, init_headers, init_body = await session(port)
        status, headers, body = await request(port, s, call(2, seconds=JSON_WINDOW * 3))  # no answer in the window
        assert status == 200
        skip = {"date", "content-length"}
        assert {k: v for k, v in headers.items() if k not in skip} \
            == {k: v for k, v in init_headers.items() if k not in skip}
        ours, sdks = dechunked(body), dechunked(init_body)
        assert shape(ours) == shape(sdks)
        assert ours.startswith(b"id: ") and (b"\r\nretry: 750\r\n" in ours) == (retry is not None)
        data = json.loads(re.findall(rb"^data: (\{.*\})\r$", ours, flags=re.M)[0])
        assert data["id"] == 2 and data["result"]["content"][0]["text"] == "answer 2"
        assert len(set(event_ids(ours))) == 2


def _first_event(port: int, head: bytes, body: bytes) -> bytes:
    """Send a request and read until its first SSE event has come, then hang up (a broken stream)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + body)
        out = b""
        while b"\r\n\r\n" not in out.partition(b"\r\n\r\n")[2]:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
    return out


async def test_a_broken_answer_is_resumed_with_last_event_id_and_its_result_arrives_once() -> None:
    async with served() as port:
        s, _, _ = await session(port)
        data = json.dumps(call(7, seconds=1.0)).encode()
        head = ("POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in s)
                + f"content-length: {len(data)}\r\n\r\n").encode()
        first = await anyio.to_thread.run_sync(_first_event, port, head, data)
        priming = event_ids(first.decode("latin-1"))
        assert len(priming) == 1 and b"answer 7" not in first  # the call is still running
        resume = [(k, "text/event-stream" if k == "accept" else v) for k, v in s if k != "content-type"]
        status, _, replay = await request(port, [*resume, ("last-event-id", priming[0])], method="GET",
                                          timeout=5.0)
        assert status == 200
        assert replay.count(b'"id":7,"result"') == 1 and b"answer 7" in replay


async def test_a_long_call_holds_its_session_past_the_idle_timeout_and_then_it_expires() -> None:
    # margins wide enough for a slow machine: the call outlasts the timeout 2x, the wait after it 3x
    async with served(idle_timeout=1.0) as port:
        s, _, _ = await session(port)
        status, _, body = await request(port, s, call(3, seconds=2.0))
        assert status == 200 and b"answer 3" in body
        status, _, body = await request(port, s, call(4))  # straight after: the session is still there
        assert status == 200 and b"answer 4" in body
        await anyio.sleep(3.0)
        status, _, _ = await request(port, s, call(5))
        assert status == 404


async def test_a_call_answered_at_once_gets_the_json_body_the_sdks_json_mode_writes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_answers, "JSON_WINDOW", 30.0)  # "at once" on any machine: a slow one may take 0.1 s
    async with served() as port:
        s, init_headers, _ = await session(port)
        status, headers, body = await request(port, s, call(8))
        assert status == 200
        assert headers["content-type"] == "application/json"
        assert headers["mcp-session-id"] == init_headers["mcp-session-id"]
        assert int(headers["content-length"]) == len(body) and "transfer-encoding" not in headers
        answer = json.loads(body)
        assert answer["id"] == 8 and answer["result"]["content"][0]["text"] == "answer 8"
        async with served(json_response=True) as sdk_port:  # the SDK transport's JSON mode: the same body
            sdk_s, _, _ = await session(sdk_port)
            _, sdk_headers, sdk_body = await request(sdk_port, sdk_s, call(8))
        assert sdk_headers["content-type"] == "application/json" and json.loads(sdk_body) == answer


async def test_a_call_that_sends_progress_first_is_answered_on_sse_with_the_progress_before_the_answer() -> None:
    async with served() as port:
        s, _, _ = await session(port)
        message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                   "params": {"name": "progress_echo", "arguments": {"text": "answer 9"},
                              "_meta": {"progressToken": "p9"}}}
        status, headers, body = await request(port, s, message)
        assert status == 200 and headers["content-type"] == "text/event-stream"
        events = [json.loads(d) for d in re.findall(rb"^data: (\{.*\})\r$", dechunked(body), flags=re.M)]
        assert [e.get("method") for e in events] == ["notifications/progress", None]
        assert events[0]["params"]["progressToken"] == "p9" and events[1]["id"] == 9
        assert len(event_ids(dechunked(body))) == 3  # the priming event, the progress, the answer


async def test_a_call_answered_on_sse_by_its_progress_replays_the_progress_and_the_answer_after_its_priming() -> None:
    """The priming event is stored when the first message (the progress) makes the answer SSE: before it."""
    async with served() as port:
        s, _, _ = await session(port)
        message = {"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                   "params": {"name": "progress_echo", "arguments": {"text": "answer 10"},
                              "_meta": {"progressToken": "p10"}}}
        status, _, body = await request(port, s, message)
        assert status == 200
        priming = event_ids(dechunked(body))[0]
        resume = [(k, "text/event-stream" if k == "accept" else v) for k, v in s if k != "content-type"]
        status, _, replay = await request(port, [*resume, ("last-event-id", priming)], method="GET", timeout=3)
        events = [json.loads(d) for d in re.findall(rb"^data: (\{.*\})\r$", dechunked(replay), flags=re.M)]
        assert status == 200 and [e.get("method") for e in events] == ["notifications/progress", None]
        assert events[1]["id"] == 10 and events[1]["result"]["content"][0]["text"] == "answer 10"


class FlakyStore(MemoryEventStore):
    """An event store (user code) that fails for chosen requests: their priming event, or their messages."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_priming: set[str] = set()
        self.fail_messages: set[str] = set()
        self.stored: list[str] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        request = stream_id.rpartition("/")[2]  # the server keeps each session's events apart: "<session tag>/<id>"
        if request in (self.fail_priming if message is None else self.fail_messages):
            raise RuntimeError("the store is down")
        self.stored.append(request)
        return await super().store_event(stream_id, message)


async def test_an_event_store_failing_on_the_priming_event_leaves_the_sse_answer_without_it_and_the_session_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore()
    store.fail_priming.add("13")
    async with served(event_store=store) as port:
        s, _, _ = await session(port)
        status, headers, body = await request(port, s, call(13, seconds=JSON_WINDOW * 3))  # an SSE answer
        assert status == 200 and headers["content-type"] == "text/event-stream"
        events = dechunked(body)
        assert b"answer 13" in events and b"data: \r\n" not in events  # no priming event (empty data): the
        assert len(event_ids(events)) == 1 and store.stored.count("13") == 1  # answer came, with its stored id
        status, _, body = await request(port, s, call(15, seconds=JSON_WINDOW * 3))  # the session goes on
        assert status == 200 and b"answer 15" in body and len(event_ids(dechunked(body))) == 2
    assert "priming event of request 13" in caplog.text


async def test_calls_answered_as_json_store_no_events_so_a_small_store_still_resumes_an_sse_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: each JSON-answered call stored a priming and a response event whose ids no client ever saw; in a
    bounded store they pushed out the events of resumable SSE streams."""
    store = FlakyStore()
    store.max_events = 8
    async with served(event_store=store) as port:
        s, _, _ = await session(port)
        status, headers, body = await request(port, s, call(20, seconds=JSON_WINDOW * 3))  # an SSE answer
        assert status == 200 and headers["content-type"] == "text/event-stream"
        priming = event_ids(dechunked(body))[0]
        held_before = store.event_count
        monkeypatch.setattr(_answers, "JSON_WINDOW", 30.0)  # "at once" on any machine
        for n in range(21, 41):
            status, headers, body = await request(port, s, call(n))
            assert status == 200 and headers["content-type"] == "application/json" and b"answer" in body
        assert store.event_count == held_before
        assert not {str(n) for n in range(21, 41)} & set(store.stored)
        resume = [(k, "text/event-stream" if k == "accept" else v) for k, v in s if k != "content-type"]
        status, _, replay = await request(port, [*resume, ("last-event-id", priming)], method="GET", timeout=3)
        assert status == 200 and replay.count(b'"id":20,"result"') == 1 and b"answer 20" in replay


async def test_an_event_store_failing_on_a_message_still_delivers_it_without_an_id_and_the_session_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore()
    store.fail_messages.add("15")
    async with served(event_store=store) as port:
        s, _, _ = await session(port)
        status, _, body = await request(port, s, call(15, seconds=JSON_WINDOW * 3))  # an SSE answer: primed
        assert status == 200
        events = dechunked(body)
        assert b"answer 15" in events and len(event_ids(events)) == 1  # the priming event only: the answer has none
        status, _, body = await request(port, s, call(16, seconds=JSON_WINDOW * 3))
        assert status == 200 and b"answer 16" in body and len(event_ids(dechunked(body))) == 2
    assert "a message of request 15" in caplog.text


def _hang_up(port: int, head: bytes, body: bytes, wait_for_answer: bool) -> bytes:
    """Send a request and hang up: at once (within ``JSON_WINDOW``), or once its SSE answer has begun."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + body)
        out = b""
        while wait_for_answer and b"\r\n\r\n" not in out:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
    return out


@pytest.mark.parametrize("when", ["within the window", "after the window"])
async def test_a_client_that_hangs_up_mid_call_ends_its_answer_so_its_session_expires_and_the_call_ends(
        when: str) -> None:
    """An answer ends when its client leaves (also one that left before the window was over): the request no
    longer holds the session, which expires after its idle timeout and cancels the call. An answer that kept
    waiting for the call would hold the session, and the call, for the call's ten minutes."""
    key = f"hang up {when}"
    done = HELD_DONE[key] = anyio.Event()
    async with served(idle_timeout=1.0) as port:
        s, _, _ = await session(port)
        data = json.dumps({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
                           "params": {"name": "held", "arguments": {"key": key}}}).encode()
        head = ("POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in s)
                + f"content-length: {len(data)}\r\n\r\n").encode()
        after = when == "after the window"
        got = await anyio.to_thread.run_sync(_hang_up, port, head, data, after)
        assert not after or b"text/event-stream" in got
        with anyio.fail_after(60):  # the idle timeout (1 s) after the client left, on any machine
            await done.wait()
        assert HELD[key] == "cancelled"
        status, _, _ = await request(port, s, call(22))
        assert status == 404  # the session expired
