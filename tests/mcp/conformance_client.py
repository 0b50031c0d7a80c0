"""A toolrig MCP client for the conformance suite's client scenarios.

    MCP_CONFORMANCE_SCENARIO=initialize python conformance_client.py http://localhost:PORT/mcp

Every scenario connects with :class:`toolrig.mcp.MCPToolset` (OAuth flows through the SDK's ``httpx2.Auth``
providers, passed as ``auth=``) and calls tools through a :class:`toolrig.Runtime` (auto-approved: this is a
test client, not a person).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import mcp_types
from pydantic import AnyUrl

from toolrig import CallContext, Runtime, ToolCall
from toolrig.mcp import MCPToolset

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
log = logging.getLogger("conformance-client")
REDIRECT = "http://localhost:3000/callback"


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


async def apply_defaults(params: Any, ctx: CallContext | None) -> mcp_types.ElicitResult:
    """Accept every elicitation with the defaults of its form (SEP-1034)."""
    content: dict[str, Any] = {}
    schema = getattr(params, "requested_schema", None) or {}
    for name, prop in dict(schema.get("properties", {})).items():
        if isinstance(prop, dict) and "default" in prop:
            content[name] = prop["default"]
    return mcp_types.ElicitResult(action="accept", content=content)


async def run(url: str, *, call: tuple[str, dict[str, Any]] | None = None, first_tool: bool = False,
              auth: Any = None) -> None:
    async with MCPToolset(url, auth=auth, elicitation=apply_defaults, client_name="toolrig-conformance",
                          timeout=45, health_interval=None) as tools:
        log.info("tools: %s", tools.names())
        runtime = Runtime(tools, audit=False, approval=lambda *a: True)
        if first_tool and tools.names():
            call = (tools.list()[0].name, {})
        if call is not None:
            outcome = await runtime.call(ToolCall(name=call[0], arguments=call[1]))
            log.info("%s -> %s", call[0], outcome.content[:200])
        await runtime.aclose()


class Storage:
    """In-memory token storage for the SDK's OAuth providers."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


class Redirects:
    """Follows the authorization redirect itself and keeps the code (no browser in a test)."""

    def __init__(self) -> None:
        self.result: Any = None

    async def redirect(self, authorization_url: str) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        query = parse_qs(urlsplit(response.headers.get("location", "")).query)
        if "code" not in query:
            raise RuntimeError(f"no authorization code in the redirect ({response.status_code})")
        self.result = AuthorizationCodeResult(code=query["code"][0], state=(query.get("state") or [None])[0],
                                              iss=(query.get("iss") or [None])[0])

    async def callback(self) -> Any:
        assert self.result is not None
        result, self.result = self.result, None
        return result


async def auth_code(url: str) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    storage, redirects = Storage(), Redirects()
    given = context()
    if given.get("client_id"):
        secret = given.get("client_secret")
        storage.client = OAuthClientInformationFull(
            client_id=given["client_id"], client_secret=secret, redirect_uris=[AnyUrl(REDIRECT)],
            token_endpoint_auth_method="client_secret_basic" if secret else "none")
    return OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=redirects.redirect, callback_handler=redirects.callback,
        client_metadata=OAuthClientMetadata(client_name="toolrig-conformance", redirect_uris=[AnyUrl(REDIRECT)],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"]),
        client_metadata_url="https://conformance-test.local/client-metadata.json")


async def client_credentials(url: str, scenario: str) -> Any:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    given = context()
    if scenario.endswith("jwt"):
        params = SignedJWTParameters(issuer=given["client_id"], subject=given["client_id"],
                                     signing_algorithm=given.get("signing_algorithm", "ES256"),
                                     signing_key=given["private_key_pem"])
        return PrivateKeyJWTOAuthProvider(server_url=url, storage=Storage(), client_id=given["client_id"],
                                          assertion_provider=params.create_assertion_provider())
    return ClientCredentialsOAuthProvider(server_url=url, storage=Storage(), client_id=given["client_id"],
                                          client_secret=given["client_secret"],
                                          token_endpoint_auth_method="client_secret_basic")


async def cross_app(url: str) -> Any:
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
    from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls

    given = context()
    async with httpx2.AsyncClient(timeout=30) as http:
        metadata_url = build_protected_resource_metadata_discovery_urls(None, url)[0]
        issuer = (await http.get(metadata_url)).raise_for_status().json()["authorization_servers"][0]

    async def id_jag(audience: str, resource: str) -> str:
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(given["idp_token_endpoint"], data={
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "subject_token": given["idp_id_token"],
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "audience": audience, "resource": resource, "client_id": given["idp_client_id"]})
            return str(response.raise_for_status().json()["access_token"])

    return IdentityAssertionOAuthProvider(server_url=url, storage=Storage(), client_id=given["client_id"],
                                          client_secret=given["client_secret"], issuer=issuer,
                                          assertion_provider=id_jag, token_endpoint_auth_method="client_secret_basic")


async def main(url: str, scenario: str) -> None:
    if scenario == "initialize":
        await run(url)
    elif scenario == "tools_call":
        await run(url, call=("add_numbers", {"a": 5, "b": 3}))
    elif scenario == "sse-retry":
        await run(url, call=("test_reconnection", {}))
    elif scenario == "elicitation-sep1034-client-defaults":
        await run(url, call=("test_client_elicitation_defaults", {}))
    elif scenario.startswith("auth/client-credentials"):
        await run(url, first_tool=True, auth=await client_credentials(url, scenario))
    elif scenario == "auth/cross-app-access-complete-flow":
        await run(url, first_tool=True, auth=await cross_app(url))
    elif scenario.startswith("auth/"):
        await run(url, first_tool=True, auth=await auth_code(url))
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize"))
