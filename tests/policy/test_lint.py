"""``Policy.lint``: rules that can never match, and rules another rule shadows."""

from __future__ import annotations

from toolrig import Policy, Registry


def findings(policy: Policy) -> set[tuple[str, str, str, str]]:
    return {(f.kind, f.layer, f.verdict, f.rule) for f in policy.lint()}


def test_rules_that_can_never_match(registry: Registry) -> None:
    policy = Policy(allow=["nope", "nope_*", "toolset:ghost", 'shell(cmd="x")', "write_file@9", "read_*"],
                    tools=registry, allowed_tools=None)
    assert findings(policy) == {
        ("never-matches", "global", "allow", "nope"), ("never-matches", "global", "allow", "nope_*"),
        ("never-matches", "global", "allow", "toolset:ghost"), ("never-matches", "global", "allow", 'shell(cmd="x")'),
        ("never-matches", "global", "allow", "write_file@9"),
    }
    messages = {f.rule: f.message for f in policy.lint()}
    assert messages["write_file@9"] == "no matching tool has version '9'"
    assert messages['shell(cmd="x")'] == "no matching tool has the argument(s) cmd"


def test_shadowed_rules(registry: Registry) -> None:
    policy = Policy(allow=["read_file", "read_*"], deny=["read_*"], ask=['shell(command="git *")'], tools=registry,
                    allowed_tools=None, layers=[
                        {"user": "alice", "allow": ['shell(command="git status")', "delete_file"]},
                        {"user": "bob", "deny": ["delete_file"]}])
    assert findings(policy) == {
        ("shadowed", "global", "allow", "read_file"), ("shadowed", "global", "allow", "read_*"),
        ("shadowed", "user:alice", "allow", 'shell(command="git status")'),
    }  # bob's deny does not shadow alice's allow: the layers apply to different users
    [f] = [f for f in policy.lint() if f.layer == "user:alice"]
    assert "ask 'shell(command=\"git *\")' of layer 'global' covers every call it matches" in f.message
    assert f.to_dict()["kind"] == "shadowed"


def test_without_tools_only_what_the_policy_itself_shows(registry: Registry) -> None:
    policy = Policy(allow=["nope", "toolset:ghost"], deny=["*"], allowed_tools=None)
    assert findings(policy) == {("never-matches", "global", "allow", "toolset:ghost"),
                                ("shadowed", "global", "allow", "nope")}
    assert Policy(allow=["toolset:files"], allowed_tools=None).lint(registry) == []
