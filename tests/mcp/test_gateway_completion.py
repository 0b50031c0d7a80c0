"""Attacks: ``completion/complete`` through the gateway reaches an upstream only for a prompt or template the client
may see — admitted by the review and left in by ``ALLOWED_TOOLS`` (as listing is) — never for one it hides.

Real gateway over streamable HTTP, real upstream subprocesses (the scriptable server on the SDK), the SDK's client.
"""

from __future__ import annotations

from pathlib import Path

import mcp_types
import pytest
from gateway_helpers import gateway, hostile
from mcp import Client, MCPError

pytestmark = pytest.mark.anyio

TEMPLATE = "file:///data/{name}"


def servers(log: Path) -> dict[str, object]:
    return {"docs": hostile("docs", log=log, tools=[{"name": "echo"}], templates=[{"uriTemplate": TEMPLATE}],
                            prompts=[{"name": "review", "arguments": [{"name": "code"}]}])}


def prompt(name: str) -> mcp_types.PromptReference:
    return mcp_types.PromptReference(type="ref/prompt", name=name)


def template(uri: str) -> mcp_types.ResourceTemplateReference:
    return mcp_types.ResourceTemplateReference(type="ref/resource", uri=uri)


def asked(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("complete")] if log.exists() else []


async def test_attack_completion_of_a_prompt_or_template_outside_allowed_tools_never_reaches_the_upstream(
        tmp_path: Path) -> None:
    log = tmp_path / "logs" / "upstream.log"
    log.parent.mkdir()
    only_tools = {"allow": ["*"], "allowed_tools": ["docs__echo"]}
    async with gateway(tmp_path, servers(log), policy=only_tools) as (url, _), Client(url, mode="legacy") as client:
        for ref in (prompt("docs__review"), template(f"toolrig://docs/{TEMPLATE}")):
            with pytest.raises(MCPError, match="not found"):
                await client.complete(ref=ref, argument={"name": "code", "value": "pri"})
    assert asked(log) == []


async def test_completion_of_an_allowed_prompt_and_template_reaches_its_upstream(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "upstream.log"
    log.parent.mkdir()
    policy = {"allow": ["*"], "allowed_tools": ["docs__echo", 'prompt(server="docs", name="review")',
                                                'resource(server="docs", uri="file:///data/*")']}
    async with gateway(tmp_path, servers(log), policy=policy) as (url, _), Client(url, mode="legacy") as client:
        got = await client.complete(ref=prompt("docs__review"), argument={"name": "code", "value": "pri"})
        assert got.completion.values == ["docs completes pri"]
        got = await client.complete(ref=template(f"toolrig://docs/{TEMPLATE}"), argument={"name": "name", "value": "r"})
        assert got.completion.values == ["docs completes r"]
        with pytest.raises(MCPError, match="not found"):  # not admitted: never asked either
            await client.complete(ref=prompt("docs__other"), argument={"name": "code", "value": "x"})
    assert asked(log) == ["complete review code=pri", f"complete {TEMPLATE} name=r"]
