"""Identities come from credentials only (issue "Upstream traffic is untrusted", item 4), and ``/healthz`` says
nothing but its status word without a token (item 7) — against ``toolrig serve --http`` with a hostile
SDK-built upstream and bearer tokens for alice, bob and a CI identity whose token names the agent ``ci-bot``."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types
import pytest
from hostile_helpers import AUDIENCE, HostileGateway, hostile_gateway, result_text, sdk_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import PYTHON, REPO

from toolrig.errors import MCPConfigError
from toolrig.mcp import BearerAuth, Gateway, JWTVerifier, StaticTokens, open_pins, serve_async
from toolrig.mcp.gateway._config import config_from_mapping
from toolrig.policy import ApprovalQueue

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileGateway]:
    with hostile_gateway(tmp_path_factory.mktemp("hostile-identity")) as gateway:
        yield gateway


# -- item 4: an agent layer cannot be claimed with a client name ----------------------------------------------
async def test_bob_claiming_the_ci_bot_client_name_gets_no_agent_layer(gw: HostileGateway) -> None:
    """bob connects as clientInfo.name = "ci-bot": evil__echo still waits for approval (it is queued, recorded as
    bob's, with no agent), is denied, and never reaches the upstream; the audit row keeps the name bob's client
    gave itself apart from the agent."""
    outcome: list[mcp_types.CallToolResult] = []

    async def bob_calls() -> None:
        async with sdk_client(gw, "bob", name="ci-bot") as bob:  # no elicitation: approval goes to the queue
            outcome.append(await bob.call_tool("evil__echo", {"text": "bob-forged-run"}))

    queue = ApprovalQueue(str(gw.queue))
    async with anyio.create_task_group() as tg:
        tg.start_soon(bob_calls)
        request = None
        with anyio.fail_after(60):
            while request is None:
                request = next((r for r in await queue.list() if r.tool == "evil__echo"), None)
                await anyio.sleep(0.05)
        assert (request.user, request.agent) == ("bob", None)
        assert await queue.deny(request.id, by="test")
    [result] = outcome
    assert result.is_error and "approval_denied" in result_text(result)
    assert not [e for e in gw.upstream_events("echo") if e["text"] == "bob-forged-run"]
    [row] = [r for r in await gw.rows("evil__echo", user="bob") if r.arguments == {"text": "bob-forged-run"}]
    assert row.agent is None and row.meta["client_name"] == "ci-bot" and row.kind == "approval_denied"


async def test_the_agent_named_by_a_credential_gets_its_layer(gw: HostileGateway) -> None:
    async with sdk_client(gw, "ci", name="whatever-it-likes") as ci:
        result = await ci.call_tool("evil__echo", {"text": "ci-run"})
    assert not result.is_error and "ci-run" in result_text(result)
    [row] = [r for r in await gw.rows("evil__echo", user="ci") if r.arguments == {"text": "ci-run"}]
    assert row.agent == "ci-bot" and row.meta["client_name"] == "whatever-it-likes" and row.kind == "ok"


CLAIMS = st.one_of(st.sampled_from(["ci-bot", "CI-BOT", "ci-bot ", " ci-bot", "ci\u2011bot", "ci-bot\u200b",
                                    "\u202eci-bot", "ci-bot\x00", "toolrig", "ci-bot/1.0"]),
                   st.text(min_size=1, max_size=30))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(claimed=CLAIMS)
def test_no_client_name_makes_bob_an_agent(gw: HostileGateway, claimed: str) -> None:
    """Whatever bob's client calls itself, evil__echo asks bob first (he declines) and does not run."""
    asked: list[str] = []

    async def decline(_ctx: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"approve": False})

    async def run() -> mcp_types.CallToolResult:
        async with sdk_client(gw, "bob", name=claimed, elicitation_callback=decline) as bob:
            return await bob.call_tool("evil__echo", {"text": "variant"})

    result = anyio.run(run)
    assert result.is_error and "approval_denied" in result_text(result)
    assert len(asked) == 1 and "evil__echo" in asked[0]


def _gateway(tmp_path: Path, **sections: Any) -> Gateway:
    data = {"mcpServers": {}, "runtime": {"audit": False},
            "policy": {"layers": [{"agent": "ci-bot", "allow": ["evil__*"]}]}, **sections}
    return Gateway(config_from_mapping(data, base=tmp_path), pins=open_pins(tmp_path / "mcp.db"))


def test_agent_layers_for_unauthenticated_callers_are_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(MCPConfigError, match=r"layer 'agent:ci-bot' selects agent 'ci-bot'.*not authenticated"):
        _gateway(tmp_path)
    built = _gateway(tmp_path, serve={"auth": {"audience": AUDIENCE, "tokens": {"t": {"user": "c", "agent": "x"}}}})
    with pytest.raises(MCPConfigError, match="not authenticated"):  # over stdio nobody presents a credential
        anyio.run(lambda: built.serve(transport="stdio", host="127.0.0.1", port=0))
    # authenticated callers whose credentials name no agent: the layer applies to nobody, and the gateway says so
    caplog.clear()
    _gateway(tmp_path, serve={"auth": {"audience": AUDIENCE, "tokens": {"t-a": "alice", "t-b": {"user": "bob"}}}})
    assert "layer 'agent:ci-bot'" in caplog.text and "no credential names an agent" in caplog.text
    monkeypatch.setenv("JWT_KEY", "k" * 32)
    jwt_only = {"audience": AUDIENCE, "jwt_secret_env": "JWT_KEY"}
    caplog.clear()
    _gateway(tmp_path, serve={"auth": jwt_only})
    assert "agent_claim" in caplog.text
    caplog.clear()
    _gateway(tmp_path, serve={"auth": {**jwt_only, "agent_claim": "agent"}})  # a claim names the agent
    assert "selects agent" not in caplog.text


def test_toolrig_serve_refuses_agent_layers_it_cannot_honour(tmp_path: Path) -> None:
    config = tmp_path / "toolrig.toml"
    config.write_text('[runtime]\naudit = false\n[[policy.layers]]\nagent = "ci-bot"\nallow = ["evil__*"]\n')
    done = subprocess.run([PYTHON, "-m", "toolrig", "serve", "--config", str(config), "--http", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
                          env={**os.environ, "TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db")})
    assert done.returncode != 0
    assert "layer 'agent:ci-bot' selects agent 'ci-bot'" in done.stderr and "clientInfo.name" in done.stderr


async def test_static_tokens_and_jwts_name_agents_only_when_told() -> None:
    tokens = StaticTokens({"t-ci": {"user": "ci", "agent": "ci-bot"}, "t-alice": "alice"}, audience=AUDIENCE)
    assert getattr(await tokens.verify_token("t-ci"), "agent", None) == "ci-bot"
    assert getattr(await tokens.verify_token("t-alice"), "agent", None) is None
    with pytest.raises(ValueError, match="unknown key"):
        StaticTokens({"t": {"user": "u", "agnet": "typo"}})
    key = "s" * 32
    claims = {"sub": "ci", "aud": AUDIENCE, "exp": int(time.time()) + 60, "agent": "ci-bot"}
    signed = jwt.encode(claims, key, algorithm="HS256")
    assert getattr(await JWTVerifier(key, audience=AUDIENCE, agent_claim="agent").verify_token(signed), "agent",
                   None) == "ci-bot"
    assert getattr(await JWTVerifier(key, audience=AUDIENCE).verify_token(signed), "agent", None) is None
    odd = jwt.encode({**claims, "agent": ["ci-bot"]}, key, algorithm="HS256")
    assert getattr(await JWTVerifier(key, audience=AUDIENCE, agent_claim="agent").verify_token(odd), "agent",
                   None) is None


# -- item 7: /healthz -------------------------------------------------------------------------------------
async def test_healthz_without_a_token_says_only_ok(gw: HostileGateway) -> None:
    async with httpx2.AsyncClient() as http:
        anonymous = await http.get(f"{gw.base}/healthz")
        forged = await http.get(f"{gw.base}/healthz", headers={"Authorization": "Bearer not-a-token"})
        alice = await http.get(f"{gw.base}/healthz", headers={"Authorization": "Bearer tok-alice"})
    assert anonymous.status_code == 200 and anonymous.json() == {"status": "ok"}
    assert forged.status_code == 200 and forged.json() == {"status": "ok"}
    details = alice.json()
    assert details["status"] == "ok" and set(details["upstreams"]) == {"evil", "fwd", "walled"}
    assert "sessions" in details


async def _health(auth: BearerAuth | None, token: str | None) -> dict[str, Any]:
    ready: list[str] = []
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async([], transport="http", port=0, on_ready=ready.append, auth=auth, audit=False,
                                          health=lambda: {"upstreams": {"secret-upstream": "down"}}))
        with anyio.fail_after(30):
            while not ready:
                await anyio.sleep(0.01)
        async with httpx2.AsyncClient() as http:
            response = await http.get(ready[0].removesuffix("/mcp") + "/healthz", headers=headers)
        tg.cancel_scope.cancel()
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def test_healthz_details_need_a_valid_token_with_the_required_scopes() -> None:
    tokens = StaticTokens({"t-mcp": {"user": "a", "scopes": ["mcp"]}, "t-bare": "b",
                           "t-elsewhere": {"user": "c", "scopes": ["mcp"], "audience": "https://other.example/mcp"}},
                          audience=AUDIENCE)
    auth = BearerAuth(verifier=tokens, audience=AUDIENCE, required_scopes=("mcp",))
    assert await _health(auth, None) == {"status": "ok"}
    assert await _health(auth, "t-bare") == {"status": "ok"}  # valid, without the scope the endpoint requires
    assert await _health(auth, "t-elsewhere") == {"status": "ok"}  # issued for another server
    assert (await _health(auth, "t-mcp"))["upstreams"] == {"secret-upstream": "down"}
    assert "sessions" in await _health(None, None)  # no auth configured: nothing to gate
