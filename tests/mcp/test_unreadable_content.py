"""One unreadable entry in an upstream's ``resources/list``, ``resources/templates/list`` or ``prompts/list`` leaves
that entry out, not the whole listing.

The raw upstream (``unreadable_upstream.py``) lists good resources, templates and prompts beside entries the SDK
cannot read (a URI or a name that is not text or is missing, a description that is not text, arguments that are
not a list, an entry that is not an object, a URI hiding control characters, a bad entry on the second page). The
good ones stay listed and usable through the client toolset and through the gateway (served by our server, called
by the official SDK's client); each bad one is never listed, is reported (escaped, with a reason that never quotes
the server's values) and never reached; a URI or name that a readable and an unreadable entry both claim is offered
by neither. A page of which every entry is unreadable fails the toolset's listing, as before; through the gateway
that server then offers none of them, and the other servers' stay listed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from gateway_helpers import gateway
from mcp import Client, MCPError
from mcp_helpers import PYTHON
from pydantic import ValidationError
from test_unreadable_tools import ECHO, UPSTREAM, calls, spec_env, stdio_entry

from toolrig.mcp import MCPToolset, list_offers, startup_report, startup_text
from toolrig.mcp.client import unreadable_of

pytestmark = pytest.mark.anyio

GOOD = {"uri": "file:///good.txt", "name": "good"}
LATER = {"uri": "file:///later.txt", "name": "later"}
EVIL = "file:///evil\x1b[2J\u202e.txt"
RESOURCES = [[GOOD, {"uri": 5, "name": "number"}, {"name": "no_uri"},
              {"uri": "file:///described.txt", "name": "d", "description": ["SECRET-DESCRIPTION"]},
              {"uri": "file:///shadow.txt", "name": "s"}, {"uri": "file:///shadow.txt", "name": 7},
              "not an entry", {"uri": EVIL, "name": "e", "size": "big"}],
             [LATER, {"uri": "file:///page2.txt"}]]
TEMPLATES = [[{"uriTemplate": "file:///t/{x}", "name": "t"}, {"uriTemplate": "file:///bad/{x}", "name": 3}]]
PROMPTS = [[{"name": "greet", "description": "Greet."}, {"name": "bad_args", "arguments": "SECRET-ARGS"},
            {"name": 9}, {"name": "shadow"}, {"name": "shadow", "description": 1}]]
SPEC = {"resources": RESOURCES, "templates": TEMPLATES, "prompts": PROMPTS}
BAD_URIS = ["file:///described.txt", "file:///shadow.txt", "file:///page2.txt", EVIL]
SHOWN_EVIL = "file:///evil\\x1b[2J\\u202e.txt"


def check_reasons(reasons: dict[tuple[str, str], str]) -> None:
    """Each bad entry is named (escaped) with why, and no reason quotes what the server sent."""
    assert "description: Input should be a valid string" in reasons[("resource", "file:///described.txt")]
    assert "uri: Input should be a valid string" in reasons[("resource", "<unnamed resource #2 on page 1>")]
    assert "uri: Field required" in reasons[("resource", "<unnamed resource #3 on page 1>")]
    assert "not an object" in reasons[("resource", "<unnamed resource #7 on page 1>")]
    assert "size" in reasons[("resource", SHOWN_EVIL)] and "name: Field required" in reasons[
        ("resource", "file:///page2.txt")]
    assert "also listed by an unreadable entry" in reasons[("resource", "file:///shadow.txt")]
    assert "name: Input should be a valid string" in reasons[("template", "file:///bad/{x}")]
    assert "arguments: Input should be a valid list" in reasons[("prompt", "bad_args")]
    assert "name: Input should be a valid string" in reasons[("prompt", "<unnamed prompt #3 on page 1>")]
    assert "also listed by an unreadable entry" in reasons[("prompt", "shadow")]
    assert all("SECRET" not in r and "\n" not in r and len(r) < 400 for r in reasons.values())
    assert all("\x1b" not in remote and "\u202e" not in remote for _, remote in reasons)


async def test_the_toolset_lists_the_good_entries_and_says_which_it_left_out(tmp_path: Path) -> None:
    env = spec_env(tmp_path, [[ECHO]], **SPEC)
    async with MCPToolset([PYTHON, str(UPSTREAM), "stdio"], env=env, connect_timeout=30) as ts:
        async def first_page(client: Any) -> Any:
            return await client.list_resources()

        page = await ts.connection.request(first_page)
        assert [r.uri for r in page.resources] == ["file:///good.txt", "file:///shadow.txt"]
        left_out = {u.shown: u for u in unreadable_of(page, 1, "resources/list")}
        assert set(left_out) == {"file:///described.txt", "<unnamed resource #2 on page 1>", SHOWN_EVIL,
                                 "<unnamed resource #3 on page 1>", "file:///shadow.txt",
                                 "<unnamed resource #7 on page 1>"}
        assert left_out[SHOWN_EVIL].name == EVIL and left_out["<unnamed resource #2 on page 1>"].name is None
        assert sorted(d["uri"] for d in await list_offers(ts, "resource")) == [
            "file:///good.txt", "file:///later.txt", "file:///shadow.txt"]
        assert [d["uriTemplate"] for d in await list_offers(ts, "template")] == ["file:///t/{x}"]
        assert [d["name"] for d in await list_offers(ts, "prompt")] == ["greet", "shadow"]

        async def read_and_get(client: Any) -> tuple[Any, Any]:
            return (await client.read_resource("file:///good.txt"), await client.get_prompt("greet"))

        read, got = await ts.connection.request(read_and_get)
        assert read.contents[0].text == "read file:///good.txt" and got.messages[0].content.text == "got greet"
        assert ts.health.state == "up"


async def test_a_page_where_every_entry_is_unreadable_fails_the_listing_as_before(tmp_path: Path) -> None:
    env = spec_env(tmp_path, [[ECHO]], resources=[[{"uri": 5}, "x"]], prompts=[[{"uri": "x"}]])
    async with MCPToolset([PYTHON, str(UPSTREAM), "stdio"], env=env, connect_timeout=30) as ts:
        async def resources(client: Any) -> Any:
            return await client.list_resources()

        with pytest.raises(ValidationError):
            await ts.connection.request(resources)
        with pytest.raises(ValidationError):  # a prompt with no name: every entry unreadable
            await ts.connection.request(lambda client: client.list_prompts())
        assert ts.health.state == "up" and ts.names() == ["echo"]


async def test_the_gateway_serves_the_good_resources_and_prompts_and_reports_each_unreadable_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolrig.mcp.gateway")
    entry = stdio_entry(tmp_path, [[ECHO]], **SPEC)
    async with gateway(tmp_path, {"up": entry}) as (url, gw), Client(url, mode="legacy") as client:
        listed = sorted(r.uri for r in (await client.list_resources()).resources)
        assert listed == ["toolrig://up/file:///good.txt", "toolrig://up/file:///later.txt"]
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["toolrig://up/file:///t/{x}"]
        assert [p.name for p in (await client.list_prompts()).prompts] == ["up__greet"]
        read = (await client.read_resource("toolrig://up/file:///good.txt")).contents
        assert any(isinstance(c, mcp_types.TextResourceContents) and "read file:///good.txt" in c.text for c in read)
        got = await client.get_prompt("up__greet")
        assert "got greet" in str(got.messages[0].content)
        assert (await client.read_resource("toolrig://up/file:///t/a")).contents
        for uri in BAD_URIS:
            with pytest.raises(MCPError, match="not found"):
                await client.read_resource(f"toolrig://up/{uri}")
        for name in ("bad_args", "shadow"):
            with pytest.raises(MCPError, match="not found"):
                await client.get_prompt(f"up__{name}")
        blocked = {(b.what, b.remote): b for b in gw.toolset.blocked() if b.what != "tool"}
        assert {b.kind for b in blocked.values()} == {"quarantined"}
        reasons: dict[tuple[str, str], list[str]] = {}
        for b in gw.toolset.blocked():
            reasons.setdefault((b.what, b.remote), []).append(b.reasons[0])
        check_reasons({key: " | ".join(r) for key, r in reasons.items() if key[0] != "tool"})
        assert blocked[("resource", "file:///described.txt")].tool == "toolrig://up/file:///described.txt"
        report = startup_report(gw, url)
        assert {(b["what"], b["remote"]) for b in report["blocked"]} >= set(blocked)
        text = startup_text(report)
        assert "\x1b" not in text and "\u202e" not in text and "SECRET" not in text
        await client.list_resources()  # listed again: each is logged once
        logged = [r.getMessage() for r in caplog.records if "described.txt" in r.getMessage()]
        assert len(logged) == 1 and "unreadable: description" in logged[0]
    assert calls(tmp_path) == ["read:file:///good.txt", "get:greet", "read:file:///t/a"]


async def test_a_server_whose_whole_page_is_unreadable_offers_nothing_and_the_others_stay_listed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Through the gateway: one upstream whose resources (or prompts) page has no readable entry contributes none
    of them — logged in one line without its values — and the listing of every other upstream still answers."""
    caplog.set_level(logging.WARNING, logger="toolrig.mcp.gateway")
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    good = {**stdio_entry(tmp_path / "good", [[ECHO]], resources=[[GOOD]], prompts=[[{"name": "greet"}]]),
            "prefix": "good"}
    bad = {**stdio_entry(tmp_path / "bad", [[ECHO]], resources=[[{"uri": 5, "name": "SECRET-NAME"}, "x"]],
                         prompts=[[{"uri": "x"}]]), "prefix": "bad"}
    async with gateway(tmp_path, {"good": good, "bad": bad}) as (url, _gw), Client(url, mode="legacy") as client:
        listed = [r.uri for r in (await client.list_resources()).resources]
        assert listed == ["toolrig://good/file:///good.txt"]
        assert [p.name for p in (await client.list_prompts()).prompts] == ["good__greet"]
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        assert tools == ["bad__echo", "good__echo"]  # its tools are not touched
    logged = [r.getMessage() for r in caplog.records if "cannot be read, none offered" in r.getMessage()]
    assert logged and all("\n" not in m and "SECRET-NAME" not in m for m in logged)
