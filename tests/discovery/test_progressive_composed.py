"""ProgressiveToolset inside other toolsets: routing composes (Toolset.route), and never escapes the outer toolset.

``search_tools`` → ``call_tool`` reaches the real tool through policy, approval and audit under the name the
outer toolset gives it; a tool the outer toolset hides (a filter, ALLOWED_TOOLS) is never reached.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import BaseTool, CallContext, Policy, Runtime, ToolCall, ToolOutcome, schema_tool, tool
from toolrig.audit import AuditLog
from toolrig.discovery import CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS, ProgressiveToolset, estimate_tokens
from toolrig.toolsets import CombinedToolset, FunctionToolset, RoutedCall, Toolset

RAN: list[str] = []


@tool(permission="readonly")
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city, e.g. Paris.
    """
    RAN.append("get_weather")
    return f"sunny in {city}"


@tool(permission="destructive")
def delete_repo(name: str) -> str:
    """Delete a source code repository for ever."""
    RAN.append("delete_repo")
    return f"deleted {name}"


@tool(permission="readonly")
def read_secret(key: str) -> str:
    """Read a secret value from the vault by its key."""
    RAN.append("read_secret")
    return f"secret {key}"


@tool(permission="readonly")
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool(permission="readonly")
def local_clock() -> str:
    """The local time."""
    return "noon"


def filler(n: int) -> list[BaseTool]:
    return [schema_tool(name=f"tool_{i}", description=f"Does task {i} on widgets and gadgets. " * 5,
                        input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
                        permission="readonly") for i in range(n)]


def progressive() -> ProgressiveToolset:
    base = FunctionToolset([get_weather, delete_repo, read_secret, ping, *filler(20)])
    return ProgressiveToolset(base, core=["ping"], counter=estimate_tokens, enabled=True)


class Approver:
    """Approves every call and remembers what it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, call: ToolCall, ctx: CallContext, reason: str) -> bool:
        self.asked.append(call.name)
        return True


def call_tool(name: str, arguments: dict[str, Any], *, prefix: str = "", id: str = "c") -> ToolCall:
    return ToolCall(name=f"{prefix}{CALL_TOOL}", id=id, arguments={"name": name, "arguments": arguments})


def rows(db: Path) -> dict[str, Any]:
    return {r.call_id: r for r in AuditLog(db).query(limit=None)}


def kind(outcome: ToolOutcome) -> str:
    return outcome.error.kind.value if outcome.error is not None else "ok"


# -- the routing of each wrapper -------------------------------------------------------------------------------
def test_every_wrapper_forwards_routing_and_maps_names() -> None:
    inner = progressive()
    call = call_tool("get_weather", {"city": "Oslo"}, prefix="disc_")
    routed = inner.prefixed("disc").route(call)
    assert routed is not None and routed.call.name == "disc_get_weather" and routed.call.id == "c"
    assert routed.tool is not None and routed.tool.name == "disc_get_weather"
    assert routed.tool.state is get_weather.state  # the same tool under its composed name
    renamed = inner.renamed({"call_tool": "run_tool", "get_weather": "weather"})
    assert renamed.route(call_tool("get_weather", {})) is None  # call_tool was renamed away
    again = renamed.route(ToolCall(name="run_tool", arguments={"name": "get_weather", "arguments": {}}))
    assert again is not None and again.call.name == "weather" and again.tool is not None
    assert again.tool.name == "weather"
    assert Toolset.route(inner, call_tool("get_weather", {})) is None  # the base routes nothing
    assert FunctionToolset([ping]).route(call_tool("ping", {})) is None


def test_a_filter_refuses_a_tool_it_hides_and_routes_only_what_it_offers() -> None:
    inner = progressive()
    no_secrets = inner.filtered(lambda t: t.name != "read_secret")
    refused = no_secrets.route(call_tool("read_secret", {"key": "k"}))
    assert refused is not None and refused.tool is None and refused.call.name == "read_secret"
    kept = no_secrets.route(call_tool("get_weather", {"city": "Oslo"}))
    assert kept is not None and kept.tool is not None and kept.tool.name == "get_weather"
    no_meta = inner.filtered(lambda t: t.name != CALL_TOOL)
    assert no_meta.route(call_tool("get_weather", {"city": "Oslo"})) is None  # call_tool itself is not offered


def test_combined_asks_the_member_that_offers_the_name() -> None:
    combined = CombinedToolset([progressive().prefixed("disc"), FunctionToolset([local_clock])])
    routed = combined.route(call_tool("get_weather", {"city": "Oslo"}, prefix="disc_"))
    assert routed is not None and routed.tool is not None and routed.tool.name == "disc_get_weather"
    assert combined.route(ToolCall(name="local_clock", arguments={})) is None
    shadowing = CombinedToolset([progressive(), FunctionToolset([schema_tool(
        name="get_weather", description="Another weather tool.", input_schema={"type": "object"})])])
    clash = shadowing.route(call_tool("get_weather", {"city": "Oslo"}))
    assert clash is not None and clash.tool is None  # here the name means the other member's tool


def test_a_toolset_written_for_the_older_route_call_still_routes() -> None:
    target = ping

    with pytest.warns(DeprecationWarning, match="route_call is deprecated"):
        class OldRouter(FunctionToolset):
            def route_call(self, call: ToolCall) -> RoutedCall | None:
                return RoutedCall(call=ToolCall(name="ping", id=call.id), tool=target) if call.name == "go" else None

    routed = OldRouter([ping]).route(ToolCall(name="go"))
    assert routed is not None and routed.tool is ping
    with pytest.warns(DeprecationWarning, match="use route"):
        assert progressive().route_call(call_tool("ping", {})) is not None


# -- through the runtime: policy, approval, audit see the composed name ---------------------------------------------
@pytest.mark.anyio
async def test_inside_prefixed_search_then_call_reaches_the_tool_under_its_composed_name(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    approver = Approver()
    policy = Policy(deny=["disc_delete_repo"], ask=["disc_get_weather"], allowed_tools=None)
    ctx = CallContext(user="ann", session="s1")
    RAN.clear()
    async with Runtime(progressive().prefixed("disc"), audit=db, policy=policy, approval=approver) as rt:
        assert {t.name for t in rt.tools()} == {"disc_ping", "disc_search_tools", "disc_describe_tool",
                                                "disc_call_tool"}
        found = await rt.call(ToolCall(name=f"disc_{SEARCH_TOOLS}", arguments={"query": "weather in a city"}), ctx)
        assert found.ok and json.loads(found.content)[0]["name"] == "get_weather"
        described = await rt.call(ToolCall(name=f"disc_{DESCRIBE_TOOL}", arguments={"name": "get_weather"}), ctx)
        assert described.ok and "city" in described.content
        ran = await rt.call(call_tool("get_weather", {"city": "Oslo"}, prefix="disc_", id="c-run"), ctx)
        denied = await rt.call(call_tool("delete_repo", {"name": "x"}, prefix="disc_", id="c-deny"), ctx)
    assert ran.ok and ran.content == "sunny in Oslo" and ran.name == "disc_get_weather"
    assert ran.meta["routed_from"] == "disc_call_tool" and ran.meta["policy"]["tool"] == "disc_get_weather"
    assert approver.asked == ["disc_get_weather"]  # the policy's ask, asked under the composed name
    assert kind(denied) == "denied" and denied.name == "disc_delete_repo" and "delete_repo" not in RAN
    audit = rows(db)
    assert audit["c-run"].tool == "disc_get_weather" and audit["c-run"].arguments == {"city": "Oslo"}
    assert audit["c-deny"].tool == "disc_delete_repo" and audit["c-deny"].kind == "denied"


@pytest.mark.anyio
async def test_inside_a_combined_toolset_call_tool_reaches_the_tool(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    approver = Approver()
    combined = CombinedToolset([FunctionToolset([local_clock]), progressive().prefixed("disc"),
                                FunctionToolset([ping]).prefixed("other")])
    RAN.clear()
    async with Runtime(combined, audit=db, policy=Policy(allowed_tools=None), approval=approver) as rt:
        clock = await rt.call(ToolCall(name="local_clock", id="c-clock"))
        found = await rt.call(ToolCall(name=f"disc_{SEARCH_TOOLS}", arguments={"query": "delete a repository"}))
        assert found.ok and json.loads(found.content)[0]["name"] == "delete_repo"
        ran = await rt.call(call_tool("delete_repo", {"name": "old"}, prefix="disc_", id="c-del"))
    assert clock.ok and clock.content == "noon"
    assert ran.ok and ran.content == "deleted old" and ran.name == "disc_delete_repo"
    assert approver.asked == ["disc_delete_repo"]  # the preset asks for a destructive tool, by its composed name
    assert rows(db)["c-del"].tool == "disc_delete_repo" and RAN == ["delete_repo"]


# -- attacks: a routed call never reaches a tool the outer toolset does not offer -------------------------------------
@pytest.mark.anyio
async def test_attack_call_tool_naming_a_filtered_away_tool_is_not_found_and_audited(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    outer = progressive().filtered(lambda t: t.name != "read_secret").prefixed("disc")
    RAN.clear()
    async with Runtime(outer, audit=db, policy=Policy("permissive", allowed_tools=None)) as rt:
        out = await rt.call(call_tool("read_secret", {"key": "root"}, prefix="disc_", id="c-secret"))
        described = await rt.call(ToolCall(name="disc_read_secret", arguments={"key": "root"}, id="c-direct"))
    assert kind(out) == "not_found" and out.name == "disc_read_secret" and "secret root" not in out.content
    assert kind(described) == "not_found" and RAN == []
    audit = rows(db)
    assert audit["c-secret"].tool == "disc_read_secret" and audit["c-secret"].kind == "not_found"


@pytest.mark.anyio
async def test_attack_call_tool_naming_a_tool_outside_allowed_tools_is_denied_and_audited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # get_weather is hidden, so the allowlist check cannot see it listed
    db = tmp_path / "audit.db"
    allowed = [f"disc_{n}" for n in (SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL, "get_weather", "ping")]
    policy = Policy("permissive", allowed_tools=allowed)
    RAN.clear()
    async with Runtime(progressive().prefixed("disc"), audit=db, policy=policy) as rt:
        assert "disc_read_secret" not in {t.name for t in rt.tools()}
        out = await rt.call(call_tool("read_secret", {"key": "root"}, prefix="disc_", id="c-secret"))
        ok = await rt.call(call_tool("get_weather", {"city": "Oslo"}, prefix="disc_", id="c-ok"))
    assert kind(out) in {"not_found", "denied"} and out.name == "disc_read_secret" and RAN == ["get_weather"]
    assert ok.ok and ok.name == "disc_get_weather"
    audit = rows(db)
    assert audit["c-secret"].tool == "disc_read_secret" and audit["c-secret"].kind == out.error.kind.value  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_attack_call_tool_is_not_routed_when_call_tool_itself_is_not_offered() -> None:
    policy = Policy("permissive", allowed_tools=[SEARCH_TOOLS, "ping"])
    RAN.clear()
    async with Runtime(progressive(), audit=False, policy=policy) as rt:
        out = await rt.call(call_tool("get_weather", {"city": "Oslo"}))
    assert kind(out) == "denied" and out.name == CALL_TOOL and RAN == []


NAMES = st.sampled_from(["read_secret", "delete_repo", "get_weather", "ping", "tool_3", "READ_SECRET",
                         "read_secret@1.0.0", "disc_read_secret", CALL_TOOL, "", "nope"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=NAMES, hidden=st.sets(st.sampled_from(["read_secret", "delete_repo", "get_weather", "tool_3"])),
       wrap=st.sampled_from(["prefixed", "renamed", "combined", "plain"]))
def test_attack_a_routed_call_runs_only_tools_the_outer_toolset_offers(target: str, hidden: set[str],
                                                                       wrap: str) -> None:
    """Whatever the model names and however the progressive toolset is wrapped, a tool the filter hides never runs."""
    inner = progressive().filtered(lambda t: t.name not in hidden)
    outer: Toolset = {"prefixed": inner.prefixed("disc"), "renamed": inner.renamed({"get_weather": "weather"}),
                      "combined": CombinedToolset([inner, FunctionToolset([local_clock])]), "plain": inner}[wrap]
    head = "disc_" if wrap == "prefixed" else ""
    RAN.clear()
    with Runtime(outer, audit=False, policy=Policy("permissive", allowed_tools=None),
                 approval=lambda *_: True) as rt:
        out = rt.call_sync(call_tool(target, {"city": "x", "name": "x", "key": "x"}, prefix=head))
    assert not set(RAN) & hidden
    if out.ok:
        assert out.name in {t.name for t in outer.list()} or outer.route(
            call_tool(target, {}, prefix=head)) is not None
