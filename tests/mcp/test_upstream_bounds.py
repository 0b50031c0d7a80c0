"""Upstream traffic is untrusted: what a hostile upstream sends besides tool calls' text, as a client meets it.

One ``toolrig serve --http`` with bearer tokens for alice and bob runs in front of a hostile upstream built with
the official SDK (``hostile_upstream.py``), three times over: over stdio, and over streamable HTTP answering with
JSON bodies and with SSE streams. Each test speaks to the gateway with the SDK's own client, as alice and bob:

1. structured content reaches the client only as the pipeline produced it: fenced, and held to the output limit
   (withheld, with the reason, when it does not fit);
2. an answer over the server's ``max_message_bytes`` is not read (the gateway's memory stays bounded by that cap,
   not by the message), and an endless line over stdio stops being read when the call's deadline passes;
3. such an answer fails only its own call: bob's call in flight to the same upstream, and the session, go on; a
   legitimate result under the output limit but over the SDK's 1 MiB SSE event limit gets through;
6. a blob resource whose bytes are text is redacted and fenced like text; other blobs are typed and size-capped.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from hostile_upstream import AWS_KEY, GITHUB_TOKEN, INJECTION
from mcp_helpers import HERE, PYTHON, free_port, running

from toolrig.fencing import FENCE_TAG
from toolrig.mcp import open_pins

pytestmark = pytest.mark.anyio

HOSTILE = HERE / "hostile_upstream.py"
CAP = 8_000_000
"""The ``max_message_bytes`` of the hostile upstreams in the gateway's config."""
UPSTREAMS = ("hs", "hj", "he")
"""The hostile upstream over stdio, over HTTP with JSON answers, over HTTP with SSE answers."""
TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-0123456789"}


@dataclass
class Gateway:
    url: str
    pid: int
    tmp: Path


def _config(tmp: Path, port: int, ports: dict[str, int]) -> str:
    tokens = ", ".join(f'"{token}" = "{user}"' for user, token in TOKENS.items())
    return f"""
name = "bounds-gateway"
[serve.auth]
audience = "http://127.0.0.1:{port}/mcp"
tokens = {{ {tokens} }}
[mcpServers.hs]
command = {json.dumps(PYTHON)}
args = [{json.dumps(str(HOSTILE))}, "stdio"]
sandbox = {{ rw_paths = [{json.dumps(str(tmp))}] }}
max_message_bytes = {CAP}
[mcpServers.endless]
command = {json.dumps(PYTHON)}
args = [{json.dumps(str(HOSTILE))}, "stdio"]
sandbox = {{ rw_paths = [{json.dumps(str(tmp))}] }}
timeout = 3
[mcpServers.hj]
url = "http://127.0.0.1:{ports['json']}/mcp"
max_message_bytes = {CAP}
[mcpServers.he]
url = "http://127.0.0.1:{ports['sse']}/mcp"
max_message_bytes = {CAP}
[mcpServers.dflt_hs]
command = {json.dumps(PYTHON)}
args = [{json.dumps(str(HOSTILE))}, "stdio"]
[mcpServers.dflt_hj]
url = "http://127.0.0.1:{ports['json']}/mcp"
[mcpServers.dflt_he]
url = "http://127.0.0.1:{ports['sse']}/mcp"
[mcp]
timeout = 120
[policy]
allow = ["*"]
[runtime]
audit = false
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with serving(tmp_path_factory.mktemp("bounds")) as gw:
        yield gw


@contextmanager
def serving(tmp: Path) -> Iterator[Gateway]:
    """``toolrig serve --http`` with alice's and bob's tokens, in front of the hostile upstream three times over."""
    ports = {"json": free_port(), "sse": free_port()}
    port = free_port()
    (tmp / "toolrig.toml").write_text(_config(tmp, port, ports))
    open_pins(tmp / "mcp.db").approve_launch([PYTHON, str(HOSTILE), "stdio"], None, {})
    env = {"TOOLRIG_MCP_STATE": str(tmp / "mcp.db")}
    with running([PYTHON, str(HOSTILE), "json", str(ports["json"])], ports["json"], log=tmp / "json.log"), \
            running([PYTHON, str(HOSTILE), "sse", str(ports["sse"])], ports["sse"], log=tmp / "sse.log"), \
            running([PYTHON, "-m", "toolrig", "serve", "--config", str(tmp / "toolrig.toml"), "--http",
                     f"127.0.0.1:{port}"], port, env=env, log=tmp / "serve.log") as proc:
        gw = Gateway(url=f"http://127.0.0.1:{port}/mcp", pid=proc.pid, tmp=tmp)
        anyio.run(_wait_for_upstreams, gw)
        yield gw


@asynccontextmanager
async def as_user(gw: Gateway, user: str) -> AsyncIterator[Any]:
    """The SDK's client, speaking to the gateway with ``user``'s bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[user]}"},
                                  timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(gw.url, http_client=http), mode="legacy", cache=None) as client:
        yield client


async def _wait_for_upstreams(gw: Gateway) -> None:
    wanted = {f"{u}__text" for u in (*UPSTREAMS, "endless", "dflt_hs", "dflt_hj", "dflt_he")}
    with anyio.fail_after(120):
        async with as_user(gw, "alice") as client:
            while not wanted <= {t.name for t in (await client.list_tools()).tools}:
                await anyio.sleep(0.1)


def error_of(result: mcp_types.CallToolResult) -> dict[str, Any]:
    assert result.is_error, result
    error = (result.meta or {}).get("toolrig/error")
    assert isinstance(error, dict), result.meta
    return error


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


def peak_rss(pid: int) -> int:
    """The peak resident set of process ``pid`` so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


# -- 1. structured content -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_structured_content_reaches_the_client_fenced_and_within_the_output_limit(gateway: Gateway,
                                                                                        upstream: str) -> None:
    async with as_user(gateway, "alice") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed[f"{upstream}__summarize"].output_schema is None  # fenced values could not promise it
        small = await client.call_tool(f"{upstream}__summarize", {})
        assert not small.is_error
        structured = small.structured_content
        assert structured is not None and structured["score"] == 7
        summary = structured["summary"]
        assert summary.startswith(f"<{FENCE_TAG} id=") and summary.rstrip().endswith(">")
        assert INJECTION in summary and not summary.startswith(INJECTION)
        assert text_of(small).startswith(f"<{FENCE_TAG} id=")  # the same nonce fences the text
        nonce = text_of(small).split('"')[1]
        assert f'id="{nonce}"' in summary

        big = await client.call_tool(f"{upstream}__summarize", {"size": 500_000})
        assert not big.is_error
        assert big.structured_content is None
        assert "withheld" in (big.meta or {})["toolrig/structured"]
        assert len(text_of(big)) < 25_000 and text_of(big).startswith(f"<{FENCE_TAG} id=")
        assert INJECTION not in _everything_but_fenced_text(big)


# -- 2 and 3. bounded messages; one call fails, not the session ------------------------------------------------------
@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_an_oversized_answer_fails_only_its_call_and_other_users_calls_go_on(gateway: Gateway,
                                                                                   upstream: str) -> None:
    async with as_user(gateway, "alice") as alice, as_user(gateway, "bob") as bob:
        answers: dict[str, mcp_types.CallToolResult] = {}

        async def bob_waits() -> None:
            answers["bob"] = await bob.call_tool(f"{upstream}__hold", {"text": "bob's call"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(bob_waits)
            legit = await alice.call_tool(f"{upstream}__text", {"size": 1_500_000})  # over the SDK's 1 MiB SSE limit
            assert not legit.is_error and "output truncated: 1,500,000 characters" in text_of(legit)
            too_big = await alice.call_tool(f"{upstream}__text", {"size": 3 * CAP})
            error = error_of(too_big)
            assert error["kind"] == "output_too_large"
            assert f"{CAP:,} bytes" in error["message"] and upstream in error["message"]
            assert "bob" not in answers  # bob's call is still in flight, on the same session
            assert not (await alice.call_tool(f"{upstream}__release", {})).is_error
        assert not answers["bob"].is_error and "held: bob's call" in text_of(answers["bob"])


@pytest.mark.parametrize("upstream", ["dflt_hs", "dflt_hj", "dflt_he"])
async def test_the_default_cap_lets_a_result_at_the_output_limit_through(gateway: Gateway, upstream: str) -> None:
    """A result just under the 2,000,000-character hard limit is read on every transport (and cut to 20,000)."""
    async with as_user(gateway, "bob") as client:
        result = await client.call_tool(f"{upstream}__text", {"size": 1_999_000, "fill": "é"})
        assert not result.is_error, text_of(result)[:300]
        assert "output truncated: 1,999,000 characters" in text_of(result)


async def test_an_endless_line_is_read_only_until_the_call_s_deadline(gateway: Gateway) -> None:
    lock = gateway.tmp / "endless.lock"
    lock.touch()
    async with as_user(gateway, "alice") as client:
        with anyio.fail_after(60):
            result = await client.call_tool("endless__endless", {"lock": str(lock)})
        assert error_of(result)["kind"] == "timeout"
        with anyio.fail_after(60):  # the writer is stopped (its lock is free again), not read from forever
            while not _lock_is_free(lock):
                await anyio.sleep(0.05)
        with anyio.fail_after(120):  # and the server is started again (its calls time out until it is up)
            while (again := await client.call_tool("endless__text", {"size": 5})).is_error:
                assert error_of(again)["kind"] in ("timeout", "execution_error"), again
        assert "xxxxx" in text_of(again)


def _lock_is_free(path: Path) -> bool:
    with open(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def test_gateway_peak_memory_is_bounded_by_the_cap_not_by_a_100_mb_message(tmp_path: Path,
                                                                           record_property: Any) -> None:
    """The gateway (a process of its own, fresh) reads 100 MB answers over each transport: its peak RSS grows by
    less than a few times the cap, however large the message."""
    with serving(tmp_path) as gw:
        before, after = anyio.run(_send_huge_answers, gw)
    growth = after - before
    record_property("gateway_peak_rss_before_mb", round(before / 2**20, 1))
    record_property("gateway_peak_rss_after_mb", round(after / 2**20, 1))
    print(f"\ngateway peak RSS: {before / 2**20:.1f} MiB before, {after / 2**20:.1f} MiB after 100 MB messages and "
          f"250,000-item messages over stdio, HTTP JSON and SSE (cap {CAP / 2**20:.1f} MiB)")
    assert growth < 5 * CAP, f"the peak grew by {growth / 2**20:.1f} MiB for a cap of {CAP / 2**20:.1f} MiB"


async def _send_huge_answers(gw: Gateway) -> tuple[int, int]:
    async with as_user(gw, "alice") as client:
        for upstream in UPSTREAMS:  # warm: every path has run once, with an answer of 1 MB
            await client.call_tool(f"{upstream}__text", {"size": 1_000_000})
        before = peak_rss(gw.pid)
        for upstream in UPSTREAMS:
            result = await client.call_tool(f"{upstream}__text", {"size": 100_000_000})
            assert error_of(result)["kind"] == "output_too_large"
            assert f"{CAP:,} bytes" in error_of(result)["message"]
            # 250,000 one-character items: 6.7 MB, under the byte cap, but ~2 KB of objects each once parsed
            swarm = await client.call_tool(f"{upstream}__items", {"count": 250_000})
            assert error_of(swarm)["kind"] == "output_too_large" and "JSON values" in error_of(swarm)["message"]
        return before, peak_rss(gw.pid)


# -- 6. blobs ------------------------------------------------------------------------------------------------------
def _everything_but_fenced_text(result: mcp_types.CallToolResult) -> str:
    """The result as the client gets it, JSON, with every fenced block taken out."""
    import re

    raw = json.dumps(result.model_dump(mode="json", by_alias=True))
    return re.sub(rf"<{FENCE_TAG} id=\\\"(\w+)\\\".*?</{FENCE_TAG} id=\\\"\1\\\">", "", raw, flags=re.S)


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("mime", ["text/plain", "application/octet-stream", "application/json", ""])
async def test_a_blob_resource_that_is_text_is_redacted_and_fenced(gateway: Gateway, upstream: str,
                                                                   mime: str) -> None:
    async with as_user(gateway, "bob") as client:
        result = await client.call_tool(f"{upstream}__leak_blob", {"mime": mime})
    assert not result.is_error
    raw = json.dumps(result.model_dump(mode="json", by_alias=True))
    assert AWS_KEY not in raw and GITHUB_TOKEN not in raw
    assert "[REDACTED:aws_access_key]" in raw and "[REDACTED:github_token]" in raw
    assert INJECTION in raw and INJECTION not in _everything_but_fenced_text(result)
    resources = [b.resource for b in result.content if isinstance(b, mcp_types.EmbeddedResource)]
    assert resources and all(isinstance(r, mcp_types.TextResourceContents) for r in resources)


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_a_binary_blob_is_typed_by_its_bytes_and_capped_in_size(gateway: Gateway, upstream: str) -> None:
    async with as_user(gateway, "alice") as client:
        small = await client.call_tool(f"{upstream}__binary_blob", {"size": 4096})
        big = await client.call_tool(f"{upstream}__binary_blob", {"size": 5_500_000})  # 7.3 MB as base64
    blobs = [b.resource for b in small.content if isinstance(b, mcp_types.EmbeddedResource)]
    assert len(blobs) == 1 and isinstance(blobs[0], mcp_types.BlobResourceContents)
    assert blobs[0].mime_type == "application/octet-stream"  # it claimed image/png; its bytes are no PNG
    assert not big.is_error
    assert not [b for b in big.content if isinstance(b, mcp_types.EmbeddedResource)]
    assert "dropped: larger than the limit of 5,242,880 bytes" in text_of(big)
