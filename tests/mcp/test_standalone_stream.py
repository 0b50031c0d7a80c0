"""The server's own requests on the session's standalone (GET) stream reach the client: toolrig's streamable-HTTP
transport POSTs the first request after ``notifications/initialized`` only once the server has answered its GET
(bounded), because a server drops what it sends on a GET stream that is not open yet.

The upstream (``standalone_upstream.py``) is the SDK's own server, a subprocess, holding each GET before its
transport sees it: without the wait, the call below arrives first and its question is lost (the call then hangs
until its timeout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp_helpers import PYTHON, free_port, running

from toolrig import CallContext
from toolrig.mcp import MCPToolset
from toolrig.mcp.client import _streamable

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("standalone_upstream.py")


async def accept_default(params: Any, ctx: CallContext | None) -> mcp_types.ElicitResult:
    schema = dict(getattr(params, "requested_schema", None) or {})
    return mcp_types.ElicitResult(action="accept", content={
        name: prop["default"] for name, prop in dict(schema.get("properties", {})).items() if "default" in prop})


async def test_a_question_on_the_get_stream_reaches_the_elicitation_callback() -> None:
    port = free_port()
    with running([PYTHON, str(UPSTREAM), str(port), "0.5"], port):
        async with MCPToolset(f"http://127.0.0.1:{port}/mcp", elicitation=accept_default, timeout=20,
                              health_interval=None) as tools:
            with anyio.fail_after(30):
                answered = await tools.get("ask").__call_tool__({})  # type: ignore[union-attr]
    assert answered.text == "accept: {'name': 'Ada'}"


async def test_a_server_that_never_answers_its_get_delays_only_the_first_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_streamable, "GET_STREAM_WAIT", 0.5)
    port = free_port()
    with running([PYTHON, str(UPSTREAM), str(port), "3600"], port):
        async with MCPToolset(f"http://127.0.0.1:{port}/mcp", timeout=20, health_interval=None) as tools:
            with anyio.fail_after(30):
                said = [await tools.get("echo").__call_tool__({"text": f"hi {n}"})  # type: ignore[union-attr]
                        for n in range(3)]
    assert [s.text for s in said] == ["hi 0", "hi 1", "hi 2"]
