"""Round-9 attacks on ``serve --http`` sent as raw HTTP by a hostile client (real server on 127.0.0.1)."""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest
from test_transport_attacks import open_session, request, served

from toolrig import Policy, tool

pytestmark = pytest.mark.anyio


def _texts(body: bytes) -> str:
    return body.decode("utf-8", "replace")


BOUND = 30.0
"""A failure guard only: how long a broken run may hang."""
_started, _release = threading.Event(), threading.Event()


@tool(permission="readonly")
def held_echo(text: str) -> str:
    """Echo a text once the test lets it go.

    Args:
        text: the text.
    """
    _started.set()
    _release.wait(BOUND)
    return text


async def test_a_cancellation_sent_in_another_session_does_not_cancel_its_call() -> None:
    _started.clear()
    _release.clear()
    async with served([held_echo]) as port:
        alice, bob = await open_session(port), await open_session(port)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "held_echo", "arguments": {"text": "ALICE-DONE"}}}
        answers: list[bytes] = []

        async def alice_calls() -> None:
            answers.append((await request(port, alice, call, timeout=BOUND))[2])

        async with anyio.create_task_group() as tg:
            tg.start_soon(alice_calls)
            # alice's call is running: bob's cancellation names a live request id
            assert await anyio.to_thread.run_sync(_started.wait, BOUND)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
            status, _, _ = await request(port, bob, cancel)
            assert status == 202
            # bob's session reads its messages in order: once a ping after the cancellation is answered, the
            # cancellation has been handled, so alice's call can end only now
            status, _, pong = await request(port, bob, {"jsonrpc": "2.0", "id": 8, "method": "ping"})
            assert status == 200 and b'"result"' in pong
            _release.set()
        assert "ALICE-DONE" in _texts(answers[0])


@pytest.mark.parametrize(("name", "body", "status", "expect"), [
    # a repeated member: the envelope check reads the last one, as the SDK does (no message is judged as one
    # thing and run as another)
    ("duplicate method", b'{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/call",'
                         b'"params":{"name":"nope","arguments":{}}}', 200, b"not_found"),
    ("duplicate id, an object last", b'{"jsonrpc":"2.0","id":3,"id":{"a":1},"method":"ping"}', 400, b"-32600"),
    ("duplicate jsonrpc, 1.0 last", b'{"jsonrpc":"2.0","jsonrpc":"1.0","id":3,"method":"ping"}', 400, b"-32600"),
    ("integer id of 5,000 digits", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', 400, b"-32700"),
    ("integer argument of 5,000 digits", b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",'
     b'"arguments":{"text":"x","seconds":' + b"9" * 5000 + b'}}}', 400, b"-32700"),
    ("negative zero id", b'{"jsonrpc":"2.0","id":-0.0,"method":"ping"}', 400, b"-32600"),
    ("exponent id", b'{"jsonrpc":"2.0","id":1e2,"method":"ping"}', 400, b"-32600"),
])
async def test_repeated_members_and_out_of_range_numbers_get_one_reading(name: str, body: bytes, status: int,
                                                                        expect: bytes) -> None:
    async with served() as port:
        session = await open_session(port)
        got, _, answer = await request(port, session, body)
        assert got == status and expect in answer and b"Traceback" not in answer, (name, answer[:300])
        after, _, _ = await request(port, session, {"jsonrpc": "2.0", "id": 99, "method": "ping"})
        assert after == 200


REBINDING = [
    [("host", "127.0.0.1.attacker.invalid:{port}")],
    [("host", "localhost.attacker.invalid")],
    [("host", "attacker.invalid:{port}")],
    [("host", "")],
    [("host", "localhost:{port}, attacker.invalid")],
    [("host", "localhost\t:{port}")],
    [("host", "[::1%25lo]:{port}")],
    [("host", "[0:0:0:0:0:ffff:7f00:1]:{port}")],
    [("host", "0x7f.1:{port}")],
    [("host", "2130706433:{port}")],
    [("host", "localhost:+{port}")],
    [("host", "127.0.0.1:{port}"), ("origin", "http://localhost.:{port}")],
    [("host", "127.0.0.1:{port}"), ("origin", "http://attacker.invalid:{port}")],
    [("host", "127.0.0.1:{port}"), ("origin", "file://")],
    [("host", "127.0.0.1:{port}"), ("origin", "http://127.0.0.1:{port}@attacker.invalid")],
    [("host", "127.0.0.1:{port}"), ("origin", "")],
]


async def test_more_rebinding_spellings_of_host_and_origin_are_refused() -> None:
    from test_transport_attacks import INIT, JSON_SSE

    async with served() as port:
        for headers in REBINDING:
            sent = [(k, v.replace("{port}", str(port))) for k, v in headers]
            status, _, _ = await request(port, [*JSON_SSE, *sent], INIT)
            assert status in (400, 403, 421), sent


@tool(permission="readonly")
def hidden_tool(text: str = "") -> str:
    """A tool ALLOWED_TOOLS leaves out."""
    return "HIDDEN-RAN"


async def test_a_tool_allowed_tools_hides_is_never_named_to_a_client_that_guesses() -> None:
    """Before: ``hidden-tool`` answered "Did you mean: hidden_tool?" and ``HIDDEN_TOOL`` was repaired to it (then
    denied): suggestions and case repairs were drawn from every tool, not from those offered."""
    from test_transport_attacks import echo

    policy = Policy(allow=["*"], allowed_tools=["echo"])
    async with served([echo, hidden_tool], policy=policy) as port:
        session = await open_session(port)
        _, _, listing = await request(port, session, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert b"hidden" not in listing.lower()
        for name in ("hidden-tool", "HIDDEN_TOOL", "Hidden_Tool", "hiddentool", "hidden_too", "zzz"):
            _, _, answer = await request(port, session, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                          "params": {"name": name, "arguments": {}}})
            rest = answer.lower().replace(name.lower().encode(), b"")  # the name asked for is repeated, fine
            assert b"not_found" in answer and b"hidden_tool" not in rest, (name, answer[:300])
        _, _, answer = await request(port, session, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                                      "params": {"name": "hidden_tool", "arguments": {}}})
        assert b"HIDDEN-RAN" not in answer  # called by its exact name: denied, as documented
