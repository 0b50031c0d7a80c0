"""Attacks: search_tools / describe_tool never show a tool that call_tool cannot reach.

A tool that an outer ``.filtered()`` view, a policy's ``ALLOWED_TOOLS``, a ``.renamed()`` clash or a combined
toolset's shadowing hides is not found by ``search_tools``, not described by ``describe_tool`` (name, description,
schema) and not offered in their "closest names" hints: the meta-tools show exactly what ``call_tool`` reaches.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import BaseTool, Policy, Runtime, ToolCall, ToolOutcome, schema_tool, tool
from toolrig.discovery import CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS, ProgressiveToolset, estimate_tokens
from toolrig.errors import PolicyConfigError
from toolrig.toolsets import CombinedToolset, FunctionToolset, Toolset

SECRET_DOC = "Read a secret value from the vault by its key"


@tool(permission="readonly")
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city, e.g. Paris.
    """
    return f"sunny in {city}"


@tool(permission="readonly")
def read_secret(vault_key: str) -> str:
    """Read a secret value from the vault by its key."""
    return f"secret {vault_key}"


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


def progressive() -> ProgressiveToolset:
    base = FunctionToolset([get_weather, read_secret, delete_repo, ping, *filler(20)])
    return ProgressiveToolset(base, core=["ping"], counter=estimate_tokens, enabled=True)


def no_secret(t: BaseTool) -> bool:
    return "secret" not in t.name


def run(toolset: Toolset, calls: list[ToolCall], policy: Policy | None = None) -> list[ToolOutcome]:
    with Runtime(toolset, audit=False, policy=policy or Policy("permissive", allowed_tools=None),
                 approval=lambda *_: True) as rt:
        return [rt.call_sync(c) for c in calls]


def meta(head: str, which: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=f"{head}{which}", arguments=arguments)


def searched(outcome: ToolOutcome) -> list[str]:
    assert outcome.ok, outcome.content
    return [hit["name"] for hit in json.loads(outcome.content)]


def leaks_secret(outcome: ToolOutcome, *, echoed: str = "") -> bool:
    """Whether the outcome shows the hidden tool's name (beyond echoing what the model sent), schema or text."""
    text = outcome.content + json.dumps(outcome.error.details if outcome.error else {}, default=str)
    return ("read_secret" in text.replace(repr(echoed), "") or "vault_key" in text
            or SECRET_DOC.lower() in text.lower())


def check_hidden(toolset: Toolset, head: str = "", policy: Policy | None = None) -> None:
    """The secret tool is neither searched, described, hinted nor called; the weather tool still is."""
    search, describe, weather, hint, called = run(toolset, [
        meta(head, SEARCH_TOOLS, query="read a secret value from the vault", k=20),
        meta(head, DESCRIBE_TOOL, name="read_secret"),
        meta(head, DESCRIBE_TOOL, name="get_weather"),
        meta(head, DESCRIBE_TOOL, name="secret_read"),  # a near miss: the hint must not name the hidden tool
        meta(head, CALL_TOOL, name="read_secret", arguments={"vault_key": "root"}),
    ], policy)
    assert "read_secret" not in searched(search) and not leaks_secret(search)
    assert not describe.ok and not leaks_secret(describe, echoed="read_secret")
    assert weather.ok and json.loads(weather.content)["parameters"]["properties"]["city"]
    assert not hint.ok and not leaks_secret(hint)
    assert not called.ok and "secret root" not in called.content


def test_attack_a_filtered_view_hides_the_tool_from_search_and_describe() -> None:
    check_hidden(progressive().filtered(no_secret))


def test_attack_a_filtered_view_inside_prefixed_hides_it_too() -> None:
    check_hidden(progressive().filtered(no_secret).prefixed("disc"), head="disc_")


def test_attack_allowed_tools_hides_the_tool_from_search_and_describe() -> None:
    allowed = [SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL, "get_weather", "ping", "delete_repo"]
    check_hidden(progressive(), policy=Policy("permissive", allowed_tools=allowed))


def test_attack_allowed_tools_under_prefixed_names_hides_it() -> None:
    allowed = [f"disc_{n}" for n in (SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL, "get_weather", "ping")]
    check_hidden(progressive().prefixed("disc"), head="disc_", policy=Policy("permissive", allowed_tools=allowed))


def test_allowed_tools_may_name_tools_behind_call_tool_under_ci() -> None:
    # ALLOWED_TOOLS's unknown names raise under CI: a tool only call_tool reaches is known, as its outer name
    plain = Policy("permissive", allowed_tools=[SEARCH_TOOLS, CALL_TOOL, "get_weather", "delete_repo"])
    assert plain.check_tools(progressive(), strict=True) == []
    prefixed = Policy("permissive", allowed_tools=[f"disc_{CALL_TOOL}", "disc_get_weather", "disc_tool_7"])
    assert prefixed.check_tools(progressive().prefixed("disc"), strict=True) == []
    renamed = Policy("permissive", allowed_tools=[CALL_TOOL, "weather"])
    assert renamed.check_tools(progressive().renamed({"get_weather": "weather"}), strict=True) == []


def test_allowed_tools_behind_call_tool_still_checks_unknown_names() -> None:
    filtered = progressive().filtered(no_secret)  # read_secret is not reachable: naming it is a mistake
    policy = Policy("permissive", allowed_tools=[CALL_TOOL, "read_secret", "get_wether"])
    assert policy.check_tools(filtered, strict=False) == ["read_secret", "get_wether"]
    with pytest.raises(PolicyConfigError, match="get_wether"):
        policy.check_tools(filtered, strict=True)


def test_attack_a_renamed_clash_hides_the_shadowed_tool() -> None:
    # here "read_secret" names the renamed get_weather, so the inner read_secret is unreachable
    outer = progressive().renamed({"delete_repo": "read_secret"})
    search, describe, wipe = run(outer, [
        meta("", SEARCH_TOOLS, query="read a secret value from the vault", k=20),
        meta("", DESCRIBE_TOOL, name="read_secret"),
        meta("", DESCRIBE_TOOL, name="delete_repo"),
    ])
    assert "read_secret" not in searched(search) and "vault_key" not in search.content
    assert not describe.ok and "vault_key" not in describe.content
    assert wipe.ok and json.loads(wipe.content)["name"] == "delete_repo"  # the name call_tool takes


def test_attack_a_combined_member_shadowing_the_name_hides_the_tool() -> None:
    other = FunctionToolset([schema_tool(name="read_secret", description="A harmless lookup.",
                                         input_schema={"type": "object"})])
    combined = CombinedToolset([progressive(), other], on_conflict="last")
    search, describe = run(combined, [meta("", SEARCH_TOOLS, query="secret value from the vault", k=20),
                                      meta("", DESCRIBE_TOOL, name="read_secret")])
    assert "read_secret" not in searched(search) and not describe.ok and "vault_key" not in describe.content


def test_search_and_describe_without_a_hiding_wrapper_are_unchanged() -> None:
    search, describe = run(progressive().prefixed("disc"), [
        meta("disc_", SEARCH_TOOLS, query="read a secret value from the vault"),
        meta("disc_", DESCRIBE_TOOL, name="read_secret")])
    assert searched(search)[0] == "read_secret"
    assert json.loads(describe.content) == {"name": "read_secret", "description": SECRET_DOC + ".",
                                            "parameters": dict(read_secret.spec.input_schema)}


def test_search_fills_k_past_hidden_hits() -> None:
    hidden = {f"tool_{i}" for i in range(0, 20, 2)}
    outer = progressive().filtered(lambda t: t.name not in hidden)
    (search,) = run(outer, [meta("", SEARCH_TOOLS, query="does task on widgets and gadgets", k=8)])
    found = searched(search)
    assert len(found) == 8 and not set(found) & hidden


class Hider(Toolset):
    """A toolset around the progressive one that is not a wrapper: routing does not pass through it."""

    def __init__(self, inner: Toolset) -> None:
        self.inner = inner

    def list(self) -> list[BaseTool]:
        return self.inner.list()


def test_attack_a_toolset_that_does_not_forward_routing_shows_nothing() -> None:
    search, describe = run(Hider(progressive()), [meta("", SEARCH_TOOLS, query="weather in a city"),
                                                  meta("", DESCRIBE_TOOL, name="get_weather")])
    assert searched(search) == [] and not describe.ok  # call_tool reaches nothing there: fail closed


TARGETS = ["read_secret", "delete_repo", "get_weather", "tool_3", "ping"]


@pytest.fixture
def lenient(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test below lists names a filter hides on purpose; under CI such unknown names would raise."""
    monkeypatch.delenv("CI", raising=False)


@pytest.mark.usefixtures("lenient")
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(hidden=st.sets(st.sampled_from(TARGETS)), wrap=st.sampled_from(["prefixed", "renamed", "combined", "plain"]),
       allow=st.booleans(), target=st.sampled_from(TARGETS))
def test_attack_search_and_describe_show_exactly_what_call_tool_reaches(hidden: set[str], wrap: str, allow: bool,
                                                                         target: str) -> None:
    inner = progressive().filtered(lambda t: t.name not in hidden)
    outer: Toolset = {"prefixed": inner.prefixed("disc"), "renamed": inner.renamed({"get_weather": "weather"}),
                      "combined": CombinedToolset([inner, FunctionToolset([filler(1)[0].with_spec(name="other")])]),
                      "plain": inner}[wrap]
    head = "disc_" if wrap == "prefixed" else ""
    allowed = [*(f"{head}{n}" for n in (SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL)), f"{head}ping", f"{head}tool_3"]
    policy = Policy("permissive", allowed_tools=allowed if allow else None)
    search, describe = run(outer, [meta(head, SEARCH_TOOLS, query=target.replace("_", " "), k=20),
                                   meta(head, DESCRIBE_TOOL, name=target)], policy)
    view = outer.filtered(lambda t: t.name in allowed) if allow else outer
    reaches = view.route(ToolCall(name=f"{head}{CALL_TOOL}", arguments={"name": target}))
    reachable = reaches is not None and reaches.tool is not None
    assert (target in searched(search)) <= reachable
    assert describe.ok == reachable
