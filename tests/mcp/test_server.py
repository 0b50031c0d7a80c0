"""toolrig's MCP server: identity in every call, sessions, auth, Host/Origin checks, stateless mode, stdio."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types
import pytest
from mcp import Client
from mcp_helpers import FIXTURE, PYTHON

from toolrig import CallContext, ErrorKind, Injected, Runtime, ToolCall, tool
from toolrig.audit import AuditLog
from toolrig.mcp import BearerAuth, JWTVerifier, MCPToolset, StaticTokens, http_app, serve_async
from toolrig.toolsets import FunctionToolset

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@tool(permission="readonly")
def whoami(ctx: Injected[CallContext]) -> dict[str, Any]:
    """Say who is calling."""
    return {"session": ctx.session, "user": ctx.user, "agent": ctx.agent}


@tool(permission="readonly")
def ping_me(n: int) -> str:
    """Answer a ping.

    Args:
        n: a number.
    """
    return f"pong {n}"


TOOLS = FunctionToolset([whoami, ping_me])


@asynccontextmanager
async def served(tools: Any = TOOLS, **options: Any) -> AsyncIterator[str]:
    """Serve over HTTP on a free loopback port in this event loop; yield the URL."""
    ready: list[str] = []
    options.setdefault("audit", False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async(tools, transport="http", port=0, on_ready=ready.append, **options))
        with anyio.fail_after(30):
            while not ready:
                await anyio.sleep(0.01)
        yield ready[0]
        tg.cancel_scope.cancel()


async def test_toolrig_client_against_toolrig_server() -> None:
    async with served() as url, MCPToolset(url, prefix="srv") as remote:
        assert remote.names() == ["srv__ping_me", "srv__whoami"]
        result = await remote.get("srv__ping_me").__call_tool__({"n": "7"})  # type: ignore[union-attr]
        assert result.text == "pong 7"


async def test_tools_outside_allowed_tools_are_neither_listed_nor_callable() -> None:
    from toolrig import Policy

    policy = Policy("permissive", tools=TOOLS, allowed_tools=["ping_*"])
    async with served(policy=policy) as url, Client(url) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["ping_me"]  # whoami is not advertised
        denied = await client.call_tool("whoami", {})
        assert denied.is_error and "whoami" not in {t.name for t in listed.tools}
        assert (await client.call_tool("ping_me", {"n": 1})).content[0].text == "pong 1"  # type: ignore[union-attr]
    runtime = Runtime(TOOLS, audit=False, policy=policy)
    assert [t.spec.name for t in runtime.tools()] == ["ping_me"]  # what providers get, too
    assert sorted(t.spec.name for t in Runtime(TOOLS, audit=False).tools()) == ["ping_me", "whoami"]


async def test_each_call_carries_session_user_and_agent(tmp_path: Path) -> None:
    """The agent is the token's; the client's own name ("toolrig") is kept apart, as ``client_name``."""
    db = tmp_path / "audit.db"
    tokens = StaticTokens({"tok-alice": {"user": "alice", "agent": "ci-bot"}}, audience="http://127.0.0.1/mcp")
    auth = BearerAuth(verifier=tokens, audience="http://127.0.0.1/mcp")
    async with served(auth=auth, audit=str(db), audit_mode="strict") as url:
        async with MCPToolset(url, headers={"Authorization": "Bearer tok-alice"}) as remote:
            who = (await remote.get("whoami").__call_tool__({})).structured  # type: ignore[union-attr]
            again = (await remote.get("whoami").__call_tool__({})).structured  # type: ignore[union-attr]
    assert who["user"] == "alice" and who["agent"] == "ci-bot"
    assert who["session"] == again["session"] and len(base64.urlsafe_b64decode(who["session"] + "=")) == 32
    rows = AuditLog(db).query(tool="whoami")
    assert {(r.user, r.agent, r.session) for r in rows} == {("alice", "ci-bot", who["session"])}
    assert {r.meta.get("client_name") for r in rows} == {"toolrig"}


async def test_session_ids_are_random_and_bound_to_the_user() -> None:
    tokens = StaticTokens({"tok-a": "alice", "tok-b": "bob"}, audience="http://127.0.0.1/mcp")
    async with served(auth=BearerAuth(verifier=tokens, audience="http://127.0.0.1/mcp")) as url:
        async with httpx2.AsyncClient() as http:
            ids = []
            for _ in range(3):
                response = await http.post(url, json=INIT, headers={**HEADERS, "authorization": "Bearer tok-a"})
                assert response.status_code == 200
                ids.append(response.headers["mcp-session-id"])
            assert len(set(ids)) == 3 and all(len(base64.urlsafe_b64decode(i + "=")) == 32 for i in ids)
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            theirs = await http.post(url, json=ping, headers={**HEADERS, "authorization": "Bearer tok-b",
                                                              "mcp-session-id": ids[0]})
            assert theirs.status_code == 404  # another user's session looks like no session at all
            mine = await http.post(url, json=ping, headers={**HEADERS, "authorization": "Bearer tok-a",
                                                            "mcp-session-id": ids[0]})
            assert mine.status_code == 200


async def test_tokens_for_another_audience_get_401() -> None:
    secret = "s3cret-key-for-tests-only-0123456789"
    audience = "http://127.0.0.1/mcp"

    def token(aud: str, **extra: Any) -> str:
        return jwt.encode({"sub": "carol", "aud": aud, "exp": int(time.time()) + 600, **extra}, secret,
                          algorithm="HS256")

    auth = BearerAuth(verifier=JWTVerifier(secret, audience=audience, algorithms=["HS256"]), audience=audience)
    async with served(auth=auth) as url, httpx2.AsyncClient() as http:
        async def status(header: str | None) -> int:
            extra = {"authorization": header} if header else {}
            return (await http.post(url, json=INIT, headers={**HEADERS, **extra})).status_code

        assert await status(None) == 401
        assert await status("Bearer not-a-jwt") == 401
        assert await status(f"Bearer {token('http://other.example/mcp')}") == 401
        expired = jwt.encode({"sub": "carol", "aud": audience, "exp": int(time.time()) - 3600}, secret,
                             algorithm="HS256")
        assert await status(f"Bearer {expired}") == 401
        assert await status(f"Bearer {token(audience)}") == 200
    static = StaticTokens({"tok": {"user": "dave", "audience": "http://elsewhere/mcp"}})
    async with served(auth=BearerAuth(verifier=static, audience=audience)) as url, httpx2.AsyncClient() as http:
        response = await http.post(url, json=INIT, headers={**HEADERS, "authorization": "Bearer tok"})
        assert response.status_code == 401


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
async def test_host_and_origin_are_checked_wherever_the_server_binds(bind: str) -> None:
    app = http_app(TOOLS, host=bind, audit=False, allowed_hosts=("gateway.internal",),
                   allowed_origins=("https://app.example.com",))
    transport = httpx2.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx2.AsyncClient(transport=transport) as http:
        async def status(host: str, origin: str | None = None) -> int:
            headers = {**HEADERS, "host": host, **({"origin": origin} if origin else {})}
            response = await http.post("http://x/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                       headers=headers)
            return response.status_code

        assert await status("evil.example.com") == 421
        assert await status("evil.example.com:8000") == 421
        assert await status("127.0.0.1:8000", "http://evil.example.com") == 403
        assert await status("localhost:8000", "null") == 403
        assert await status("127.0.0.1:8000") != 421  # allowed host: reaches the MCP endpoint
        assert await status("gateway.internal:443", "https://app.example.com") != 403
        assert await status("[::1]:9", "http://[::1]:9") not in (403, 421)


async def test_one_session_repeating_itself_does_not_block_another() -> None:
    async with served() as url, MCPToolset(url) as first, MCPToolset(url) as second:
        r1, r2 = Runtime(first, audit=False, approval=lambda *a: True), Runtime(second, audit=False,
                                                                               approval=lambda *a: True)
        for _ in range(6):
            last = await r1.call(ToolCall(name="ping_me", arguments={"n": 1}))
        assert "loop_detected" in last.content  # the server's loop guard, keyed by this session
        other = await r2.call(ToolCall(name="ping_me", arguments={"n": 1}))
        assert other.ok and "pong 1" in other.content


async def test_stateless_mode_serves_and_never_shares_loop_state() -> None:
    async with served(stateless=True) as url:
        async with httpx2.AsyncClient() as http:
            response = await http.post(url, json=INIT, headers=HEADERS)
            assert response.status_code == 200 and "mcp-session-id" not in response.headers
        async with MCPToolset(url) as remote:
            results = [await remote.get("ping_me").__call_tool__({"n": 1}) for _ in range(7)]  # type: ignore[union-attr]
            sessions = {(await remote.get("whoami").__call_tool__({})).structured["session"]  # type: ignore[union-attr]
                        for _ in range(2)}
    assert all(r.text == "pong 1" for r in results)  # no session: each request is its own caller
    assert len(sessions) == 2 and all(s.startswith("anon-") for s in sessions)


async def test_a_2026_era_client_falls_back_to_the_handshake() -> None:
    async with served() as url, httpx2.AsyncClient() as http:
        probe = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
        response = await http.post(url, json=probe, headers={**HEADERS, "mcp-protocol-version": "2026-07-28"})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == mcp_types.UNSUPPORTED_PROTOCOL_VERSION
        async with Client(url, mode="auto") as client:  # the SDK's own client, era auto-negotiated
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("ping_me", {"n": 3})
            assert result.content[0].text == "pong 3"  # type: ignore[union-attr]


async def test_stdio_serving_and_the_fixture() -> None:
    async with MCPToolset([PYTHON, str(FIXTURE), "stdio"]) as fixture:
        assert "test_simple_text" in fixture.names()
        result = await fixture.get("test_simple_text").__call_tool__({})  # type: ignore[union-attr]
        assert result.text == "This is a simple text response for testing."
        error = await fixture.get("test_error_handling").__call_tool__({})  # type: ignore[union-attr]
        assert error.is_error and "intentionally" in error.text


async def test_errors_are_is_error_results_with_structured_details() -> None:
    async with served() as url, Client(url, mode="legacy") as client:
        result = await client.call_tool("ping_me", {"n": "not a number"})
        assert result.is_error and "invalid_arguments" in result.content[0].text  # type: ignore[union-attr]
        assert result.meta is not None and result.meta["toolrig/error"]["kind"] == ErrorKind.INVALID_ARGUMENTS.value
        missing = await client.call_tool("nope", {})
        assert missing.is_error and missing.meta is not None
        assert missing.meta["toolrig/error"]["kind"] == "not_found"


async def test_the_mcp_path_is_served_directly_and_everything_else_by_the_router() -> None:
    """The MCP path skips Starlette's routing; a mounted app (a root_path), other paths and slashes keep it."""
    app = http_app(TOOLS, audit=False)
    async with app.router.lifespan_context(app):
        for root, url in (("", "http://127.0.0.1/mcp"), ("/api", "http://127.0.0.1/api/mcp")):
            transport = httpx2.ASGITransport(app=app, root_path=root)
            async with httpx2.AsyncClient(transport=transport) as http:
                opened = await http.post(url, json=INIT, headers=HEADERS)
                assert opened.status_code == 200 and opened.headers.get("mcp-session-id"), root
                assert (await http.get(url.replace("/mcp", "/healthz"))).json()["status"] == "ok"
                assert (await http.get(url.replace("/mcp", "/nothing"))).status_code == 404
                assert (await http.post(url + "/", json=INIT, headers=HEADERS)).status_code == 307
