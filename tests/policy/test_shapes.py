"""Settings of the wrong shape: a string is one rule (never one per character), anything else is a clear
PolicyConfigError, and an empty allowlist is an error wherever it comes from."""

from __future__ import annotations

from typing import Any

import pytest
from policy_tools import TOOLS

from toolrig import CallContext, Policy, ToolCall
from toolrig.policy import Layer, PolicyConfigError, policy_from_mapping


def decide(policy: Policy, name: str, context: CallContext | None = None, **arguments: Any) -> str:
    return policy.explain(ToolCall(name=name, arguments=arguments), context).decision


def test_a_string_is_one_rule_not_one_per_character() -> None:
    """Regression: ``allow="read_*"`` was read as the rules r, e, a, d, _, * and allowed every tool."""
    policy = Policy("strict", allow="read_*", tools=TOOLS, allowed_tools=None)
    assert decide(policy, "shell", command="rm -rf /") == "ask"
    assert decide(policy, "read_dir", path="p") == "allow"
    assert decide(Policy(deny="shell", tools=TOOLS, allowed_tools=None), "shell", command="ls") == "deny"
    assert decide(Policy(trusted="mcp_lookup", tools=TOOLS, allowed_tools=None), "mcp_lookup", query="q") == "allow"
    only = Policy("permissive", allowed_tools="read_file", tools=TOOLS)
    assert decide(only, "read_file", path="p") == "allow"
    assert decide(only, "write_file", path="p", text="t") == "deny"


def test_a_string_in_a_layer_or_a_toolset_is_one_entry() -> None:
    """Regression: a layer's ``deny: shell`` denied nothing, and a toolset ``"read_*"`` held every tool."""
    alice = CallContext(user="alice")
    layered = Policy(layers=[{"user": "alice", "deny": "shell"}], tools=TOOLS, allowed_tools=None)
    assert decide(layered, "shell", alice, command="ls") == "deny"
    assert decide(Policy(layers=[Layer(name="a", user="alice", deny="shell")], tools=TOOLS, allowed_tools=None),
                  "shell", alice, command="ls") == "deny"
    grouped = Policy("strict", toolsets={"files": "read_*"}, allow=["toolset:files"], tools=TOOLS,
                     allowed_tools=None)
    assert decide(grouped, "shell", command="ls") == "ask"
    assert decide(grouped, "read_dir", path="p") == "allow"
    owned = Policy(owners={"shell": "alice"}, tools=TOOLS, allowed_tools=None)
    assert decide(owned, "shell", CallContext(user="a"), command="ls") == "deny"


def test_an_empty_allowlist_is_an_error_however_it_is_given() -> None:
    """Regression: ``allowed_tools=[]`` (or ``allowed_tools = []`` in a config) silently denied every tool."""
    with pytest.raises(PolicyConfigError, match="empty"):
        Policy(allowed_tools=[])
    with pytest.raises(PolicyConfigError, match="empty"):
        policy_from_mapping({"allowed_tools": []})
    assert policy_from_mapping({"allowed_tools": None}).allowed_tools is None


@pytest.mark.parametrize("config", [
    {"owners": ["alice"]}, {"owners": {"x": 5}}, {"owners": {"x": [1]}}, {"owners": {"x": None}},
    {"toolsets": ["a"]}, {"toolsets": {"a": 5}}, {"toolsets": {"a": ["x", 3]}}, {"groups": {"a": None}},
    {"layers": ["x"]}, {"layers": [None]}, {"layers": [{"user": "a", "allow": 5}]}, {"layers": [{"user": ["a"]}]},
    {"layers": [{"allow": ["x"], "name": 3}]}, {"layers": [{"user": "a", "deny": {"shell": 1}}]},
    {"allowed_tools": "a,b"}, {"allowed_tools": 5}, {"allow": [5]}, {"trusted": [None]}, {"preset": None},
])
def test_wrong_shapes_are_policy_config_errors(config: dict[str, Any]) -> None:
    with pytest.raises(PolicyConfigError):
        policy_from_mapping(config)


def test_wrong_shapes_in_python_are_policy_config_errors() -> None:
    for kwargs in ({"allow": 5}, {"deny": {"shell": True}}, {"layers": {"user": "a"}}, {"layers": "user"},
                   {"trusted": b"x"}, {"allowed_tools": 3}):
        with pytest.raises(PolicyConfigError):
            Policy(**kwargs)  # type: ignore[arg-type]
