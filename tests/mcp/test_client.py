"""MCPToolset against a real subprocess server (the SDK's own low-level Server, not toolrig's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp_helpers import PEER, PYTHON, peer_http, read_log

from toolrig import AudioPart, CallContext, ImagePart, JsonPart, Permission, ResourcePart, TextPart, Trust
from toolrig.mcp import MCPCallError, MCPMaybeRanError, MCPToolset, MCPUnavailableError

pytestmark = pytest.mark.anyio

STDIO = [PYTHON, str(PEER), "stdio"]


def tool_of(ts: MCPToolset, name: str) -> Any:
    found = ts.get(name)
    assert found is not None, f"{name} not in {ts.names()}"
    return found


async def test_lists_tools_as_ordinary_external_tools() -> None:
    async with MCPToolset(STDIO, prefix="peer") as ts:
        # an untrusted server's annotations are believed for nothing: every tool needs approval
        assert {t.spec.permission for t in ts.list()} == {Permission.DESTRUCTIVE}
        assert tool_of(ts, "peer__echo").spec.annotations.read_only_hint is True  # kept as a hint
    async with MCPToolset(STDIO, prefix="peer", trusted=True) as ts:
        names = ts.names()
        assert "peer__echo" in names and "peer__add" in names
        assert "peer__dotted_name" in names  # '.' is not a legal toolrig name character
        echo = tool_of(ts, "peer__echo")
        assert echo.spec.trust is Trust.EXTERNAL
        assert echo.spec.permission is Permission.READONLY  # trusted: from readOnlyHint (a Policy still asks)
        assert echo.remote_name == "echo"
        assert tool_of(ts, "peer__media").spec.permission is Permission.DESTRUCTIVE  # no annotations: MCP default
        assert tool_of(ts, "peer__slow").spec.permission is Permission.WRITE  # destructiveHint false
        assert tool_of(ts, "peer__add").spec.output_schema == {
            "type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
        assert ts.health.state == "up" and ts.health.server_info == "peer 1.0"


async def test_structured_content_and_media_become_parts() -> None:
    async with MCPToolset(STDIO) as ts:
        added = await tool_of(ts, "add").__call_tool__({"a": 2, "b": "3"})  # "3" coerced by the schema
        assert added.parts == (JsonPart({"sum": 5}),)  # the JSON text duplicate is folded into the JSON part
        media = await tool_of(ts, "media").__call_tool__({})
        kinds = [type(p) for p in media.parts]
        assert kinds == [ImagePart, AudioPart, ResourcePart, ResourcePart, ResourcePart]
        image, audio, doc, blob, link = media.parts
        assert isinstance(image, ImagePart) and image.data.startswith(b"\x89PNG")
        assert isinstance(audio, AudioPart) and audio.mime_type == "audio/wav"
        assert isinstance(doc, ResourcePart) and doc.text == "inline text"
        assert isinstance(blob, ResourcePart) and blob.blob == b"\x00\x01"
        assert isinstance(link, ResourcePart) and link.uri == "test://link" and link.name == "a link"
        failed = await tool_of(ts, "fail").__call_tool__({})
        assert failed.is_error and failed.parts == (TextPart("this failed on purpose"),)


async def test_progress_is_forwarded_to_the_call_context() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    ctx = CallContext(progress=lambda p, t, m: seen.append((p, t, m)))
    async with MCPToolset(STDIO) as ts:
        await tool_of(ts, "progress").__call_tool__({"steps": 3}, ctx)
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_sampling_and_elicitation_go_to_user_callbacks() -> None:
    asked: list[str] = []

    async def sampling(params: mcp_types.CreateMessageRequestParams, ctx: CallContext | None) -> Any:
        content = params.messages[0].content
        asked.append(content.text if isinstance(content, mcp_types.TextContent) else "?")
        return mcp_types.CreateMessageResult(role="assistant", model="m", content=mcp_types.TextContent(
            type="text", text="forty-two"))

    async def elicitation(params: Any, ctx: CallContext | None) -> Any:
        return mcp_types.ElicitResult(action="accept", content={"name": "Ada"})

    async with MCPToolset(STDIO, sampling=sampling, elicitation=elicitation) as ts:
        said = await tool_of(ts, "ask_model").__call_tool__({"prompt": "meaning?"})
        user = await tool_of(ts, "ask_user").__call_tool__({"message": "who?"})
    assert said.text == "model said: forty-two" and asked == ["meaning?"]
    assert user.text == "user: accept {'name': 'Ada'}"


async def test_sampling_without_a_callback_is_refused_to_the_server() -> None:
    async with MCPToolset(STDIO, forward=False) as ts:
        with pytest.raises(MCPCallError, match="Sampling not supported"):  # the server's handler failed
            await tool_of(ts, "ask_model").__call_tool__({"prompt": "x"})


async def test_log_messages_go_to_the_callback() -> None:
    got: list[tuple[str, Any]] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams, ctx: CallContext | None) -> None:
        got.append((params.level, params.data))

    async with MCPToolset(STDIO, on_log=on_log) as ts:
        await tool_of(ts, "log").__call_tool__({})
        with anyio.fail_after(10):
            while len(got) < 3:
                await anyio.sleep(0.01)
    assert got == [("debug", "debug message"), ("info", "info message"), ("error", "error message")]


async def test_tool_list_refreshes_on_list_changed() -> None:
    changes: list[list[str]] = []
    async with MCPToolset(STDIO) as ts:
        ts.on_change(lambda s: changes.append(s.names()))
        assert "fresh" not in ts.names()
        await tool_of(ts, "grow").__call_tool__({"name": "fresh"})
        with anyio.fail_after(10):
            while "fresh" not in ts.names():
                await anyio.sleep(0.01)
        assert (await tool_of(ts, "fresh").__call_tool__({})).text == "extra fresh"
    assert changes and "fresh" in changes[-1]


async def test_a_flood_of_list_changed_notifications_is_coalesced(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    async with MCPToolset(STDIO, env={"PEER_LOG": str(log)}) as ts:
        start = log.read_text().count("list\n")
        await tool_of(ts, "grow").__call_tool__({"name": "flooded", "times": 500})
        with anyio.fail_after(30):
            while "flooded" not in ts.names():
                await anyio.sleep(0.01)
        seen, quiet = -1, 0
        with anyio.fail_after(60):  # until the server has seen no new listing for a while
            while quiet < 20:
                now = log.read_text().count("list\n")
                seen, quiet = now, (quiet + 1 if now == seen else 0)
                await anyio.sleep(0.05)
        # a burst is one listing (at most one more queued behind it while it runs), not 500
        assert 1 <= seen - start <= 50, seen - start
        assert (await tool_of(ts, "flooded").__call_tool__({})).text == "extra flooded"


async def test_refused_names_are_left_out_with_reasons() -> None:
    async with MCPToolset(STDIO, prefix="peer", other_prefixes=["github"], env={"PEER_BAD_NAMES": "1"}) as ts:
        reasons = dict(ts.refused)
    assert "homoglyph" in reasons["re\u0430d_file"]
    assert "MCP naming rule" in reasons["bad name"]
    assert "forged prefix" in reasons["github__create_issue"]
    assert all(not n.startswith("peer__github") and "\u0430" not in n for n in ts.names())


async def test_timeout_cancels_the_call_on_the_server(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    async with MCPToolset(STDIO, env={"PEER_LOG": str(log)}, timeout=0.5) as ts:
        with pytest.raises(TimeoutError):
            await tool_of(ts, "slow").__call_tool__({"seconds": 60})
        with anyio.fail_after(20):
            while "cancelled slow" not in read_log(log):
                await anyio.sleep(0.02)
        # the session is still usable afterwards
        assert (await tool_of(ts, "echo").__call_tool__({"text": "still here"})).text == "still here"


async def test_a_server_dying_mid_call_is_not_re_sent_and_the_session_comes_back(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    async with MCPToolset(STDIO, env={"PEER_LOG": str(log)}, health_interval=None) as ts:
        with pytest.raises(MCPMaybeRanError, match="may have run"):
            await tool_of(ts, "crash").__call_tool__({})
        assert read_log(log).count("call crash") == 1
        # the next call reconnects (a new process) and works
        assert (await tool_of(ts, "echo").__call_tool__({"text": "back"})).text == "back"
        assert ts.health.connects == 2
    assert read_log(log).count("call crash") == 1


async def test_unreachable_server_fails_on_start_or_reports_down() -> None:
    with pytest.raises(MCPUnavailableError):
        async with MCPToolset([PYTHON, "-c", "import sys; sys.exit(2)"], connect_timeout=10):
            pass
    lazy = MCPToolset([PYTHON, "-c", "import sys; sys.exit(2)"], fail_on_start=False, connect_timeout=10)
    async with lazy:
        with anyio.fail_after(20):
            while lazy.health.state != "down":
                await anyio.sleep(0.02)
        assert lazy.list() == [] and lazy.health.last_error


@pytest.mark.parametrize("mode", ["http", "sse", "ws"])
async def test_network_transports(mode: str) -> None:
    with peer_http(mode) as url:
        async with MCPToolset(url, prefix="net") as ts:
            assert "net__echo" in ts.names()
            result = await tool_of(ts, "net__echo").__call_tool__({"text": f"over {mode}"})
            assert result.text == f"over {mode}"
            progress: list[float] = []
            await tool_of(ts, "net__progress").__call_tool__(
                {"steps": 2}, CallContext(progress=lambda p, t, m: progress.append(p)))
            assert progress == [1.0, 2.0]


async def test_http_headers_are_sent(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    with peer_http("http", env={"PEER_LOG": str(log)}) as url:
        async with MCPToolset(url, headers={"Authorization": "Bearer upstream-token"}) as ts:
            result = await tool_of(ts, "whoami").__call_tool__({})
    assert result.text == "Bearer upstream-token"


async def test_an_http_server_dying_mid_call_fails_the_call_at_once_and_is_reconnected() -> None:
    import os
    import signal
    import subprocess

    from mcp_helpers import free_port, running

    port = free_port()
    argv = [PYTHON, str(PEER), "http", str(port)]
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from mcp_helpers import wait_for_port

        wait_for_port(port, proc)
        async with MCPToolset(f"http://127.0.0.1:{port}/mcp", timeout=120, health_interval=None) as ts:
            async def kill_soon() -> None:
                await anyio.sleep(0.5)
                os.killpg(proc.pid, signal.SIGKILL)

            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_soon)
                with anyio.fail_after(60), pytest.raises(MCPMaybeRanError):  # not the 120 s call timeout
                    await tool_of(ts, "slow").__call_tool__({"seconds": 100})
            assert ts.health.state == "down"
            with running(argv, port):
                assert (await tool_of(ts, "echo").__call_tool__({"text": "back"})).text == "back"
                assert ts.health.connects == 2
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()



async def test_a_server_that_cannot_be_reached_is_unavailable_to_the_model() -> None:
    """A call whose server is gone was never sent: the model reads kind ``unavailable`` (retryable), which the
    breaker counts and fallbacks act on, not an ``execution_error`` of the tool."""
    from toolrig import Runtime, ToolCall
    from toolrig._outcome import ErrorKind

    peer = peer_http("http")
    url = peer.__enter__()
    stopped = False
    try:
        async with MCPToolset(url, prefix="net", connect_timeout=2, health_interval=None) as ts:
            runtime = Runtime(ts, audit=False, approval=lambda *a: True)
            assert (await runtime.call(ToolCall(name="net__echo", arguments={"text": "up"}))).ok
            peer.__exit__(None, None, None)
            stopped = True
            outcomes = [await runtime.call(ToolCall(name="net__echo", arguments={"text": f"down {i}"}))
                        for i in range(3)]
            await runtime.aclose()
    finally:
        if not stopped:
            peer.__exit__(None, None, None)
    kinds = [o.error.kind for o in outcomes if o.error is not None]
    assert len(kinds) == 3 and ErrorKind.UNAVAILABLE in kinds, kinds
    unavailable = next(o.error for o in outcomes if o.error is not None and o.error.kind is ErrorKind.UNAVAILABLE)
    assert unavailable.retryable and "cannot run now" in unavailable.message
