"""Attacks: ``completion/complete`` through the gateway reaches an upstream only for a prompt or template the client
may see — admitted by the review and left in by ``ALLOWED_TOOLS`` (as listing is) — never for one it hides; and
every completion the gateway judges is a call of the pipeline that leaves an audit row, refused ones included.

Real gateway over streamable HTTP, real upstream subprocesses (the scriptable server on the SDK), the SDK's client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from gateway_helpers import gateway, hostile
from mcp import Client, MCPError

from toolrig.audit import AuditLog, AuditRecord

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


AUDITED = {"audit_mode": "strict"}


def rows(db: Path) -> list[AuditRecord]:
    return sorted(AuditLog(db).query(limit=None), key=lambda r: r.time)


def completions(db: Path) -> list[AuditRecord]:
    return [r for r in rows(db) if isinstance(r.arguments, dict) and "complete" in r.arguments]


async def test_attack_completion_of_a_prompt_or_template_outside_allowed_tools_never_reaches_the_upstream(
        tmp_path: Path) -> None:
    log = tmp_path / "logs" / "upstream.log"
    log.parent.mkdir()
    db = tmp_path / "audit.db"
    only_tools = {"allow": ["*"], "allowed_tools": ["docs__echo"]}
    async with gateway(tmp_path, servers(log), policy=only_tools, runtime={"audit": str(db), **AUDITED}) as (
            url, _), Client(url, mode="legacy") as client:
        for ref in (prompt("docs__review"), template(f"toolrig://docs/{TEMPLATE}")):
            with pytest.raises(MCPError, match="ALLOWED_TOOLS"):
                await client.complete(ref=ref, argument={"name": "code", "value": "pri"})
    assert asked(log) == []
    refused = completions(db)  # refused, and recorded as refused
    assert [(r.tool, r.kind, r.ok) for r in refused] == [("docs__prompts-get", "denied", False),
                                                         ("docs__resources-read", "denied", False)]
    assert refused[0].arguments == {"server": "docs", "name": "review",
                                    "complete": {"argument": "code", "value": "pri"}}
    assert refused[1].arguments["uri"] == TEMPLATE and refused[1].decision is not None


async def test_completion_of_an_allowed_prompt_and_template_reaches_its_upstream(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "upstream.log"
    log.parent.mkdir()
    policy = {"allow": ["*"], "allowed_tools": ["docs__echo", 'prompt(server="docs", name="review")',
                                                'resource(server="docs", uri="file:///data/*")']}
    db = tmp_path / "audit.db"
    async with gateway(tmp_path, servers(log), policy=policy, runtime={"audit": str(db), **AUDITED}) as (
            url, _), Client(url, mode="legacy") as client:
        got = await client.complete(ref=prompt("docs__review"), argument={"name": "code", "value": "pri"})
        assert got.completion.values == ["docs completes pri"]
        got = await client.complete(ref=template(f"toolrig://docs/{TEMPLATE}"), argument={"name": "name", "value": "r"})
        assert got.completion.values == ["docs completes r"]
        with pytest.raises(MCPError, match="not found"):  # not admitted: never asked either
            await client.complete(ref=prompt("docs__other"), argument={"name": "code", "value": "x"})
    assert asked(log) == ["complete review code=pri", f"complete {TEMPLATE} name=r"]
    done = completions(db)  # one row per forwarded completion; none for the unknown prompt (never forwarded)
    assert [(r.tool, r.arguments, r.kind, r.ok) for r in done] == [
        ("docs__prompts-get", {"server": "docs", "name": "review", "complete": {"argument": "code", "value": "pri"}},
         "ok", True),
        ("docs__resources-read", {"server": "docs", "uri": TEMPLATE, "complete": {"argument": "name", "value": "r"}},
         "ok", True)]
    assert all(r.duration_ms is not None and r.status == "completed" for r in done)


SECRET = "ghp_" + "Q7" * 18
PASSWORD = "correct-horse-battery-staple"


async def test_a_completion_row_keeps_no_secret_the_client_typed(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "upstream.log"
    log.parent.mkdir()
    db = tmp_path / "audit.db"
    async with gateway(tmp_path, servers(log), runtime={"audit": str(db), **AUDITED}) as (url, _), \
            Client(url, mode="legacy") as client:
        got = await client.complete(ref=prompt("docs__review"), argument={"name": "code", "value": SECRET},
                                    context_arguments={"password": PASSWORD, "lang": "py"})
        # the output is redacted like any call's: a secret-shaped suggestion does not come back either
        assert got.completion.values == ["docs completes [REDACTED:github_token]"]
    assert asked(log) == [f"complete review code={SECRET}"]  # the upstream was asked what the client typed
    [row] = completions(db)
    text = json.dumps(row.to_dict())
    assert SECRET not in text and PASSWORD not in text
    complete: dict[str, Any] = row.arguments["complete"]
    assert complete["argument"] == "code" and "REDACTED" in complete["value"]
    assert complete["context"]["lang"] == "py" and "REDACTED" in complete["context"]["password"]


async def test_deny_rules_and_approval_apply_to_completions_as_to_gets_and_reads(tmp_path: Path) -> None:
    asked_for: list[str] = []

    async def elicitation(ctx: Any, params: Any) -> Any:
        asked_for.append(params.message)
        return mcp_types.ElicitResult(action="decline")

    log = tmp_path / "logs" / "upstream.log"
    log.parent.mkdir()
    db = tmp_path / "audit.db"
    ruled = {"allow": ["*"], "deny": ['prompt(server="docs", name="review")'], "allowed_tools": None}
    async with gateway(tmp_path, servers(log), policy=ruled, runtime={"audit": str(db), **AUDITED}) as (url, _), \
            Client(url, mode="legacy") as client:
        with pytest.raises(MCPError, match="denied"):
            await client.complete(ref=prompt("docs__review"), argument={"name": "code", "value": "pri"})
        got = await client.complete(ref=template(f"toolrig://docs/{TEMPLATE}"), argument={"name": "name", "value": "r"})
        assert got.completion.values == ["docs completes r"]
    assert asked(log) == [f"complete {TEMPLATE} name=r"]
    assert [(r.tool, r.kind) for r in completions(db)] == [("docs__prompts-get", "denied"),
                                                           ("docs__resources-read", "ok")]
    approval_db = tmp_path / "approval.db"  # the default policy asks before reading an untrusted server's content
    async with gateway(tmp_path, servers(log), policy=None, runtime={"audit": str(approval_db), **AUDITED}) as (
            url, _), Client(url, mode="legacy", elicitation_callback=elicitation) as client:
        with pytest.raises(MCPError, match="approval"):
            await client.complete(ref=prompt("docs__review"), argument={"name": "code", "value": "x"})
    assert len(asked_for) == 1 and "docs__prompts-get" in asked_for[0]
    assert asked(log) == [f"complete {TEMPLATE} name=r"]  # declined: never forwarded
    assert [(r.tool, r.ok) for r in completions(approval_db)] == [("docs__prompts-get", False)]
