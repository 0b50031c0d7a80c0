"""A forwarded ``tools/call`` sent without the SDK's session gives what ``mcp.Client.call_tool`` gives.

Two :class:`Connection` s to one real upstream (``scripted_http_upstream.py``, a subprocess on 127.0.0.1 answering
each call with the raw answer its arguments script), one sending direct (the default), one through the SDK's
``Client`` (``direct_calls=False``): the same calls give equal results, or the same error type and text; the
upstream sees the same request (bar the id, which is the progress token), the same headers; progress reaches the
caller; a cancelled call sends ``notifications/cancelled`` for its id; an answer over the size bound fails the same
way. ``Connection.direct_sent`` shows that the direct path is taken.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import PYTHON, free_port, stop, wait_for_port, wait_until

from toolrig import CallContext
from toolrig.mcp.client._connection import Connection
from toolrig.mcp.shared import Target

UPSTREAM = Path(__file__).with_name("scripted_http_upstream.py")
Pair = tuple[Connection, Connection]


@asynccontextmanager
async def _connections(url: str, limit: int | None) -> AsyncIterator[Pair]:
    target = Target(kind="http", url=url, max_message_bytes=limit)
    direct = Connection(target, name="up", health_interval=None)  # one name: errors name the server
    sdk = Connection(target, name="up", health_interval=None, direct_calls=False)
    async with anyio.create_task_group() as tg:
        await direct.start(tg, wait=True)
        await sdk.start(tg, wait=True)
        yield direct, sdk
        direct.close()
        sdk.close()
        tg.cancel_scope.cancel()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("scripted") / "posts.jsonl"
    port = free_port()
    proc = subprocess.Popen([PYTHON, str(UPSTREAM), str(port), str(log)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def pair(upstream: tuple[str, Path]) -> Iterator[tuple[anyio.from_thread.BlockingPortal, Pair]]:
    with anyio.from_thread.start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(_connections(upstream[0], 64 * 1024)) as connections:
        yield portal, connections


async def _outcome(connection: Connection, tool: str, arguments: dict[str, Any],
                   context: CallContext | None = None) -> tuple[Any, ...]:
    try:
        result = await connection.call_tool(tool, arguments, context)
    except Exception as exc:  # the error a caller sees: its type and text, and those of its cause
        cause = exc.__cause__
        return ("error", type(exc).__name__, str(exc), type(cause).__name__, str(cause),
                getattr(cause, "code", None), getattr(cause, "data", None))
    return "result", result.model_dump(by_alias=True, mode="json", exclude_unset=True)


def _both(pair: tuple[anyio.from_thread.BlockingPortal, Pair], tool: str, script: dict[str, Any]
          ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    portal, (direct, sdk) = pair
    sent = direct.direct_sent
    arguments = {"script": script}
    got = portal.call(_outcome, direct, tool, arguments), portal.call(_outcome, sdk, tool, arguments)
    assert direct.direct_sent == sent + 1  # the direct path was taken
    assert sdk.direct_sent == 0
    return got


_json = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                 max_size=3), max_leaves=6)
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)},
                          optional={"_meta": st.dictionaries(st.text(max_size=4), _json, max_size=2)}),
    st.fixed_dictionaries({"type": st.just("image"), "data": st.just("aGk="), "mimeType": st.just("image/png")}),
    st.fixed_dictionaries({"type": st.sampled_from(["bogus", "text"])}),  # invalid: no text, unknown type
)
_result = st.fixed_dictionaries({}, optional={
    "content": st.lists(_block, max_size=3) | _json,
    "structuredContent": st.dictionaries(st.text(max_size=4), _json, max_size=3) | _json,
    "isError": st.booleans() | st.sampled_from(["yes", None]),
    "_meta": st.dictionaries(st.text(max_size=6), _json, max_size=2),
    "ttlMs": st.integers(-5, 5),
    "extra": _json,
})
_error = st.fixed_dictionaries({"code": st.integers(-32800, 10), "message": st.text(max_size=20)},
                               optional={"data": _json})
_script = st.fixed_dictionaries({"mode": st.sampled_from(["json", "sse"])}, optional={
    "progress": st.lists(st.integers(0, 100), max_size=2)}).flatmap(
    lambda base: st.one_of(_result.map(lambda r: {**base, "result": r}), _error.map(lambda e: {**base, "error": e})))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(["scripted", "typed", "unlisted"]), script=_script)
def test_the_direct_path_answers_as_the_sdk_client_for_any_upstream_answer(
        pair: tuple[anyio.from_thread.BlockingPortal, Pair], tool: str, script: dict[str, Any]) -> None:
    direct, sdk = _both(pair, tool, script)
    assert direct == sdk


@pytest.mark.parametrize(("tool", "script", "expected"), [
    ("scripted", {"result": {"content": [{"type": "text", "text": "hi"}], "structuredContent": {"a": 1},
                             "_meta": {"k": "v"}, "isError": False}}, "result"),
    ("typed", {"mode": "sse", "result": {"content": [], "structuredContent": {"n": 3}}}, "result"),
    ("typed", {"result": {"content": [], "structuredContent": {"n": "three"}}}, "RuntimeError"),
    ("typed", {"result": {"content": []}}, "RuntimeError"),
    ("typed", {"result": {"content": [], "isError": True}}, "result"),
    ("scripted", {"error": {"code": -32602, "message": "bad", "data": {"x": 1}}}, "MCPCallError"),
    ("scripted", {"mode": "sse", "error": {"code": -32003, "message": "boom"}}, "MCPCallError"),
    ("scripted", {"mode": "sse", "error": {"code": -32000, "message": "gone"}}, "MCPMaybeRanError"),
    ("scripted", {"result": {"content": "not a list"}}, "ValidationError"),
    ("scripted", {"result": {"content": [], "ttlMs": -3, "cacheScope": "nonsense"}}, "result"),
    ("scripted", {"result": {"content": [{"type": "text", "text": "x" * 70_000}]}}, "ResultTooLargeError"),
    # a (2026) input-required answer on a 2025 session: read as a plain result by both
    ("scripted", {"result": {"content": [], "resultType": "input_required", "inputRequests": {"a": {
        "method": "elicitation/create", "params": {"message": "x", "requestedSchema": {"type": "object",
                                                                                      "properties": {}}}}}}}, "result"),
    ("scripted", {"result": {"content": [], "resultType": "input_required", "requestState": "s"}}, "result"),
])
def test_known_answers_are_the_sdk_clients(pair: tuple[anyio.from_thread.BlockingPortal, Pair], tool: str,
                                           script: dict[str, Any], expected: str) -> None:
    direct, sdk = _both(pair, tool, script)
    if expected == "ResultTooLargeError":  # the bytes read differ by the answer's id ("toolrig-12" vs 12)
        direct, sdk = (tuple(re.sub(r"\d[\d,]* bytes or more", "N bytes or more", str(x)) for x in outcome)
                       for outcome in (direct, sdk))
    assert direct == sdk
    assert expected in direct[:4]  # "result", or the caller's error type or its cause's


def test_the_upstream_sees_the_same_request_and_headers(pair: tuple[anyio.from_thread.BlockingPortal, Pair],
                                                        upstream: tuple[str, Path]) -> None:
    log = upstream[1]
    marker = {"result": {"content": [{"type": "text", "text": "same"}]}, "nonce": "wire-check"}
    _both(pair, "scripted", marker)
    calls = [json.loads(line) for line in log.read_text().splitlines()
             if '"wire-check"' in line and json.loads(line)["body"].get("method") == "tools/call"]
    assert len(calls) == 2
    (direct, sdk) = calls
    assert isinstance(direct["body"]["id"], str) and direct["body"]["id"].startswith("toolrig-")
    assert isinstance(sdk["body"]["id"], int)
    for post in calls:  # the id is the progress token in both
        assert post["body"]["params"]["_meta"].pop("progressToken") == post["body"].pop("id")
    assert direct["body"] == sdk["body"]
    names = ("mcp-protocol-version", "mcp-name", "mcp-session-id", "accept", "content-type")
    assert {k: direct["headers"].get(k) for k in names} == {k: sdk["headers"].get(k) for k in names}
    assert direct["headers"]["mcp-protocol-version"] == "2025-11-25"


def test_progress_on_the_calls_stream_reaches_the_caller(pair: tuple[anyio.from_thread.BlockingPortal, Pair]) -> None:
    portal, (direct, sdk) = pair
    for connection in (direct, sdk):
        seen: list[float] = []
        sent = connection.direct_sent

        def report(progress: float, total: float | None, message: str | None, seen: list[float] = seen) -> None:
            seen.append(progress)

        script = {"mode": "sse", "progress": [1, 2, 3], "result": {"content": []}}
        portal.call(_outcome, connection, "scripted", {"script": script}, CallContext(progress=report))
        wait_until(lambda seen=seen: len(seen) == 3, timeout=10)  # type: ignore[misc]
        assert sorted(seen) == [1.0, 2.0, 3.0]
        assert connection.direct_sent == sent + connection.direct_calls


def test_a_cancelled_call_tells_the_upstream(pair: tuple[anyio.from_thread.BlockingPortal, Pair],
                                             upstream: tuple[str, Path]) -> None:
    portal, connections = pair
    log = upstream[1]

    async def cancelled_call(connection: Connection, nonce: str) -> None:
        with anyio.move_on_after(0.5):  # bounded: the upstream holds the call until it is cancelled
            await connection.call_tool("scripted", {"script": {"hold": True}, "nonce": nonce}, None)

    for connection in connections:
        nonce = f"cancel-{connection.direct_calls}"
        sent = connection.direct_sent
        portal.call(cancelled_call, connection, nonce)
        assert connection.direct_sent == sent + connection.direct_calls

        def posts(nonce: str = nonce) -> list[dict[str, Any]]:
            return [json.loads(line)["body"] for line in log.read_text().splitlines()]

        call_id = next(p["id"] for p in posts() if p.get("method") == "tools/call"
                       and p["params"]["arguments"].get("nonce") == nonce)
        wait_until(lambda call_id=call_id: any(  # type: ignore[misc]
            p.get("method") == "notifications/cancelled" and p["params"]["requestId"] == call_id for p in posts()),
            timeout=10)
        cancel = next(p for p in posts() if p.get("method") == "notifications/cancelled"
                      and p["params"]["requestId"] == call_id)
        assert cancel["params"]["reason"] == "caller cancelled"
        assert isinstance(call_id, str) == connection.direct_calls


def test_a_call_after_the_connection_broke_fails_the_same_way(upstream: tuple[str, Path]) -> None:
    """Unavailable, never sent: the direct path starts where the SDK's does (after a session is there)."""
    port = free_port()

    async def run() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        proc = subprocess.Popen([PYTHON, str(UPSTREAM), str(port), str(upstream[1])], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for_port(port, proc)
            async with _connections(f"http://127.0.0.1:{port}/mcp", None) as (direct, sdk):
                stop(proc)
                script = {"script": {"result": {"content": []}}}
                got = (await _outcome(direct, "scripted", script)), (await _outcome(sdk, "scripted", script))
                assert (direct.direct_sent, sdk.direct_sent) == (1, 0)
                return got
        finally:
            stop(proc)

    direct, sdk = anyio.run(run)
    assert direct[:2] == sdk[:2] == ("error", "MCPMaybeRanError")


def test_against_the_sdk_server_both_paths_give_the_same_results_and_progress() -> None:
    """The official SDK's server (``slow_upstream.py``): its SSE answers, its progress, an unknown tool."""
    port = free_port()
    proc = subprocess.Popen([PYTHON, str(Path(__file__).with_name("slow_upstream.py")), str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)

    async def run() -> None:
        async with _connections(f"http://127.0.0.1:{port}/mcp", None) as (direct, sdk):
            for tool, arguments in (("echo", {"text": "héllo"}), ("slow", {"steps": 3}), ("missing", {}),
                                    ("echo", {"text": 5})):
                outcomes, progress = [], []
                for connection in (direct, sdk):
                    seen: list[float] = []
                    outcomes.append(await _outcome(connection, tool, arguments,
                                                   CallContext(progress=lambda p, t, m, seen=seen: seen.append(p))))
                    with anyio.fail_after(10):
                        while tool == "slow" and len(seen) < 3:
                            await anyio.sleep(0.01)
                    progress.append(sorted(seen))
                assert outcomes[0] == outcomes[1], tool
                assert progress[0] == progress[1]
            assert (direct.direct_sent, sdk.direct_sent) == (4, 0)

    try:
        wait_for_port(port, proc)
        anyio.run(run)
    finally:
        stop(proc)
