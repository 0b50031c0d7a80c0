"""ProgressiveToolset: disclosure at the threshold, core tools visible, call_tool routed before the pipeline."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest

from toolrig import BaseTool, CallContext, Policy, Runtime, ToolCall, Toolset, schema_tool, tool
from toolrig.audit import AuditLog
from toolrig.discovery import CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS, ProgressiveToolset, estimate_tokens
from toolrig.toolsets import FunctionToolset

META = {SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL}


@tool(permission="readonly")
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city, e.g. Paris.
    """
    return f"sunny in {city}"


@tool(permission="destructive")
def delete_repo(name: str) -> str:
    """Delete a source code repository for ever."""
    return f"deleted {name}"


@tool(permission="readonly")
def ping() -> str:
    """Answer pong."""
    return "pong"


def filler(n: int) -> list[BaseTool]:
    return [schema_tool(name=f"tool_{i}", description=f"Does task {i} on widgets and gadgets. " * 5,
                        input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
                        permission="readonly") for i in range(n)]


def progressive(**options: Any) -> ProgressiveToolset:
    base = FunctionToolset([get_weather, delete_repo, ping, *filler(30)])
    options.setdefault("core", ["ping"])
    return ProgressiveToolset(base, counter=estimate_tokens, **options)


def names(toolset: Toolset) -> set[str]:
    return {t.name for t in toolset.list()}


def test_turns_on_exactly_at_the_threshold() -> None:
    cost = progressive().definition_tokens()
    assert cost > 0
    at = progressive(context_window=cost * 10, threshold=0.10)  # cost == 10 % of the window
    below = progressive(context_window=cost * 10 + 10, threshold=0.10)
    assert at.active and not below.active
    assert names(at) == {"ping"} | META
    assert names(below) == set(at.wrapped.names())
    assert at.hidden() and below.hidden() == []


def test_follows_the_toolset_as_it_grows() -> None:
    base = FunctionToolset([get_weather, ping])
    small = ProgressiveToolset(base, core=["ping"], counter=estimate_tokens, context_window=4_000, threshold=0.5)
    assert not small.active
    for t in filler(40):
        base.add(t)
    assert small.active and names(small) == {"ping"} | META


def test_core_tools_are_never_hidden_and_globs_work() -> None:
    ts = progressive(enabled=True, core=["ping", "tool_1*"])
    visible = names(ts)
    assert {"ping", "tool_1", "tool_10", "tool_19"} <= visible
    assert "get_weather" not in visible and ts.get("get_weather") is None
    assert ts.get("ping") is not None and ts.get(SEARCH_TOOLS) is not None


def test_measured_with_the_provider_definition() -> None:
    ts = progressive()
    from toolrig.providers import to_openai

    expected = sum(estimate_tokens(json.dumps(d, separators=(",", ":"), ensure_ascii=False))
                   for d in to_openai(ts.wrapped.list()))
    assert ts.definition_tokens() == expected


@pytest.mark.anyio
async def test_meta_tools_round_trip_and_policy_sees_the_real_tool(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    ts = progressive(enabled=True)
    policy = Policy(deny=["delete_repo"], allowed_tools=None)
    ctx = CallContext(user="ann", session="s1")
    async with Runtime(ts, audit=db, policy=policy) as rt:
        found = await rt.call(ToolCall(name=SEARCH_TOOLS, arguments={"query": "weather in a city", "k": 3}), ctx)
        assert found.ok and json.loads(found.content)[0]["name"] == "get_weather"
        described = await rt.call(ToolCall(name=DESCRIBE_TOOL, arguments={"name": "get_weather"}), ctx)
        assert json.loads(described.content)["parameters"]["properties"]["city"]["type"] == "string"
        ran = await rt.call(ToolCall(name=CALL_TOOL, id="c-run",
                                     arguments={"name": "get_weather", "arguments": {"city": "Oslo"}}), ctx)
        assert ran.ok and ran.content == "sunny in Oslo" and ran.name == "get_weather"
        assert ran.call_id == "c-run" and ran.meta["routed_from"] == CALL_TOOL
        denied = await rt.call(ToolCall(name=CALL_TOOL, id="c-deny",
                                        arguments=json.dumps({"name": "delete_repo", "arguments": {"name": "x"}})),
                               ctx)
    assert not denied.ok and denied.error is not None and denied.error.kind.value == "denied"
    assert denied.name == "delete_repo" and "delete_repo" in denied.error.message
    rows = {r.call_id: r for r in AuditLog(db).query(limit=None)}
    assert rows["c-run"].tool == "get_weather" and rows["c-run"].arguments == {"city": "Oslo"}
    assert rows["c-deny"].tool == "delete_repo" and rows["c-deny"].kind == "denied"
    assert rows["c-deny"].decision is not None and "delete_repo" in json.dumps(rows["c-deny"].decision)


@pytest.mark.anyio
async def test_hidden_tools_only_through_call_tool_and_only_wrapped_ones() -> None:
    @tool(permission="readonly")
    def outsider() -> str:
        """Not in the progressive toolset."""
        return "should not run"

    ts = progressive(enabled=True)
    async with Runtime(ts, audit=False) as rt:
        direct = await rt.call(ToolCall(name="get_weather", arguments={"city": "Oslo"}))
        assert not direct.ok and direct.error is not None and direct.error.kind.value == "not_found"
        for target in ("outsider", "get_weather@1.0.0", "get_weather@>=1", CALL_TOOL, SEARCH_TOOLS, "nope"):
            out = await rt.call(ToolCall(name=CALL_TOOL, arguments={"name": target, "arguments": {}}))
            assert not out.ok, target
            assert "should not run" not in out.content
        bad = await rt.call(ToolCall(name=CALL_TOOL, arguments={"name": "get_weather", "arguments": {"city": 5.5}}))
        assert not bad.ok and bad.name == "get_weather"
        assert bad.error is not None and bad.error.kind.value == "invalid_arguments"


@pytest.mark.anyio
async def test_call_tool_fails_closed_when_not_routed() -> None:
    inner = progressive(enabled=True)
    hidden_behind = FunctionToolset(inner.list())  # the meta-tools, but not the router
    async with Runtime(hidden_behind, audit=False) as rt:
        out = await rt.call(ToolCall(name=CALL_TOOL, arguments={"name": "delete_repo", "arguments": {"name": "x"}}))
    assert not out.ok and "not routed" in out.content


class RemoteLike(Toolset):
    """A toolset that builds fresh tool objects on every list(), as a remote (MCP) source may."""

    def list(self) -> builtins.list[BaseTool]:
        return [schema_tool(name="remote_echo", description="Echo text back from the remote server.",
                            input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                          "required": ["text"]},
                            handler=lambda args: args["text"], permission="readonly"), *filler(5)]


@pytest.mark.anyio
async def test_wraps_any_toolset() -> None:
    ts = ProgressiveToolset(RemoteLike(), enabled=True)
    assert names(ts) == META
    async with Runtime(ts, audit=False) as rt:
        found = await rt.call(ToolCall(name=SEARCH_TOOLS, arguments={"query": "echo text"}))
        assert json.loads(found.content)[0]["name"] == "remote_echo"
        out = await rt.call(ToolCall(name=CALL_TOOL, arguments={"name": "remote_echo", "arguments": {"text": "hi"}}))
    assert out.ok and out.content == "hi" and out.name == "remote_echo"


def test_bad_settings_fail_loudly() -> None:
    with pytest.raises(ValueError):
        progressive(threshold=0)
    with pytest.raises(ValueError):
        progressive(context_window=0)
