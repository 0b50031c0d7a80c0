"""BoundedTransport under an httpx2 client, against an in-memory server (httpx2's MockTransport): what is read of each
body, what the SDK reads in its place, and when reading stops."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest

from toolrig.mcp.client._http_bounds import BoundedTransport
from toolrig.mcp.shared._oversized import MESSAGE_TOO_LARGE

pytestmark = pytest.mark.anyio

LIMIT = 10_000
URL = "http://upstream.test/mcp"


class Body:
    """A streamed body that counts the chunks pulled from it."""

    def __init__(self, chunks: list[bytes], *, gate: anyio.Event | None = None) -> None:
        self.chunks = chunks
        self.pulled = 0
        self.gate = gate

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            if self.gate is not None and self.pulled == 1:
                await self.gate.wait()
            self.pulled += 1
            yield chunk


def request(request_id: int, method: str = "tools/call") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"name": "t"}}


def answer(request_id: int, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}},
                      separators=(",", ":")).encode()


def client(handler: Callable[[httpx2.Request], Any]) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=BoundedTransport(httpx2.MockTransport(handler), limit=LIMIT, server="up"))


def error_in(body: bytes) -> mcp_types.JSONRPCError:
    message = mcp_types.jsonrpc_message_adapter.validate_json(body, by_name=False)
    assert isinstance(message, mcp_types.JSONRPCError), message
    return message


async def test_a_json_body_over_the_limit_is_not_read_and_the_request_gets_the_error() -> None:
    body = Body([b'{"jsonrpc":"2.0","id":5,"result":{"t":"'] + [b"x" * 1024] * 1000 + [b'"}}'])
    seen: list[httpx2.Request] = []

    def handler(req: httpx2.Request) -> httpx2.Response:
        seen.append(req)
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)

    async with client(handler) as http:
        response = await http.post(URL, json=request(5))
    error = error_in(response.content)
    assert error.id == 5 and error.error.code == MESSAGE_TOO_LARGE and "10,000 bytes" in error.error.message
    assert body.pulled <= LIMIT // 1024 + 2  # reading stopped at the limit
    assert seen[0].headers["accept-encoding"] == "identity"


async def test_a_declared_length_over_the_limit_is_not_read_at_all() -> None:
    body = Body([answer(6, "y" * 20_000)])

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json", "content-length": "20100"},
                               content=body)

    async with client(handler) as http:
        response = await http.post(URL, json=request(6))
    assert error_in(response.content).id == 6 and body.pulled == 0


async def test_a_body_within_the_limit_passes_unchanged() -> None:
    async with client(lambda req: httpx2.Response(200, json=json.loads(answer(7, "fine")))) as http:
        response = await http.post(URL, json=request(7))
    assert response.content == answer(7, "fine")


async def test_a_body_of_too_many_values_is_refused_though_small_in_bytes() -> None:
    items = json.dumps({"jsonrpc": "2.0", "id": 8, "result": {"content": [{"type": "text", "text": "a"}] * 40_000}})

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=items.encode())

    bounded = BoundedTransport(httpx2.MockTransport(handler), limit=10_000_000, server="up")
    async with httpx2.AsyncClient(transport=bounded) as http:
        response = await http.post(URL, json=request(8))
    assert "JSON values" in error_in(response.content).error.message


async def test_a_compressed_body_is_refused_unread() -> None:
    body = Body([b"\x1f\x8b" + b"\x00" * 100])

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json", "content-encoding": "gzip"},
                               content=body)

    async with client(handler) as http:
        response = await http.post(URL, json=request(9))
    error = error_in(response.content)
    assert error.id == 9 and "compressed" in error.error.message and body.pulled == 0


def sse(*messages: bytes) -> list[bytes]:
    return [b"event: message\ndata: " + m + b"\n\n" for m in messages]


def events_of(raw: bytes) -> list[Any]:
    return [mcp_types.jsonrpc_message_adapter.validate_json(block.split(b"data: ", 1)[1], by_name=False)
            for block in raw.split(b"\n\n") if block.strip()]


async def test_an_sse_answer_over_the_limit_becomes_the_error_and_the_stream_is_not_read_further() -> None:
    progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": 3, "progress": 1}}).encode()
    big = answer(3, "z" * 50_000)
    body = Body([*sse(progress), *[big[i:i + 1000] for i in range(0, len(big), 1000)], b"\n\n", *sse(progress)])

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with client(handler) as http, http.stream("POST", URL, json=request(3)) as response:
        raw = b"".join([chunk async for chunk in response.aiter_bytes()])
    first, error = events_of(raw)
    assert isinstance(first, mcp_types.JSONRPCNotification)
    assert isinstance(error, mcp_types.JSONRPCError) and error.id == 3 and error.error.code == MESSAGE_TOO_LARGE
    assert body.pulled <= 1 + LIMIT // 1000 + 2


async def test_a_large_server_request_on_a_post_stream_is_dropped_and_the_answer_still_passes() -> None:
    asking = json.dumps({"method": "sampling/createMessage", "jsonrpc": "2.0", "id": 40,
                         "params": {"messages": "q" * 30_000}}).encode()
    body = Body([*sse(asking), *sse(answer(4, "ok"))])

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with client(handler) as http, http.stream("POST", URL, json=request(4)) as response:
        raw = b"".join([chunk async for chunk in response.aiter_bytes()])
    (only,) = events_of(raw)
    assert isinstance(only, mcp_types.JSONRPCResponse) and only.id == 4


async def test_on_a_get_stream_an_oversized_answer_fails_the_request_it_answers_and_the_stream_goes_on() -> None:
    stream = Body([*sse(answer(11, "w" * 30_000)), *sse(answer(12, "small")), *sse(answer(99, "v" * 30_000))])

    def handler(req: httpx2.Request) -> httpx2.Response:
        if req.method == "POST":
            return httpx2.Response(202)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    async with client(handler) as http:
        for request_id in (11, 12):
            assert (await http.post(URL, json=request(request_id))).status_code == 202
        async with http.stream("GET", URL) as response:
            raw = b"".join([chunk async for chunk in response.aiter_bytes()])
    error, small = events_of(raw)  # the answer to 99, which nobody awaits, is dropped
    assert isinstance(error, mcp_types.JSONRPCError) and error.id == 11
    assert isinstance(small, mcp_types.JSONRPCResponse) and small.id == 12


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
async def test_the_body_of_a_cancelled_request_is_not_read_further(kind: str) -> None:
    gate = anyio.Event()
    body = Body([b"event: message\n", b"data: {\"jsonrpc\":", b"x" * 10, b"y" * 10], gate=gate)

    def handler(req: httpx2.Request) -> httpx2.Response:
        if json.loads(req.content).get("method") == "notifications/cancelled":
            return httpx2.Response(202)
        return httpx2.Response(200, headers={"content-type": kind}, content=body)

    async with client(handler) as http, http.stream("POST", URL, json=request(21)) as response:
        chunks = response.aiter_bytes()
        async with anyio.create_task_group() as tg:
            async def cancel() -> None:
                await http.post(URL, json={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                           "params": {"requestId": 21}})

            tg.start_soon(cancel)
            with anyio.fail_after(30):
                if kind == "text/event-stream":
                    with pytest.raises(httpx2.SSEError):
                        await anext(chunks)
                else:
                    assert [c async for c in chunks] == []
    assert body.pulled == 1  # the read waiting on the server was stopped; nothing after it was read


async def test_a_post_stream_is_read_to_its_end_before_its_answer_passes() -> None:
    body = Body([*sse(answer(21, "done")), b": the end of the stream\n\n"])

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with client(handler) as http, http.stream("POST", URL, json=request(21)) as response:
        async for chunk in response.aiter_bytes():
            assert events_of(chunk)[0].id == 21
            assert body.pulled == 2  # the whole stream was read before the answer came out
            break


async def test_a_server_keeping_its_post_streams_open_delays_one_answer_not_every_answer() -> None:
    never = anyio.Event()  # the server never ends its streams after the answer

    def handler(req: httpx2.Request) -> httpx2.Response:
        ident = json.loads(req.content)["id"]
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=Body([*sse(answer(ident, "open")), b": more\n\n"], gate=never))

    bounded = BoundedTransport(httpx2.MockTransport(handler), limit=LIMIT, server="up")
    async with httpx2.AsyncClient(transport=bounded) as http:
        for ident in (31, 32, 33):
            with anyio.fail_after(30):
                async with http.stream("POST", URL, json=request(ident)) as response:
                    async for chunk in response.aiter_bytes():
                        assert events_of(chunk)[0].id == ident
                        break
            assert not bounded.reads_ahead  # off after the first stream that did not end: the others passed at once


def test_sent_messages_are_told_apart_without_a_second_validation() -> None:
    """What the transport notes of each POST it sends: requests (by id) and cancellations; nothing else."""
    from toolrig.mcp.client._http_bounds import _sent_message

    def post(body: object) -> httpx2.Request:
        return httpx2.Request("POST", "http://upstream/mcp", content=json.dumps(body).encode())

    sent = _sent_message(post({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}}))
    assert isinstance(sent, mcp_types.JSONRPCRequest) and sent.id == 7 and sent.method == "tools/call"
    assert isinstance(sent := _sent_message(post({"jsonrpc": "2.0", "id": "a", "method": "ping"})),
                      mcp_types.JSONRPCRequest) and sent.id == "a"
    cancel = _sent_message(post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": 7}}))
    assert isinstance(cancel, mcp_types.JSONRPCNotification) and cancel.params == {"requestId": 7}
    for other in ({"jsonrpc": "2.0", "method": "notifications/initialized"},  # another notification
                  {"jsonrpc": "2.0", "id": 3, "result": {}},  # our answer to a server's request
                  {"jsonrpc": "2.0", "id": True, "method": "ping"}, {"jsonrpc": "2.0", "id": None, "method": "x"},
                  {"jsonrpc": "1.0", "id": 1, "method": "ping"},
                  {"jsonrpc": "2.0", "id": 1, "method": "x", "params": 1},
                  [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]):
        assert _sent_message(post(other)) is None, other
    assert _sent_message(httpx2.Request("POST", "http://upstream/mcp", content=b"{not json")) is None
    assert _sent_message(httpx2.Request("GET", "http://upstream/mcp")) is None


async def test_a_request_cancelled_before_its_answer_began_is_no_longer_awaited() -> None:
    arrived, never = anyio.Event(), anyio.Event()

    async def handler(req: httpx2.Request) -> httpx2.Response:
        arrived.set()
        await never.wait()  # the server never answers
        return httpx2.Response(200)

    bounded = BoundedTransport(httpx2.MockTransport(handler), limit=LIMIT, server="up")
    async with httpx2.AsyncClient(transport=bounded) as http, anyio.create_task_group() as tg:
        async def post() -> None:
            await http.post(URL, json=request(41))

        tg.start_soon(post)
        with anyio.fail_after(30):
            await arrived.wait()
        assert 41 in bounded.awaiting
        tg.cancel_scope.cancel()  # a 2026 session sends no notifications/cancelled: this is the only signal
    assert 41 not in bounded.awaiting and len(bounded.awaiting) == 0


async def test_a_notification_s_empty_answer_is_read_to_its_end_so_its_connection_can_serve_again() -> None:
    bodies: list[Body] = []

    def handler(req: httpx2.Request) -> httpx2.Response:
        bodies.append(Body([b""]))
        return httpx2.Response(202, content=bodies[-1])

    async with client(handler) as http, http.stream("POST", URL, json={
            "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}) as response:
        assert response.status_code == 202  # closed unread, as the client does with a 202
    assert bodies[0].pulled == 1  # read to its end on close: the keep-alive connection is not cut
