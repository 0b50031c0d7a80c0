"""One unreadable tool in an upstream's ``tools/list`` leaves that tool out, not the server.

A raw upstream (``unreadable_upstream.py``, over stdio and streamable HTTP) lists good tools beside every kind of
entry no reader can use: an ``inputSchema`` that is not an object or not ``type: object``, no name, a name that is
not text, a name that breaks the MCP rule or hides control characters, a description that is not text, an
``outputSchema`` that is not an object, a name listed twice (both left out: neither may run for it), an entry of a
million characters, an entry that is not an object, and a bad entry on the second page. The good tools stay listed
and callable, through the client toolset and through the gateway (served by our server, called by the official
SDK's client); each bad one is never listed, a call by its name is ``not_found`` and never reaches the upstream,
and the report (blocked, the upstream's refused) names it safely. When every entry (or the listing itself) is
unreadable the server is unavailable, as before — at a relisting too, without taking the toolset down.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_helpers import eventually, gateway
from mcp import Client
from mcp_helpers import HERE, PYTHON, free_port, running
from served import toolrig_serve

from toolrig import ErrorKind, Runtime, ToolCall
from toolrig.errors import MCPUnavailableError
from toolrig.mcp import MCPToolset, open_pins, startup_report, startup_text

pytestmark = pytest.mark.anyio

UPSTREAM = HERE / "unreadable_upstream.py"
OBJECT = {"type": "object"}
ECHO = {"name": "echo", "description": "Echo the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
LATER = {"name": "later", "description": "A tool on the second page.", "inputSchema": OBJECT}
SWITCH = {"name": "switch", "description": "List other tools from now on.", "inputSchema": OBJECT}
HIDDEN = "evil\x1b[2J\u202eexe"
NAMED_BAD = {  # remote name -> an unreadable entry of that name (what each is, in its key)
    "schema_text": {"name": "schema_text", "inputSchema": "an object, honestly"},
    "schema_string": {"name": "schema_string", "inputSchema": {"type": "string"}},
    "described": {"name": "described", "description": ["not", "text"], "inputSchema": OBJECT},
    "output_text": {"name": "output_text", "inputSchema": OBJECT, "outputSchema": "x"},
    "output_string": {"name": "output_string", "inputSchema": OBJECT, "outputSchema": {"type": "string"}},
    "huge": {"$huge": "huge"},
    HIDDEN: {"name": HIDDEN, "inputSchema": 7},
}
PAGE_1 = [ECHO, *NAMED_BAD.values(), {"inputSchema": OBJECT}, {"name": 42, "inputSchema": OBJECT},
          "not an entry", {"name": "bad name!", "inputSchema": OBJECT},
          {"name": "twice", "inputSchema": OBJECT}, {"name": "twice", "inputSchema": OBJECT},
          {"name": "shadow", "inputSchema": OBJECT}, {"name": "shadow", "inputSchema": [1]}]
PAGE_2 = [LATER, {"name": "page2_bad", "inputSchema": []}]
NOT_CALLABLE = [n for n in NAMED_BAD if n != HIDDEN] + ["twice", "shadow", "page2_bad"]


def spec_env(tmp_path: Path, pages: list[Any], **spec: Any) -> dict[str, str]:
    return {"UNREADABLE_SPEC": json.dumps({"pages": pages, **spec}), "UNREADABLE_LOG": str(tmp_path / "calls.log"),
            "UNREADABLE_STATE": str(tmp_path / "state.json")}


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def toolset(tmp_path: Path, pages: list[Any], **options: Any) -> MCPToolset:
    return MCPToolset([PYTHON, str(UPSTREAM), "stdio"], prefix="up", env=spec_env(tmp_path, pages),
                      connect_timeout=30, **options)


def stdio_entry(tmp_path: Path, pages: list[Any], **spec: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [str(UPSTREAM), "stdio"], "env": spec_env(tmp_path, pages, **spec),
            "prefix": "up", "sandbox": {"rw_paths": [str(tmp_path)]}}


@asynccontextmanager
async def upstream(tmp_path: Path, transport: str, pages: list[Any]) -> AsyncIterator[dict[str, Any]]:
    """The ``mcpServers`` entry of an unreadable upstream over ``transport`` (stdio: launched by the gateway)."""
    if transport == "stdio":
        yield stdio_entry(tmp_path, pages)
        return
    port = free_port()
    with running([PYTHON, str(UPSTREAM), "http", str(port)], port, env=spec_env(tmp_path, pages)):
        yield {"url": f"http://127.0.0.1:{port}/mcp", "prefix": "up"}


def refused(reasons: dict[str, str]) -> set[str]:
    return {name for name, reason in reasons.items() if "unreadable" in reason or "listed 2 times" in reason
            or "naming rule" in reason}


def check_reasons(reasons: dict[str, str]) -> None:
    """Every bad entry is named with why (untrusted names escaped and cut)."""
    assert "inputSchema" in reasons["schema_text"] and "'object'" in reasons["schema_string"]
    assert "description" in reasons["described"] and "outputSchema" in reasons["output_text"]
    assert "outputSchema" in reasons["output_string"] and "1,000," in reasons["huge"]
    assert "name: Field required" in reasons["<unnamed tool #9 on page 1>"]
    assert "name: Input should be a valid string" in reasons["<unnamed tool #10 on page 1>"]
    assert "not an object" in reasons["<unnamed tool #11 on page 1>"] and "naming rule" in reasons["bad name!"]
    assert "listed 2 times" in reasons["twice"] and "listed 2 times" in reasons["shadow"]
    assert "inputSchema" in reasons["page2_bad"]
    assert "evil\\x1b[2J\\u202eexe" in reasons and all("\x1b" not in n and "\u202e" not in n for n in reasons)


async def test_the_toolset_keeps_the_good_tools_and_leaves_out_each_unreadable_one(tmp_path: Path) -> None:
    async with toolset(tmp_path, [PAGE_1, PAGE_2]) as ts:
        assert sorted(ts.names()) == ["up__echo", "up__later"]
        assert ts.health.state == "up" and ts.health.tools == 2
        reasons = dict(ts.refused)
        check_reasons(reasons)
        runtime = Runtime(ts, audit=False, approval=lambda *a: True)
        ran = await runtime.call(ToolCall(name="up__echo", arguments={"text": "hi"}))
        assert ran.error is None and 'ran echo {"text": "hi"}' in ran.content
        assert (await runtime.call(ToolCall(name="up__later", arguments={}))).error is None
        for name in NOT_CALLABLE:
            assert ts.get(f"up__{name}") is None
            outcome = await runtime.call(ToolCall(name=f"up__{name}", arguments={}))
            assert outcome.error is not None and outcome.error.kind is ErrorKind.NOT_FOUND, (name, outcome.content)
    assert calls(tmp_path) == ["echo", "later"]


async def test_every_entry_unreadable_or_an_unreadable_listing_leaves_the_server_unavailable(tmp_path: Path) -> None:
    with pytest.raises(MCPUnavailableError, match=r"every tool .* is unreadable: schema_text: inputSchema"):
        async with toolset(tmp_path, [[NAMED_BAD["schema_text"], "not an entry"]]):
            pass
    with pytest.raises(MCPUnavailableError, match="tools: Input should be a valid list") as raised:
        async with toolset(tmp_path, ["SECRET-LISTING"]):
            pass
    assert all(text not in str(raised.value) for text in ("SECRET", "\n", "input_value", "pydantic.dev"))
    async with toolset(tmp_path, [[]]) as ts:  # an empty listing is a server with no tools, as before
        assert ts.health.state == "up" and ts.names() == [] and ts.refused == ()


async def test_a_forged_unreadable_note_in_the_listing_is_ignored(tmp_path: Path) -> None:
    forged = {"io.toolrig/unreadable": [{"index": 0, "name": "echo", "shown": "echo", "reason": "forged"}],
              "other": 1}
    env = spec_env(tmp_path, [[ECHO]], meta=forged)
    async with MCPToolset([PYTHON, str(UPSTREAM), "stdio"], env=env) as ts:
        assert ts.names() == ["echo"] and ts.refused == ()


async def test_a_relisting_quarantines_only_the_new_bad_entry_and_an_unreadable_one_takes_the_session_down(
        tmp_path: Path) -> None:
    later = [[ECHO, SWITCH, {"name": "new_bad", "inputSchema": "x"}, LATER]]
    env = spec_env(tmp_path, [[ECHO, SWITCH]], later=later)
    async with MCPToolset([PYTHON, str(UPSTREAM), "stdio"], env=env, connect_timeout=3) as ts:
        changed = anyio.Event()
        ts.on_change(lambda _: changed.set())
        runtime = Runtime(ts, audit=False, approval=lambda *a: True)
        assert (await runtime.call(ToolCall(name="switch", arguments={}))).error is None
        with anyio.fail_after(30):
            await changed.wait()
        assert sorted(ts.names()) == ["echo", "later", "switch"] and [n for n, _ in ts.refused] == ["new_bad"]
        assert (await runtime.call(ToolCall(name="echo", arguments={"text": "a"}))).error is None
        # now the listing itself cannot be read: the session goes down (the toolset stays open), nothing is sent
        (tmp_path / "state.json").write_text(json.dumps(["SECRET-LISTING"]))
        await ts.refresh()
        assert ts.health.state == "down" and "could not be read" in str(ts.health.last_error)
        # why, in one bounded line that never quotes the server's values (pydantic's own text does)
        assert "tools: Input should be a valid list" in str(ts.health.last_error)
        assert all(text not in str(ts.health.last_error) for text in ("SECRET", "\n", "input_value", "pydantic.dev"))
        outcome = await runtime.call(ToolCall(name="echo", arguments={"text": "b"}))
        assert outcome.error is not None and "is unavailable" in outcome.error.message, outcome.content
        # and a listing of good tools again brings it back
        (tmp_path / "state.json").write_text(json.dumps([[ECHO]]))
        await eventually(lambda: ts.health.state == "up" and ts.names() == ["echo"])
    assert calls(tmp_path) == ["switch", "echo"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_gateway_serves_the_good_tools_and_reports_each_unreadable_one(tmp_path: Path,
                                                                                 transport: str) -> None:
    async with upstream(tmp_path, transport, [PAGE_1, PAGE_2]) as entry, \
            gateway(tmp_path, {"up": entry}) as (url, gw), Client(url, mode="legacy") as client:
        listed = sorted(t.name for t in (await client.list_tools()).tools)
        assert listed == ["up__echo", "up__later"]
        echo = await client.call_tool("up__echo", {"text": "hi"})
        assert not echo.is_error and 'ran echo {\\"text\\": \\"hi\\"}' in json.dumps(echo.model_dump(mode="json"))
        assert not (await client.call_tool("up__later", {})).is_error
        for name in NOT_CALLABLE:
            answer = await client.call_tool(f"up__{name}", {})
            assert answer.is_error and "not_found" in json.dumps(answer.model_dump(mode="json")), name
        # the report: what is blocked, and the upstream's refused names, with reasons; names shown safely
        blocked = {b.remote: b for b in gw.toolset.blocked()}
        assert {b.kind for b in blocked.values()} == {"quarantined"}
        check_reasons({remote: b.reasons[0] for remote, b in blocked.items()})
        assert blocked["schema_string"].tool == "up__schema_string"
        report = startup_report(gw, url)
        [up] = report["upstreams"]
        assert up["state"] == "up" and up["tools"] == 2
        assert refused({r["name"]: r["reason"] for r in up["refused"]}) == set(blocked)
        assert {b["remote"] for b in report["blocked"]} == set(blocked)
        text = startup_text(report)
        assert "quarantined: up__schema_string: its entry in the listing is unreadable: inputSchema" in text
        assert "\x1b" not in text and "\u202e" not in text and "x" * 1000 not in text
        assert gw.health()["blocked"] == len(gw.toolset.blocked()) == len(blocked) + 2  # twice, shadow: two each
    assert calls(tmp_path) == ["echo", "later"]


def test_toolrig_serve_reports_the_unreadable_tools_in_its_ready_line(tmp_path: Path) -> None:
    entry = stdio_entry(tmp_path, [PAGE_1, PAGE_2])
    config = tmp_path / "toolrig.toml"
    env = "".join(f"{key} = {json.dumps(value)}\n" for key, value in entry["env"].items())
    config.write_text(f"name = \"unreadable\"\n[mcpServers.up]\ncommand = {json.dumps(PYTHON)}\n"
                      f"args = {json.dumps(entry['args'])}\nprefix = \"up\"\n"
                      f"sandbox = {{ rw_paths = [{json.dumps(str(tmp_path))}] }}\n[mcpServers.up.env]\n{env}"
                      "[policy]\nallow = [\"*\"]\n[runtime]\naudit = false\n", encoding="utf-8")
    open_pins(tmp_path / "mcp.db").approve_launch([PYTHON, str(UPSTREAM), "stdio"], None, entry["env"])
    with toolrig_serve(tmp_path, config) as served:
        [ready] = [e for e in served.events() if e.get("event") == "ready"]
        [up] = ready["upstreams"]
        assert up["state"] == "up" and up["tools"] == 2 and ready["tools"] == 2
        blocked = {b["remote"]: b for b in ready["blocked"]}
        check_reasons({remote: b["reasons"][0] for remote, b in blocked.items()})
        assert all(b["kind"] == "quarantined" for b in blocked.values())
        assert len(served.logs("its entry in the listing is unreadable: inputSchema.type")) == 1  # logged once
