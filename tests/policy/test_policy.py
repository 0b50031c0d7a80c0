"""Policy decisions: presets, layered rules, deny-wins, owners, ALLOWED_TOOLS, untrusted annotations."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from policy_tools import TOOLS

from toolrig import CallContext, Policy, Registry, ToolCall
from toolrig.policy import Layer, PolicyConfigError, Rule


def decide(policy: Policy, name: str, context: CallContext | None = None, **arguments: Any) -> str:
    return policy.explain(ToolCall(name=name, arguments=arguments), context).decision


@pytest.mark.parametrize(("preset", "expected"), [
    ("strict", ["allow", "ask", "ask", "ask"]),
    ("default", ["allow", "allow", "ask", "ask"]),
    ("permissive", ["allow", "allow", "allow", "ask"]),
])
def test_presets_by_permission(registry: Registry, preset: str, expected: list[str]) -> None:
    policy = Policy(preset, tools=registry, allowed_tools=None)
    got = [decide(policy, n, path="a", text="t", command="ls")
           for n in ("read_file", "write_file", "delete_file", "shell")]
    assert got == expected


def test_unknown_preset_and_bad_rules_fail_loudly() -> None:
    with pytest.raises(PolicyConfigError, match="unknown preset"):
        Policy("lenient", allowed_tools=None)
    for bad in ["shell(command=git)", "shell(1)", "shell(command=\"a\"", "group:", "", "a b", 'x(c="a", **d)']:
        with pytest.raises(PolicyConfigError):
            Policy(allow=[bad], allowed_tools=None)


def test_explain_names_layer_rule_and_reason(registry: Registry) -> None:
    policy = Policy(allow=['shell(command="git *")'], tools=registry, allowed_tools=None)
    e = policy.explain(ToolCall(name="shell", arguments={"command": "git status"}))
    assert (e.decision, e.layer, e.rule) == ("allow", "global", 'shell(command="git *")')
    assert "git *" in e.reason
    e = policy.explain(ToolCall(name="shell", arguments={"command": "rm -rf x"}))
    assert (e.decision, e.layer, e.rule) == ("ask", "preset", None)
    assert "system tool" in e.reason
    assert e.to_dict() == {"decision": "ask", "layer": "preset", "rule": None, "reason": e.reason, "tool": "shell"}
    assert e.to_decision().needs_approval and e.to_decision().source == "policy:preset"


def test_layers_apply_by_agent_group_and_user(registry: Registry) -> None:
    policy = Policy("strict", tools=registry, allowed_tools=None, layers=[
        {"user": "alice", "allow": ["write_file"]},
        {"agent": "coder", "allow": ["group:files"]},
        {"group": "ops", "allow": ["shell"]},
        Layer(name="bob-no-delete", user="bob", deny=["delete_file"]),
    ])
    assert [la.kind for la in policy.layers] == ["global", "agent", "role", "user", "user"]
    alice, bob = CallContext(user="alice"), CallContext(user="bob", agent="coder")
    assert decide(policy, "write_file", alice, path="p", text="t") == "allow"
    assert decide(policy, "write_file", CallContext(user="carol"), path="p", text="t") == "ask"
    assert decide(policy, "delete_file", CallContext(agent="coder"), path="p") == "allow"
    assert decide(policy, "delete_file", bob, path="p") == "deny"  # user layer refines the agent layer
    assert decide(policy, "shell", CallContext(roles={"ops"}), command="x") == "allow"
    assert decide(policy, "shell", CallContext(roles={"dev"}), command="x") == "ask"
    e = policy.explain(ToolCall(name="delete_file", arguments={"path": "p"}), bob)
    assert (e.layer, e.rule) == ("bob-no-delete", "delete_file")


def test_deny_wins_over_ask_wins_over_allow_across_layers(registry: Registry) -> None:
    policy = Policy(allow=["*"], ask=["write_*"], tools=registry, allowed_tools=None, layers=[
        {"user": "alice", "allow": ["write_file", "delete_file"], "deny": ["read_dir"]}])
    alice = CallContext(user="alice")
    assert decide(policy, "read_file", alice, path="p") == "allow"
    assert decide(policy, "write_file", alice, path="p", text="t") == "ask"  # a later allow cannot undo an ask
    assert decide(policy, "read_dir", alice, path="p") == "deny"  # a later deny refines a broad allow
    assert decide(policy, "read_dir", CallContext(user="bob"), path="p") == "allow"
    e = policy.explain(ToolCall(name="write_file", arguments={"path": "p", "text": "t"}), alice)
    assert (e.decision, e.layer, e.rule) == ("ask", "global", "write_*")


def test_group_rules_expand_registry_toolsets_and_policy_groups(registry: Registry) -> None:
    policy = Policy("strict", allow=["group:files"], tools=registry, allowed_tools=None)
    assert decide(policy, "delete_file", path="p") == "allow"
    assert decide(policy, "shell", command="ls") == "ask"
    own = Policy("strict", allow=["group:danger"], groups={"danger": ["shell", "delete_*"]}, tools=TOOLS,
                 allowed_tools=None)
    assert decide(own, "delete_file", path="p") == "allow"
    assert decide(own, "write_file", path="p", text="t") == "ask"
    unknown = Policy("strict", allow=["group:nope"], tools=registry, allowed_tools=None)
    assert decide(unknown, "read_file", path="p") == "allow"  # preset; the unknown group matches nothing
    assert decide(unknown, "write_file", path="p", text="t") == "ask"


def test_argument_globs(registry: Registry) -> None:
    policy = Policy(allow=['delete_file(path="/tmp/*")'], deny=['write_file(path="/etc/*")'], tools=registry,
                    allowed_tools=None)
    assert decide(policy, "delete_file", path="/tmp/x") == "allow"
    assert decide(policy, "delete_file", path="/home/x") == "ask"
    assert decide(policy, "delete_file", path=["/tmp/x"]) == "ask"  # non-scalar values never match a glob
    assert decide(policy, "write_file", path="/etc/passwd", text="x") == "deny"
    assert decide(policy, "write_file", path="/srv/a", text="x") == "allow"


def test_versioned_rules(registry: Registry) -> None:
    policy = Policy("strict", allow=["write_file@1.0.0"], deny=["read_file@9.9.9"], tools=registry,
                    allowed_tools=None)
    assert decide(policy, "write_file", path="p", text="t") == "allow"
    assert decide(policy, "read_file", path="p") == "allow"


def test_owner_only_tools(registry: Registry) -> None:
    policy = Policy(permissive := "permissive", owners={"delete_file": "alice", "write_*": ["alice", "bob"]},
                    tools=registry, allowed_tools=None)
    assert permissive == policy.preset
    assert decide(policy, "delete_file", CallContext(user="alice"), path="p") == "allow"
    e = policy.explain(ToolCall(name="delete_file", arguments={"path": "p"}), CallContext(user="bob"))
    assert (e.decision, e.layer) == ("deny", "owner") and "owner-only" in e.reason
    assert decide(policy, "delete_file", None, path="p") == "deny"
    assert decide(policy, "write_file", CallContext(user="bob"), path="p", text="t") == "allow"


def test_owner_from_tool_metadata() -> None:
    from toolrig import tool

    @tool(permission="readonly", metadata={"owner": "alice"})
    def secrets_report() -> str:
        """Alice's report."""
        return "r"

    policy = Policy(tools=[secrets_report], allowed_tools=None)
    assert decide(policy, "secrets_report", CallContext(user="alice")) == "allow"
    assert decide(policy, "secrets_report", CallContext(user="mallory")) == "deny"


def test_untrusted_annotations_never_lower_the_level(registry: Registry) -> None:
    policy = Policy(tools=registry, allowed_tools=None)
    e = policy.explain(ToolCall(name="mcp_lookup", arguments={"query": "q"}))
    assert e.decision == "ask" and "untrusted" in e.reason
    assert decide(Policy("permissive", tools=registry, allowed_tools=None), "mcp_lookup", query="q") == "allow"
    trusting = Policy(trusted=["mcp_lookup"], tools=registry, allowed_tools=None)
    assert decide(trusting, "mcp_lookup", query="q") == "allow"
    explicit = Policy(allow=["mcp_lookup"], tools=registry, allowed_tools=None)
    assert decide(explicit, "mcp_lookup", query="q") == "allow"


def test_annotations_can_raise_the_level() -> None:
    from toolrig import tool
    from toolrig._spec import ToolAnnotations

    @tool(permission="readonly", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def wipe() -> str:
        """Claims readonly, annotated destructive."""
        return "w"

    assert decide(Policy(tools=[wipe], allowed_tools=None), "wipe") == "ask"


def test_requires_approval_asks_even_when_preset_allows() -> None:
    from toolrig import tool

    @tool(permission="readonly", requires_approval=True)
    def peek() -> str:
        """Needs a yes."""
        return "p"

    assert decide(Policy(tools=[peek], allowed_tools=None), "peek") == "ask"


def test_unknown_tool_is_treated_as_system() -> None:
    e = Policy("permissive", allowed_tools=None).explain(ToolCall(name="mystery", arguments={}))
    assert e.decision == "ask" and "unknown" in e.reason


def test_allowed_tools_environment(monkeypatch: pytest.MonkeyPatch, registry: Registry,
                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolrig.policy"):
        unrestricted = Policy(tools=registry)
    assert unrestricted.allowed_tools is None and unrestricted.unrestricted
    assert not any("ALLOWED_TOOLS is not set" in r.message for r in caplog.records)  # warned when deciding
    monkeypatch.setenv("ALLOWED_TOOLS", "  ")
    with pytest.raises(PolicyConfigError, match="empty"):
        Policy(tools=registry)
    monkeypatch.setenv("ALLOWED_TOOLS", "read_file, group:files nope_tool")
    policy = Policy("permissive", tools=registry)
    assert decide(policy, "read_file", path="p") == "allow"
    assert decide(policy, "delete_file", path="p") == "allow"
    e = policy.explain(ToolCall(name="shell", arguments={"command": "ls"}))
    assert (e.decision, e.layer) == ("deny", "ALLOWED_TOOLS")
    with caplog.at_level(logging.WARNING, logger="toolrig.policy"):
        assert policy.check_tools(registry) == ["nope_tool"]
    monkeypatch.setenv("CI", "true")
    with pytest.raises(PolicyConfigError, match="nope_tool"):
        policy.check_tools(registry)
    assert policy.check_tools(registry, strict=False) == ["nope_tool"]  # tools not known yet: warn only
    assert policy.offers("read_file") and policy.offers("delete_file") and not policy.offers("shell")
    assert Policy(allowed_tools=None).offers("anything")


def test_a_crashing_rule_denies_with_a_reason(registry: Registry) -> None:
    def explode(name: str) -> frozenset[str] | None:
        raise RuntimeError("group backend down")

    policy = Policy(allow=["group:files"], tools=registry, allowed_tools=None)
    policy.toolset_resolver = lambda toolset=None: explode  # type: ignore[method-assign]
    e = policy.explain(ToolCall(name="read_file", arguments={"path": "p"}))
    assert (e.decision, e.layer) == ("deny", "policy-error") and "RuntimeError" in e.reason


def test_remember_is_no_wider_than_the_approval(registry: Registry) -> None:
    policy = Policy(tools=registry, allowed_tools=None)
    alice = CallContext(user="alice")
    rule = policy.remember("shell", "1.0.0", {"command": "ls *"}, alice)
    assert isinstance(rule, Rule) and rule.version == "1.0.0"
    assert decide(policy, "shell", alice, command="ls *") == "allow"
    assert decide(policy, "shell", alice, command="ls x") == "ask"  # '*' in the approved value is literal
    assert decide(policy, "shell", alice, command="ls *", extra=1) == "ask"
    assert decide(policy, "shell", CallContext(user="bob"), command="ls *") == "ask"
    odd = policy.remember("shell", "2.0.0", {"command": "x"}, alice)
    assert decide(policy, "shell", alice, command="x") == "ask" and odd.version == "2.0.0"  # other version


def test_toolset_rules_and_their_older_group_spelling_mean_the_same() -> None:
    """One name, one meaning: a set of tools is a toolset (``toolset:NAME``); ``group:NAME`` is the same."""
    from toolrig.policy import parse_rule

    for text in ("toolset:files", "group:files"):
        assert parse_rule(text).toolset == "files"
    both = [Policy(allowed_tools=None, toolsets={"files": ["read_*"]}, deny=["toolset:files"], tools=TOOLS),
            Policy(allowed_tools=None, groups={"files": ["read_*"]}, deny=["group:files"], tools=TOOLS)]
    name = next(t.name for t in TOOLS if t.name.startswith("read_"))
    for policy in both:
        assert policy.explain(ToolCall(name=name, arguments={})).verdict.name == "DENY"
    with pytest.raises(PolicyConfigError):
        Policy(allowed_tools=None, toolsets={"a": ["x"]}, groups={"a": ["x"]})
    role = Policy(allowed_tools=None, layers=[{"role": "ops", "allow": ["shell"]}]).layers[1]
    group = Policy(allowed_tools=None, layers=[{"group": "ops", "allow": ["shell"]}]).layers[1]
    assert role.kind == group.kind == "role" and role.role == group.role == "ops"


def test_a_remembered_call_without_user_or_agent_is_not_remembered_for_everyone(registry: Registry) -> None:
    """Regression: an approval remembered for an anonymous call (or one without an agent) became a layer
    whose unset selectors matched every user (or agent): wider than what was approved."""
    policy = Policy(tools=registry, allowed_tools=None)
    policy.remember("shell", "1.0.0", {"command": "ls"}, CallContext())
    assert decide(policy, "shell", CallContext(), command="ls") == "allow"
    assert decide(policy, "shell", CallContext(user="bob"), command="ls") == "ask"
    assert decide(policy, "shell", CallContext(agent="coder"), command="ls") == "ask"
    policy.remember("shell", "1.0.0", {"command": "pwd"}, CallContext(user="alice"))
    assert decide(policy, "shell", CallContext(user="alice"), command="pwd") == "allow"
    assert decide(policy, "shell", CallContext(user="alice", agent="coder"), command="pwd") == "ask"
    assert decide(policy, "shell", CallContext(user="alice", roles=frozenset({"ops"})), command="pwd") == "allow"
    assert [la.name for la in policy.remembered()] == ["remembered:-:-", "remembered:alice:-"]
